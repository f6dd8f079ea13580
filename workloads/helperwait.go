package workloads

import (
	"bytes"
	"context"
	"math"
	"os"
	"path/filepath"
	"strconv"
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
		cpu, wait, ok := processSchedstat(w.cmd.Process.Pid)
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
	if c.machineBusy, ok = machineBusy(); !ok {
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
	foreign := max(0, (end.machineBusy-c.machineBusy)-own)
	if foreign+own <= 0 {
		return 0
	}
	wait := float64(end.helperWait-c.helperWait) / float64(c.helpers)
	share := wait * float64(foreign) / float64(foreign+own) / float64(span)
	return math.Min(math.Max(share, 0), 1)
}

// processSchedstat sums /proc/pid/task/*/schedstat: nanoseconds on a CPU
// and waiting on a run queue, over every thread of process pid.
func processSchedstat(pid int) (cpu, wait time.Duration, ok bool) {
	tasks, err := filepath.Glob(filepath.Join("/proc", strconv.Itoa(pid), "task", "*", "schedstat"))
	if err != nil || len(tasks) == 0 {
		return 0, 0, false
	}
	for _, path := range tasks {
		c, w, ok := sysinfo.Schedstat(path)
		if !ok {
			continue // a thread that ended between the listing and the read
		}
		cpu += c
		wait += w
	}
	return cpu, wait, true
}

// clockTicks is USER_HZ, the unit of /proc/stat: 100 on every Linux
// architecture Go supports (the kernel's ABI fixes it).
const clockTicks = 100

// machineBusy is the CPU time the machine has spent on anything but idling
// since boot, summed over its CPUs: the aggregate "cpu" line of /proc/stat
// less idle and iowait. Steal counts as busy: a hypervisor that ran another
// guest delayed the run as any foreign task would.
func machineBusy() (time.Duration, bool) {
	data, err := os.ReadFile("/proc/stat")
	if err != nil {
		return 0, false
	}
	line, _, _ := bytes.Cut(data, []byte("\n"))
	f := bytes.Fields(line)
	if len(f) < 5 || string(f[0]) != "cpu" {
		return 0, false
	}
	var busy int64
	for i, field := range f[1:] {
		if i >= 8 { // guest time is already in user and nice
			break
		}
		v, err := strconv.ParseInt(string(field), 10, 64)
		if err != nil {
			return 0, false
		}
		if i == 3 || i == 4 { // idle, iowait
			continue
		}
		busy += v
	}
	return time.Duration(busy) * time.Second / clockTicks, true
}
