package store

import (
	"context"
	"database/sql"
	"errors"
	"os"
	"strconv"
	"testing"
	"time"
)

// TestRebuildStudy times a board's derivation over the folder of `d5list
// admin seed-synthetic` that D5LIST_BENCH_DATA names, as a migration
// that marks the board (0033) has the next Open do: the rate of the
// batches that derive its rows again (D5LIST_REBUILD_BATCHES of them,
// default 25; the rows are derived as they were, so the folder is left as
// it was), and, apart, the election that ends a rebuild, rolled back.
func TestRebuildStudy(t *testing.T) {
	dir := os.Getenv("D5LIST_BENCH_DATA")
	if dir == "" {
		t.Skip("rebuild study: set D5LIST_BENCH_DATA to a folder of `d5list admin seed-synthetic`")
	}
	batches := 25
	if v := os.Getenv("D5LIST_REBUILD_BATCHES"); v != "" {
		var err error
		if batches, err = strconv.Atoi(v); err != nil {
			t.Fatal(err)
		}
	}
	ctx := context.Background()
	start := time.Now()
	db, err := Open(ctx, dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("opened (migrations included) in %v", time.Since(start).Round(time.Millisecond))
	t.Cleanup(func() { db.Close() })
	const benchID = "l2-digits-mlp-cpu"
	var rows int
	if err := db.read.QueryRowContext(ctx, `SELECT count(*) FROM board_rows WHERE benchmark_id = ?`, benchID).Scan(&rows); err != nil {
		t.Fatal(err)
	}
	if _, err := db.write.ExecContext(ctx, `INSERT INTO board_rebuilds (benchmark_id, generation) VALUES (?, 1)
		ON CONFLICT (benchmark_id) DO UPDATE SET generation = generation + 1`, benchID); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if _, err := db.write.ExecContext(ctx, `DELETE FROM board_rebuilds WHERE benchmark_id = ?`, benchID); err != nil {
			t.Error(err)
		}
	})
	stop := errors.New("enough batches")
	done := 0
	start = time.Now()
	rebuildHook = func(string, int64) error {
		if done++; done == batches {
			return stop
		}
		return nil
	}
	t.Cleanup(func() { rebuildHook = nil })
	if err := db.RebuildBoards(ctx); !errors.Is(err, stop) {
		t.Fatalf("rebuild: %v", err)
	}
	took := time.Since(start)
	derived := done * rebuildBatch
	perRow := took / time.Duration(derived)
	t.Logf("derived %d of %d rows again in %v: %v a row, %.0f rows a second; all %d would take %v",
		derived, rows, took.Round(time.Millisecond), perRow, float64(derived)/took.Seconds(), rows, (perRow * time.Duration(rows)).Round(time.Second))

	start = time.Now()
	rollback := errors.New("rolled back")
	err = db.writeTx(ctx, func(tx *sql.Tx) error {
		if err := electAllBestTx(ctx, tx, benchID); err != nil {
			return err
		}
		return rollback
	})
	if !errors.Is(err, rollback) {
		t.Fatal(err)
	}
	t.Logf("the election over %d rows: %v", rows, time.Since(start).Round(time.Millisecond))
}
