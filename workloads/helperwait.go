package workloads

import (
	"context"
	"time"

	"github.com/deep500/d5list/sysinfo"
)

type foreignDelayKey struct{}

// ForeignDelayFunc receives the share of a timed run (run_start to
// run_stop) that other work on the machine delayed it by, as a workload
// with helper processes measures it (see helperClock).
type ForeignDelayFunc func(share float64)

// WithForeignDelay asks the workloads that run helper processes (the
// data-parallel workers) to measure how much other work on the machine
// delayed them, and report it to fn. The runner's thread clock sees only
// the coordinating thread, and a run whose processes outnumber the cores
// waits for itself too: that wait is part of the workload, on the
// competitor's machine as on the runner, and must not be taken off.
func WithForeignDelay(ctx context.Context, fn ForeignDelayFunc) context.Context {
	return context.WithValue(ctx, foreignDelayKey{}, fn)
}

func foreignDelayFrom(ctx context.Context) ForeignDelayFunc {
	fn, _ := ctx.Value(foreignDelayKey{}).(ForeignDelayFunc)
	return fn
}

// helperClock is a reading of the clocks a run with helper processes is
// judged by: the helpers' CPU time and run-queue wait (schedstat of every
// thread), the coordinating thread's CPU time, and the CPU time the whole
// machine spent busy (/proc/stat).
type helperClock struct {
	at             time.Time
	helperCPU      time.Duration
	helperWait     time.Duration
	coordinatorCPU time.Duration
	machineBusy    time.Duration
	helpers        int
}

func readHelperClock(workers []*worker) (helperClock, bool) {
	c := helperClock{at: time.Now(), helpers: len(workers)}
	for _, w := range workers {
		if w.cmd.Process == nil {
			return c, false
		}
		cpu, wait, ok := sysinfo.ProcessSchedstat(w.cmd.Process.Pid)
		if !ok {
			return c, false
		}
		c.helperCPU += cpu
		c.helperWait += wait
	}
	cpu, _, ok := sysinfo.Schedstat("/proc/thread-self/schedstat")
	if !ok {
		return c, false
	}
	c.coordinatorCPU = cpu
	if c.machineBusy, ok = sysinfo.MachineBusy(); !ok {
		return c, false
	}
	return c, len(workers) > 0
}

// foreignDelayShare is the share of the span from c to end that other work
// delayed the helpers by. A helper waits for a CPU behind its own siblings
// (the other helpers, the coordinator) or behind foreign tasks; the wait is
// attributed to foreign work in proportion to the CPU time foreign tasks
// took during the span, and averaged over the helpers, which compute in
// lockstep: a step ends when all of them have, so concurrent waits delay
// it once. On a quiet machine the share is about 0 whatever the workload
// waits for itself.
func (c helperClock) foreignDelayShare(end helperClock) float64 {
	span := end.at.Sub(c.at)
	if span <= 0 || c.helpers == 0 {
		return 0
	}
	own := (end.helperCPU - c.helperCPU) + (end.coordinatorCPU - c.coordinatorCPU)
	return sysinfo.ForeignDelayShare(span, end.machineBusy-c.machineBusy, own, (end.helperWait-c.helperWait)/time.Duration(c.helpers))
}
