package runner

import (
	"os/exec"
	"testing"
	"time"
)

// The tree clock sees a run's processes delayed by foreign work: a busy
// grandchild pinned to one CPU beside a foreign busy loop on the same CPU
// waits for about half the run, alone for about none of it. The share
// attributes that wait to foreign work in proportion to the foreign CPU
// time (half of it here), so it reads about a quarter: it under-corrects,
// the side that gives a forger nothing.
func TestTreeClockSeesForeignDelay(t *testing.T) {
	if _, err := exec.LookPath("taskset"); err != nil {
		t.Skip("taskset (util-linux) is not installed")
	}
	share := func(foreign bool) (float64, int) {
		if foreign {
			hog := exec.Command("taskset", "-c", "0", "sh", "-c", "while :; do :; done")
			if err := hog.Start(); err != nil {
				t.Fatal(err)
			}
			defer func() { _ = hog.Process.Kill(); _ = hog.Wait() }()
		}
		// sh starts a busy child of its own, as an entrypoint starts Python.
		run := exec.Command("taskset", "-c", "0", "sh", "-c", "timeout 1 sh -c 'while :; do :; done'; true")
		if err := run.Start(); err != nil {
			t.Fatal(err)
		}
		c := newTreeClock()
		c.follow(run.Process.Pid)
		if err := run.Wait(); err != nil {
			t.Fatal(err)
		}
		time.Sleep(20 * time.Millisecond)
		s := c.foreignDelayShare()
		return s, len(c.procs)
	}
	quiet, procs := share(false)
	loaded, _ := share(true)
	t.Logf("foreign delay share: alone %.2f, beside a busy loop %.2f (%d processes followed)", quiet, loaded, procs)
	if procs < 3 {
		t.Errorf("followed %d processes, want the shell, timeout and the busy child", procs)
	}
	if !(loaded > 0.15 && loaded > quiet+0.1) {
		t.Errorf("share %.2f beside a busy loop on the same CPU, %.2f alone: want about a quarter against about none", loaded, quiet)
	}
}
