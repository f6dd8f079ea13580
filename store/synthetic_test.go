package store

import (
	"context"
	"fmt"
	"strings"
	"testing"

	d5list "github.com/deep500/d5list"
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
	// Stored as any upload's, so that the organisation's page finds them.
	var other int
	if err := db.read.QueryRowContext(ctx, `SELECT count(*) FROM submissions WHERE submitter_key != ?`, organisationKey(SyntheticSubmitter)).Scan(&other); err != nil || other != 0 {
		t.Fatalf("%d synthetic submissions stored under another organisation key than their submitter's (%v)", other, err)
	}
}

// The check that a folder holds synthetic submissions only reads the
// partial index of real ones, never the table: at ten million a count over
// the table took a minute. A bulk load leaves that index in place, since
// it adds no entry to it.
func TestRealSubmissionsCountsFromTheirIndex(t *testing.T) {
	db, _ := newTestDB(t)
	ctx := context.Background()
	if text := queryPlan(t, db, `SELECT count(*) FROM submissions `+notSynthetic); !strings.Contains(text, "INDEX submissions_real") {
		t.Fatalf("counting real submissions: plan %q, want the partial index submissions_real", text)
	}

	bench, err := db.Benchmark(ctx, "l2-digits")
	if err != nil {
		t.Fatal(err)
	}
	err = db.WithoutIndexes(ctx, func() error {
		first, err := db.NextSubmissionID(ctx)
		if err != nil {
			return err
		}
		b, err := db.EncodeSynthetic(ctx, leaderboard.SyntheticRange(bench, 0, 5, 5, SyntheticSubmitter, 1), first)
		if err != nil {
			return err
		}
		var kept int
		if err := db.read.QueryRowContext(ctx, `SELECT count(*) FROM sqlite_master WHERE name = 'submissions_real'`).Scan(&kept); err != nil {
			return err
		}
		if kept != 1 {
			t.Errorf("the bulk load dropped submissions_real, which it adds nothing to")
		}
		return db.StoreSynthetic(ctx, b)
	})
	if err != nil {
		t.Fatal(err)
	}
	if n, err := db.RealSubmissions(ctx); err != nil || n != 0 {
		t.Fatalf("after 5 synthetic submissions: %d real, %v; want 0", n, err)
	}
	for i, submitter := range []string{"Real Lab", "SYNTHETIC (d5list admin seed-synthetic)"} {
		owner, err := db.EnsureUser(ctx, fmt.Sprintf("real%d", i), d5list.RoleCompetitor)
		if err != nil {
			t.Fatal(err)
		}
		if err := db.CreateSubmission(ctx, &d5list.Submission{BenchmarkID: "l2-digits", OwnerID: owner.ID, Submitter: submitter, SystemName: "box"}); err != nil {
			t.Fatal(err)
		}
	}
	if n, err := db.RealSubmissions(ctx); err != nil || n != 2 {
		t.Fatalf("after two real submissions, one named like the synthetic submitter in capitals: %d real, %v; want 2", n, err)
	}
	if err := db.SyntheticOnly(ctx); err == nil || !strings.Contains(err.Error(), "2 real submissions") {
		t.Fatalf("a folder with real submissions: %v, want a refusal counting them", err)
	}
}
