package runner

import (
	"os/exec"
	"sync"
	"testing"
	"time"

	"github.com/deep500/d5list/sysinfo"
)

// The tree clock sees a run's processes delayed by foreign work: a busy
// grandchild pinned to one CPU beside a foreign busy loop on the same CPU
// loses about half the run. The share attributes that wait to foreign
// work in proportion to the foreign CPU time (half of it or more), so it
// reads a quarter or more: it under-counts, the side that gives a forger
// nothing, and it never says the run lost more than the CPU time it did
// not get. Alone on a quiet machine the run loses about nothing, and so
// reads about none; alone on a machine others keep busy, it reads what
// their work cost it, which the same bound checks.
func TestTreeClockSeesForeignDelay(t *testing.T) {
	if _, err := exec.LookPath("taskset"); err != nil {
		t.Skip("taskset (util-linux) is not installed")
	}
	// share runs the busy run and returns the clock's foreign delay share,
	// the share of the run's wall time its processes did not compute, and
	// how many processes the clock followed.
	share := func(foreign bool) (share, lost float64, procs int) {
		if foreign {
			hog := exec.Command("taskset", "-c", "0", "sh", "-c", "while :; do :; done")
			if err := hog.Start(); err != nil {
				t.Fatal(err)
			}
			defer func() { _ = hog.Process.Kill(); _ = hog.Wait() }()
		}
		// sh starts a busy child of its own, as an entrypoint starts Python.
		run := exec.Command("taskset", "-c", "0", "sh", "-c", "timeout 1 sh -c 'while :; do :; done'; true")
		start := time.Now()
		if err := run.Start(); err != nil {
			t.Fatal(err)
		}
		c := newTreeClock()
		c.follow(run.Process.Pid)
		if err := run.Wait(); err != nil {
			t.Fatal(err)
		}
		wall := time.Since(start)
		cpu := run.ProcessState.UserTime() + run.ProcessState.SystemTime()
		time.Sleep(20 * time.Millisecond)
		return c.foreignDelayShare(), 1 - cpu.Seconds()/wall.Seconds(), len(c.procs)
	}
	quiet, quietLost, procs := share(false)
	loaded, loadedLost, _ := share(true)
	t.Logf("foreign delay share: alone %.2f (the run lost %.2f of its time), beside a busy loop %.2f (lost %.2f); %d processes followed",
		quiet, quietLost, loaded, loadedLost, procs)
	if procs < 3 {
		t.Errorf("followed %d processes, want the shell, timeout and the busy child", procs)
	}
	// The clock reads every 100 ms: a poll's worth of slack on a 1 s run.
	const slack = 0.15
	if quiet > quietLost+slack || loaded > loadedLost+slack {
		t.Errorf("share %.2f alone, %.2f beside a busy loop: more than the run lost (%.2f, %.2f)", quiet, loaded, quietLost, loadedLost)
	}
	if !(loaded > 0.15) {
		t.Errorf("share %.2f beside a busy loop on the same CPU (the run lost %.2f): want a quarter or more", loaded, loadedLost)
	}
}

// A process whose work ran on a thread that ended before it did (a
// torch.distributed worker's gloo threads, ended by
// destroy_process_group) still computed: the clock keeps the CPU time of
// the process's ended threads and counts it among the computing ones.
func TestTreeClockKeepsTheCPUOfEndedThreads(t *testing.T) {
	python, err := exec.LookPath("python3")
	if err != nil {
		t.Skip("python3 is not installed")
	}
	script := `import threading, time
def spin():
    end = time.thread_time() + 1.0
    while time.thread_time() < end:
        pass
w = threading.Thread(target=spin)
w.start()
w.join()
time.sleep(0.5)
`
	run := exec.Command(python, "-c", script)
	if err := run.Start(); err != nil {
		t.Fatal(err)
	}
	c := newTreeClock()
	c.follow(run.Process.Pid)
	if err := run.Wait(); err != nil {
		t.Fatal(err)
	}
	seen := c.finish()
	t.Logf("the tree's CPU %v, %d computing", seen.own, seen.computing)
	if seen.own < 900*time.Millisecond {
		t.Errorf("the clock kept %v of the process's CPU time; its ended thread alone computed for 1 s", seen.own)
	}
	if seen.computing != 1 {
		t.Errorf("%d computing processes, want the one whose thread computed for most of its life", seen.computing)
	}
}

// A PID the kernel hands out again names another process: the times of
// the one that held it before are kept, and the new one's are added to
// them, not hidden under them.
func TestTreeClockTellsAReusedPIDApart(t *testing.T) {
	python, err := exec.LookPath("python3")
	if err != nil {
		t.Skip("python3 is not installed")
	}
	script := `import time
end = time.process_time() + 0.3
while time.process_time() < end:
    pass
time.sleep(0.2)
`
	run := exec.Command(python, "-c", script)
	if err := run.Start(); err != nil {
		t.Fatal(err)
	}
	pid := run.Process.Pid
	_, started, ok := sysinfo.ProcessStat(pid)
	if !ok || started == 0 {
		t.Fatalf("no start time for process %d", pid)
	}
	c := newTreeClock()
	// The earlier holder of the PID, ended within the run after 10 s of CPU.
	earlier := 10 * time.Second
	c.procs[procKey{pid, started - 1}] = procTimes{cpu: earlier}
	c.follow(pid)
	if err := run.Wait(); err != nil {
		t.Fatal(err)
	}
	seen := c.finish()
	if got := seen.own - earlier; got < 250*time.Millisecond {
		t.Errorf("the tree's CPU %v: %v beyond the earlier holder's %v, want the 0.3 s the new process computed", seen.own, got, earlier)
	}
}

// The runner's own CPU time on the job's behalf while a run runs (an
// earlier run's audit) is not other work's: a clock told of it counts
// that much less foreign time than one that is not, over the same run.
func TestTreeClockLeavesTheRunnersAuditOut(t *testing.T) {
	if _, ok := sysinfo.MachineBusy(); !ok {
		t.Skip("/proc/stat cannot be read")
	}
	run := exec.Command("sleep", "0.5")
	if err := run.Start(); err != nil {
		t.Fatal(err)
	}
	var audited time.Duration
	var mu sync.Mutex
	told := newTreeClock().notForeign(func() time.Duration { mu.Lock(); defer mu.Unlock(); return audited })
	plain := newTreeClock()
	told.follow(run.Process.Pid)
	plain.follow(run.Process.Pid)
	// The "audit": 300 ms of this process's CPU, counted as it goes.
	cpu0 := runnerCPU()
	for start := time.Now(); time.Since(start) < 300*time.Millisecond; {
	}
	mu.Lock()
	audited = runnerCPU() - cpu0
	mu.Unlock()
	if err := run.Wait(); err != nil {
		t.Fatal(err)
	}
	withAudit, without := plain.finish(), told.finish()
	left := withAudit.foreign - without.foreign
	t.Logf("foreign CPU: %v counting the audit, %v leaving it out; the audit took %v", withAudit.foreign, without.foreign, audited)
	if audited < 100*time.Millisecond {
		t.Fatalf("the audit's CPU time read %v, want about 300 ms", audited)
	}
	// The machine's busy time is read a moment apart by the two clocks.
	if d := left - audited; d < -50*time.Millisecond || d > 50*time.Millisecond {
		t.Errorf("the clock told of the audit counted %v less foreign time, want the audit's %v", left, audited)
	}
}
