package runner

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/deep500/d5list/sysinfo"
)

// treeClock measures how long other work on the machine delayed one run of
// the process executor, as the builtin workloads' clock does for their
// threads: it follows the run's process tree (the sandbox's leader and
// every descendant, found through /proc/PID/task/TID/children) every poll,
// keeps each process's last CPU time (/proc/PID/stat, ended threads
// included) and run-queue wait (schedstat), and compares them with the CPU
// time the whole machine spent busy over the run. A process that ends
// between two polls loses at most a poll's worth of its times.
type treeClock struct {
	mu     sync.Mutex
	leader int
	procs  map[procKey]procTimes
	start  time.Time
	busy0  time.Duration
	ok     bool
	// runnersNow, where set, is the runner's own CPU time on the job's
	// behalf so far (its audits), part of the machine's busy time that is
	// not other work's; runners0 is its value when following started.
	runnersNow func() time.Duration
	runners0   time.Duration
	stop       chan struct{}
	done       chan struct{}
}

type procTimes struct{ cpu, wait time.Duration }

// procKey names one process: a PID the kernel hands out again, once the
// first holder has ended, names another.
type procKey struct {
	pid     int
	started uint64
}

func newTreeClock() *treeClock {
	return &treeClock{procs: map[procKey]procTimes{}, stop: make(chan struct{}), done: make(chan struct{})}
}

// notForeign has the clock count the runner's CPU time that runners
// reports (a running total) as neither the run's nor other work's.
func (c *treeClock) notForeign(runners func() time.Duration) *treeClock {
	c.runnersNow = runners
	return c
}

// follow starts following the tree under pid (runGroup's onStart).
func (c *treeClock) follow(pid int) {
	c.mu.Lock()
	c.leader, c.start = pid, time.Now()
	c.busy0, c.ok = sysinfo.MachineBusy()
	if c.runnersNow != nil {
		c.runners0 = c.runnersNow()
	}
	c.mu.Unlock()
	go func() {
		defer close(c.done)
		tick := time.NewTicker(treeClockPoll)
		defer tick.Stop()
		for {
			c.sample()
			select {
			case <-c.stop:
				return
			case <-tick.C:
			}
		}
	}()
}

func (c *treeClock) sample() {
	c.mu.Lock()
	defer c.mu.Unlock()
	todo := []int{c.leader}
	for len(todo) > 0 {
		pid := todo[len(todo)-1]
		todo = todo[:len(todo)-1]
		cpu, started, ok := sysinfo.ProcessStat(pid)
		if _, wait, live := sysinfo.ProcessSchedstat(pid); ok && live {
			// The live threads' waits are all schedstat has: an ended
			// thread's leaves the sum, which must not shrink with it.
			k := procKey{pid, started}
			c.procs[k] = procTimes{max(cpu, c.procs[k].cpu), max(wait, c.procs[k].wait)}
		}
		todo = append(todo, childPIDs(pid)...)
	}
}

// cpuNow reads the tree now and returns the CPU time its processes have
// spent so far (those that ended before the last reading included).
func (c *treeClock) cpuNow() time.Duration {
	c.mu.Lock()
	started := c.leader != 0
	c.mu.Unlock()
	if !started {
		return 0
	}
	c.sample()
	c.mu.Lock()
	defer c.mu.Unlock()
	var cpu time.Duration
	for _, p := range c.procs {
		cpu += p.cpu
	}
	return cpu
}

// foreignDelayShare stops following and returns the share of the run's
// span that foreign work delayed it by; 0 where /proc cannot tell.
func (c *treeClock) foreignDelayShare() float64 {
	return c.finish().delayShare
}

// treeClockPoll is how often a run's process tree is read: its shares and
// CPU time need no finer grain, and each reading opens a few files per
// thread of the run, CPU the run would otherwise have (a torch run's
// threads fill every core).
const treeClockPoll = 100 * time.Millisecond

// treeTimes is what a tree clock saw of a run.
type treeTimes struct {
	// delayShare is the share of the run that foreign work delayed it by
	// (sysinfo.ForeignDelayShare).
	delayShare float64
	// computing is how many of the tree's processes computed for at
	// least a quarter of the run's span: a launcher or a shell that waits
	// for its children does not count, each worker of a data-parallel run
	// does.
	computing int
	// own is the tree's CPU time, busy the machine's meanwhile (every CPU
	// counted), and foreign busy less own: other work's.
	own, busy, foreign time.Duration
}

// ownIs corrects the tree's CPU time where a better count of it is known
// (the job's cgroup's, which sees processes too short-lived for the
// tree's polls), and the foreign time with it.
func (t *treeTimes) ownIs(own time.Duration) {
	t.own = max(t.own, own)
	t.foreign = max(0, t.busy-t.own)
}

// finish stops following and returns what the clock saw.
func (c *treeClock) finish() treeTimes {
	c.mu.Lock()
	started := c.leader != 0
	c.mu.Unlock()
	if !started {
		return treeTimes{}
	}
	close(c.stop)
	<-c.done
	c.mu.Lock()
	defer c.mu.Unlock()
	span := time.Since(c.start)
	var t treeTimes
	var wait time.Duration
	for _, p := range c.procs {
		t.own += p.cpu
		wait += p.wait
		if p.cpu >= span/4 {
			t.computing++
		}
	}
	busy, ok := sysinfo.MachineBusy()
	if !ok || !c.ok {
		return t
	}
	if c.runnersNow != nil {
		busy -= max(0, c.runnersNow()-c.runners0)
	}
	t.busy = max(0, busy-c.busy0)
	t.foreign = max(0, t.busy-t.own)
	// The processes that compute are delayed in lockstep: their waits
	// count once.
	t.delayShare = sysinfo.ForeignDelayShare(span, t.busy, t.own, wait/time.Duration(max(t.computing, 1)))
	return t
}

// childPIDs lists the children of every thread of pid.
func childPIDs(pid int) []int {
	files, _ := filepath.Glob(filepath.Join("/proc", strconv.Itoa(pid), "task", "*", "children"))
	var kids []int
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			continue
		}
		for _, field := range strings.Fields(string(data)) {
			if k, err := strconv.Atoi(field); err == nil {
				kids = append(kids, k)
			}
		}
	}
	return kids
}
