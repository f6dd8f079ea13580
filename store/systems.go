package store

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"encoding/json"
	"errors"
	"fmt"

	"modernc.org/sqlite"

	d5list "github.com/deep500/d5list"
	"github.com/deep500/d5list/leaderboard"
)

// SystemOnBoard is the best entry of the system systemKey
// (leaderboard.SystemKey) on benchID's default board, ranked, and that
// board's length; nil when the board does not list the system. The
// system's rows are a range of the system index; its rank costs what
// RankOf's does.
func (db *DB) SystemOnBoard(ctx context.Context, benchID, systemKey string) (*d5list.Entry, int, error) {
	var e *d5list.Entry
	var total int
	err := db.readTx(ctx, func(tx *sql.Tx) error {
		var id int64
		err := tx.QueryRowContext(ctx, `SELECT submission_id FROM board_rows
			WHERE benchmark_id = ? AND system_key = ? AND best_default = 1 LIMIT 1`, benchID, systemKey).Scan(&id)
		if errors.Is(err, sql.ErrNoRows) {
			return nil
		} else if err != nil {
			return err
		}
		if e, err = rankOfTx(ctx, tx, benchID, id, viewBestDefault); err != nil {
			return err
		}
		total, err = db.boardCountTx(ctx, tx, benchID, leaderboard.Options{})
		return err
	})
	return e, total, wrap(err, "finding a system on the board of %q", benchID)
}

// systemInEditions is SystemInEditions' query: one lookup of the system in
// each edition (edition_systems is keyed by edition first), which CROSS
// JOIN keeps SQLite from turning into a scan of every edition's rows.
const systemInEditions = `SELECT s.edition, e.frozen_at, s.benchmark_id, s.entries, s.entry
	FROM editions e CROSS JOIN edition_systems s ON s.edition = e.name AND s.system_key = ?
	ORDER BY e.frozen_at DESC, s.edition DESC, s.benchmark_id`

// SystemInEditions is the system systemKey's place on each board of each
// frozen edition that lists it, the latest edition first.
func (db *DB) SystemInEditions(ctx context.Context, systemKey string) ([]leaderboard.Place, error) {
	var out []leaderboard.Place
	err := db.readTx(ctx, func(tx *sql.Tx) error {
		rows, err := tx.QueryContext(ctx, systemInEditions, systemKey)
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			var p leaderboard.Place
			var at int64
			var raw string
			if err := rows.Scan(&p.Edition, &at, &p.BenchmarkID, &p.Of, &raw); err != nil {
				return err
			}
			if err := json.Unmarshal([]byte(raw), &p.Entry); err != nil {
				return fmt.Errorf("edition %q, board %s: decoding an entry: %w", p.Edition, p.BenchmarkID, err)
			}
			p.FrozenAt = fromUnixNano(at)
			out = append(out, p)
		}
		return rows.Err()
	})
	return out, wrap(err, "finding a system in the editions")
}

// editionSystemsTx indexes the entries of an edition's board by system,
// in the transaction that freezes it; encoded are the entries as the
// edition's board holds them (encodeFrozenBoard).
func editionSystemsTx(ctx context.Context, tx *sql.Tx, edition string, board *d5list.Leaderboard, encoded [][]byte) error {
	stmt, err := tx.PrepareContext(ctx, `INSERT OR IGNORE INTO edition_systems (system_key, edition, benchmark_id, entries, entry)
		VALUES (?, ?, ?, ?, ?)`)
	if err != nil {
		return err
	}
	defer stmt.Close()
	for i, e := range board.Entries {
		key := leaderboard.SystemKey(e.Submitter, e.SystemName)
		if _, err := stmt.ExecContext(ctx, key, edition, board.Benchmark.ID, len(board.Entries), string(encoded[i])); err != nil {
			return err
		}
	}
	return nil
}

// Migration 0038 keys the systems of the editions frozen before it with
// this function, so that they are the keys FreezeEdition writes. As with
// d5list_organisation_key, the schema never calls it.
func init() {
	sqlite.MustRegisterDeterministicScalarFunction("d5list_system_key", 2,
		func(_ *sqlite.FunctionContext, args []driver.Value) (driver.Value, error) {
			var text [2]string
			for i, a := range args {
				switch v := a.(type) {
				case string:
					text[i] = v
				case []byte:
					text[i] = string(v)
				}
			}
			return leaderboard.SystemKey(text[0], text[1]), nil
		})
}
