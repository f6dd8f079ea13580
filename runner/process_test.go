package runner

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	d5list "github.com/deep500/d5list"
	"github.com/deep500/d5list/bundle"
	"github.com/deep500/d5list/mllog"
)

// needBwrap skips a sandbox test where bubblewrap is not installed (CI
// installs it, see .ci/run) or where the kernel gives the test no cgroup
// to cap its jobs in, without which the sandbox does not start.
func needBwrap(t testing.TB) {
	t.Helper()
	if _, err := exec.LookPath("bwrap"); err != nil {
		t.Skip("bubblewrap (bwrap) is not installed: sandboxed process executor tests skipped (apt-get install bubblewrap)")
	}
	needCgroups(t)
}

// fixtureBundle packs runner/testdata/process-bundle with code/run.sh
// replaced by script, and returns a Fetch that serves the archive.
func fixtureBundle(t *testing.T, script string) FetchFunc {
	t.Helper()
	return fetchOf(packFixture(t, script))
}

// packFixture packs runner/testdata/process-bundle with code/run.sh
// replaced by script (none: the fixture's own, a minimal valid run).
func packFixture(t testing.TB, script string) []byte {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "bundle")
	if err := os.CopyFS(dir, os.DirFS("testdata/process-bundle")); err != nil {
		t.Fatal(err)
	}
	if script != "" {
		if err := os.WriteFile(filepath.Join(dir, "code", "run.sh"), []byte(script), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	var buf bytes.Buffer
	if err := bundle.Pack(dir, &buf); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// fetchOf provides the packed bundle data to every job.
func fetchOf(data []byte) FetchFunc {
	return func(ctx context.Context, spec d5list.JobSpec, w io.Writer) error {
		_, err := w.Write(data)
		return err
	}
}

func testSpec(seeds ...int64) d5list.JobSpec {
	return d5list.JobSpec{
		JobID:     7,
		Benchmark: d5list.Benchmark{ID: "l2-digits-mlp-cpu", Verify: d5list.VerifyPolicy{TimeLimitSeconds: 60}},
		Recipe:    d5list.Recipe{Entrypoint: "code/run.sh"},
		Seeds:     seeds,
	}
}

// workDir is a runner work folder the sandbox user can traverse, as the
// default (the system temp dir) is; t.TempDir() is private to root.
func workDir(t testing.TB) string {
	t.Helper()
	d := t.TempDir()
	for _, dir := range []string{filepath.Dir(d), d} {
		if err := os.Chmod(dir, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	return d
}

func TestProcessRunsEntrypointPerSeed(t *testing.T) {
	needBwrap(t)
	var mu sync.Mutex
	var lines []string
	p, err := NewProcess(ProcessOptions{
		Versions: testVersions[true],
		Fetch:    fixtureBundle(t, ""),
		WorkDir:  workDir(t),
		OnLine: func(run int, stream, line string) {
			mu.Lock()
			defer mu.Unlock()
			lines = append(lines, fmt.Sprintf("%d %s %s", run, stream, line))
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	if !p.Sandboxed() {
		t.Fatal("bwrap is installed but the executor is not sandboxed")
	}
	seeds := []int64{11, 22, 33}
	logs, err := p.Execute(context.Background(), testSpec(seeds...))
	if err != nil {
		t.Fatal(err)
	}
	if len(logs) != len(seeds) {
		t.Fatalf("got %d logs, want %d", len(logs), len(seeds))
	}
	for i, l := range logs {
		if l.Index != i || l.Seed != seeds[i] {
			t.Errorf("log %d: index %d seed %d, want %d %d", i, l.Index, l.Seed, i, seeds[i])
		}
		events, err := mllog.Parse(bytes.NewReader(l.Log), "result")
		if err != nil {
			t.Fatalf("log %d: %v\n%s", i, err, l.Log)
		}
		var logged int64 = -1
		for _, e := range events {
			if e.Key == mllog.KeySeed {
				logged, _ = mllog.Int(e.Value)
			}
		}
		if logged != seeds[i] {
			t.Errorf("log %d: the run logged seed %d, want the gate's %d", i, logged, seeds[i])
		}
	}
	for i, seed := range seeds {
		want := fmt.Sprintf("%d stdout seed %d done", i, seed)
		found := false
		for _, l := range lines {
			found = found || l == want
		}
		if !found {
			t.Errorf("OnLine never saw %q; got %q", want, lines)
		}
	}
}

// TestProcessSandboxConfines runs a script that tries to reach a listener
// on the host's loopback and to write outside its scratch dir. The same
// script run unsandboxed does both, which shows the probes work.
func TestProcessSandboxConfines(t *testing.T) {
	needBwrap(t)
	for _, tc := range []struct {
		name      string
		sandboxed bool
	}{{"sandboxed", true}, {"unsandboxed control", false}} {
		t.Run(tc.name, func(t *testing.T) {
			ln, err := net.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				t.Fatal(err)
			}
			defer ln.Close()
			accepted := make(chan struct{}, 1)
			go func() {
				if c, err := ln.Accept(); err == nil {
					c.Close()
					accepted <- struct{}{}
				}
			}()
			port := ln.Addr().(*net.TCPAddr).Port
			outside := filepath.Join(t.TempDir(), "escaped.txt")
			home, err := os.UserHomeDir()
			if err != nil {
				t.Fatal(err)
			}
			homeFile := filepath.Join(home, fmt.Sprintf(".d5list-escape-%d-%d", os.Getpid(), time.Now().UnixNano()))
			defer os.Remove(homeFile)
			script := fmt.Sprintf(`#!/bin/bash
if exec 3<>/dev/tcp/127.0.0.1/%d; then echo "net: connected"; else echo "net: blocked"; fi
if echo x > %q; then echo "tmp: written"; else echo "tmp: blocked"; fi
if echo x > %q; then echo "home: written"; else echo "home: blocked"; fi
if echo x > "$D5_SCRATCH/ok"; then echo "scratch: written"; fi
echo ':::MLLOG {"namespace": "", "time_ms": 1, "event_type": "INTERVAL_START", "key": "run_start", "value": null, "metadata": {}}' > "$D5_RESULT_LOG"
`, port, outside, homeFile)
			var mu sync.Mutex
			out := map[string]string{}
			p, err := NewProcess(ProcessOptions{
				Versions:         testVersions[tc.sandboxed],
				Fetch:            fixtureBundle(t, script),
				WorkDir:          workDir(t),
				AllowUnsandboxed: !tc.sandboxed,
				Bwrap:            map[bool]string{true: "", false: "/nonexistent/bwrap"}[tc.sandboxed],
				OnLine: func(run int, stream, line string) {
					if k, v, ok := strings.Cut(line, ": "); ok && stream == "stdout" {
						mu.Lock()
						out[k] = v
						mu.Unlock()
					}
				},
			})
			if err != nil {
				t.Fatal(err)
			}
			if p.Sandboxed() != tc.sandboxed {
				t.Fatalf("Sandboxed() = %v", p.Sandboxed())
			}
			if _, err := p.Execute(context.Background(), testSpec(1)); err != nil {
				t.Fatal(err)
			}
			_, statOut := os.Stat(outside)
			_, statHome := os.Stat(homeFile)
			var gotConn bool
			select {
			case <-accepted:
				gotConn = true
			case <-time.After(200 * time.Millisecond):
			}
			if out["scratch"] != "written" {
				t.Errorf("the script could not write its scratch dir: %v", out)
			}
			if tc.sandboxed {
				if gotConn || out["net"] != "blocked" {
					t.Errorf("the sandboxed script reached 127.0.0.1:%d (accepted %v, script says %q)", port, gotConn, out["net"])
				}
				if statOut == nil || out["tmp"] != "blocked" {
					t.Errorf("the sandboxed script wrote %s (script says %q)", outside, out["tmp"])
				}
				if statHome == nil || out["home"] != "blocked" {
					t.Errorf("the sandboxed script wrote %s (script says %q)", homeFile, out["home"])
				}
				return
			}
			if !gotConn || statOut != nil || statHome != nil {
				t.Errorf("control: unsandboxed probes should succeed: conn %v, %s: %v, %s: %v, output %v",
					gotConn, outside, statOut, homeFile, statHome, out)
			}
		})
	}
}

// descendants lists pid and every process below it, from /proc.
func descendants(pid int) []int {
	children := map[int][]int{}
	ents, _ := os.ReadDir("/proc")
	for _, e := range ents {
		child, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
		if err != nil {
			continue
		}
		f := strings.Fields(string(b[bytes.LastIndexByte(b, ')')+1:]))
		if len(f) > 1 {
			ppid, _ := strconv.Atoi(f[1])
			children[ppid] = append(children[ppid], child)
		}
	}
	out := []int{pid}
	for i := 0; i < len(out); i++ {
		out = append(out, children[out[i]]...)
	}
	return out
}

// alive is kill -0, except that a zombie (dead, not yet reaped by whatever
// init the container has) counts as gone.
func alive(pid int) bool {
	if err := exec.Command("kill", "-0", strconv.Itoa(pid)).Run(); err != nil {
		return false
	}
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	f := strings.Fields(string(b[bytes.LastIndexByte(b, ')')+1:]))
	return len(f) > 0 && f[0] != "Z"
}

func TestProcessCancelKillsGroup(t *testing.T) {
	needBwrap(t)
	script := "#!/bin/sh\nsleep 300 &\n(sleep 300; echo never) &\necho started\nwait\n"
	for _, sandboxed := range []bool{true, false} {
		t.Run(fmt.Sprintf("sandboxed=%v", sandboxed), func(t *testing.T) {
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			var leader atomic.Int64
			started := make(chan struct{}, 1)
			p, err := NewProcess(ProcessOptions{
				Versions:         testVersions[sandboxed],
				Fetch:            fixtureBundle(t, script),
				WorkDir:          workDir(t),
				AllowUnsandboxed: !sandboxed,
				Bwrap:            map[bool]string{true: "", false: "/nonexistent/bwrap"}[sandboxed],
				OnStart:          func(run, pid int) { leader.Store(int64(pid)) },
				OnLine: func(run int, stream, line string) {
					if line == "started" {
						started <- struct{}{}
					}
				},
			})
			if err != nil {
				t.Fatal(err)
			}
			errc := make(chan error, 1)
			go func() { _, err := p.Execute(ctx, testSpec(1)); errc <- err }()
			select {
			case <-started:
			case err := <-errc:
				t.Fatalf("the job ended before the script printed started: %v", err)
			case <-time.After(20 * time.Second):
				t.Fatal("the script never printed started")
			}
			// "started" is printed before the background subshell has
			// necessarily forked its sleep, so wait for the whole tree:
			// leader, the shell and two sleeps at least (bwrap adds its own).
			var group []int
			for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(20 * time.Millisecond) {
				group = descendants(int(leader.Load()))
				if len(group) >= 4 {
					break
				}
				if time.Now().After(deadline) {
					t.Fatalf("found only %v below the leader", group)
				}
			}
			cancel()
			start := time.Now()
			if err := <-errc; err == nil {
				t.Fatal("a cancelled job returned no error")
			}
			for _, pid := range group {
				for alive(pid) {
					if time.Since(start) > 5*time.Second {
						t.Fatalf("pid %d of %v still alive 5 s after cancel", pid, group)
					}
					time.Sleep(50 * time.Millisecond)
				}
			}
		})
	}
}

func TestProcessTimeLimit(t *testing.T) {
	needBwrap(t)
	p, err := NewProcess(ProcessOptions{Versions: testVersions[true], Fetch: fixtureBundle(t, "#!/bin/sh\nsleep 300\n"), WorkDir: workDir(t)})
	if err != nil {
		t.Fatal(err)
	}
	spec := testSpec(1)
	spec.Benchmark.Verify.TimeLimitSeconds = 1
	start := time.Now()
	_, err = p.Execute(context.Background(), spec)
	if err == nil || !strings.Contains(err.Error(), "time limit") {
		t.Fatalf("want a time-limit error, got %v", err)
	}
	if d := time.Since(start); d > 10*time.Second {
		t.Errorf("a 1 s time limit took %v to stop the run", d)
	}
}

func TestProcessRLimits(t *testing.T) {
	needBwrap(t)
	const writeLog = `echo ':::MLLOG {"namespace": "", "time_ms": 1, "event_type": "INTERVAL_START", "key": "run_start", "value": null, "metadata": {}}' > "$D5_RESULT_LOG"` + "\n"
	forker := "#!/bin/sh\nfor i in $(seq 1 30); do sleep 3 & done\n" + writeLog
	spinner := "#!/bin/sh\ni=0\nwhile [ $i -lt 100000000 ]; do i=$((i+1)); done\n" + writeLog
	for _, tc := range []struct {
		name   string
		script string
		limits ResourceLimits
		fails  bool
	}{
		{"30 processes, limit 10", forker, ResourceLimits{Processes: 10}, true},
		{"30 processes, default limit", forker, ResourceLimits{}, false},
		{"busy loop, 1 s of CPU", spinner, ResourceLimits{CPUSeconds: 1}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p, err := NewProcess(ProcessOptions{Versions: testVersions[true], Fetch: fixtureBundle(t, tc.script), WorkDir: workDir(t), RLimits: tc.limits})
			if err != nil {
				t.Fatal(err)
			}
			_, err = p.Execute(context.Background(), testSpec(1))
			if tc.fails != (err != nil) {
				t.Fatalf("fails = %v, want %v (err %v)", err != nil, tc.fails, err)
			}
		})
	}
}

func TestProcessRefusesWithoutSandbox(t *testing.T) {
	fetch := func(ctx context.Context, spec d5list.JobSpec, w io.Writer) error { return nil }
	_, err := NewProcess(ProcessOptions{Fetch: fetch, Bwrap: "/nonexistent/bwrap"})
	if err == nil || !strings.Contains(err.Error(), "--allow-unsandboxed") {
		t.Fatalf("want a refusal that names --allow-unsandboxed, got %v", err)
	}
	if d5list.ErrorCode(err) != d5list.EUNAVAILABLE {
		t.Errorf("code %s, want %s", d5list.ErrorCode(err), d5list.EUNAVAILABLE)
	}
	p, err := NewProcess(ProcessOptions{Fetch: fetch, Bwrap: "/nonexistent/bwrap", AllowUnsandboxed: true})
	if err != nil {
		t.Fatal(err)
	}
	if p.Sandboxed() {
		t.Error("Sandboxed() is true without bwrap")
	}
	var zero Process
	if _, err := zero.Execute(context.Background(), testSpec(1)); err == nil || !strings.Contains(err.Error(), "--allow-unsandboxed") {
		t.Errorf("a zero Process ran without a sandbox: %v", err)
	}
}

func TestCheckEntrypoint(t *testing.T) {
	for _, tc := range []struct {
		in string
		ok bool
	}{
		{"code/run.sh", true}, {"run.py", true},
		{"", false}, {"/bin/sh", false}, {"../x.sh", false}, {"code/../../x", false}, {`code\run.bat`, false}, {"./code/run.sh", false},
	} {
		_, err := checkEntrypoint(tc.in)
		if (err == nil) != tc.ok {
			t.Errorf("checkEntrypoint(%q) = %v, want ok %v", tc.in, err, tc.ok)
		}
	}
}

// takeSeed is the shell way to open the gate: the run's seed, and its
// window, come from it.
const takeSeed = "read -r gate < \"$D5_GATE\"\n"

// mllogLine is a shell line that appends one MLLOG event to the result log.
func mllogLine(key, ms, meta string) string {
	return `echo ':::MLLOG {"namespace": "", "time_ms": ` + ms + `, "event_type": "POINT_IN_TIME", "key": "` + key + `", "value": null, "metadata": {` + meta + `}}' >> "$D5_RESULT_LOG"` + "\n"
}

// TestProcessRunCannotReplaceItsLogOrGate: the result log and the gate are
// the runner's FIFOs in a folder the sandbox sees read-only. A run cannot
// swap the log for a link to a secret or to /dev/zero, remove, rename or
// chmod it, read back what it wrote (to take a line back before the
// runner sees it), or write into its gate; what it logged is what the
// runner got, and no secret of the runner's host appears anywhere.
func TestProcessRunCannotReplaceItsLogOrGate(t *testing.T) {
	needBwrap(t)
	secretDir := workDir(t)
	secret := filepath.Join(secretDir, "runner.env")
	const secretText = "D5_RUNNER_TOKEN=d5r_do_not_leak"
	if err := os.WriteFile(secret, []byte(secretText+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	attempts := map[string]string{
		"link-secret": "ln -sf " + secret + ` "$D5_RESULT_LOG"`,
		"link-zero":   `ln -sf /dev/zero "$D5_RESULT_LOG"`,
		"remove":      `rm -f "$D5_RESULT_LOG"`,
		"rename":      `mv "$D5_RESULT_LOG" "$D5_SCRATCH/log"`,
		"chmod":       `chmod 666 "$D5_RESULT_LOG"`,
		"read-back":   `timeout 1 cat "$D5_RESULT_LOG"`,
		"fill-gate":   `echo '{"seed": 1}' > "$D5_GATE"`,
	}
	script := "#!/bin/sh\n" + takeSeed + mllogLine("run_start", "1000", "")
	for name, cmd := range attempts {
		script += "if " + cmd + " >/dev/null 2>&1; then echo '" + name + ": done'; else echo '" + name + ": blocked'; fi\n"
	}
	script += mllogLine("run_stop", "1010", `"status": "success"`)
	var mu sync.Mutex
	var lines []string
	got := map[string]string{}
	p, err := NewProcess(ProcessOptions{Versions: testVersions[true], Fetch: fixtureBundle(t, script), WorkDir: workDir(t),
		OnLine: func(run int, stream, line string) {
			mu.Lock()
			defer mu.Unlock()
			lines = append(lines, line)
			if k, v, ok := strings.Cut(line, ": "); ok && stream == "stdout" {
				got[k] = v
			}
		}})
	if err != nil {
		t.Fatal(err)
	}
	logs, err := p.Execute(context.Background(), testSpec(1))
	if err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	for name := range attempts {
		if got[name] != "blocked" {
			t.Errorf("%s: %q, want blocked", name, got[name])
		}
	}
	c := logs[0].Clock
	if n := strings.Count(string(logs[0].Log), ":::MLLOG"); n != 2 || len(c.Breaches) != 0 || !(c.LogS > 0) {
		t.Fatalf("the runner got %d lines and clock %+v, want the run's two lines and its window:\n%s", n, c, logs[0].Log)
	}
	for _, s := range append(lines, string(logs[0].Log)) {
		if strings.Contains(s, "d5r_do_not_leak") {
			t.Fatalf("the secret leaked: %q", s)
		}
	}
}

// TestProcessTimesTheWindow: the runner's clock starts when the run takes
// its seed at the gate and stops when its run_stop line arrives, whatever
// the log's time_ms says. A run that sleeps a second inside its window and
// logs 10 ms is seen to take the second; a second spent before the gate is
// on no clock (and could not have used the seed). A run that logs a fast
// pair and then its real log (truncating the log in between changes
// nothing: it is a FIFO), never takes its seed, opens its window before
// its seed, or logs no run_stop, breaches its window. The time before the
// gate is recorded beside the window, as the run's start-up.
func TestProcessTimesTheWindow(t *testing.T) {
	needBwrap(t)
	start, stop := mllogLine("run_start", "1000", ""), mllogLine("run_stop", "1010", `"status": "success"`)
	for _, c := range []struct {
		name     string
		script   string
		min, max float64 // the window, where there is no breach
		before   float64 // at least this long before the window
		breach   string
	}{
		{"a forged clock", takeSeed + start + "sleep 1\n" + mllogLine("eval_accuracy", "1005", `"epoch_num": 1`) + stop, 0.9, 3, 0, ""},
		{"work before the gate", "sleep 1\n" + takeSeed + start + stop, 0, 0.5, 0.9, ""},
		{"an early fake pair, then the real log", takeSeed + start + stop + ": > \"$D5_RESULT_LOG\"\nsleep 1\n" + start + stop, 0, 0, 0, d5list.BreachWindowRepeated},
		{"a seed never taken", start + stop, 0, 0, 0, d5list.BreachGateNotOpened},
		// The window opens at the gate, wherever run_start is: a run_start
		// logged before the seed was taken buys nothing.
		{"run_start before the gate", start + "sleep 1\n" + takeSeed + stop, 0, 0.5, 0.9, ""},
		{"no run_stop", takeSeed + start, 0, 0, 0, d5list.BreachWindowMissing},
	} {
		t.Run(c.name, func(t *testing.T) {
			p, err := NewProcess(ProcessOptions{Versions: testVersions[true], Fetch: fixtureBundle(t, "#!/bin/sh\nset -e\n"+c.script), WorkDir: workDir(t)})
			if err != nil {
				t.Fatal(err)
			}
			logs, err := p.Execute(context.Background(), testSpec(1))
			if err != nil {
				t.Fatal(err)
			}
			clock := logs[0].Clock
			if c.breach != "" {
				if len(clock.Breaches) != 1 || clock.Breaches[0].Code != c.breach || clock.LogS != 0 {
					t.Fatalf("clock %+v, want the breach %s and no window", clock, c.breach)
				}
				if c.breach == d5list.BreachGateNotOpened && clock.BeforeWindowS != 0 {
					t.Fatalf("clock %+v: a run that never opened its gate has no time before its window", clock)
				}
				return
			}
			if len(clock.Breaches) != 0 || !clock.CompetitorLog || clock.LogS < c.min || clock.LogS > c.max || clock.WallS < clock.LogS {
				t.Fatalf("clock %+v, want a window of %v to %v s", clock, c.min, c.max)
			}
			// The start-up ends where the window begins, and both lie
			// within the run's start and exit.
			if clock.BeforeWindowS <= 0 || clock.BeforeWindowS < c.before || clock.BeforeWindowS > c.before+0.5 || clock.BeforeWindowS+clock.LogS > clock.WallS {
				t.Fatalf("clock %+v, want %v to %v s before the window, within the whole run", clock, c.before, c.before+0.5)
			}
		})
	}
}

// The CPU time a sandboxed run records is its processes' own: bwrap's
// rusage leaves out what the sandbox's init reaps, so it is read from the
// run's process tree. A shell that counts inside the sandbox records about
// the CPU time the same loop takes outside it, not nothing, however busy
// the machine (the run's wall time is no measure then).
//
// The same holds for work split among processes too short-lived for the
// runner to see between its polls of the tree (the job's cgroup counts
// them): their CPU time is the run's, never a neighbour's.
func TestProcessRecordsTheSandboxesCPU(t *testing.T) {
	needBwrap(t)
	const count = `i=0; while [ $i -lt 1000000 ]; do i=$((i+1)); done`
	const shortLived = `for k in $(seq 100); do sh -c 'i=0; while [ $i -lt 10000 ]; do i=$((i+1)); done'; done`
	for _, work := range []string{count, shortLived} {
		script := "#!/bin/sh\nset -e\n" + takeSeed + mllogLine("run_start", "1000", "") + work + "\n" +
			`echo ':::MLLOG {"namespace": "", "time_ms": 1000, "event_type": "POINT_IN_TIME", "key": "run_stop", "value": null, "metadata": {"status": "success"}}' > "$D5_RESULT_LOG"` + "\n"
		direct := exec.Command("/bin/sh", "-c", work)
		if err := direct.Run(); err != nil {
			t.Fatal(err)
		}
		alone := (direct.ProcessState.UserTime() + direct.ProcessState.SystemTime()).Seconds()
		p, err := NewProcess(ProcessOptions{Versions: testVersions[true], Fetch: fixtureBundle(t, script), WorkDir: workDir(t)})
		if err != nil {
			t.Fatal(err)
		}
		logs, err := p.Execute(context.Background(), testSpec(1))
		if err != nil {
			t.Fatal(err)
		}
		c := logs[0].Clock
		t.Logf("the work took %.2f s of CPU outside the sandbox; the sandboxed run recorded %+v", alone, c)
		if c == nil || c.CPUS < 0.5*alone || c.CPUS > c.WallS+0.5 {
			t.Fatalf("%s: clock %+v: want the run's own CPU time, about the work's %.2f s outside the sandbox", work, c, alone)
		}
	}
}

// A neighbour that keeps a CPU busy while a run computes shows in the
// run's clock as foreign CPU time (ForeignCPUS), beside the run's own: the
// verdict's sign of a slowdown that no wait for a CPU shows. The run's own
// counting is not foreign.
func TestProcessRecordsTheNeighboursCPU(t *testing.T) {
	needBwrap(t)
	const count = `i=0; while [ $i -lt 1000000 ]; do i=$((i+1)); done`
	script := "#!/bin/sh\nset -e\n" + takeSeed + mllogLine("run_start", "1000", "") + count + "\n" + mllogLine("run_stop", "1010", `"status": "success"`)
	p, err := NewProcess(ProcessOptions{Versions: testVersions[true], Fetch: fixtureBundle(t, script), WorkDir: workDir(t)})
	if err != nil {
		t.Fatal(err)
	}
	neighbour := exec.Command("/bin/sh", "-c", "while :; do :; done")
	if err := neighbour.Start(); err != nil {
		t.Fatal(err)
	}
	logs, err := p.Execute(context.Background(), testSpec(1))
	neighbour.Process.Kill()
	neighbour.Wait()
	if err != nil {
		t.Fatal(err)
	}
	c := logs[0].Clock
	t.Logf("clock %+v", c)
	// The neighbour had a CPU to itself, or shared one with the run: at
	// least a third of the run's wall time either way, on any machine.
	if c == nil || c.ForeignCPUS < c.WallS/3 {
		t.Fatalf("clock %+v: want the neighbour's busy loop as foreign CPU time, at least a third of the run's %v s", c, c.WallS)
	}
}

// testVersions are shared by this package's executors, one for each way
// they start python3 (sandboxed or not), so that the host's python3 is
// asked for its versions once, not in every test: each probe imports
// torch, about two seconds.
var testVersions = map[bool]*VersionCache{true: new(VersionCache), false: new(VersionCache)}
