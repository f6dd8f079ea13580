package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	d5list "github.com/deep500/d5list"
	"github.com/deep500/d5list/runner"
	"github.com/deep500/d5list/sysinfo"
)

// needSandboxedTorch skips where the sandbox's Python has no PyTorch and
// scikit-learn, or there is no bubblewrap, except in CI, which installs
// them (.ci/install-packages.sh): there a skip would hide a broken path.
func needSandboxedTorch(t *testing.T) {
	t.Helper()
	_, bwrapErr := exec.LookPath("bwrap")
	torchErr := exec.Command(runner.SandboxPython, "-c", "import torch, sklearn").Run()
	if bwrapErr == nil && torchErr == nil {
		return
	}
	why := "bubblewrap, and PyTorch and scikit-learn for " + runner.SandboxPython + " (apt-get install bubblewrap python3-torch python3-sklearn)"
	if os.Getenv("CI") != "" {
		t.Fatalf("CI must install %s", why)
	}
	t.Skipf("needs %s", why)
}

// TestTorchExampleEndToEnd takes examples/pytorch-digits-mlp as a
// competitor does (issue 14): `d5list run` trains it with PyTorch in the
// runner's sandbox, the upload goes to the real portal, a real
// process-executor runner leases the job and re-runs it, sandboxed, and
// the entry is verified and ranked by the portal's measurement.
func TestTorchExampleEndToEnd(t *testing.T) {
	needSandboxedTorch(t)
	dir := filepath.Join(t.TempDir(), "submission")
	copyDir(t, "../../examples/pytorch-digits-mlp", dir)
	// The competitor fills in the system description; this host's CPU is
	// what the runner will report, so its timing is re-measured.
	var system map[string]any
	data, err := os.ReadFile(filepath.Join(dir, "system.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(data, &system); err != nil {
		t.Fatal(err)
	}
	system["host_processor_model_name"] = sysinfo.Detect().CPUModel
	if data, err = json.Marshal(system); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "system.json"), data, 0o644); err != nil {
		t.Fatal(err)
	}
	var out, errOut bytes.Buffer
	if err := run(context.Background(), []string{"run", dir}, &out, &errOut); err != nil {
		t.Fatalf("d5list run: %v\n%s%s", err, out.String(), errOut.String())
	}

	// One builtin runner in the portal, which must leave this job alone,
	// and one process runner beside it.
	p := startPortal(t, 1)
	startProcessRunner(t, p, adminToken(t, "runner-token", "--data", p.data, "--name", "torch"))
	id := p.submitFolder(t, dir)
	got := p.waitFinal(t, id)
	if got.Status != d5list.StatusVerified {
		t.Fatalf("the PyTorch example: %s, want verified; reasons %s", got.Status, reasonsText(got.Reasons))
	}
	if got.Measured == nil || len(got.Measured.Runs) != 5 {
		t.Fatalf("measured %+v, want the re-run's 5 runs", got.Measured)
	}
	for i, r := range got.Measured.Runs {
		c := got.Claimed.Runs[i]
		if r.Seed != c.Seed || r.FinalAccuracy != c.FinalAccuracy {
			t.Errorf("run %d: re-run seed %d accuracy %v, claimed seed %d accuracy %v: want the same", i, r.Seed, r.FinalAccuracy, c.Seed, c.FinalAccuracy)
		}
	}
	var board d5list.Leaderboard
	if code := p.getJSON(t, "/api/v1/leaderboards/l2-digits-mlp-torch-cpu", &board); code != 200 {
		t.Fatalf("leaderboard: %d", code)
	}
	if len(board.Entries) != 1 || board.Entries[0].SubmissionID != id || board.Entries[0].Rank != 1 || board.Entries[0].Basis != d5list.BasisMeasured {
		t.Fatalf("leaderboard %+v, want submission %d ranked first by its measured time", board.Entries, id)
	}
	t.Logf("verified: measured %.3f s (claimed %.3f s)", board.Entries[0].Value, board.Entries[0].Claimed)
}
