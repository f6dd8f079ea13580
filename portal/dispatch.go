package portal

import (
	"context"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	d5list "github.com/deep500/d5list"
)

// Dispatch. Remote runners long-poll for work. They do not look at the
// queue themselves: each lease request joins a line of waiters, and one
// dispatcher goroutine looks at the queue for all of them (when a job is
// queued or requeued, when a runner arrives, and every LeasePoll for
// leases that expired and jobs written by other processes). Its look is a
// read; only when a job waits does it take the write lock, to lease for
// the first waiter in line whose labels have not already come up empty
// against the same queue. So a job costs one lease transaction, not one
// per waiting runner, and an idle pool writes nothing.

// LeasePoll is how often the dispatcher looks at the queue when no
// notification came: jobs also become available by lease expiry, and by
// other processes writing the same database. The look is a read.
const LeasePoll = 250 * time.Millisecond

// futileFor is how long the dispatcher trusts that some labels fit no
// waiting job while the queue's mark is unchanged; after it, they are
// tried once more (a safety net: the mark covers every change it knows).
const futileFor = 5 * time.Second

// runnerFresh is how long a recorded "last seen" may age while the runner
// is between two lease requests: store.RunnerOnlineWindow (45 s) less 3 s
// for the gap from one request's answer to the next request. A lease
// request skips writing the runner's row when the last write will be
// younger than this when the request ends, so that a runner polling every
// 20 s is written every other request and still never shows offline.
const runnerFresh = 42 * time.Second

// DispatchStore is what the dispatcher needs besides Store: a read-only
// look at the queue, and a way to give back a lease that no runner got.
type DispatchStore interface {
	LeasableJobs(ctx context.Context) (waiting int, mark string, err error)
	ReleaseLease(ctx context.Context, jobID int64, secret, reason string) error
}

type leaseResult struct {
	lease *d5list.Lease
	err   error
}

// waiter is one lease request in line.
type waiter struct {
	runner  string
	labels  map[string]string
	key     string // labels, canonical: waiters with equal keys fit the same jobs
	arrived time.Time
	// claimed: the dispatcher is leasing for it now; abandoned: its
	// request ended meanwhile and waits for the outcome to undo it.
	claimed, abandoned bool
	done               chan leaseResult // receives exactly once, when it leaves the line by the dispatcher's hand
}

// seenRunner is what this process last wrote to a runner's row.
type seenRunner struct {
	labels string
	job    int64
	at     time.Time
}

// dispatcher holds the line of waiting lease requests.
type dispatcher struct {
	mu      sync.Mutex
	waiters []*waiter // arrival order
	running bool      // the dispatcher goroutine runs; it ends when the line is empty
	kick    chan struct{}
	stopped chan struct{}
	seen    map[string]seenRunner
}

func newDispatcher() *dispatcher {
	return &dispatcher{kick: make(chan struct{}, 1), stopped: make(chan struct{}), seen: map[string]seenRunner{}}
}

// wake asks the dispatcher to look at the queue; wake-ups while it is
// busy fold into one more look.
func (d *dispatcher) wake() {
	select {
	case d.kick <- struct{}{}:
	default:
	}
}

func (d *dispatcher) stop() {
	d.mu.Lock()
	defer d.mu.Unlock()
	select {
	case <-d.stopped:
	default:
		close(d.stopped)
	}
}

// join puts w at the end of the line; it reports whether the dispatcher
// goroutine must be started.
func (d *dispatcher) join(w *waiter) (start, ok bool) {
	d.mu.Lock()
	defer d.mu.Unlock()
	select {
	case <-d.stopped:
		return false, false
	default:
	}
	d.waiters = append(d.waiters, w)
	start = !d.running
	d.running = true
	return start, true
}

func (d *dispatcher) remove(w *waiter) {
	if i := slices.Index(d.waiters, w); i >= 0 {
		d.waiters = slices.Delete(d.waiters, i, i+1)
	}
}

// leave takes w out of the line when its request ends without a lease
// handed to it. If the dispatcher is leasing for w at that moment, leave
// waits for the outcome, which the caller must then deal with.
func (d *dispatcher) leave(w *waiter) leaseResult {
	d.mu.Lock()
	if slices.Contains(d.waiters, w) && !w.claimed {
		d.remove(w)
		d.mu.Unlock()
		return leaseResult{}
	}
	w.abandoned = true
	d.mu.Unlock()
	return <-w.done
}

// claimNext marks the first waiter in line whose labels are not known to
// fit nothing in the queue as it is (mark), or returns nil.
func (d *dispatcher) claimNext(futile map[string]futileMark, mark string, now time.Time) *waiter {
	d.mu.Lock()
	defer d.mu.Unlock()
	for _, w := range d.waiters {
		if w.claimed || w.abandoned {
			continue
		}
		if f, ok := futile[w.key]; ok && f.mark == mark && now.Sub(f.at) < futileFor {
			continue
		}
		w.claimed = true
		return w
	}
	return nil
}

// settle ends the dispatcher's claim on w: a lease or an error goes to the
// request, which leaves the line; nothing leaves it waiting.
func (d *dispatcher) settle(w *waiter, res leaseResult) {
	d.mu.Lock()
	defer d.mu.Unlock()
	w.claimed = false
	if res.lease != nil || res.err != nil || w.abandoned {
		d.remove(w)
		w.done <- res
	}
}

// idle reports whether the line is empty, and if so ends the goroutine's
// turn under the lock, so that the next join starts a new one.
func (d *dispatcher) idle() bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	if len(d.waiters) == 0 {
		d.running = false
		return true
	}
	return false
}

// waitingSince returns when each runner now waiting arrived.
func (d *dispatcher) waitingSince() map[string]time.Time {
	d.mu.Lock()
	defer d.mu.Unlock()
	m := map[string]time.Time{}
	for _, w := range d.waiters {
		if w.arrived.After(m[w.runner]) {
			m[w.runner] = w.arrived
		}
	}
	return m
}

// waiting counts the lease requests in line.
func (d *dispatcher) waiting() int {
	d.mu.Lock()
	defer d.mu.Unlock()
	return len(d.waiters)
}

type futileMark struct {
	mark string
	at   time.Time
}

// dispatch is the dispatcher goroutine: it runs while lease requests wait.
func (s *Service) dispatch() {
	d := s.pool
	tick := time.NewTicker(LeasePoll)
	defer tick.Stop()
	futile := map[string]futileMark{}
	for look := 0; !d.idle(); look++ {
		select {
		case <-d.kick:
		case <-tick.C:
		case <-d.stopped:
			// The requests see stopped themselves; the one being served
			// is settled by the look in progress, which has ended.
			d.mu.Lock()
			d.running = false
			d.mu.Unlock()
			return
		}
		s.lookAtQueue(futile, look)
	}
}

// lookAtQueue leases waiting jobs to waiting runners, first come first
// served, until either runs out. futile remembers the labels that fit no
// waiting job, and the queue's mark then.
func (s *Service) lookAtQueue(futile map[string]futileMark, look int) {
	ctx := context.Background()
	now := time.Now()
	for key, f := range futile {
		if now.Sub(f.at) >= futileFor {
			delete(futile, key)
		}
	}
	ds, _ := s.store.(DispatchStore)
	for {
		// A store without a read-only look is tried at every look, once
		// per set of labels: the look's number stands for the mark.
		waiting, mark := 1, "look "+strconv.Itoa(look)
		if ds != nil {
			var err error
			waiting, mark, err = ds.LeasableJobs(ctx)
			if err != nil {
				s.log.Warn("looking at the queue", "err", err)
				return
			}
		}
		if waiting == 0 {
			return
		}
		w := s.pool.claimNext(futile, mark, now)
		if w == nil {
			return
		}
		lease, err := s.Lease(ctx, w.runner, w.labels)
		if lease == nil && err == nil {
			futile[w.key] = futileMark{mark, now}
		}
		s.pool.settle(w, leaseResult{lease, err})
		if err != nil {
			s.log.Warn("leasing a job", "runner", w.runner, "err", err)
			return
		}
	}
}

// labelsKey is labels in one spelling: sorted k=v, NUL-separated.
func labelsKey(labels map[string]string) string {
	keys := make([]string, 0, len(labels))
	for k := range labels {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var b strings.Builder
	for _, k := range keys {
		b.WriteString(k)
		b.WriteByte('=')
		b.WriteString(labels[k])
		b.WriteByte(0)
	}
	return b.String()
}

// arrive records that a runner asks for work, unless what this process
// last wrote for it (same labels, no job) stays fresh through this wait
// (runnerFresh): a runner long-polling in a loop is written every other
// request at the default 20 s wait, not on every one.
func (s *Service) arrive(ctx context.Context, ps PoolStore, runner string, labels map[string]string, wait time.Duration) error {
	key := labelsKey(labels)
	now := time.Now()
	s.pool.mu.Lock()
	prev, ok := s.pool.seen[runner]
	s.pool.mu.Unlock()
	if ok && prev.labels == key && prev.job == 0 && now.Sub(prev.at)+wait < runnerFresh {
		return nil
	}
	if err := ps.TouchRunner(ctx, runner, labels, 0); err != nil {
		return err
	}
	s.pool.mu.Lock()
	s.pool.seen[runner] = seenRunner{labels: key, at: now}
	s.pool.mu.Unlock()
	return nil
}

// touched notes a write of the runner's row that kept its labels.
func (s *Service) touched(runner string, jobID int64) {
	s.pool.mu.Lock()
	defer s.pool.mu.Unlock()
	prev, ok := s.pool.seen[runner]
	if !ok {
		// The labels are unknown here: the next lease request writes them.
		prev.labels = "\x00unknown"
	}
	s.pool.seen[runner] = seenRunner{labels: prev.labels, job: jobID, at: time.Now()}
}
