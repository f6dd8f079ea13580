package runner

import (
	"runtime"
	"sync"
	"syscall"
	"time"

	d5list "github.com/deep500/d5list"
)

// auditor checks a job's runs (window.audit) one after another while the
// job goes on, and only between its runs' timed windows: a run's audit
// starts once the run is over and computes while the next run starts up
// (its interpreter and imports, before it takes its seed), pauses at that
// run's gate until its run_stop arrives, and goes on after. An audit
// recomputes training epochs of a fresh run, seconds of the runner's CPU
// that would otherwise stand between the runs, on no run's clock but on
// the job's; kept off the windows, it never competes with the work a
// window times.
type auditor struct {
	mu   sync.Mutex
	cond *sync.Cond
	// held: a run's window is open (from its gate to its run_stop), and
	// audits wait at their next step.
	held bool
	// computing: an audit is between two steps, not waiting.
	computing bool
	// spent is the runner's CPU time while it audited, over the finished
	// stretches of computing; since is where the current stretch began.
	spent time.Duration
	since time.Duration
	last  chan struct{} // closed when the latest audit started is done
	done  []*pendingAudit
}

type pendingAudit struct {
	clock  *d5list.RunClock
	result *d5list.Audit
	over   chan struct{}
}

func newAuditor() *auditor {
	a := &auditor{last: make(chan struct{})}
	a.cond = sync.NewCond(&a.mu)
	close(a.last)
	return a
}

// audit checks one run after those before it, without waiting; its
// result goes into clock when wait returns.
func (a *auditor) audit(clock *d5list.RunClock, check func(pace func()) *d5list.Audit) {
	a.mu.Lock()
	before, p := a.last, &pendingAudit{clock: clock, over: make(chan struct{})}
	a.last = p.over
	a.done = append(a.done, p)
	a.mu.Unlock()
	go func() {
		defer close(p.over)
		<-before
		a.step()
		// On a thread of its own, so that the thread's CPU clock is the
		// audit's (its products are computed on the calling thread).
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
		start := threadCPU()
		p.result = check(a.step)
		if p.result != nil {
			p.result.CPUS = (threadCPU() - start).Seconds()
		}
		a.mu.Lock()
		a.stopComputing()
		a.mu.Unlock()
	}()
}

// step is called by an audit between its steps: it waits while a window
// is open.
func (a *auditor) step() {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.held {
		a.stopComputing()
		for a.held {
			a.cond.Wait()
		}
	}
	if !a.computing {
		a.computing, a.since = true, runnerCPU()
	}
}

// stopComputing ends a stretch of computing and counts its CPU; a.mu is
// held.
func (a *auditor) stopComputing() {
	if a.computing {
		a.spent += max(0, runnerCPU()-a.since)
		a.computing = false
		a.cond.Broadcast()
	}
}

// hold is called when a run opens its gate, before its window's time is
// taken: it returns once no audit computes (at most one step later).
func (a *auditor) hold() {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.held = true
	for a.computing {
		a.cond.Wait()
	}
}

// release lets the audits go on once the run's window is closed.
func (a *auditor) release() {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.held = false
	a.cond.Broadcast()
}

// cpu is the runner's CPU time spent auditing so far, the current stretch
// included: work of the runner's own, not foreign to the run beside it.
func (a *auditor) cpu() time.Duration {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.computing {
		return a.spent + max(0, runnerCPU()-a.since)
	}
	return a.spent
}

// wait waits for every audit started and fills in their results. It is
// called once the job's runs are over: no window is open.
func (a *auditor) wait() {
	a.mu.Lock()
	a.held = false
	a.cond.Broadcast()
	pending := a.done
	a.done = nil
	a.mu.Unlock()
	for _, p := range pending {
		<-p.over
		p.clock.Audit = p.result
	}
}

// runnerCPU is the CPU time this process has spent, every thread of it.
// An audit's goroutines run on any of them, so a stretch of auditing
// counts all the runner's work meanwhile (its reading of a run's log and
// process tree too, a small part).
func runnerCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
