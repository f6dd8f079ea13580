package harness

import (
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	d5list "github.com/deep500/d5list"
	"github.com/deep500/d5list/mllog"
)

// torchTraining is a training run of the task's network in PyTorch, as an
// example submission's: its data, start and batches from the harness, its
// loop its own, every step's state handed to the harness. forge (Python)
// may change it: skip (an epoch not trained), drop (a minibatch of every
// epoch not trained), weak (one step's loss scaled), nan_from (a NaN in the
// momentum handed over from that epoch on), swap_last (last weights of its
// own); params may be changed before training starts (weights of its own).
const torchTraining = `
import torch
torch.set_num_threads(1)
tr = d5harness.Training()
xtr, ytr, xte, yte = tr.data()
seed = tr.take_seed()
params = tr.initial_params()
skip, drop, nan_from, swap_last = -1, -1, -1, False
weak_epoch, weak_batch, weak = -1, -1, 1.0
%s
model = d5harness.torch_linears(params)
opt = torch.optim.SGD(model.parameters(), lr=tr.lr, momentum=tr.momentum)
X, Y = torch.from_numpy(xtr), torch.from_numpy(ytr)
for e in range(1, tr.epochs + 1):
    batches = tr.batches(e, len(X))
    for k, idx in enumerate(batches):
        if e != skip and k != drop:
            idx = torch.from_numpy(idx)
            opt.zero_grad()
            loss = torch.nn.functional.cross_entropy(model(X[idx]), Y[idx])
            if (e, k) == (weak_epoch, weak_batch):
                loss = loss * weak
            loss.backward()
            opt.step()
        p, m = d5harness.torch_state(model, opt)
        if nan_from > 0 and e >= nan_from:
            m = [(w.copy(), b) for w, b in m]
            m[0][0][0, 0] = np.nan
        if swap_last and e == tr.epochs and k == len(batches) - 1:
            p = [(w * 0.5, b) for w, b in p]
        tr.step(p, m)
    tr.commit(e)
with torch.no_grad():
    acc = (model(torch.from_numpy(xte)).argmax(1) == torch.from_numpy(yte)).float().mean().item()
log = d5harness.MLLog()
log.event("eval_accuracy", acc)
log.end("run_stop")
log.close()
tr.audit()
`

// needTorchTraining skips a test without PyTorch or the digits, except in
// CI, which must have them.
func needTorchTraining(t *testing.T) {
	t.Helper()
	if err := exec.Command(python(t), "-c", "import torch, sklearn").Run(); err != nil {
		if os.Getenv("CI") != "" {
			t.Fatalf("CI must install python3-torch and python3-sklearn: %v", err)
		}
		t.Skip("no torch or sklearn for /usr/bin/python3: the training harness is not tested")
	}
	if _, _, err := loadDigits(); err != nil {
		t.Skip(err)
	}
}

// trainingTestTask is the training harness's task for the digits MLP with
// the given hidden layers, minibatch and epochs, trained as the PyTorch
// example is (SGD with momentum, 0.05 and 0.9), its states handed over
// every `every` steps.
func trainingTestTask(t *testing.T, hidden []any, batch, epochs int64, every int) *Task {
	t.Helper()
	bench := &d5list.Benchmark{ID: "training-test", Verify: d5list.VerifyPolicy{Harness: KindMLPTraining},
		Division: d5list.DivisionRules{
			Fixed:   map[string]any{"dataset": "uci-digits", "model_kwargs": map[string]any{"hidden": hidden}, "epochs": epochs},
			Mutable: map[string]any{"batch_size": batch, "optimizer": "sgd-momentum", "optimizer_args": map[string]any{"lr": 0.05, "momentum": 0.9}}}}
	task, err := For(bench, &d5list.Recipe{})
	if err != nil {
		t.Fatal(err)
	}
	if task.BatchSize != int(batch) || task.Epochs != int(epochs) {
		t.Fatalf("task %+v, want minibatches of %d and %d epochs", task, batch, epochs)
	}
	task.StateEvery = every
	task.sections = []section{trainingSection(task)}
	return task
}

// runPythonTraining runs torchTraining with forge from seed, its states
// streamed into a file, and returns its log and every state it handed over.
func runPythonTraining(t *testing.T, task *Task, seed int64, forge string) ([]mllog.Event, *Stream) {
	t.Helper()
	states := filepath.Join(t.TempDir(), "states")
	events := runPythonScript(t, task, seed, fmt.Sprintf(torchTraining, forge), "D5_REVEAL="+states)
	f, err := os.Open(states)
	if err != nil {
		t.Fatalf("the run handed over no state: %v", err)
	}
	defer f.Close()
	all := map[int]bool{}
	for i := 0; i <= task.stretches(); i++ {
		all[i] = true
	}
	st := task.ReadStream(f, all, nil)
	if st.Err != nil || st.Arrived != task.stretches()+1 {
		t.Fatalf("read %d states of %d: %v", st.Arrived, task.stretches()+1, st.Err)
	}
	return events, st
}

// auditEachStretch audits every stretch of a run alone, as the runner does
// when it draws it: each stretch's error against the recomputation, and
// which failed.
func auditEachStretch(task *Task, seed int64, st *Stream) (rel []float64, failed []int) {
	for g := 1; g <= task.stretches(); g++ {
		a := task.CheckStream(seed, st, Challenge{"training": {g}}, func() {})
		rel = append(rel, a.Sections[0].MaxRelError)
		if len(a.Failures) != 0 {
			failed = append(failed, g)
		}
	}
	return rel, failed
}

// A training run of the digits MLP in PyTorch passes its audit wherever the
// runner draws: the runner remakes its initial weights from the seed,
// recomputes each drawn stretch of steps from the state before it, and
// evaluates its last weights on the test split to the accuracy the run
// found. Every forgery fails in exactly the stretches it touched, and
// nothing is excused: weights of its own at the start or the end (the
// first and last stretches are checked in every run), an epoch not
// trained, one minibatch of each epoch left out, one step a fifth short.
func TestPythonTrainingHarnessAudits(t *testing.T) {
	needTorchTraining(t)
	task := trainingTestTask(t, []any{int64(32)}, 64, 3, 3) // 23 steps an epoch: 8 stretches
	per := task.stretchesPerEpoch()
	if per != 8 || task.stretches() != 24 {
		t.Fatalf("%d stretches an epoch, %d in all; want 8 and 24", per, task.stretches())
	}
	for _, fresh := range []bool{false, true} {
		if c := task.StreamChallenge(fresh, false)["training"]; !slices.Contains(c, 1) || !slices.Contains(c, task.stretches()) {
			t.Fatalf("fresh %v: drawn %v, want the first and the last stretch among them, in every run", fresh, c)
		}
	}
	stretchOf := func(epoch, step int) int { return (epoch-1)*per + step/task.StateEvery + 1 }
	for _, c := range []struct {
		name, forge string
		failing     []int  // the stretches that fail, each where drawn
		code        string // the failures' code
	}{
		{"honest", "", nil, ""},
		{"starting from weights of its own", "params = [(w * 0.5, b) for w, b in params]", []int{1}, d5list.AuditMismatch},
		{"ending with weights of its own", "swap_last = True", []int{24}, d5list.AuditMismatch},
		{"an epoch not trained", "skip = 2", []int{9, 10, 11, 12, 13, 14, 15, 16}, d5list.AuditMismatch},
		{"a minibatch left out of every epoch", "drop = 7", []int{stretchOf(1, 7), stretchOf(2, 7), stretchOf(3, 7)}, d5list.AuditMismatch},
		{"one step a fifth short", "weak_epoch, weak_batch, weak = 2, 7, 0.8", []int{stretchOf(2, 7)}, d5list.AuditMismatch},
	} {
		t.Run(c.name, func(t *testing.T) {
			events, st := runPythonTraining(t, task, 31, c.forge)
			rel, failed := auditEachStretch(task, 31, st)
			if !slices.Equal(failed, c.failing) {
				t.Fatalf("failed in stretches %v, want %v (errors %.3g)", failed, c.failing, rel)
			}
			if c.failing != nil {
				a := task.CheckStream(31, st, Challenge{"training": {c.failing[0]}}, func() {})
				if a.Failures[0].Code != c.code {
					t.Fatalf("failure %+v, want code %s", a.Failures[0], c.code)
				}
				t.Logf("caught: %s", a.Failures[0].Message)
				return
			}
			all := make([]int, task.stretches())
			for i := range all {
				all[i] = i + 1
			}
			a := task.CheckStream(31, st, Challenge{"training": all}, func() {})
			s := a.Sections[0]
			var logged float64
			for _, e := range events {
				if e.Key == mllog.KeyEvalAccuracy {
					logged, _ = mllog.Float(e.Value)
				}
			}
			// The run's accuracy is a float32 mean.
			if s.Accuracy == nil || math.Abs(*s.Accuracy-logged) > 1e-6 {
				t.Fatalf("section %+v, want the run's own accuracy %v", s, logged)
			}
			if s.MaxRelError > stretchTolerance/10 {
				t.Fatalf("section %+v, want a drift well under %v", s, stretchTolerance)
			}
			t.Logf("largest error of a recomputed stretch: %.2g of its step", s.MaxRelError)
		})
	}
}

// A NaN or an infinity in any state the run hands over fails its audit
// with a code of its own, whatever the draw: the runner keeps the states
// it drew and the last, and a run that marks every late state keeps the
// last one marked too.
func TestPythonTrainingNonFiniteStates(t *testing.T) {
	needTorchTraining(t)
	task := trainingTestTask(t, []any{int64(32)}, 64, 3, 3)
	_, st := runPythonTraining(t, task, 9, "nan_from = 3")
	for _, drawn := range [][]int{{}, {1}, {20}} {
		a := task.CheckStream(9, st, Challenge{"training": drawn}, func() {})
		if len(a.Failures) != 1 || a.Failures[0].Code != d5list.AuditNonFinite {
			t.Fatalf("drawn %v: failures %+v, want one %s", drawn, a.Failures, d5list.AuditNonFinite)
		}
	}
}

// The example submission's own network (two hidden layers of 512,
// minibatches of 32: 45 an epoch, in stretches of 3) trained in PyTorch
// passes the audit of every stretch, and leaving one minibatch out of
// every epoch, the smallest skip a run could make, fails in the stretch
// that held it and nowhere else: the test logs the tolerance's margin on
// both sides.
func TestStretchMargins(t *testing.T) {
	needTorchTraining(t)
	task := trainingTestTask(t, []any{int64(512), int64(512)}, 32, 2, 3)
	_, st := runPythonTraining(t, task, 7, "")
	honest, failed := auditEachStretch(task, 7, st)
	if len(failed) != 0 {
		t.Fatalf("an honest training failed the audit of stretches %v (errors %.3g)", failed, honest)
	}
	_, st = runPythonTraining(t, task, 7, "drop = 20")
	forged, failed := auditEachStretch(task, 7, st)
	per := task.stretchesPerEpoch()
	want := []int{20/3 + 1, per + 20/3 + 1}
	if !slices.Equal(failed, want) {
		t.Fatalf("one minibatch of 45 left out of every epoch failed stretches %v, want %v (errors %.3g)", failed, want, forged)
	}
	t.Logf("tolerance %.3g of a stretch's step: honest float32 drift at most %.3g, one minibatch left out %.3g and %.3g",
		stretchTolerance, slices.Max(honest), forged[want[0]-1], forged[want[1]-1])
}

// A stream that breaks the format stops the reading with its error named,
// and a run that handed over too few states fails its audit saying so.
func TestReadStreamRefusesWhatTheHarnessDoesNotWrite(t *testing.T) {
	task := trainingTestTask(t, []any{int64(4)}, 512, 1, 1) // 3 steps: states 0 to 3
	size := stateBytes(task.Layers)
	state := func(i, n int) string {
		return fmt.Sprintf("{\"state\": %d, \"size\": %d}\n%s", i, n, strings.Repeat("\x00", n))
	}
	for _, c := range []struct{ name, stream, want string }{
		{"out of order", state(0, size) + state(2, size), "state 2 arrived after 1 states"},
		{"past the last", state(0, size) + state(1, size) + state(2, size) + state(3, size) + state(4, size), "state 4 arrived after 4 states"},
		{"the wrong size", state(0, size-4), fmt.Sprintf("state 0 holds %d bytes; the task's network's state (weights and momentum, float32) is %d", size-4, size)},
		{"not a header", "hello\n", "a state's header is not the harness's"},
		{"cut short", state(0, size)[:40], "state 0 ends after"},
		{"too few", state(0, size) + state(1, size), ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			st := task.ReadStream(strings.NewReader(c.stream), map[int]bool{0: true, 1: true, 2: true, 3: true}, nil)
			a := task.CheckStream(1, st, Challenge{"training": {}}, func() {})
			if c.want == "" {
				if st.Err != nil || len(a.Failures) != 1 || !strings.Contains(a.Failures[0].Message, "handed over 2 of its 4 states") {
					t.Fatalf("stream %+v, failures %+v: want 2 of 4 states handed over", st, a.Failures)
				}
				return
			}
			if st.Err == nil || !strings.Contains(st.Err.Error(), c.want) {
				t.Fatalf("error %v, want %q", st.Err, c.want)
			}
			if len(a.Failures) != 1 || a.Failures[0].Code != d5list.AuditMissing {
				t.Fatalf("failures %+v, want the broken stream's", a.Failures)
			}
		})
	}
}
