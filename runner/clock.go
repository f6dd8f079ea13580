package runner

import (
	"os"
	"syscall"
	"time"

	d5list "github.com/deep500/d5list"
	"github.com/deep500/d5list/sysinfo"
)

// threadClock measures one run of a builtin workload on the OS thread the
// caller has locked (runtime.LockOSThread): the runner's monotonic wall
// clock, the thread's CPU time, and the time the thread was ready to run
// but waited for a CPU, which the kernel keeps in schedstat. That wait is
// what other work on a busy machine adds to a run; the verifier takes it
// off the measured time before it judges a claim (docs/timing.md).
type threadClock struct {
	start      time.Time
	cpu0, run0 time.Duration
	waitKnown  bool
}

func startThreadClock() threadClock {
	c := threadClock{start: time.Now()}
	c.cpu0, c.run0, c.waitKnown = threadSchedstat()
	if !c.waitKnown {
		c.cpu0 = threadCPU()
	}
	return c
}

func (c threadClock) stop() *d5list.RunClock {
	wall := time.Since(c.start)
	rc := &d5list.RunClock{WallS: wall.Seconds()}
	if cpu, wait, ok := threadSchedstat(); ok && c.waitKnown {
		rc.CPUS = (cpu - c.cpu0).Seconds()
		rc.WaitS = max(0, (wait - c.run0).Seconds())
	} else {
		rc.CPUS = (threadCPU() - c.cpu0).Seconds()
	}
	return rc
}

// threadSchedstat reads /proc/thread-self/schedstat: nanoseconds on a CPU
// and waiting on a run queue.
func threadSchedstat() (cpu, wait time.Duration, ok bool) {
	return sysinfo.Schedstat("/proc/thread-self/schedstat")
}

// threadCPU is the calling thread's CPU time (user and system).
func threadCPU() time.Duration {
	const rusageThread = 1 // RUSAGE_THREAD; syscall names only SELF and CHILDREN
	var ru syscall.Rusage
	if err := syscall.Getrusage(rusageThread, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// processCPU is the CPU time of an ended process and the descendants it
// waited for, from wait4's rusage.
func processCPU(state *os.ProcessState) float64 {
	if state == nil {
		return 0
	}
	return (state.UserTime() + state.SystemTime()).Seconds()
}
