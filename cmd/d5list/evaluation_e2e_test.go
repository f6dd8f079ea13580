package main

import (
	"context"
	"io"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	d5list "github.com/deep500/d5list"
	"github.com/deep500/d5list/internal/slowtest"
)

// TestImportedBenchmarkIsEvaluatedByTheRunner takes a benchmark without the
// runner's harness as an organiser adds it (examples/pytorch-digits-evaluated:
// the competitor's own PyTorch loop, and the organiser's evaluation and step
// scripts) through the real portal and a real sandboxed process runner. The
// runner scores the weights every run hands over itself, with the
// benchmark's script on scikit-learn's copy of the test split, and
// recomputes drawn stretches of every run's steps from the states it handed
// over as it trained: the honest entry is verified with every run's logged
// accuracy the runner's and its stretches as recomputed; code that logs a
// converging run for whatever seed it is given, at the honest run's pace,
// without training, and code that skips the last third of its epochs once
// it has met the target, are discrepancies the audit names.
func TestImportedBenchmarkIsEvaluatedByTheRunner(t *testing.T) {
	slowtest.Require(t, "three PyTorch jobs of four runs and their audits take two minutes or more")
	needSandboxedTorch(t)
	const example, benchmark = "../../examples/pytorch-digits-evaluated", "l2-uci-digits-torch-evaluated"
	data := t.TempDir()
	if err := run(context.Background(), []string{"admin", "benchmarks", "import", "--data", data, "../../examples/benchmarks/" + benchmark + ".yaml"}, io.Discard, io.Discard); err != nil {
		t.Fatal(err)
	}
	p := startPortalIn(t, data, 0)
	startProcessRunner(t, p, adminToken(t, "runner-token", "--data", p.data, "--name", "torch"), 1)
	got, dir := claimVerified(t, p, example, benchmark, "run", "--server", p.url)
	auditCPU, runsCPU := auditAndRunsCPU(got.Measured)
	t.Logf("%s: the runner's audits (its evaluation and its stretches) took %.2f s of CPU, the job's %d runs %.2f s (%.2f of it)", benchmark, auditCPU, len(got.Measured.Runs), runsCPU, auditCPU/max(runsCPU, 1e-9))
	for _, r := range got.Measured.Runs {
		if r.Fresh && r.Clock != nil && r.Clock.Audit != nil {
			t.Logf("fresh run %d: its audit %.2f s of CPU, the run %.2f s (%.2f of it)", r.Index, r.Clock.Audit.CPUS, r.Clock.CPUS, r.Clock.Audit.CPUS/max(r.Clock.CPUS, 1e-9))
		}
	}
	for _, r := range got.Measured.Runs {
		var a *d5list.Audit
		if r.Clock != nil {
			a = r.Clock.Audit
		}
		if a == nil || len(a.Failures) != 0 || len(a.Sections) != 2 || a.Sections[0].Accuracy == nil || a.Sections[1].Calls != 300 || len(a.Sections[1].Checked) < 2 {
			t.Fatalf("run %d: audit %+v, want the runner's evaluation of its model and its recomputation of drawn stretches of its steps, passed", r.Index, a)
		}
		if e := a.Sections[1].MaxRelError; e > 1e-4 {
			t.Errorf("run %d: its stretches recomputed differ by %v of their change; an honest run's by float32 rounding alone", r.Index, e)
		}
		if acc := *a.Sections[0].Accuracy; math.Abs(acc-r.FinalAccuracy) > 1e-12 || acc < 0.90 {
			t.Fatalf("run %d: the runner's evaluation %v, its log %v; want the same, at the target or above", r.Index, acc, r.FinalAccuracy)
		}
	}
	forgedCopyIsADiscrepancy(t, p, dir, benchmark, got.ID, forgery{"a converging log without training", func(t *testing.T, dir string) {
		if err := os.WriteFile(filepath.Join(dir, "code", "train.py"), []byte(untrainedConvergingLog), 0o644); err != nil {
			t.Fatal(err)
		}
	}, []string{d5list.AuditMismatch}})
	// Trained to the target by epoch 13, it skips the other seven and
	// hands over its unchanged state for their stretches: its log and its
	// model are what it computed, but the runner recomputes the last
	// stretch of every run.
	forgedCopyIsADiscrepancy(t, p, dir, benchmark, got.ID, forgery{"the last third of its epochs skipped", func(t *testing.T, dir string) {
		train := filepath.Join(dir, "code", "train.py")
		code, err := os.ReadFile(train)
		if err != nil {
			t.Fatal(err)
		}
		const step = "            opt.zero_grad()\n            loss_fn(model(x_train[idx]), y_train[idx]).backward()\n            opt.step()\n"
		if !strings.Contains(string(code), step) {
			t.Fatalf("%s has no training step to skip", train)
		}
		skipped := strings.Replace(string(code), step, "            if epoch <= 13:\n"+strings.ReplaceAll(step, "            ", "                "), 1)
		if err := os.WriteFile(train, []byte(skipped), 0o644); err != nil {
			t.Fatal(err)
		}
	}, []string{d5list.AuditMismatch}})
}

// untrainedConvergingLog takes its seed and logs, at the pace of the claim's
// first run, that claim's accuracies, epoch by epoch: a converging run for
// whatever seed it is given. It hands over the weights it started with.
const untrainedConvergingLog = `import io, json, os, time
import torch
from d5harness import MLLog, take_seed
events = []
with open(os.path.join(os.environ["D5_BUNDLE"], "results", "result_0.txt")) as f:
    for line in f:
        if ":::MLLOG " in line:
            events.append(json.loads(line.split(":::MLLOG ", 1)[1]))
at = {e["key"]: e["time_ms"] for e in events if e["key"] in ("run_start", "run_stop")}
accs = [e["value"] for e in events if e["key"] == "eval_accuracy"]
log = MLLog()
log.event("submission_benchmark", os.environ["D5_BENCHMARK"])
log.event("global_batch_size", 32)
log.event("opt_base_learning_rate", 0.05)
log.event("train_samples", 1437)
log.event("eval_samples", 360)
seed = take_seed()
log.event("seed", seed)
log.start("run_start")
torch.manual_seed(seed)
model = torch.nn.Sequential(torch.nn.Linear(64, 512), torch.nn.ReLU(), torch.nn.Linear(512, 512), torch.nn.ReLU(), torch.nn.Linear(512, 10))
for epoch, acc in enumerate(accs, 1):
    log.start("epoch_start", metadata={"epoch_num": epoch})
    time.sleep((at["run_stop"] - at["run_start"]) / 1000 / len(accs))
    log.end("epoch_stop", metadata={"epoch_num": epoch})
    log.event("eval_accuracy", acc, {"epoch_num": epoch})
buf = io.BytesIO()
torch.save(model.state_dict(), buf)
with open(os.environ["D5_MODEL"], "wb") as f:
    f.write(buf.getvalue())
log.end("run_stop", metadata={"status": "success"})
log.close()
`
