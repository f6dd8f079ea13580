package runner

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	d5list "github.com/deep500/d5list"
	"github.com/deep500/d5list/harness"
)

// streamingTask is a small training task: one hidden layer of 128 (a
// state of 77 kB, more than a read of the runner's takes at once),
// minibatches of 256 (6 steps an epoch, a state after each).
func streamingTask(t *testing.T) *harness.Task {
	t.Helper()
	bench := &d5list.Benchmark{ID: "training-test", Verify: d5list.VerifyPolicy{Harness: harness.KindMLPTraining},
		Division: d5list.DivisionRules{
			Fixed:   map[string]any{"dataset": "uci-digits", "model_kwargs": map[string]any{"hidden": []any{int64(128)}}, "epochs": int64(2)},
			Mutable: map[string]any{"batch_size": int64(256), "optimizer": "sgd-momentum", "optimizer_args": map[string]any{"lr": 0.05, "momentum": 0.9}}}}
	task, err := harness.For(bench, &d5list.Recipe{})
	if err != nil {
		t.Fatal(err)
	}
	if task.StateEvery != 1 {
		t.Fatalf("a state every %d steps; the test wants every step", task.StateEvery)
	}
	return task
}

// streamRun serves one run of a streamed training task through a window, as
// the run's side would: it opens the gate, writes states 0 to before-1
// into $D5_REVEAL, logs run_start and run_stop, then, once the runner has
// seen run_stop, writes the rest. It returns the stretches the runner drew
// and what it took of the stream.
func streamRun(t *testing.T, task *harness.Task, fresh, full bool, before int) ([]int, *harness.Stream) {
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
	reveal, err := os.OpenFile(filepath.Join(win.dir, windowRevealName), os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	size := (64*128 + 128 + 128*10 + 10) * 2 * 4
	state := func(i int) {
		if _, err := fmt.Fprintf(reveal, "{\"state\": %d, \"size\": %d}\n", i, size); err != nil {
			t.Fatal(err)
		}
		if _, err := reveal.Write(make([]byte, size)); err != nil {
			t.Fatal(err)
		}
	}
	total := 13 // the initial state and 2 epochs of 6 steps
	for i := range before {
		state(i)
	}
	logFile, err := os.OpenFile(filepath.Join(win.dir, windowLogName), os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range []string{
		`:::MLLOG {"namespace": "", "time_ms": 1, "event_type": "INTERVAL_START", "key": "run_start", "value": null, "metadata": {}}`,
		`:::MLLOG {"namespace": "", "time_ms": 3, "event_type": "INTERVAL_END", "key": "run_stop", "value": null, "metadata": {"status": "success"}}`,
	} {
		if _, err := logFile.WriteString(line + "\n"); err != nil {
			t.Fatal(err)
		}
	}
	logFile.Close()
	<-win.stopped
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(time.Millisecond) {
		win.mu.Lock()
		limit := win.streamLimit
		win.mu.Unlock()
		if limit >= 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the window never set its stream's limit at run_stop")
		}
	}
	for i := before; i < total; i++ {
		state(i)
	}
	reveal.Close()
	if _, err := win.close(&d5list.RunClock{}); err != nil {
		t.Fatal(err)
	}
	win.mu.Lock()
	defer win.mu.Unlock()
	return win.challenge["training"], win.stream
}

// The runner draws a streamed run's stretches when the window opens: the
// first and the last for every run, every one for a full audit (the
// account failed one), and it keeps exactly the states at their ends. A
// state written after run_stop does not count, and the audit says which.
func TestWindowDrawsAndKeepsAStreamedRunsStates(t *testing.T) {
	task := streamingTask(t)
	drawn, st := streamRun(t, task, false, false, 13)
	if !slices.Equal(drawn, []int{1, 12}) {
		t.Fatalf("a claimed seed's run has stretches %v drawn, want the first and last (1, 12)", drawn)
	}
	if st.Err != nil || st.Arrived != 13 || st.Late != -1 {
		t.Fatalf("stream: %d states in time, the first late %d, error %v; want 13 states in time", st.Arrived, st.Late, st.Err)
	}
	if kept := slices.Sorted(func(yield func(int) bool) {
		for i := range st.States {
			if !yield(i) {
				return
			}
		}
	}); !slices.Equal(kept, []int{0, 1, 11, 12}) {
		t.Fatalf("kept states %v, want the ends of the drawn stretches (0, 1, 11, 12)", kept)
	}
	for _, fresh := range []bool{false, true} {
		drawn, _ := streamRun(t, task, fresh, true, 13)
		if !slices.Equal(drawn, []int{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12}) {
			t.Fatalf("a full audit (fresh seed %t) draws stretches %v, want every one", fresh, drawn)
		}
	}
	_, st = streamRun(t, task, true, false, 10)
	if st.Late != 10 || st.Arrived != 10 {
		t.Fatalf("stream: %d states in time, the first late %d, error %v; states 10 to 12 written after run_stop, want state 10 late and 10 in time", st.Arrived, st.Late, st.Err)
	}
	a := task.CheckStream(42, st, harness.Challenge{"training": {1}}, func() {})
	if len(a.Failures) != 1 || a.Failures[0].Code != d5list.AuditMissing || !strings.Contains(a.Failures[0].Message, "state 10") || !strings.Contains(a.Failures[0].Message, "after run_stop") {
		t.Fatalf("failures %+v, want state 10 named as late", a.Failures)
	}
}
