package runner

import (
	"context"
	"os/exec"
	"slices"
	"strings"
	"testing"

	d5list "github.com/deep500/d5list"
)

// operatorSpec is a small GEMM benchmark the runner's harness runs: two
// shapes, eight calls each after the warm-up; one claimed seed and one
// fresh one.
func operatorSpec() d5list.JobSpec {
	spec := testSpec(11)
	spec.FreshSeeds = []int64{907}
	spec.Benchmark.ID = "l0-gemm-test"
	spec.Benchmark.Verify.Harness = "operator"
	spec.Benchmark.Division.Fixed = map[string]any{"op": "gemm", "repeats": 8,
		"shapes": []any{map[string]any{"m": 40, "n": 6, "k": 33}, map[string]any{"m": 9, "n": 12, "k": 20}}}
	return spec
}

// harnessEntrypoint runs the harness with a numpy operator, written as a
// competitor would (op is Python defining op(x, y, shape)).
func harnessEntrypoint(op string) string {
	return "#!/bin/sh\nexec /usr/bin/python3 -c '\nimport numpy as np\nimport d5harness\n" + op + "\nd5harness.run_operator(op)\n'\n"
}

func needNumpy(t *testing.T) {
	t.Helper()
	if err := exec.Command(SandboxPython, "-c", "import numpy").Run(); err != nil {
		t.Skipf("%s has no numpy (apt-get install python3-numpy; CI installs python3-torch): %v", SandboxPython, err)
	}
}

// The process executor runs a harness benchmark end to end in the sandbox:
// the task in $D5_TASK, the seed at the gate, the commitments in the
// window, then the audit through its FIFO. An honest operator passes with
// every asked call recomputed by the runner; one in float32, one that
// skips calls by handing back the last output, and code that does not use
// the harness at all fail, each with what it did.
func TestProcessAuditsTheHarnessRun(t *testing.T) {
	needBwrap(t)
	needNumpy(t)
	cases := []struct {
		name, op string
		failure  string // "" for an honest run
		words    string
	}{
		{"honest", "def op(x, y, shape):\n    return x @ y\n", "", ""},
		{"float32", "def op(x, y, shape):\n    return (x.astype(np.float32) @ y.astype(np.float32)).astype(np.float64)\n", d5list.AuditMismatch, "tolerance"},
		// One product per shape, handed back for every call: the calls'
		// work skipped, as if done before the window.
		{"a cached product", "cache = {}\ndef op(x, y, shape):\n    key = (x.shape, y.shape)\n    if key not in cache:\n        cache[key] = x @ y\n    return cache[key]\n", d5list.AuditMismatch, ""},
		// Garbage for one call in ten of the window (its 18 calls), the
		// work done only when the audit asks.
		{"garbage for one call in ten", "n = [0]\ndef op(x, y, shape):\n    n[0] += 1\n    if n[0] <= 18 and n[0] % 10 == 4:\n        return np.zeros((x.shape[0], y.shape[1]))\n    return x @ y\n",
			d5list.AuditMismatch, "not the one it committed to"},
		// A NaN in one call's output, given again when the audit asks: no
		// tolerance judges it, and it is not excused.
		{"a NaN in one call in ten", "n, bad = [0], set()\ndef op(x, y, shape):\n    n[0] += 1\n    out = x @ y\n    key = y.tobytes()\n    if (n[0] <= 18 and n[0] % 10 == 4) or key in bad:\n        bad.add(key)\n        out[0, 0] = np.nan\n    return out\n",
			d5list.AuditNonFinite, "is NaN"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var order []int
			p, err := NewProcess(ProcessOptions{Versions: testVersions[true], Fetch: fixtureBundle(t, harnessEntrypoint(c.op)), WorkDir: workDir(t),
				OnStart: func(run, _ int) { order = append(order, run) }})
			if err != nil {
				t.Fatal(err)
			}
			logs, err := p.Execute(context.Background(), operatorSpec())
			if err != nil {
				t.Fatal(err)
			}
			// The fresh run first, its audit done while the claimed run
			// starts; the logs in index order.
			if !slices.Equal(order, []int{1, 0}) || len(logs) != 2 || logs[0].Index != 0 || !logs[1].Fresh {
				t.Fatalf("runs started in the order %v, logs %+v; want the fresh run 1 first and the logs in index order", order, logs)
			}
			for _, l := range logs {
				a := l.Clock.Audit
				if a == nil || len(a.Sections) != 2 {
					t.Fatalf("run %d: audit %+v, want one of two sections", l.Index, a)
				}
				if len(l.Clock.Breaches) != 0 {
					t.Fatalf("run %d: breaches %+v", l.Index, l.Clock.Breaches)
				}
				if !l.Fresh {
					// A claimed seed's run is held to its claim, not audited.
					if len(a.Failures) != 0 || len(a.Sections[0].Checked) != 0 {
						t.Fatalf("run %d of a claimed seed: audit %+v, want its commitments only", l.Index, a)
					}
					continue
				}
				if c.failure == "" {
					if len(a.Failures) != 0 {
						t.Fatalf("run %d: an honest operator failed its audit: %+v", l.Index, a.Failures)
					}
					// Sections of 9 calls, fewer than the audit checks
					// of a fresh run (harness/coverage.go): every call.
					for _, s := range a.Sections {
						if len(s.Checked) != s.Calls || s.MaxRelError > 1e-12 {
							t.Fatalf("run %d: section %+v, want every call checked within 1e-12", l.Index, s)
						}
					}
					continue
				}
				if len(a.Failures) == 0 || a.Failures[0].Code != c.failure || !strings.Contains(a.Failures[0].Message, c.words) {
					t.Errorf("run %d: failures %+v, want %s naming %q", l.Index, a.Failures, c.failure, c.words)
				}
			}
		})
	}
	t.Run("code that does not use the harness", func(t *testing.T) {
		script := "#!/bin/sh\n" + takeSeed + mllogLine("run_start", "1000", "") + mllogLine("op_time_ms", "1001", `"shape": "40x6x33"`) + mllogLine("run_stop", "1010", `"status": "success"`)
		p, err := NewProcess(ProcessOptions{Versions: testVersions[true], Fetch: fixtureBundle(t, script), WorkDir: workDir(t)})
		if err != nil {
			t.Fatal(err)
		}
		logs, err := p.Execute(context.Background(), operatorSpec())
		if err != nil {
			t.Fatal(err)
		}
		a := logs[0].Clock.Audit
		if a == nil || len(a.Failures) != 2 || a.Failures[0].Code != d5list.AuditMissing {
			t.Fatalf("audit %+v, want both sections missing their commitments", a)
		}
	})
}
