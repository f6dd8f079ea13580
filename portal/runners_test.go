package portal

import (
	"context"
	"testing"
	"time"
)

// TestSubmissionJobSharesQueueSnapshot: the places in line that every open
// event stream asks for come from one listing of the queue per
// queueSnapshotAge, while the job's own state is always fresh and a job
// newer than the listing is still placed.
func TestSubmissionJobSharesQueueSnapshot(t *testing.T) {
	svc, cs, _ := newDispatchService(t)
	ctx := context.Background()
	clock := time.Now()
	svc.queue.now = func() time.Time { return clock }

	first := queueJob(t, svc, cs, "l2-digits-mlp-cpu")
	second := queueJob(t, svc, cs, "l2-digits-mlp-cpu")
	subOf := func(jobID int64) int64 {
		t.Helper()
		job, err := cs.Job(ctx, jobID)
		if err != nil {
			t.Fatal(err)
		}
		return job.SubmissionID
	}
	place := func(jobID int64) (int, string) {
		t.Helper()
		job, err := svc.SubmissionJob(ctx, subOf(jobID))
		if err != nil || job == nil || job.ID != jobID {
			t.Fatalf("SubmissionJob for job %d: %+v, %v", jobID, job, err)
		}
		return job.Position, string(job.State)
	}

	for range 50 {
		if pos, _ := place(second); pos != 2 {
			t.Fatalf("second job at place %d, want 2", pos)
		}
	}
	if n := cs.actives.Load(); n != 1 {
		t.Fatalf("50 asks listed the queue %d times, want once", n)
	}

	third := queueJob(t, svc, cs, "l2-digits-mlp-cpu")
	if pos, _ := place(third); pos != 3 {
		t.Fatalf("a job newer than the snapshot is at place %d, want 3", pos)
	}
	if n := cs.actives.Load(); n != 2 {
		t.Fatalf("the queue was listed %d times, want 2 (a new job takes a new snapshot)", n)
	}

	// The first job is leased: its own state shows at once; the others'
	// places move up once the snapshot is older than its age.
	lease, err := cs.LeaseJob(ctx, "runner-1", map[string]string{}, time.Minute)
	if err != nil || lease == nil || lease.Job.ID != first {
		t.Fatalf("lease: %+v, %v (want job %d)", lease, err, first)
	}
	if pos, state := place(first); pos != 0 || state != "leased" {
		t.Fatalf("leased job: place %d, state %s; want 0, leased", pos, state)
	}
	if pos, _ := place(second); pos != 2 {
		t.Fatalf("within the snapshot's age the second job is at %d, want the snapshot's 2", pos)
	}
	clock = clock.Add(queueSnapshotAge)
	if pos, _ := place(second); pos != 1 {
		t.Fatalf("after the snapshot's age the second job is at %d, want 1", pos)
	}
	if n := cs.actives.Load(); n != 3 {
		t.Fatalf("the queue was listed %d times, want 3", n)
	}
}
