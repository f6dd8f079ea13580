package runner

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// needCgroups skips a test of the kernel's caps where this process has no
// cgroup to make a job's in (CI runs as root on a host with cgroup v1
// hierarchies, and has one).
func needCgroups(t testing.TB) *cgroups {
	t.Helper()
	c, err := processCgroups()
	if err != nil {
		t.Skipf("no cgroup to cap jobs in (%v): run the tests as root, or under %s", err, strings.Replace(CgroupSetup, "d5list runner ...", "go test ./runner", 1))
	}
	return c
}

// The runner finds its own cgroups from what the kernel shows it, on a
// cgroup v1 host (this project's CI: v1 memory and pids hierarchies, and a
// v2 mount with no controllers), on a cgroup v2 host under systemd, and in
// a container that sees only its part of each hierarchy.
func TestOwnCgroups(t *testing.T) {
	for _, tc := range []struct {
		name, self, mounts    string
		unified, memory, pids string
	}{
		{"v1 hybrid",
			"9:name=systemd:/\n8:pids:/\n4:memory:/process_api/6ffd\n0::/\n",
			"35 25 0:30 / /sys/fs/cgroup/memory rw,relatime - cgroup cgroup rw,memory\n" +
				"36 25 0:31 / /sys/fs/cgroup/pids rw,relatime - cgroup cgroup rw,pids\n" +
				"37 25 0:32 / /sys/fs/cgroup/cpu,cpuacct rw,relatime - cgroup cgroup rw,cpu,cpuacct\n" +
				"38 25 0:33 / /sys/fs/cgroup/unified rw,relatime shared:7 - cgroup2 cgroup2 rw\n",
			"/sys/fs/cgroup/unified", "/sys/fs/cgroup/memory/process_api/6ffd", "/sys/fs/cgroup/pids"},
		{"v2 under systemd",
			"0::/system.slice/d5list-runner.service\n",
			"30 23 0:26 / /sys/fs/cgroup rw,nosuid,nodev,noexec,relatime shared:4 - cgroup2 cgroup2 rw,nsdelegate,memory_recursiveprot\n",
			"/sys/fs/cgroup/system.slice/d5list-runner.service", "", ""},
		{"a container's part of v1",
			"12:pids:/docker/abc\n7:memory:/docker/abc\n",
			"600 590 0:40 /docker/abc /sys/fs/cgroup/memory ro,nosuid - cgroup cgroup rw,memory\n" +
				"601 590 0:41 /docker/abc /sys/fs/cgroup/pids ro,nosuid - cgroup cgroup rw,pids\n",
			"", "/sys/fs/cgroup/memory", "/sys/fs/cgroup/pids"},
		{"a cgroup outside the mounted part",
			"7:memory:/other\n",
			"600 590 0:40 /docker/abc /sys/fs/cgroup/memory ro - cgroup cgroup rw,memory\n",
			"", "", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			unified, memory, pids, _ := ownCgroups(tc.self, tc.mounts)
			if unified != tc.unified || memory != tc.memory || pids != tc.pids {
				t.Errorf("got %q %q %q, want %q %q %q", unified, memory, pids, tc.unified, tc.memory, tc.pids)
			}
		})
	}
}

// runHeld runs argv in its job's cgroup, as the process executor does,
// and returns the admission's verdict on it.
func runHeld(t *testing.T, j *jobCgroup, argv ...string) error {
	t.Helper()
	cmd, a := j.hold(argv)
	if err := a.start(cmd); err != nil {
		return a.verdict(err)
	}
	return a.verdict(cmd.Wait())
}

// The kernel, not a hope: a job's processes that together take more than
// its memory cap are killed by the kernel, and a job that forks past its
// process cap is refused the forks; each says which cap it met. What is
// left of a job is killed when its cgroup goes, and the cgroup with it.
func TestJobCgroupCapsMemoryAndProcesses(t *testing.T) {
	c := needCgroups(t)
	j, err := c.job("test-caps", 32<<20, 16)
	if err != nil {
		t.Fatal(err)
	}
	defer j.remove()
	// dd holds a whole 64 MiB block, read from /dev/zero, in its memory.
	err = runHeld(t, j, "dd", "if=/dev/zero", "of=/dev/null", "bs=64M", "count=4")
	if err == nil || !strings.Contains(err.Error(), "memory cap of 32 MiB") {
		t.Fatalf("64 MiB under a 32 MiB cap: %v, want the memory cap met", err)
	}
	if err := runHeld(t, j, "dd", "if=/dev/zero", "of=/dev/null", "bs=1M", "count=4"); err != nil {
		t.Fatalf("1 MiB under the same cap: %v", err)
	}
	err = runHeld(t, j, "/bin/sh", "-c", "for i in $(seq 40); do sleep 5 & done; wait")
	if err == nil || !strings.Contains(err.Error(), "cap of 16 processes") {
		t.Fatalf("40 processes under a cap of 16: %v, want the process cap met", err)
	}

	// The sleeps forked before the cap outlive their shell; while they
	// hold the job's 16 processes, the kernel refuses a run born in the
	// job (a held run, moved in, is let in: a move is no fork).
	if j.bornInside() {
		if err := runHeld(t, j, "true"); err == nil || !strings.Contains(err.Error(), "cap of 16 processes") {
			t.Fatalf("a run while the job's leftovers hold its cap: %v, want the process cap met", err)
		}
	}
	pids := j.dirs[len(j.dirs)-1]
	for _, pid := range cgroupProcs(pids) {
		_ = syscall.Kill(pid, syscall.SIGKILL)
	}
	// A process leaves the count once its parent (here the host's init,
	// which the orphans went to) has reaped it.
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		b, _ := os.ReadFile(filepath.Join(pids, "pids.current"))
		if strings.TrimSpace(string(b)) == "0" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the job's killed leftovers still count: pids.current %s", b)
		}
	}

	// A process left behind in the job (here, a sleep let in alone) is
	// killed with its cgroup.
	cmd, g := j.hold([]string{"sleep", "300"})
	if err := g.start(cmd); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	j.remove()
	select {
	case <-exited:
	case <-time.After(10 * time.Second):
		t.Fatal("the job's last process outlived its cgroup")
	}
	for _, d := range j.dirs {
		if _, err := os.Stat(d); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("cgroup %s is still there: %v", d, err)
		}
	}
}

// A held run (the way of a cgroup v2 host, here on v1) runs nothing until
// the runner has put it in its job's cgroup: a runner that dies first (its
// end of the pipe closed), or that cannot put it there, never lets its
// command start.
func TestHeldRunRunsNothingOutsideTheJobsCgroup(t *testing.T) {
	c := needCgroups(t)
	made, err := c.job("test-admit", 64<<20, 64)
	if err != nil {
		t.Fatal(err)
	}
	defer made.remove()
	j := *made
	j.home = nil // held, not born inside
	marker := filepath.Join(t.TempDir(), "ran")

	cmd, a := j.hold([]string{"touch", marker})
	if !a.held {
		t.Fatal("a job without the runner's own folders to come back to does not hold its runs")
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	a.word.Close() // the runner died before letting it in
	if err := cmd.Wait(); err == nil {
		t.Error("a run never let in exited 0")
	}
	if _, err := os.Stat(marker); err == nil {
		t.Fatal("a run never let in ran its command")
	}

	gone := &jobCgroup{dirs: []string{filepath.Join(t.TempDir(), "no-such-cgroup")}}
	err = runHeld(t, gone, "touch", marker)
	if err == nil || !strings.Contains(err.Error(), "could not be put in its job's cgroup") {
		t.Errorf("a run whose cgroup is gone: %v, want it named", err)
	}
	if _, err := os.Stat(marker); err == nil {
		t.Fatal("a run that could not be put in its cgroup ran its command")
	}

	if err := runHeld(t, &j, "touch", marker); err != nil {
		t.Fatalf("a run let in: %v", err)
	}
	if _, err := os.Stat(marker); err != nil {
		t.Fatalf("a run let in did not run: %v", err)
	}
}

// A runner's start removes the empty cgroups of runners that have died,
// and leaves those of live ones.
func TestRunnerFolderPrunesDeadRunners(t *testing.T) {
	c := needCgroups(t)
	base := filepath.Dir(c.dirs[0])
	done := exec.Command("true")
	if err := done.Run(); err != nil {
		t.Fatal(err)
	}
	live := exec.Command("sleep", "30")
	if err := live.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { live.Process.Kill(); live.Wait() }()
	dead := filepath.Join(base, fmt.Sprintf("d5list-%d", done.Process.Pid))
	alive := filepath.Join(base, fmt.Sprintf("d5list-%d", live.Process.Pid))
	for _, d := range []string{filepath.Join(dead, "job-1-1"), filepath.Join(alive, "job-1-1")} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	defer pruneCgroups(alive)
	if _, err := runnerFolder(base); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(dead); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the dead runner's %s is still there (%v)", dead, err)
	}
	if _, err := os.Stat(filepath.Join(alive, "job-1-1")); err != nil {
		t.Errorf("the live runner's job cgroup is gone: %v", err)
	}
}

// On a v1 host a run is born in its job's cgroup: forked by a thread of
// the runner that went there and came back, it is in the job's memory,
// pids and cpuacct cgroups from its first instruction, and no thread of
// the runner stays in them. A job whose cgroup is gone starts nothing, and
// says why.
func TestRunIsBornInItsJobsCgroup(t *testing.T) {
	c := needCgroups(t)
	if c.v2 {
		t.Skip("a cgroup v2 host holds its runs and moves them in (TestHeldRunRunsNothingOutsideTheJobsCgroup)")
	}
	j, err := c.job("test-born", 64<<20, 64)
	if err != nil {
		t.Fatal(err)
	}
	defer j.remove()
	if !j.bornInside() {
		t.Fatalf("a v1 job (folders %v, the runner's %v) does not start its runs inside", j.joinedDirs(), j.home)
	}
	for range 3 {
		cmd, a := j.hold([]string{"cat", "/proc/self/cgroup"})
		if cmd.Path != "/usr/bin/cat" && cmd.Path != "/bin/cat" {
			t.Fatalf("a run born inside starts %s, want its own command, not a shim", cmd.Path)
		}
		var out strings.Builder
		cmd.Stdout = &out
		if err := a.start(cmd); err != nil {
			t.Fatal(err)
		}
		if err := a.verdict(cmd.Wait()); err != nil {
			t.Fatal(err)
		}
		for _, d := range j.joinedDirs() {
			if !inCgroup(out.String(), d) {
				t.Fatalf("the run's cgroups:\n%s\nnot in the job's %s", out.String(), d)
			}
		}
		tasks, _ := filepath.Glob("/proc/self/task/*/cgroup")
		for _, f := range tasks {
			b, err := os.ReadFile(f)
			if err != nil {
				continue // the thread ended
			}
			for _, d := range j.joinedDirs() {
				if inCgroup(string(b), d) {
					t.Fatalf("thread %s of the runner stayed in the job's cgroup %s", filepath.Base(filepath.Dir(f)), d)
				}
			}
		}
	}

	marker := filepath.Join(t.TempDir(), "ran")
	gone := *j
	gone.dirs = []string{filepath.Join(t.TempDir(), "no-such-cgroup"), j.dirs[1]}
	err = runHeld(t, &gone, "touch", marker)
	if err == nil || !strings.Contains(err.Error(), "could not be put in its job's cgroup") {
		t.Errorf("a run whose cgroup is gone: %v, want it named", err)
	}
	if _, err := os.Stat(marker); err == nil {
		t.Fatal("a run that could not be put in its cgroup ran its command")
	}
}

// inCgroup reports whether a /proc/PID/cgroup text puts its process in
// the cgroup folder dir: the line of dir's hierarchy names the same
// runner's folder and job.
func inCgroup(procCgroup, dir string) bool {
	tail := "/" + filepath.Base(filepath.Dir(dir)) + "/" + filepath.Base(dir)
	for _, line := range strings.Split(procCgroup, "\n") {
		if strings.HasSuffix(line, tail) {
			return true
		}
	}
	return false
}
