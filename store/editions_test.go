package store

import (
	"bytes"
	"context"
	"encoding/json"
	"reflect"
	"strings"
	"testing"
	"time"

	d5list "github.com/deep500/d5list"
	"github.com/deep500/d5list/leaderboard"
)

// A freeze's hook runs once, after the edition is written and before it is
// committed: readers do not see the edition yet, and right after the call
// they do. A freeze that fails before its commit never runs it.
func TestFreezeRunsItsHookRightBeforeTheCommit(t *testing.T) {
	ctx := context.Background()
	db := openTestDB(t, t.TempDir())
	board := d5list.Leaderboard{Benchmark: d5list.Benchmark{ID: "b1"}, Entries: []d5list.Entry{{Rank: 1, SubmissionID: 3, Value: 1.5}}}
	calls := 0
	var given *d5list.Edition
	frozen, err := db.FreezeEdition(ctx, "2026-11", "olga", []d5list.Leaderboard{board}, func(ed *d5list.Edition) {
		calls++
		given = ed
		if ed.Name != "2026-11" || ed.FrozenBy != "olga" || len(ed.Boards) != 1 {
			t.Errorf("the hook was given the edition %+v, want the one being frozen", ed)
		}
		if eds, err := db.Editions(ctx); err != nil || len(eds) != 0 {
			t.Errorf("before the commit a reader sees the editions %+v (%v), want none", eds, err)
		}
	})
	if err != nil || calls != 1 {
		t.Fatalf("the freeze ran its hook %d times (%v), want once", calls, err)
	}
	if frozen != given {
		t.Errorf("the freeze returned %+v, and gave its hook %+v: want the same edition", frozen, given)
	}
	if eds, err := db.Editions(ctx); err != nil || len(eds) != 1 || eds[0].Name != "2026-11" {
		t.Fatalf("after the freeze: %+v (%v), want the edition", eds, err)
	}
	if _, err := db.FreezeEdition(ctx, "2026-11", "olga", []d5list.Leaderboard{board}, func(*d5list.Edition) { calls++ }); d5list.ErrorCode(err) != d5list.ECONFLICT || calls != 1 {
		t.Fatalf("a second freeze of the name: %v, the hook run %d times in all; want a conflict and no run", err, calls)
	}
}

func TestEditionIsImmutable(t *testing.T) {
	ctx := context.Background()
	db, err := Open(ctx, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	board := d5list.Leaderboard{Benchmark: d5list.Benchmark{ID: "b1"}, Entries: []d5list.Entry{{Rank: 1, SubmissionID: 3, Value: 1.5}}}
	if _, err := db.FreezeEdition(ctx, "2026-11", "olga", []d5list.Leaderboard{board}, nil); err != nil {
		t.Fatal(err)
	}
	for _, bad := range []string{"", "a/b", "../x", strings.Repeat("x", 65)} {
		if _, err := db.FreezeEdition(ctx, bad, "olga", nil, nil); d5list.ErrorCode(err) != d5list.EINVALID {
			t.Errorf("name %q: %v", bad, err)
		}
	}
	if _, err := db.FreezeEdition(ctx, "2026-11", "olga", nil, nil); d5list.ErrorCode(err) != d5list.ECONFLICT {
		t.Errorf("second freeze of one name: %v", err)
	}
	for _, stmt := range []string{
		`UPDATE edition_boards SET board = '{}'`,
		`DELETE FROM edition_boards`,
		`UPDATE editions SET frozen_by = 'mallory'`,
		`DELETE FROM editions`,
	} {
		if _, err := db.write.ExecContext(ctx, stmt); err == nil || !strings.Contains(err.Error(), "frozen") {
			t.Errorf("%s: %v, want the trigger's refusal", stmt, err)
		}
	}
	e, err := db.Edition(ctx, "2026-11")
	if err != nil {
		t.Fatal(err)
	}
	if len(e.Boards) != 1 || e.Boards[0].Entries[0].Value != 1.5 || e.FrozenBy != "olga" {
		t.Errorf("edition read back: %+v", e)
	}
	list, err := db.Editions(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(list) != 1 || list[0].Entries != 1 {
		t.Errorf("editions: %+v", list)
	}
	if _, err := db.Edition(ctx, "nope"); d5list.ErrorCode(err) != d5list.ENOTFOUND {
		t.Errorf("missing edition: %v", err)
	}
}

// The development chart read from what each freeze kept is the one made
// from the editions' boards themselves (leaderboard.Development), for
// boards of one entry, fewer than ten, an even and an odd number, and none;
// and migration 0046's SQL, which makes the same points for editions
// frozen before it, agrees with the freeze's.
func TestEditionDevelopmentIsTheBoardsOwn(t *testing.T) {
	ctx := context.Background()
	db, clock := newTestDB(t)
	board := func(id string, n int, seed float64) d5list.Leaderboard {
		b := d5list.Leaderboard{Benchmark: d5list.Benchmark{ID: id}, Entries: []d5list.Entry{}}
		for i := range n {
			// In rank order, lower first, with a tie and uneven gaps.
			b.Entries = append(b.Entries, d5list.Entry{Rank: i + 1, SubmissionID: int64(i + 1), Value: seed + float64(i*i/3)})
		}
		return b
	}
	names := []string{"2026-06", "2026-11", "2027-06"}
	for i, name := range names {
		clock.Advance(time.Hour)
		boards := []d5list.Leaderboard{board("a", 1+i*7, 1.5), board("b", 10+i, 0.25), board("c", 0, 0)}
		if _, err := db.FreezeEdition(ctx, name, "olga", boards, nil); err != nil {
			t.Fatal(err)
		}
	}
	want := map[string][]leaderboard.DevelopmentPoint{}
	for _, name := range names {
		e, err := db.Edition(ctx, name)
		if err != nil {
			t.Fatal(err)
		}
		for _, b := range e.Boards {
			if ps := leaderboard.Development([]string{name}, [][]d5list.Entry{b.Entries}); len(ps) > 0 {
				want[b.Benchmark.ID] = append(want[b.Benchmark.ID], ps...)
			}
		}
	}
	got, err := db.EditionDevelopment(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, want) || len(got["a"]) != 3 || len(got["b"]) != 3 || got["c"] != nil {
		t.Fatalf("development kept by the freezes:\n%+v\nfrom the boards:\n%+v", got, want)
	}

	migration, err := migrationFS.ReadFile("migrations/0046_edition_board_points.sql")
	if err != nil {
		t.Fatal(err)
	}
	fill := string(migration)[strings.LastIndex(string(migration), "INSERT INTO edition_board_points"):]
	fill = strings.Replace(fill, "INSERT INTO edition_board_points", "INSERT INTO temp.migrated", 1)
	tx, err := db.write.BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback()
	for _, stmt := range []string{`CREATE TEMP TABLE migrated AS SELECT * FROM edition_board_points WHERE 0`, fill} {
		if _, err := tx.ExecContext(ctx, stmt); err != nil {
			t.Fatalf("%s: %v", stmt, err)
		}
	}
	var differ int
	if err := tx.QueryRowContext(ctx, `SELECT count(*) FROM (
			SELECT edition, benchmark_id, entries, best, tenth, median FROM edition_board_points
			EXCEPT SELECT edition, benchmark_id, entries, best, tenth, median FROM temp.migrated
		UNION ALL
			SELECT edition, benchmark_id, entries, best, tenth, median FROM temp.migrated
			EXCEPT SELECT edition, benchmark_id, entries, best, tenth, median FROM edition_board_points)`).Scan(&differ); err != nil {
		t.Fatal(err)
	}
	if differ != 0 {
		t.Fatalf("migration 0046 makes %d points other than the freezes'", differ)
	}
}

// A frozen board is stored as json.Marshal writes it, though it is made of
// its entries' own encodings (which edition_systems keeps): the edition
// pages and exports read it back with encoding/json.
func TestFrozenBoardIsItsJSON(t *testing.T) {
	bench := &d5list.Benchmark{ID: "l2-bench", Name: "Bench <&>", Level: 2,
		Ranking: d5list.RankingRule{Metric: d5list.MetricTimeToTrain, Direction: d5list.LowerIsBetter}}
	subs := leaderboard.SyntheticRange(bench, 0, 40, 12, "synthetic <lab> & co", 3)
	for i := range subs {
		subs[i].Status = d5list.StatusVerified
	}
	for _, board := range []d5list.Leaderboard{
		{Benchmark: *bench, Entries: leaderboard.Rank(bench, subs, leaderboard.Options{})},
		{Benchmark: *bench, Entries: []d5list.Entry{}},
		{Benchmark: *bench},
	} {
		want, err := json.Marshal(&board)
		if err != nil {
			t.Fatal(err)
		}
		got, entries, err := encodeFrozenBoard(&board)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, want) {
			t.Fatalf("a board of %d entries encoded as\n%s\nwant json.Marshal's\n%s", len(board.Entries), got, want)
		}
		if len(entries) != len(board.Entries) {
			t.Fatalf("%d entries encoded apart, want %d", len(entries), len(board.Entries))
		}
		for i := range entries {
			if one, _ := json.Marshal(&board.Entries[i]); !bytes.Equal(entries[i], one) {
				t.Fatalf("entry %d encoded apart as %s, want %s", i, entries[i], one)
			}
		}
	}
}

// The latest edition's name is one index lookup, and a snapshot's own:
// an edition frozen after the snapshot's first read is not in it.
func TestLatestEditionNameIsTheSnapshots(t *testing.T) {
	ctx := context.Background()
	db := openTestDB(t, t.TempDir())
	if plan := queryPlan(t, db, latestEditionQuery); !strings.Contains(plan, "editions_by_time") || strings.Contains(plan, "TEMP B-TREE") {
		t.Fatalf("reading the latest edition: plan %q, want the index editions_by_time and no sort", plan)
	}
	board := d5list.Leaderboard{Benchmark: d5list.Benchmark{ID: "b1"}, Entries: []d5list.Entry{{Rank: 1, SubmissionID: 3, Value: 1.5}}}
	if name, err := db.LatestEditionName(ctx); err != nil || name != "" {
		t.Fatalf("before any freeze: %q (%v), want none", name, err)
	}
	if _, err := db.FreezeEdition(ctx, "2026-06", "olga", []d5list.Leaderboard{board}, nil); err != nil {
		t.Fatal(err)
	}
	err := db.Snapshot(ctx, func(ctx context.Context) error {
		if name, err := db.LatestEditionName(ctx); err != nil || name != "2026-06" {
			t.Fatalf("in the snapshot: %q (%v), want 2026-06", name, err)
		}
		if _, err := db.FreezeEdition(context.Background(), "2026-11", "olga", []d5list.Leaderboard{board}, nil); err != nil {
			return err
		}
		if name, err := db.LatestEditionName(ctx); err != nil || name != "2026-06" {
			t.Errorf("in the snapshot, after a freeze committed: %q (%v), want the snapshot's 2026-06", name, err)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if name, err := db.LatestEditionName(ctx); err != nil || name != "2026-11" {
		t.Fatalf("after the snapshot: %q (%v), want 2026-11", name, err)
	}
}
