package runner

import (
	"bufio"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"testing"

	d5list "github.com/deep500/d5list"
	"github.com/deep500/d5list/harness"
)

// challengeOf serves one run of a training task through a window, as the
// run's side would: it opens the gate, commits to its states and logs
// run_stop, then opens the audit and reads which states the runner asks
// for.
func challengeOf(t *testing.T, task *harness.Task, fresh, full bool) []int {
	t.Helper()
	win, err := openWindow(filepath.Join(t.TempDir(), "ctl"), windowRun{index: 0, seed: 42, fresh: fresh, full: full, task: task, maxBytes: 1 << 20})
	if err != nil {
		t.Fatal(err)
	}
	gate, err := os.Open(filepath.Join(win.dir, windowGateName))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := bufio.NewReader(gate).ReadString('\n'); err != nil {
		t.Fatal(err)
	}
	gate.Close()
	logFile, err := os.OpenFile(filepath.Join(win.dir, windowLogName), os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range []string{
		`:::MLLOG {"namespace": "", "time_ms": 1, "event_type": "INTERVAL_START", "key": "run_start", "value": null, "metadata": {}}`,
		`:::MLLOG {"namespace": "", "time_ms": 2, "event_type": "POINT_IN_TIME", "key": "` + harness.CommitmentKey + `", "value": "00", "metadata": {"section": "training"}}`,
		`:::MLLOG {"namespace": "", "time_ms": 3, "event_type": "INTERVAL_END", "key": "run_stop", "value": null, "metadata": {"status": "success"}}`,
	} {
		if _, err := logFile.WriteString(line + "\n"); err != nil {
			t.Fatal(err)
		}
	}
	logFile.Close()
	audit, err := os.Open(filepath.Join(win.dir, windowAuditName))
	if err != nil {
		t.Fatal(err)
	}
	line, err := bufio.NewReader(audit).ReadBytes('\n')
	audit.Close()
	if err != nil {
		t.Fatal(err)
	}
	var c struct{ Sections harness.Challenge }
	if err := json.Unmarshal(line, &c); err != nil {
		t.Fatalf("the audit's challenge %q: %v", line, err)
	}
	if _, err := win.close(&d5list.RunClock{}); err != nil {
		t.Fatal(err)
	}
	return c.Sections["training"]
}

// A job whose spec asks for a full audit (the account failed one) has the
// runner ask every run for every state of its training, the claimed
// seeds' runs too; otherwise a claimed seed's run is asked for its last
// state only.
func TestWindowAsksAFullAuditForEveryState(t *testing.T) {
	bench := &d5list.Benchmark{ID: "training-test", Verify: d5list.VerifyPolicy{Harness: harness.KindMLPTraining},
		Division: d5list.DivisionRules{
			Fixed:   map[string]any{"dataset": "uci-digits", "model_kwargs": map[string]any{"hidden": []any{int64(16)}}, "epochs": int64(5)},
			Mutable: map[string]any{"batch_size": int64(64), "optimizer": "sgd-momentum", "optimizer_args": map[string]any{"lr": 0.05, "momentum": 0.9}}}}
	task, err := harness.For(bench, &d5list.Recipe{})
	if err != nil {
		t.Fatal(err)
	}
	if got := challengeOf(t, task, false, false); !slices.Equal(got, []int{5}) {
		t.Fatalf("a claimed seed's run is asked for states %v, want the last (5)", got)
	}
	for _, fresh := range []bool{false, true} {
		if got := challengeOf(t, task, fresh, true); !slices.Equal(got, []int{0, 1, 2, 3, 4, 5}) {
			t.Fatalf("a full audit (fresh seed %t) asks for states %v, want every one", fresh, got)
		}
	}
}
