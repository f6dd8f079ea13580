package runner

import (
	"context"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	d5list "github.com/deep500/d5list"
)

// bundlesByJob serves each job the fixture bundle with its own script
// (none: the fixture's honest one), so that one executor runs hostile and
// honest jobs in turn, as a runner does.
func bundlesByJob(t *testing.T, scripts map[int64]string) FetchFunc {
	t.Helper()
	packed := map[int64][]byte{}
	for id, script := range scripts {
		packed[id] = packFixture(t, script)
	}
	return func(ctx context.Context, spec d5list.JobSpec, w io.Writer) error {
		_, err := w.Write(packed[spec.JobID])
		return err
	}
}

// runOutput keeps the lines a run prints (an OnLine), as "stream: line".
type runOutput struct {
	mu    sync.Mutex
	lines []string
}

func (o *runOutput) add(run int, stream, line string) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.lines = append(o.lines, stream+": "+line)
}

func (o *runOutput) all() []string {
	o.mu.Lock()
	defer o.mu.Unlock()
	return slices.Clone(o.lines)
}

// honestTail is an honest run's window, after a hostile start: a job that
// got past its attack would end well.
const honestTail = takeSeed + `echo ':::MLLOG {"namespace": "", "time_ms": 1000, "event_type": "INTERVAL_START", "key": "run_start", "value": null, "metadata": {}}' >> "$D5_RESULT_LOG"
echo ':::MLLOG {"namespace": "", "time_ms": 1010, "event_type": "INTERVAL_END", "key": "run_stop", "value": null, "metadata": {"status": "success"}}' >> "$D5_RESULT_LOG"
`

// A job that fills its memory (with files in memory, which no rlimit
// counts, or with processes, each under its RLIMIT_DATA) or its disk is
// stopped by the kernel at its cap, and the error says which; the same
// executor then runs the next job as if nothing had happened. The disk is
// the run's work area, a tmpfs: the runner's own disk, which had room for
// the files, holds none of them.
func TestProcessCapsStopAJobAndTheRunnerGoesOn(t *testing.T) {
	needBwrap(t)
	for _, tc := range []struct {
		name   string
		limits ResourceLimits
		attack string
		want   string
	}{
		{"memory filled with files", ResourceLimits{MemoryBytes: 64 << 20, DiskBytes: 512 << 20},
			"head -c 256M /dev/zero > /dev/shm/fill\n", "memory cap of 64 MiB"},
		{"memory filled by processes", ResourceLimits{MemoryBytes: 64 << 20},
			"for i in 1 2 3; do dd if=/dev/zero of=/dev/null bs=40M count=50 & done\nwait\n", "memory cap of 64 MiB"},
		{"disk filled", ResourceLimits{MemoryBytes: 256 << 20, DiskBytes: 32 << 20},
			"set -e\nfor i in 1 2 3; do head -c 24M /dev/zero > \"$D5_SCRATCH/fill$i\"; done\n", "No space left on device"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			work := workDir(t)
			p, err := NewProcess(ProcessOptions{Versions: testVersions[true], WorkDir: work, RLimits: tc.limits,
				Fetch: bundlesByJob(t, map[int64]string{1: "#!/bin/sh\n" + tc.attack + honestTail, 2: ""})})
			if err != nil {
				t.Fatal(err)
			}
			spec := testSpec(1)
			spec.JobID = 1
			if _, err := p.Execute(context.Background(), spec); err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("the attack: %v, want a failure naming %q", err, tc.want)
			}
			spec.JobID = 2
			if logs, err := p.Execute(context.Background(), spec); err != nil || len(logs) != 1 {
				t.Fatalf("the next job: %v, want it run", err)
			}
			filepath.WalkDir(work, func(path string, d fs.DirEntry, err error) error {
				if err == nil && strings.HasPrefix(d.Name(), "fill") {
					t.Errorf("the attack's %s is on the runner's disk", path)
				}
				return nil
			})
		})
	}
}

// A fork bomb is held at the job's process cap by the kernel (pids.max;
// the per-user RLIMIT_NPROC is not set where the job has a cgroup), fails
// its job for it, leaves nothing behind, and the runner's next job runs.
// Its entrypoint stays (a bomb's subshells return at once, and a shell
// that ended would end the sandbox before its grandchildren met the cap)
// until the time limit stops it.
func TestProcessForkBombStopsAtItsProcessCap(t *testing.T) {
	needBwrap(t)
	const cap = 64
	p, err := NewProcess(ProcessOptions{Versions: testVersions[true], WorkDir: workDir(t), RLimits: ResourceLimits{Processes: cap},
		Fetch: bundlesByJob(t, map[int64]string{1: "#!/bin/sh\nbomb() { bomb | bomb & }\nbomb\nexec sleep 30\n", 2: ""})})
	if err != nil {
		t.Fatal(err)
	}
	// The job's cgroup in the pids hierarchy, read while the bomb runs.
	pids := filepath.Join(p.cgroups.dirs[len(p.cgroups.dirs)-1], "job-1-*")
	var mu sync.Mutex
	most := 0
	stop := make(chan struct{})
	watched := make(chan struct{})
	go func() {
		defer close(watched)
		for {
			select {
			case <-stop:
				return
			case <-time.After(5 * time.Millisecond):
			}
			dirs, _ := filepath.Glob(pids)
			for _, d := range dirs {
				b, _ := os.ReadFile(filepath.Join(d, "pids.current"))
				if n, err := strconv.Atoi(strings.TrimSpace(string(b))); err == nil {
					mu.Lock()
					most = max(most, n)
					mu.Unlock()
				}
			}
		}
	}()
	spec := testSpec(1)
	spec.JobID = 1
	spec.Benchmark.Verify.TimeLimitSeconds = 3
	_, err = p.Execute(context.Background(), spec)
	close(stop)
	<-watched
	if err == nil || !strings.Contains(err.Error(), fmt.Sprintf("cap of %d processes", cap)) {
		t.Fatalf("the fork bomb: %v, want its process cap named", err)
	}
	t.Logf("the bomb's job held up to %d processes", most)
	// That the bomb reached the cap is the error's to say (the kernel's
	// count of refused forks); the samples, taken every 5 ms of a busy
	// machine, may miss the peak but never see past the cap.
	if most > cap {
		t.Errorf("the bomb's job held %d processes, past its cap of %d", most, cap)
	}
	if left, _ := filepath.Glob(pids); len(left) != 0 {
		t.Errorf("the bomb's cgroup is still there: %v", left)
	}
	spec.JobID = 2
	if _, err := p.Execute(context.Background(), spec); err != nil {
		t.Fatalf("the next job: %v", err)
	}
}

// A descriptor the runner inherited (a wrapper left one open on a host
// log) reaches no run: a child the test starts before the executor exists
// sees it, the sandbox's shell does not, and its write to it goes
// nowhere.
func TestProcessSandboxSeesNoInheritedDescriptor(t *testing.T) {
	needBwrap(t)
	hostLog := filepath.Join(t.TempDir(), "wrapper.log")
	fd, err := syscall.Open(hostLog, syscall.O_WRONLY|syscall.O_CREAT|syscall.O_APPEND, 0o644) // no O_CLOEXEC
	if err != nil {
		t.Fatal(err)
	}
	defer syscall.Close(fd)
	seen, err := exec.Command("/bin/sh", "-c", fmt.Sprintf("readlink /proc/self/fd/%d", fd)).Output()
	if err != nil || strings.TrimSpace(string(seen)) != hostLog {
		t.Fatalf("control: a child of the test sees fd %d as %q (%v), want %s", fd, seen, err, hostLog)
	}

	script := fmt.Sprintf("#!/bin/sh\nls -l /proc/$$/fd\nif echo pwned >&%d; then echo wrote; fi\n", fd) + honestTail
	var out runOutput
	p, err := NewProcess(ProcessOptions{Versions: testVersions[true], WorkDir: workDir(t), Fetch: fixtureBundle(t, script), OnLine: out.add})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := p.Execute(context.Background(), testSpec(1)); err != nil {
		t.Fatal(err)
	}
	lines := out.all()
	var open []string
	for _, l := range lines {
		// ls -l: "lr-x------ 1 65534 65534 64 Nov 25 21:21 11 -> /d5/bundle/code/run.sh"
		f := strings.Fields(strings.TrimPrefix(l, "stdout: "))
		if len(f) < 3 || f[len(f)-2] != "->" {
			continue
		}
		open = append(open, f[len(f)-3])
		n, _ := strconv.Atoi(f[len(f)-3])
		if n > 2 && f[len(f)-1] != "/d5/bundle/code/run.sh" {
			t.Errorf("the sandbox's shell has fd %d open on %s", n, f[len(f)-1])
		}
		if f[len(f)-1] == hostLog {
			t.Errorf("the sandbox's shell holds the host's %s", hostLog)
		}
	}
	if len(open) < 3 {
		t.Fatalf("the run listed no descriptors: %q", lines)
	}
	for _, l := range lines {
		if l == "stdout: wrote" {
			t.Errorf("the run wrote to fd %d", fd)
		}
	}
	if b, err := os.ReadFile(hostLog); err != nil || len(b) != 0 {
		t.Errorf("the host's %s holds %q (%v), want nothing", hostLog, b, err)
	}
}

// /dev in the sandbox holds no writable tmpfs of half the host's memory:
// it is read-only (its device nodes work), and /dev/shm is a work area of
// the job's disk size.
func TestProcessDevHoldsNoRAMSizedTmpfs(t *testing.T) {
	needBwrap(t)
	script := `#!/bin/sh
if echo x > /dev/fill 2>/dev/null; then echo "dev: written"; else echo "dev: blocked"; fi
if echo x > /dev/null; then echo "null: ok"; fi
if head -c 8M /dev/zero > /dev/shm/small; then echo "shm 8M: written"; fi
if head -c 32M /dev/zero > /dev/shm/big; then echo "shm 32M more: written"; else echo "shm 32M more: full"; fi
` + honestTail
	var lines runOutput
	p, err := NewProcess(ProcessOptions{Versions: testVersions[true], WorkDir: workDir(t), Fetch: fixtureBundle(t, script), RLimits: ResourceLimits{DiskBytes: 16 << 20},
		OnLine: lines.add})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := p.Execute(context.Background(), testSpec(1)); err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for _, l := range lines.all() {
		if k, v, ok := strings.Cut(strings.TrimPrefix(l, "stdout: "), ": "); ok {
			out[k] = v
		}
	}
	want := map[string]string{"dev": "blocked", "null": "ok", "shm 8M": "written", "shm 32M more": "full"}
	for k, v := range want {
		if out[k] != v {
			t.Errorf("%s: %q, want %q (all: %v)", k, out[k], v, out)
		}
	}
}

// Where the kernel gives the runner no cgroup, a sandboxed executor
// refuses to start, naming what is missing and the line that delegates
// one, unless told to run unbounded.
func TestProcessRefusesWithoutCaps(t *testing.T) {
	needBwrap(t)
	found := processCgroups
	defer func() { processCgroups = found }()
	processCgroups = func() (*cgroups, error) {
		return nil, fmt.Errorf("no cgroup v1 memory and pids hierarchies are mounted")
	}
	noFetch := func(context.Context, d5list.JobSpec, io.Writer) error { return nil }
	_, err := NewProcess(ProcessOptions{Fetch: noFetch})
	for _, want := range []string{"no cgroup v1 memory and pids hierarchies", CgroupSetup, "--allow-unbounded"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("NewProcess without cgroups: %v, want it to name %q", err, want)
		}
	}
	if p, err := NewProcess(ProcessOptions{Fetch: noFetch, AllowUnbounded: true}); err != nil || p.cgroups != nil {
		t.Errorf("NewProcess told to run unbounded: %v", err)
	}
}

// BenchmarkJobCaps is what a job's cgroup costs: a job of one run that
// writes its log, with its cgroup (made with its caps, the run held until
// admitted to it, the cgroup emptied and removed) and without. Both have
// their tmpfs work areas.
func BenchmarkJobCaps(b *testing.B) {
	needBwrap(b)
	for _, capped := range []bool{true, false} {
		b.Run(map[bool]string{true: "capped", false: "unbounded"}[capped], func(b *testing.B) {
			if !capped {
				found := processCgroups
				defer func() { processCgroups = found }()
				processCgroups = func() (*cgroups, error) { return nil, fmt.Errorf("left out") }
			}
			p, err := NewProcess(ProcessOptions{Versions: testVersions[true], WorkDir: workDir(b), Fetch: fetchOf(packFixture(b, "")), AllowUnbounded: !capped})
			if err != nil {
				b.Fatal(err)
			}
			if (p.cgroups != nil) != capped {
				b.Fatalf("capped %v, cgroups %v", capped, p.cgroups)
			}
			// The first job probes the sandbox's Python, which the others
			// reuse.
			if _, err := p.Execute(context.Background(), testSpec(1)); err != nil {
				b.Fatal(err)
			}
			for b.Loop() {
				if _, err := p.Execute(context.Background(), testSpec(1)); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
