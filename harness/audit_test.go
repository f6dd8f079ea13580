package harness

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	d5list "github.com/deep500/d5list"
	"github.com/deep500/d5list/mllog"
)

// python is Debian's python3 with numpy (python3-torch brings it), which
// the runner's sandbox runs; CI installs it.
func python(t *testing.T) string {
	t.Helper()
	const py = "/usr/bin/python3"
	if err := exec.Command(py, "-c", "import numpy").Run(); err != nil {
		if os.Getenv("CI") != "" {
			t.Fatalf("CI must install numpy for %s (python3-torch): %v", py, err)
		}
		t.Skipf("%s has no numpy (apt-get install python3-numpy): the harness's Python half is not tested", py)
	}
	return py
}

// The two halves make the same random streams to the bit.
func TestStreamsAgreeWithPython(t *testing.T) {
	py := python(t)
	key := StreamKey(42, "gemm:2x3x4", "A")
	out, err := exec.Command(py, "-c", fmt.Sprintf(`
import sys; sys.path.insert(0, %q)
import d5harness as h
k = h.stream_key(42, "gemm:2x3x4", "A")
print(k)
print(" ".join(repr(float(v)) for v in h.uniform(k, 5)))
print(h.stream_key(7, "conv2d:x", 3, 18446744073709551615))
`, ".")).CombinedOutput()
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	if lines[0] != fmt.Sprint(key) {
		t.Fatalf("stream key: Python %s, Go %d", lines[0], key)
	}
	var want []string
	for _, v := range Uniform(key, 5) {
		want = append(want, fmt.Sprint(v))
	}
	if got := strings.Fields(lines[1]); strings.Join(got, " ") != strings.Join(want, " ") {
		t.Fatalf("uniform: Python %v, Go %v", got, want)
	}
	if lines[2] != fmt.Sprint(StreamKey(7, "conv2d:x", 3, uint64(1<<64-1))) {
		t.Fatalf("a key with a digest in it: Python %s, Go %d", lines[2], StreamKey(7, "conv2d:x", 3, uint64(1<<64-1)))
	}
}

// runPythonHarness runs the harness's Python half as a runner would, with
// the given operator source (numpy, defining op(x, y)) or network (build),
// the gate, audit and reveal stream as plain files (the protocol is the
// same), and returns the log and what the run revealed, read as the
// runner reads it.
func runPythonHarness(t *testing.T, task *Task, seed int64, code, call string, challenge func(map[string]string) Challenge) ([]mllog.Event, map[string][]byte) {
	t.Helper()
	dir := t.TempDir()
	audit, revealed := filepath.Join(dir, "audit"), filepath.Join(dir, "revealed")
	// The challenge must exist before the run reads it; a file cannot wait
	// for run_stop as the runner's FIFO does, so the test draws it from
	// the task's sections up front, as the runner would after the window.
	names := map[string]string{}
	for _, s := range task.sections {
		names[s.name] = ""
	}
	if err := os.WriteFile(audit, challenge(names).JSON(), 0o644); err != nil {
		t.Fatal(err)
	}
	events := runPythonScript(t, task, seed, code+"\n"+call, "D5_AUDIT="+audit, "D5_REVEAL="+revealed)
	stream, err := os.Open(revealed)
	if err != nil {
		t.Fatalf("the run revealed nothing: %v", err)
	}
	defer stream.Close()
	files, err := task.ReadRevealed(stream, challenge(committedIn(events)))
	if err != nil {
		t.Fatal(err)
	}
	return events, files
}

// runPythonScript runs code (Python, with numpy as np and d5harness
// imported) as a run of task from seed, its gate a plain file and env
// added to its environment, and returns its log.
func runPythonScript(t *testing.T, task *Task, seed int64, code string, env ...string) []mllog.Event {
	t.Helper()
	py := python(t)
	dir := t.TempDir()
	logPath, gate := filepath.Join(dir, "log"), filepath.Join(dir, "gate")
	if err := os.WriteFile(gate, []byte(fmt.Sprintf("{\"seed\": %d}\n", seed)), 0o644); err != nil {
		t.Fatal(err)
	}
	script := fmt.Sprintf("import sys; sys.path.insert(0, %q)\nimport numpy as np\nimport d5harness\n%s\n", ".", code)
	cmd := exec.Command(py, "-c", script)
	cmd.Env = append([]string{"PATH=/usr/bin:/bin", "D5_TASK=" + task.JSON(), "D5_GATE=" + gate, "D5_RESULT_LOG=" + logPath,
		"D5_BENCHMARK=harness-test"}, env...)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("the harness failed: %v\n%s", err, out)
	}
	data, err := os.ReadFile(logPath)
	if err != nil {
		t.Fatal(err)
	}
	events, err := mllog.Parse(bytes.NewReader(data), "log")
	if err != nil {
		t.Fatalf("%v\n%s", err, data)
	}
	return events
}

// committedIn collects the commitments a log made before its run_stop.
func committedIn(events []mllog.Event) map[string]string {
	c := map[string]string{}
	for _, e := range events {
		if e.Key == mllog.KeyRunStop {
			break
		}
		if name, ok := e.Meta("section").(string); ok && e.Key == CommitmentKey {
			c[name], _ = e.Value.(string)
		}
	}
	return c
}

func smallTask(t *testing.T, kind string) *Task {
	t.Helper()
	fixed := map[string]any{"op": kind, "repeats": 6}
	switch kind {
	case "gemm":
		fixed["shapes"] = []any{map[string]any{"m": 20, "n": 3, "k": 17}, map[string]any{"m": 5, "n": 8, "k": 9}}
	case "conv2d":
		fixed["shapes"] = []any{map[string]any{"n": 2, "c": 3, "h": 7, "w": 6, "k": 4, "r": 3, "s": 3, "pad": 1, "stride": 2}}
	}
	task, err := For(&d5list.Benchmark{ID: "harness-test", Verify: d5list.VerifyPolicy{Harness: KindOperator},
		Division: d5list.DivisionRules{Fixed: fixed}}, &d5list.Recipe{})
	if err != nil {
		t.Fatal(err)
	}
	return task
}

const numpyGEMM = "def op(x, y, shape):\n    return x @ y\n"

const numpyConv2D = `
from numpy.lib.stride_tricks import sliding_window_view
def op(x, w, shape):
    pad, stride = shape["pad"], shape["stride"]
    r, s = w.shape[2], w.shape[3]
    p = np.pad(x, ((0, 0), (0, 0), (pad, pad), (pad, pad)))
    win = sliding_window_view(p, (r, s), axis=(2, 3))[:, :, ::stride, ::stride]
    return np.tensordot(win, w, axes=([1, 4, 5], [1, 2, 3])).transpose(0, 3, 1, 2).copy()
`

// An honest operator passes its audit: the runner recomputes the calls it
// picked from the seed and the revealed digests, and finds each output
// committed in the window and within the tolerance of its own reference.
// Forgeries do not: an operator that computes in float32 (twice as fast,
// far less accurate), one that skips the work of every other call (and
// returns a stale output), and one whose revealed outputs are not the
// ones it committed to.
func TestPythonHarnessAudits(t *testing.T) {
	all := func(names map[string]string) Challenge {
		c := Challenge{}
		for _, s := range smallTask(t, "gemm").sections {
			for i := range s.calls {
				c[s.name] = append(c[s.name], i)
			}
		}
		return c
	}
	cases := []struct {
		name, kind, code string
		failure          string // "" for an honest operator
	}{
		{"honest GEMM", "gemm", numpyGEMM, ""},
		{"honest convolution", "conv2d", numpyConv2D, ""},
		{"GEMM in float32", "gemm", "def op(x, y, shape):\n    return (x.astype(np.float32) @ y.astype(np.float32)).astype(np.float64)\n", d5list.AuditMismatch},
		{"GEMM skipping every other call", "gemm", "state = {'n': 0, 'last': None}\ndef op(x, y, shape):\n    state['n'] += 1\n    if state['n'] % 2 == 0 and state['last'] is not None and state['last'].shape == (x.shape[0], y.shape[1]):\n        return state['last']\n    state['last'] = x @ y\n    return state['last']\n", d5list.AuditMismatch},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			task := smallTask(t, c.kind)
			challenge := all
			if c.kind == "conv2d" {
				challenge = func(map[string]string) Challenge {
					ch := Challenge{}
					for _, s := range task.sections {
						for i := range s.calls {
							ch[s.name] = append(ch[s.name], i)
						}
					}
					return ch
				}
			}
			events, revealed := runPythonHarness(t, task, 77, c.code, "d5harness.run_operator(op)", challenge)
			committed := committedIn(events)
			if len(committed) != len(task.sections) {
				t.Fatalf("commitments %v, want one per section of %d", committed, len(task.sections))
			}
			a := task.Check(77, committed, challenge(committed), Revealed(revealed))
			if c.failure == "" {
				if len(a.Failures) != 0 {
					t.Fatalf("an honest operator failed its audit: %+v", a.Failures)
				}
				for _, s := range a.Sections {
					if len(s.Checked) != s.Calls || s.MaxRelError > 1e-12 {
						t.Fatalf("section %+v: want every call checked, within 1e-12", s)
					}
				}
				return
			}
			if len(a.Failures) == 0 || a.Failures[0].Code != c.failure {
				t.Fatalf("failures %+v, want %s", a.Failures, c.failure)
			}
		})
	}
	t.Run("a revealed output other than the committed one", func(t *testing.T) {
		task := smallTask(t, "gemm")
		events, revealed := runPythonHarness(t, task, 78, numpyGEMM, "d5harness.run_operator(op)", all)
		revealed[OutputFile(0, 3)][0] ^= 1 // the lowest bit of the first element: within any tolerance
		a := task.Check(78, committedIn(events), all(nil), Revealed(revealed))
		if len(a.Failures) != 1 || a.Failures[0].Code != d5list.AuditMismatch || !strings.Contains(a.Failures[0].Message, "call 3") {
			t.Fatalf("failures %+v, want one mismatch at call 3", a.Failures)
		}
	})
	t.Run("no commitment in the window", func(t *testing.T) {
		task := smallTask(t, "gemm")
		a := task.Check(79, map[string]string{}, Challenge{}, func(string, int) ([]byte, error) { return nil, errors.New("none") })
		if len(a.Failures) != len(task.sections) || a.Failures[0].Code != d5list.AuditMissing {
			t.Fatalf("failures %+v, want one missing audit per section", a.Failures)
		}
	})
}

const numpyMLP = `
def build(params):
    def predict(x):
        h = x
        for i, (w, b) in enumerate(params):
            h = h @ w.T + b
            if i < len(params) - 1:
                h = np.maximum(h, 0)
        return h.astype(np.float32)
    return predict
`

// An inference run passes its audit with a network built from the
// harness's weights, and fails it with a network of its own weights.
func TestPythonInferenceHarnessAudits(t *testing.T) {
	bench := &d5list.Benchmark{ID: "inference-test", Verify: d5list.VerifyPolicy{Harness: KindMLPInference},
		Division: d5list.DivisionRules{Fixed: map[string]any{"dataset": "uci-digits", "model_kwargs": map[string]any{"hidden": []any{16.0, 8.0}}, "samples": 50.0}}}
	task, err := For(bench, &d5list.Recipe{Mutable: map[string]any{"batch_size": 8.0}})
	if err != nil {
		t.Fatal(err)
	}
	if task.sections[0].calls != 7 || task.sections[0].outSize(6) != 2*10*4 {
		t.Fatalf("50 samples in batches of 8: %d calls, the last of %d bytes; want 7, 80", task.sections[0].calls, task.sections[0].outSize(6))
	}
	every := func(map[string]string) Challenge { return Challenge{"mlp-inference": {0, 3, 6}} }
	for _, c := range []struct {
		name, build string
		ok          bool
	}{
		{"the task's network", numpyMLP, true},
		{"a network of its own", numpyMLP + "\n_b = build\nbuild = lambda params: _b([(w * 1.01, b) for w, b in params])\n", false},
	} {
		t.Run(c.name, func(t *testing.T) {
			events, revealed := runPythonHarness(t, task, 5, c.build, "d5harness.run_inference(build)", every)
			a := task.Check(5, committedIn(events), every(nil), Revealed(revealed))
			if ok := len(a.Failures) == 0; ok != c.ok {
				t.Fatalf("audit %+v: passed %v, want %v", a, ok, c.ok)
			}
		})
	}
}
