package store

import (
	"context"
	"strings"
	"testing"

	d5list "github.com/deep500/d5list"
	"github.com/deep500/d5list/leaderboard"
)

// wantFound is what a search for text should find on one board, from the
// in-memory ranking: each system's best entry whose organisation, system,
// framework or accelerator contains text, or, for a text of one or two
// characters, starts with it.
func wantFound(board []d5list.Entry, text string, perBoard int) ([]d5list.Entry, int) {
	text = strings.ToLower(text)
	match := strings.Contains
	if len([]rune(text)) < 3 {
		match = strings.HasPrefix
	}
	var out []d5list.Entry
	n := 0
	for _, e := range board {
		for _, name := range []string{e.Submitter, e.SystemName, e.Framework, e.Accelerator} {
			if name != "" && match(strings.ToLower(name), text) {
				if n++; n <= perBoard {
					out = append(out, e)
				}
				break
			}
		}
	}
	return out, n
}

// A search across the boards finds, on each board, the entries the board's
// default view lists whose names hold the text, with their ranks on that
// view, whatever write paths made the rows (uploads, verdicts, reviews and
// re-runs, and the seeding's bulk path).
func TestSearchFindsWhatTheBoardsList(t *testing.T) {
	db, bench, _, scored := scoredRandomBoard(t, 3)
	ctx := context.Background()
	board := scored.Rank(leaderboard.Options{})
	for _, text := range []string{"lab a", "LAB", "box-1", "x-1", "h100", "mi300x", "torch", "ja", "r", "zzz", `"`, "ø"} {
		const perBoard = 3
		want, wantN := wantFound(board, text, perBoard)
		found, cut, err := db.Search(ctx, text, perBoard)
		if err != nil || cut {
			t.Fatalf("search %q: %v, cut %v", text, err, cut)
		}
		if wantN == 0 {
			if len(found) != 0 {
				t.Errorf("search %q found %+v, want nothing", text, found)
			}
			continue
		}
		if len(found) != 1 || found[0].BenchmarkID != bench.ID || found[0].Systems != wantN || len(found[0].Entries) != len(want) {
			t.Fatalf("search %q: %+v, want %d of %d systems on %s", text, found, len(want), wantN, bench.ID)
		}
		for i, e := range found[0].Entries {
			if e.SubmissionID != want[i].SubmissionID || e.Rank != want[i].Rank {
				t.Errorf("search %q, result %d: submission %d at rank %d, want %d at rank %d", text, i, e.SubmissionID, e.Rank, want[i].SubmissionID, want[i].Rank)
			}
		}
	}
	if _, n := wantFound(board, "lab a", 1); n == 0 {
		t.Fatal("the random board lists no Lab A: the test checks nothing")
	}

	seeded := openTestDB(t, t.TempDir())
	if err := seeded.UpsertBenchmarks(ctx, []d5list.Benchmark{*bench}); err != nil {
		t.Fatal(err)
	}
	if err := seeded.InsertSynthetic(ctx, leaderboard.Synthetic(bench, 200, 20, SyntheticSubmitter, 1)); err != nil {
		t.Fatal(err)
	}
	found, _, err := seeded.Search(ctx, "seed-synthetic", 5)
	if err != nil || len(found) != 1 || found[0].Systems != 20 || len(found[0].Entries) != 5 || found[0].Entries[0].Rank != 1 {
		t.Errorf("a seeded board searched for its submitter: %+v (%v), want the first 5 of its 20 systems", found, err)
	}
}

// A text that many names hold looks up the first
// leaderboard.MaxSearchNames and says that it cut the rest.
func TestSearchBoundsTheNames(t *testing.T) {
	db := openTestDB(t, t.TempDir())
	ctx := context.Background()
	bench := testBenchmark("l2-many", nil)
	if err := db.UpsertBenchmarks(ctx, []d5list.Benchmark{bench}); err != nil {
		t.Fatal(err)
	}
	n := leaderboard.MaxSearchNames + 10
	if err := db.InsertSynthetic(ctx, leaderboard.Synthetic(&bench, n, n, SyntheticSubmitter, 1)); err != nil {
		t.Fatal(err)
	}
	found, cut, err := db.Search(ctx, "system", 10)
	if err != nil || !cut || len(found) != 1 || found[0].Systems > leaderboard.MaxSearchNames || len(found[0].Entries) != 10 {
		t.Fatalf("a search that more than %d system names hold: %+v, cut %v (%v)", leaderboard.MaxSearchNames, found, cut, err)
	}
}
