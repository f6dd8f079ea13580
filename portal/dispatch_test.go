package portal

import (
	"context"
	"database/sql"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	d5list "github.com/deep500/d5list"
	"github.com/deep500/d5list/store"
)

// countingStore is the real store, counting the calls that take the write
// lock on behalf of lease requests.
type countingStore struct {
	*store.DB
	leases, touches, actives atomic.Int64
	// beforeLease, when set, runs inside each LeaseJob call, before the
	// lease transaction; beforeActive likewise inside ActiveJobs.
	beforeLease, beforeActive func()
}

func (c *countingStore) LeaseJob(ctx context.Context, runner string, labels map[string]string, ttl time.Duration) (*d5list.Lease, error) {
	c.leases.Add(1)
	if c.beforeLease != nil {
		c.beforeLease()
	}
	return c.DB.LeaseJob(ctx, runner, labels, ttl)
}

func (c *countingStore) TouchRunner(ctx context.Context, runner string, labels map[string]string, jobID int64) error {
	c.touches.Add(1)
	return c.DB.TouchRunner(ctx, runner, labels, jobID)
}

func (c *countingStore) ActiveJobs(ctx context.Context) ([]d5list.QueuedJob, error) {
	c.actives.Add(1)
	if c.beforeActive != nil {
		c.beforeActive()
	}
	return c.DB.ActiveJobs(ctx)
}

// testStore opens a store in a folder of the test's own.
func testStore(t *testing.T) (*store.DB, string) {
	t.Helper()
	dir := t.TempDir()
	db, err := store.Open(context.Background(), dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db, dir
}

func newDispatchService(t *testing.T) (*Service, *countingStore, string) {
	t.Helper()
	db, dir := testStore(t)
	benches := []d5list.Benchmark{*digits(t)}
	gpu := *digits(t)
	gpu.ID, gpu.Requires = "gpu-bench", map[string]string{"gpu": "h100"}
	benches = append(benches, gpu)
	if err := db.UpsertBenchmarks(context.Background(), benches); err != nil {
		t.Fatal(err)
	}
	cs := &countingStore{DB: db}
	svc := New(cs, nil, Config{LeaseTTL: time.Minute}, nil)
	t.Cleanup(svc.StopWaiting)
	return svc, cs, dir
}

// queueJob stores a submission, which queues its job, and tells the
// service as an upload would.
func queueJob(t *testing.T, svc *Service, cs *countingStore, benchmark string) int64 {
	t.Helper()
	// A claim of five runs, so that the queued entry is on the board that
	// includes unverified ones, as an upload's is.
	claimed := &d5list.Result{Score: d5list.Score{Metric: d5list.MetricTimeToTrain, Value: 10, Valid: true}}
	for r := range 5 {
		claimed.Runs = append(claimed.Runs, d5list.RunMetrics{Index: r, Seed: int64(r), Converged: true, TimeToTrain: 10})
	}
	sub := &d5list.Submission{BenchmarkID: benchmark, Division: d5list.DivisionClosed, Availability: d5list.AvailabilityAvailable,
		Submitter: "test", SystemName: "test", Framework: "go", Status: d5list.StatusQueued,
		BundleSHA256: strings.Repeat("ab", 32), BundleSize: 1,
		Recipe: &d5list.Recipe{}, Claimed: claimed}
	if err := cs.CreateSubmission(context.Background(), sub); err != nil {
		t.Fatal(err)
	}
	svc.JobQueued()
	jobs, err := cs.Jobs(context.Background(), sub.ID)
	if err != nil || len(jobs) != 1 {
		t.Fatalf("jobs of submission %d: %v, %v", sub.ID, jobs, err)
	}
	return jobs[0].ID
}

type waitResult struct {
	runner string
	lease  *d5list.Lease
	err    error
}

// startWaiters sends n lease requests one after the other, each in line
// before the next is sent, so that their order is known.
func startWaiters(t *testing.T, ctx context.Context, svc *Service, n int, labels map[string]string, wait time.Duration, out chan<- waitResult) []string {
	t.Helper()
	var names []string
	for i := range n {
		name := "pool/agent-" + strconv.Itoa(svc.pool.waiting())
		names = append(names, name)
		before := svc.pool.waiting()
		go func() {
			l, err := svc.WaitLease(ctx, name, labels, wait)
			out <- waitResult{name, l, err}
		}()
		eventually(t, "lease request "+strconv.Itoa(i)+" in line", func() bool { return svc.pool.waiting() == before+1 })
	}
	return names
}

func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(5 * time.Second); !cond(); time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
	}
}

func receive(t *testing.T, results <-chan waitResult) waitResult {
	t.Helper()
	select {
	case r := <-results:
		if r.err != nil {
			t.Fatalf("WaitLease(%s): %v", r.runner, r.err)
		}
		return r
	case <-time.After(5 * time.Second):
		t.Fatal("no lease request ended")
		return waitResult{}
	}
}

// Many runners waiting and one job: one lease transaction, to the runner
// first in line, and the others go on waiting (no thundering herd).
func TestOneJobWakesOneOfManyWaiters(t *testing.T) {
	svc, cs, _ := newDispatchService(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	const n = 40
	results := make(chan waitResult, n)
	names := startWaiters(t, ctx, svc, n, nil, time.Minute, results)
	if got := cs.leases.Load(); got != 0 {
		t.Fatalf("%d lease transactions with nothing queued, want 0", got)
	}

	job := queueJob(t, svc, cs, "l2-digits-mlp-cpu")
	r := receive(t, results)
	if r.lease == nil || r.lease.Job.ID != job || r.runner != names[0] {
		t.Fatalf("%s got %+v; want job %d leased to %s, first in line", r.runner, r.lease, job, names[0])
	}
	// Several polls of the dispatcher later, nobody else has been answered
	// and the queue was leased from once.
	time.Sleep(4 * LeasePoll)
	select {
	case other := <-results:
		t.Fatalf("%s answered too (lease %v, err %v); the others must keep waiting", other.runner, other.lease, other.err)
	default:
	}
	if got := svc.pool.waiting(); got != n-1 {
		t.Fatalf("%d requests in line, want %d", got, n-1)
	}
	if got := cs.leases.Load(); got != 1 {
		t.Fatalf("%d lease transactions for one job and %d waiters, want 1", got, n)
	}

	// The next job goes to the next in line.
	job2 := queueJob(t, svc, cs, "l2-digits-mlp-cpu")
	if r := receive(t, results); r.lease == nil || r.lease.Job.ID != job2 || r.runner != names[1] {
		t.Fatalf("%s got %+v; want job %d leased to %s", r.runner, r.lease, job2, names[1])
	}

	cancel()
	for range n - 2 {
		if r := receive(t, results); r.lease != nil {
			t.Fatalf("cancelled request of %s got job %d", r.runner, r.lease.Job.ID)
		}
	}
	if got := svc.pool.waiting(); got != 0 {
		t.Fatalf("%d requests still in line after every client left", got)
	}
}

// A job goes to the first waiter whose labels fit it, however long the
// others have waited; those keep waiting.
func TestDispatchMatchesLabels(t *testing.T) {
	svc, cs, _ := newDispatchService(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	results := make(chan waitResult, 4)
	cpu := startWaiters(t, ctx, svc, 2, map[string]string{"cpu_cores": "2"}, time.Minute, results)
	gpu := startWaiters(t, ctx, svc, 1, map[string]string{"gpu": "h100"}, time.Minute, results)

	job := queueJob(t, svc, cs, "gpu-bench")
	if r := receive(t, results); r.lease == nil || r.lease.Job.ID != job || r.runner != gpu[0] {
		t.Fatalf("%s got %+v; want the GPU job %d leased to %s", r.runner, r.lease, job, gpu[0])
	}
	// One futile try for the CPU runners' labels, one lease.
	if got := cs.leases.Load(); got > 2 {
		t.Fatalf("%d lease transactions, want at most 2", got)
	}
	job2 := queueJob(t, svc, cs, "l2-digits-mlp-cpu")
	if r := receive(t, results); r.lease == nil || r.lease.Job.ID != job2 || r.runner != cpu[0] {
		t.Fatalf("%s got %+v; want job %d leased to %s", r.runner, r.lease, job2, cpu[0])
	}
}

// Waiting runners with nothing queued cost the database nothing: after
// they are in line, no transaction commits a change and none leases, and
// a runner asking again soon after is not written again.
func TestIdleLongPollDoesNotWrite(t *testing.T) {
	svc, cs, dir := newDispatchService(t)
	ctx := context.Background()
	// A connection of its own: data_version changes when another
	// connection commits a change to the file.
	watch, err := sql.Open("sqlite", "file:"+filepath.Join(dir, "d5list.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer watch.Close()
	conn, err := watch.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	dataVersion := func() int64 {
		var v int64
		if err := conn.QueryRowContext(ctx, `PRAGMA data_version`).Scan(&v); err != nil {
			t.Fatal(err)
		}
		return v
	}

	const n = 20
	wait := 6 * LeasePoll
	results := make(chan waitResult, n)
	startWaiters(t, ctx, svc, n, nil, wait, results)
	touches, version := cs.touches.Load(), dataVersion()
	if touches != n {
		t.Fatalf("%d runner rows written on arrival, want %d", touches, n)
	}
	runners, err := svc.Runners(ctx)
	if err != nil || len(runners) != n || !runners[0].Online || !runners[n-1].Online {
		t.Fatalf("Runners = %d rows, %v; want %d online", len(runners), err, n)
	}

	// The requests wait out their time: several dispatcher polls.
	for range n {
		if r := receive(t, results); r.lease != nil {
			t.Fatalf("%s got a job from an empty queue", r.runner)
		}
	}
	if v := dataVersion(); v != version {
		t.Fatalf("data_version went from %d to %d while runners waited on an empty queue", version, v)
	}
	if got := cs.leases.Load(); got != 0 {
		t.Fatalf("%d lease transactions on an empty queue, want 0", got)
	}

	// The same runners ask again at once: their rows are fresh enough.
	ctx2, cancel := context.WithCancel(ctx)
	for i := range n {
		name := "pool/agent-" + strconv.Itoa(i)
		go func() {
			l, err := svc.WaitLease(ctx2, name, nil, 10*time.Second)
			results <- waitResult{name, l, err}
		}()
	}
	eventually(t, "the second round in line", func() bool { return svc.pool.waiting() == n })
	cancel()
	for range n {
		receive(t, results)
	}
	if got := cs.touches.Load(); got != touches {
		t.Fatalf("asking again wrote %d runner rows, want none", got-touches)
	}
	if v := dataVersion(); v != version {
		t.Fatalf("data_version went from %d to %d on the second round", version, v)
	}
}

// A request cancelled while the dispatcher is taking a lease for it gives
// the lease back: the job is queued again with its attempt uncounted, and
// the next waiter gets it.
func TestCancelledWaiterGivesItsLeaseBack(t *testing.T) {
	svc, cs, _ := newDispatchService(t)
	inLease, proceed := make(chan struct{}), make(chan struct{})
	var first atomic.Bool
	cs.beforeLease = func() {
		if first.CompareAndSwap(false, true) {
			close(inLease)
			<-proceed
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	results := make(chan waitResult, 2)
	startWaiters(t, ctx, svc, 1, nil, time.Minute, results)
	job := queueJob(t, svc, cs, "l2-digits-mlp-cpu")
	<-inLease
	cancel()
	// The request cannot end before the lease it is owed is settled.
	select {
	case r := <-results:
		t.Fatalf("the cancelled request ended during its lease: %+v", r)
	case <-time.After(50 * time.Millisecond):
	}
	close(proceed)
	if r := receive(t, results); r.lease != nil {
		t.Fatalf("the cancelled request returned job %d", r.lease.Job.ID)
	}
	eventually(t, "the job queued again", func() bool {
		j, err := cs.Job(context.Background(), job)
		return err == nil && j.State == d5list.JobQueued
	})
	if j, _ := cs.Job(context.Background(), job); j.Attempts != 0 {
		t.Fatalf("the undelivered lease counted: attempts %d, want 0", j.Attempts)
	}

	// The next request may be answered before it could be seen in line.
	go func() {
		l, err := svc.WaitLease(context.Background(), "pool/next", nil, time.Minute)
		results <- waitResult{"pool/next", l, err}
	}()
	if r := receive(t, results); r.lease == nil || r.lease.Job.ID != job || r.lease.Job.Attempts != 1 {
		t.Fatalf("%s got %+v; want job %d, attempt 1", r.runner, r.lease, job)
	}
}
