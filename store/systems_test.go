package store

import (
	"context"
	"strings"
	"testing"

	d5list "github.com/deep500/d5list"
	"github.com/deep500/d5list/leaderboard"
)

// A system's place on a board, read through the system index, is the
// place the in-memory ranking gives it (systems spelt in two cases are
// one); a system the board does not list has none. Its place in a frozen
// edition is the one that edition froze, written with the edition and,
// for editions frozen before the index existed, by migration 0038.
func TestSystemPlacesMatchTheBoards(t *testing.T) {
	db, bench, subs, scored := scoredRandomBoard(t, 7)
	ctx := context.Background()
	board := scored.Rank(leaderboard.Options{})
	listed := map[string]bool{}
	for _, want := range board {
		key := leaderboard.SystemKey(want.Submitter, want.SystemName)
		listed[key] = true
		got, n, err := db.SystemOnBoard(ctx, bench.ID, key)
		if err != nil || got == nil || got.SubmissionID != want.SubmissionID || got.Rank != want.Rank || n != len(board) {
			t.Fatalf("system %q: %+v of %d (%v), want submission %d at rank %d of %d", key, got, n, err, want.SubmissionID, want.Rank, len(board))
		}
	}
	for _, s := range subs {
		if key := leaderboard.SystemKey(s.Submitter, s.SystemName); !listed[key] {
			if got, _, err := db.SystemOnBoard(ctx, bench.ID, key); got != nil || err != nil {
				t.Errorf("system %q is not on the board, but SystemOnBoard gives %+v (%v)", key, got, err)
			}
		}
	}
	if len(listed) < 2 {
		t.Fatalf("the random board lists %d systems; the test needs several", len(listed))
	}

	if _, err := db.FreezeEdition(ctx, "2026-06", "olga", []d5list.Leaderboard{{Benchmark: *bench, Entries: board}}, nil); err != nil {
		t.Fatal(err)
	}
	checkEditions := func(when string) {
		t.Helper()
		for _, want := range board {
			places, err := db.SystemInEditions(ctx, leaderboard.SystemKey(want.Submitter, want.SystemName))
			if err != nil || len(places) != 1 || places[0].Edition != "2026-06" || places[0].BenchmarkID != bench.ID ||
				places[0].Entry.SubmissionID != want.SubmissionID || places[0].Entry.Rank != want.Rank || places[0].Of != len(board) {
				t.Fatalf("%s: system %s · %s in the editions: %+v (%v), want rank %d of %d in 2026-06", when, want.Submitter, want.SystemName, places, err, want.Rank, len(board))
			}
		}
		if places, err := db.SystemInEditions(ctx, leaderboard.SystemKey("nobody", "nothing")); len(places) != 0 || err != nil {
			t.Errorf("%s: a system no edition lists: %+v (%v)", when, places, err)
		}
	}
	checkEditions("frozen")

	// The same edition as a database from before migration 0038 holds it,
	// once 0038 has indexed it by system and 0050 by edition.
	for _, stmt := range []string{`DROP TRIGGER edition_systems_no_delete`, `DROP TRIGGER edition_systems_no_update`,
		`DROP TABLE edition_systems`, `DELETE FROM schema_migrations WHERE version IN (38, 50)`} {
		if _, err := db.write.ExecContext(ctx, stmt); err != nil {
			t.Fatalf("%s: %v", stmt, err)
		}
	}
	dir := db.Dir()
	db.Close()
	db = openTestDB(t, dir)
	checkEditions("migrated")
}

// A system's places are a lookup in each edition, never a scan of every
// edition's rows: a freeze writes its rows together, keyed by edition.
func TestSystemInEditionsLooksUpEachEdition(t *testing.T) {
	db, _ := newTestDB(t)
	text := queryPlan(t, db, systemInEditions, "key")
	if !strings.Contains(text, "SEARCH s USING PRIMARY KEY (edition=? AND system_key=?)") || strings.Contains(text, "SCAN s") {
		t.Fatalf("a system's places in the editions: plan %q, want a lookup of the system in each edition", text)
	}
}

// A frozen board is indexed whole, each of its entries under its own
// system: the index is written from the board's encoding, entry by entry.
func TestFreezeIndexesEverySystemOfALongBoard(t *testing.T) {
	db, _ := newTestDB(t)
	ctx := context.Background()
	bench, err := db.Benchmark(ctx, "l2-digits")
	if err != nil {
		t.Fatal(err)
	}
	const systems = 250
	subs := leaderboard.SyntheticRange(bench, 0, systems, systems, SyntheticSubmitter, 5)
	for i := range subs {
		subs[i].Status = d5list.StatusVerified
	}
	board := leaderboard.Rank(bench, subs, leaderboard.Options{})
	if len(board) != systems {
		t.Fatalf("the synthetic board has %d entries, want %d", len(board), systems)
	}
	if _, err := db.FreezeEdition(ctx, "2026-11", "olga", []d5list.Leaderboard{{Benchmark: *bench, Entries: board}}, nil); err != nil {
		t.Fatal(err)
	}
	for _, want := range board {
		places, err := db.SystemInEditions(ctx, leaderboard.SystemKey(want.Submitter, want.SystemName))
		if err != nil || len(places) != 1 || places[0].Entry.SubmissionID != want.SubmissionID || places[0].Entry.Rank != want.Rank || places[0].Of != systems {
			t.Fatalf("system %s in the editions: %+v (%v), want submission %d at rank %d of %d", want.SystemName, places, err, want.SubmissionID, want.Rank, systems)
		}
	}
}
