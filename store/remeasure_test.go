package store

import (
	"context"
	"testing"
	"time"

	d5list "github.com/deep500/d5list"
)

// A re-measure waits in the queue as it asked, and the dispatcher's look
// at the queue follows: it counts the job only once its time has come, and
// its mark changes when its wait for another runner ends, so that a
// runner told "nothing for you" is tried again then.
func TestRemeasureWaitsInTheQueue(t *testing.T) {
	ctx := context.Background()
	db, clk := newTestDB(t)
	sub := mustCreate(t, db, testSubmission("l2-digits", 1, 2, 3))
	labels := map[string]string{"runs": "builtin"}
	l := mustLease(t, db, "a/1", labels, time.Minute)
	for _, r := range []string{"a/1", "b/1"} {
		if err := db.TouchRunner(ctx, r, labels, 0); err != nil {
			t.Fatal(err)
		}
	}
	req := d5list.RemeasureRequest{Why: "a gap, seen once", After: 10 * time.Second, Elsewhere: 30 * time.Second}
	measured := &d5list.Result{Runs: []d5list.RunMetrics{{Index: 0, Seed: 1}}}
	if err := db.RemeasureJob(ctx, l.Job.ID, l.Secret, measured, d5list.StatusDiscrepancy, []d5list.Reason{{Code: "timing_mismatch"}}, req); err != nil {
		t.Fatal(err)
	}
	// Reported twice, as a runner whose answer was lost does: one re-measure.
	if err := db.RemeasureJob(ctx, l.Job.ID, l.Secret, measured, d5list.StatusDiscrepancy, nil, req); err != nil {
		t.Fatalf("a repeated report: %v", err)
	}
	jobs, err := db.Jobs(ctx, sub.ID)
	if err != nil || len(jobs) != 2 || jobs[1].Remeasure != 1 {
		t.Fatalf("jobs %+v, %v: want the first and one re-measure", jobs, err)
	}

	look := func() (int, string) {
		t.Helper()
		n, mark, err := db.LeasableJobs(ctx)
		if err != nil {
			t.Fatal(err)
		}
		return n, mark
	}
	if n, _ := look(); n != 0 {
		t.Fatalf("%d leasable jobs before the re-measure's time, want 0", n)
	}
	clk.Advance(11 * time.Second)
	n, waiting := look()
	if n != 1 {
		t.Fatalf("%d leasable jobs once its time came, want 1", n)
	}
	if l, err := db.LeaseJob(ctx, "a/1", labels, time.Minute); err != nil || l != nil {
		t.Fatalf("runner a leased %+v, %v while runner b is online", l, err)
	}
	clk.Advance(30 * time.Second)
	if _, after := look(); after == waiting {
		t.Fatalf("the mark %q did not change when the wait for another runner ended", after)
	}
	if err := db.TouchRunner(ctx, "b/1", labels, 0); err != nil {
		t.Fatal(err)
	}
	// The portal's own workload times every run: its re-measure runs the
	// claimed seeds again too (a re-measure of the competitor's code runs
	// only fresh ones: portal's TestRemeasureConfirmsAGapOnAnotherRunner).
	again := mustLease(t, db, "a/1", labels, time.Minute)
	if again.Job.ID != jobs[1].ID || len(again.Spec.Seeds) != 3 || len(again.Spec.FreshSeeds) == 0 {
		t.Fatalf("lease %+v: want the re-measure with the claimed seeds and fresh ones", again)
	}
}
