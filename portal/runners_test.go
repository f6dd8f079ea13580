package portal

import (
	"context"
	"strings"
	"testing"
	"time"

	d5list "github.com/deep500/d5list"
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

// A job read waiting and leased before the queue is listed is read again,
// not shown queued with no place in line: an event stream would tell its
// viewer a state the job was never in.
func TestSubmissionJobIsNeverQueuedWithoutAPlace(t *testing.T) {
	svc, cs, _ := newDispatchService(t)
	ctx := context.Background()
	jobID := queueJob(t, svc, cs, "l2-digits-mlp-cpu")
	job, err := cs.Job(ctx, jobID)
	if err != nil {
		t.Fatal(err)
	}
	leased := false
	cs.beforeActive = func() {
		if !leased {
			leased = true
			if l, err := cs.DB.LeaseJob(ctx, "runner-1", map[string]string{}, time.Minute); err != nil || l == nil {
				t.Errorf("lease between the job's read and the queue's listing: %+v, %v", l, err)
			}
		}
	}
	got, err := svc.SubmissionJob(ctx, job.SubmissionID)
	if err != nil {
		t.Fatal(err)
	}
	if !leased {
		t.Fatal("the queue was not listed: the lease was never put between the two reads")
	}
	if got.State != d5list.JobLeased || got.Position != 0 {
		t.Fatalf("a job leased while it was read: state %s, place %d; want leased, no place", got.State, got.Position)
	}
}

// A failed re-run's public reason is a sentence: the run's output, which a
// runner appends, stays out of the submission's reasons and the queue.
func TestFailKeepsTheOutputPrivate(t *testing.T) {
	svc, cs, _ := newDispatchService(t)
	ctx := context.Background()
	jobID := queueJob(t, svc, cs, "l2-digits-mlp-cpu")
	for attempt := 0; ; attempt++ {
		lease, err := cs.LeaseJob(ctx, "runner-1", map[string]string{}, time.Minute)
		if err != nil || lease == nil || lease.Job.ID != jobID {
			t.Fatalf("lease: %+v, %v", lease, err)
		}
		msg := "exit status 1" + d5list.FailureOutputMarker + "\nstderr: private-training-detail-" + strings.Repeat("x", 2000)
		if err := svc.Fail(ctx, jobID, lease.Secret, msg); err != nil {
			t.Fatal(err)
		}
		job, err := cs.Job(ctx, jobID)
		if err != nil {
			t.Fatal(err)
		}
		if strings.Contains(job.Error, "private-training-detail") || !strings.HasPrefix(job.Error, "exit status 1") {
			t.Fatalf("job error %q", job.Error)
		}
		if job.State == d5list.JobFailed {
			break
		}
		if attempt > 10 {
			t.Fatal("the job never failed for good")
		}
	}
	sub, err := svc.Submission(ctx, 1)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range sub.Reasons {
		if strings.Contains(r.Message, "private-training-detail") || len(r.Message) > 600 {
			t.Errorf("public reason %q", r.Message)
		}
	}
	if len(sub.Reasons) == 0 || sub.Status != d5list.StatusFailed {
		t.Errorf("submission %s reasons %+v", sub.Status, sub.Reasons)
	}
}

// The portal's in-process runners show in the pool as remote ones do
// (issue 16): online with their labels when they ask, holding the job they
// leased.
func TestInProcessRunnersAreInThePool(t *testing.T) {
	svc, cs, _ := newDispatchService(t)
	ctx := context.Background()
	labels := map[string]string{d5list.LabelRuns: d5list.RunsBuiltin, "cpu_model": "AMD EPYC"}
	if l, err := svc.Lease(ctx, "local-0", labels); err != nil || l != nil {
		t.Fatalf("lease from an empty queue: %+v %v", l, err)
	}
	find := func() d5list.Runner {
		t.Helper()
		runners, err := svc.Runners(ctx)
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range runners {
			if r.Name == "local-0" {
				return r
			}
		}
		t.Fatalf("local-0 is not in the pool: %+v", runners)
		return d5list.Runner{}
	}
	if r := find(); !r.Online || r.Labels["cpu_model"] != "AMD EPYC" || r.CurrentJob != 0 {
		t.Fatalf("the idle in-process runner: %+v", r)
	}
	job := queueJob(t, svc, cs, "l2-digits-mlp-cpu")
	l, err := svc.Lease(ctx, "local-0", labels)
	if err != nil || l == nil || l.Job.ID != job {
		t.Fatalf("lease: %+v %v", l, err)
	}
	if r := find(); r.CurrentJob != job {
		t.Fatalf("the busy in-process runner: %+v, want job %d", r, job)
	}
}
