package store

import (
	"context"
	"strings"
	"testing"

	"github.com/deep500/d5list/leaderboard"
)

// A batch encoded for numbers another batch took first is refused whole,
// rather than stored under numbers its board rows do not carry.
func TestStoreSyntheticRefusesABatchNumberedForOtherIDs(t *testing.T) {
	db, _ := newTestDB(t)
	ctx := context.Background()
	bench, err := db.Benchmark(ctx, "l2-digits")
	if err != nil {
		t.Fatal(err)
	}
	first, err := db.NextSubmissionID(ctx)
	if err != nil {
		t.Fatal(err)
	}
	a, err := db.EncodeSynthetic(ctx, leaderboard.SyntheticRange(bench, 0, 5, 5, SyntheticSubmitter, 1), first)
	if err != nil {
		t.Fatal(err)
	}
	late, err := db.EncodeSynthetic(ctx, leaderboard.SyntheticRange(bench, 5, 10, 5, SyntheticSubmitter, 1), first)
	if err != nil {
		t.Fatal(err)
	}
	if err := db.StoreSynthetic(ctx, a); err != nil {
		t.Fatal(err)
	}
	err = db.StoreSynthetic(ctx, late)
	if err == nil || !strings.Contains(err.Error(), "numbered from") {
		t.Fatalf("storing a batch numbered from %d after one of 5: %v, want a refusal", first, err)
	}
	var n int
	if err := db.read.QueryRowContext(ctx, `SELECT (SELECT count(*) FROM submissions) + (SELECT count(*) FROM board_rows)`).Scan(&n); err != nil {
		t.Fatal(err)
	}
	if n != 10 {
		t.Fatalf("%d submissions and board rows stored, want the first batch's 5 and 5", n)
	}
}
