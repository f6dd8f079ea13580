package store

import (
	"context"
	"testing"
	"time"

	d5list "github.com/deep500/d5list"
	"github.com/deep500/d5list/leaderboard"
)

// Reads under a Snapshot, by any method, see the state of its first read
// however many commits follow: a board's rows, its summary and a
// submission verified meanwhile all read as before the verdict, where
// each read on its own sees it.
func TestSnapshotReadsOneCommittedState(t *testing.T) {
	db, _ := newTestDB(t)
	ctx := context.Background()
	bench, err := db.Benchmark(ctx, "l2-digits")
	if err != nil {
		t.Fatal(err)
	}
	if err := db.InsertSynthetic(ctx, leaderboard.Synthetic(bench, 5, 5, SyntheticSubmitter, 1)); err != nil {
		t.Fatal(err)
	}
	// A new system, faster than every synthetic one, verified.
	verifyLeader := func() int64 {
		s := mustCreate(t, db, testSubmission(bench.ID, 1, 2, 3))
		l := mustLease(t, db, "r", nil, time.Hour)
		measured := &d5list.Result{}
		for r := range 3 {
			measured.Runs = append(measured.Runs, d5list.RunMetrics{Index: r, Seed: int64(r + 1), Converged: true, TimeToTrain: 0.5})
		}
		if err := db.CompleteJob(ctx, l.Job.ID, l.Secret, measured, d5list.StatusVerified, nil); err != nil {
			t.Fatal(err)
		}
		return s.ID
	}
	read := func(ctx context.Context) (leader int64, total int, summarised int) {
		t.Helper()
		page, total, err := db.BoardPage(ctx, bench.ID, leaderboard.Options{}, 0, 10)
		if err != nil {
			t.Fatal(err)
		}
		sum, err := db.BoardSummary(ctx, bench.ID, false)
		if err != nil {
			t.Fatal(err)
		}
		return page[0].SubmissionID, total, len(sum.Top)
	}
	before, total, summarised := read(ctx)
	if total != 5 || summarised != 5 {
		t.Fatalf("before: %d entries, %d summarised, want 5", total, summarised)
	}

	var id int64
	err = db.Snapshot(ctx, func(ctx context.Context) error {
		if leader, _, _ := read(ctx); leader != before {
			t.Fatalf("leader %d under the snapshot, want %d", leader, before)
		}
		id = verifyLeader() // committed by another transaction, now
		// Nested, the same snapshot.
		return db.Snapshot(ctx, func(ctx context.Context) error {
			if leader, total, summarised := read(ctx); leader != before || total != 5 || summarised != 5 {
				t.Errorf("under the snapshot after the verdict: leader %d, %d entries, %d summarised; want %d, 5, 5",
					leader, total, summarised, before)
			}
			if _, err := db.Submission(ctx, id); d5list.ErrorCode(err) != d5list.ENOTFOUND {
				t.Errorf("the submission verified meanwhile, under the snapshot: %v, want ENOTFOUND", err)
			}
			return nil
		})
	})
	if err != nil {
		t.Fatal(err)
	}
	if leader, total, summarised := read(ctx); leader != id || total != 6 || summarised != 6 {
		t.Fatalf("after the snapshot: leader %d, %d entries, %d summarised; want %d, 6, 6", leader, total, summarised, id)
	}
}
