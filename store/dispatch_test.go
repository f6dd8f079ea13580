package store

import (
	"context"
	"testing"
	"time"

	d5list "github.com/deep500/d5list"
)

// A lease that never reached its runner goes back to the queue as if it
// had not been taken: its secret is dead and the attempt is not counted.
func TestReleaseLeaseRequeuesWithoutCountingTheAttempt(t *testing.T) {
	db, _ := newTestDB(t)
	ctx := context.Background()
	mustCreate(t, db, testSubmission("l2-digits", 1))

	n, before, err := db.LeasableJobs(ctx)
	if err != nil || n != 1 {
		t.Fatalf("LeasableJobs = %d, %v; want 1 waiting", n, err)
	}
	l := mustLease(t, db, "r/a", nil, time.Minute)
	n, leased, err := db.LeasableJobs(ctx)
	if err != nil || n != 0 || leased == before {
		t.Fatalf("after the lease: LeasableJobs = %d, %q, %v; want 0 and a new mark", n, leased, err)
	}

	wantCode(t, "release with a wrong secret", db.ReleaseLease(ctx, l.Job.ID, "nope", "test"), d5list.EFORBIDDEN)
	if err := db.ReleaseLease(ctx, l.Job.ID, l.Secret, "the runner left"); err != nil {
		t.Fatalf("ReleaseLease: %v", err)
	}
	j, err := db.Job(ctx, l.Job.ID)
	if err != nil {
		t.Fatal(err)
	}
	if j.State != d5list.JobQueued || j.Attempts != 0 || j.RunnerID != "" {
		t.Fatalf("released job: state %s, attempts %d, runner %q; want queued, 0, none", j.State, j.Attempts, j.RunnerID)
	}
	_, err = db.CheckLease(ctx, l.Job.ID, l.Secret)
	wantCode(t, "the released lease's secret", err, d5list.EFORBIDDEN)
	if n, _, _ := db.LeasableJobs(ctx); n != 1 {
		t.Fatalf("after the release %d jobs are leasable, want 1", n)
	}
	again := mustLease(t, db, "r/b", nil, time.Minute)
	if again.Job.ID != l.Job.ID || again.Job.Attempts != 1 {
		t.Fatalf("leased again: job %d attempt %d, want job %d attempt 1", again.Job.ID, again.Job.Attempts, l.Job.ID)
	}
	// Releasing a lease already superseded changes nothing.
	wantCode(t, "release of the superseded lease", db.ReleaseLease(ctx, l.Job.ID, l.Secret, "late"), d5list.EFORBIDDEN)
	if j, _ := db.Job(ctx, l.Job.ID); j.State != d5list.JobLeased || j.RunnerID != "r/b" {
		t.Fatalf("after a stale release: state %s runner %q, want leased by r/b", j.State, j.RunnerID)
	}
}
