package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	d5list "github.com/deep500/d5list"
	"github.com/deep500/d5list/runner"
	"github.com/deep500/d5list/verifier"
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

// TestTorchExamplesEndToEnd takes the PyTorch examples as a competitor
// does (issue 14): `d5list run` trains each in the runner's sandbox, the
// uploads go to the real portal, a real process-executor runner leases the
// jobs and re-runs them, sandboxed, and each entry is verified and ranked
// by the portal's measurement: PyTorch's GEMM against a reference (L0),
// inference with a checksum of its predictions (L1), training in one
// process (L2), and in two workers that meet through torch.distributed
// (L3).
//
// The accuracies must match the claim exactly, every time. The times may
// not, on a shared two-core machine: its speed for this workload changes
// by up to 60 % from one minute to the next with no run-queue wait to show
// for it (other tenants of the host), so a claim made in a fast minute and
// re-run in a slow one is a timing discrepancy, rightly by the rule. A try
// whose only findings are about timing is therefore made again, claim and
// re-run, up to three times; any other finding fails at once. CI runs this
// test alone (.ci/run), as D5LIST_TORCH_E2E=1 asks.
func TestTorchExamplesEndToEnd(t *testing.T) {
	if os.Getenv("D5LIST_TORCH_E2E") == "" {
		t.Skip("the PyTorch examples end to end take minutes of both cores: D5LIST_TORCH_E2E=1 runs them (CI does, alone)")
	}
	needSandboxedTorch(t)
	// One builtin runner in the portal, which must leave these jobs alone,
	// and one process runner beside it, one job at a time as the claims
	// were made.
	p := startPortal(t, 1)
	startProcessRunner(t, p, adminToken(t, "runner-token", "--data", p.data, "--name", "torch"), 1)
	// A forged copy of the verified claims of some: a better first
	// evaluation is an accuracy the re-run does not reproduce; three times
	// the logged throughput is a speed the runner's clock does not see.
	accuracy := forgery{func(t *testing.T, dir string) {
		raiseFirstAccuracy(t, filepath.Join(dir, "results", "result_2.txt"))
	}, []string{verifier.CodeAccuracyMismatch}}
	throughput := forgery{func(t *testing.T, dir string) {
		for i := range 5 {
			scaleLogged(t, filepath.Join(dir, "results", "result_"+strconv.Itoa(i)+".txt"), "throughput", 3)
		}
	}, []string{verifier.CodeTimingMismatch, verifier.CodeRunTimingMismatch}}
	for _, ex := range []struct {
		folder, benchmark string
		forge             *forgery
	}{
		{"pytorch-gemm", "l0-gemm-torch-cpu", nil},
		{"pytorch-conv2d", "l0-conv2d-torch-cpu", nil},
		{"pytorch-digits-inference", "l1-digits-mlp-inference-torch-cpu", &throughput},
		{"pytorch-digits-mlp", "l2-digits-mlp-torch-cpu", &accuracy},
		{"pytorch-digits-mlp-ddp", "l3-digits-mlp-torch-ddp-cpu", &accuracy},
	} {
		t.Run(ex.benchmark, func(t *testing.T) {
			got, dir := claimUntilVerified(t, p, filepath.Join("../../examples", ex.folder), ex.benchmark, "run")
			// The runner saw the two torch.distributed workers compute.
			for j, r := range got.Measured.Runs {
				if ex.benchmark == "l3-digits-mlp-torch-ddp-cpu" && (r.Clock == nil || r.Clock.Processes == nil || *r.Clock.Processes < 2) {
					t.Fatalf("run %d: the runner counted %+v computing processes, want the 2 workers", j, r.Clock)
				}
			}
			if ex.forge != nil {
				forgedCopyIsADiscrepancy(t, p, dir, ex.benchmark, got.ID, *ex.forge)
			}
		})
	}
}

// claimUntilVerified makes the claims of the submission folder source as
// its competitor does (`d5list` with runArgs and the folder: `run`
// trains each seed in the runner's sandbox), uploads them, and waits for
// the portal's verdict on its re-run. The re-run must reproduce every
// run's seed, evaluations, accuracy, operator errors and checksum exactly,
// and the verified entry must rank first by the portal's measurement. A
// try whose only findings are about timing is made again (see
// TestTorchExamplesEndToEnd), up to three times. It returns the verified
// submission and the folder whose claims it uploaded.
func claimUntilVerified(t *testing.T, p *portalUnderTest, source, benchmark string, runArgs ...string) (submissionJSON, string) {
	t.Helper()
	const tries = 3
	for try := 1; ; try++ {
		dir := filepath.Join(t.TempDir(), filepath.Base(source))
		// The example's system.json leaves the host to `d5list run`.
		copyDir(t, source, dir)
		var out, errOut bytes.Buffer
		if err := run(context.Background(), append(runArgs, dir), &out, &errOut); err != nil {
			t.Fatalf("d5list %v: %v\n%s%s", runArgs, err, out.String(), errOut.String())
		}
		id := p.submitFolder(t, dir)
		got := p.waitFinal(t, id)
		var owned submissionJSON
		if err := json.Unmarshal([]byte(getAs(t, p.url+"/api/v1/submissions/"+strconv.FormatInt(id, 10), p.token)), &owned); err != nil {
			t.Fatal(err)
		}
		if got.Measured == nil || len(got.Measured.Runs) != len(got.Claimed.Runs) {
			t.Fatalf("measured %+v, want the re-run's %d runs; reasons %s", got.Measured, len(got.Claimed.Runs), reasonsText(owned.Reasons))
		}
		for j, r := range got.Measured.Runs {
			c := got.Claimed.Runs[j]
			if r.Seed != c.Seed || r.FinalAccuracy != c.FinalAccuracy || len(r.Evals) != len(c.Evals) {
				t.Fatalf("run %d: re-run seed %d accuracy %v, claimed seed %d accuracy %v: want the same", j, r.Seed, r.FinalAccuracy, c.Seed, c.FinalAccuracy)
			}
			// The operator's errors and the predictions' checksum are
			// reproduced to the last digit.
			for _, m := range []string{d5list.MetricOpRelL2Error, d5list.MetricOpMaxError, d5list.MetricPredictionChecksum} {
				if r.Extra[m] != c.Extra[m] {
					t.Fatalf("run %d: %s re-run %v, claimed %v: want the same", j, m, r.Extra[m], c.Extra[m])
				}
			}
		}
		if got.Status == d5list.StatusVerified {
			var board d5list.Leaderboard
			if code := p.getJSON(t, "/api/v1/leaderboards/"+benchmark, &board); code != 200 {
				t.Fatalf("leaderboard: %d", code)
			}
			if len(board.Entries) != 1 || board.Entries[0].SubmissionID != id || board.Entries[0].Rank != 1 || board.Entries[0].Basis != d5list.BasisMeasured {
				t.Fatalf("leaderboard %+v, want submission %d ranked first by its measured time", board.Entries, id)
			}
			t.Logf("verified on try %d: measured %.4g (claimed %.4g)", try, board.Entries[0].Value, board.Entries[0].Claimed)
			return got, dir
		}
		timingOnly := (got.Status == d5list.StatusDiscrepancy || got.Status == d5list.StatusNeedsReview) && onlyTiming(owned.Reasons)
		if !timingOnly || try == tries {
			t.Fatalf("try %d: %s, want verified; reasons (as its owner sees them) %s", try, got.Status, reasonsText(owned.Reasons))
		}
		t.Logf("try %d: %s on timing alone, accuracies exact; claiming and re-running again: %s", try, got.Status, reasonsText(owned.Reasons))
	}
}

// forgedCopyIsADiscrepancy uploads a copy of the verified folder dir
// whose second run claims a better first evaluation than it had: the
// re-run must catch it as an accuracy finding, and the forgery must not
// displace the honest entry on the board.
func forgedCopyIsADiscrepancy(t *testing.T, p *portalUnderTest, dir, benchmark string, honest int64, forge forgery) {
	t.Helper()
	forged := filepath.Join(t.TempDir(), "forged")
	copyDir(t, dir, forged)
	forge.edit(t, forged)
	id := p.submitFolder(t, forged)
	got := p.waitFinal(t, id)
	var owned submissionJSON
	if err := json.Unmarshal([]byte(getAs(t, p.url+"/api/v1/submissions/"+strconv.FormatInt(id, 10), p.token)), &owned); err != nil {
		t.Fatal(err)
	}
	caught := false
	for _, r := range owned.Reasons {
		caught = caught || slices.Contains(forge.caughtAs, r.Code)
	}
	if got.Status != d5list.StatusDiscrepancy || !caught {
		t.Fatalf("forged copy ended %s, want a discrepancy with one of %v; reasons %s", got.Status, forge.caughtAs, reasonsText(owned.Reasons))
	}
	var board d5list.Leaderboard
	if code := p.getJSON(t, "/api/v1/leaderboards/"+benchmark, &board); code != 200 {
		t.Fatalf("leaderboard: %d", code)
	}
	if len(board.Entries) != 1 || board.Entries[0].SubmissionID != honest {
		t.Fatalf("after the forgery the leaderboard is %+v, want only the honest submission %d", board.Entries, honest)
	}
	t.Logf("forged copy %d: %s, %s", id, got.Status, reasonsText(owned.Reasons))
}

// forgery edits a copy of verified claims in a submission folder; the
// re-run must find it as one of caughtAs.
type forgery struct {
	edit     func(t *testing.T, dir string)
	caughtAs []string
}

// scaleLogged multiplies the value of every key event of an MLLOG file.
func scaleLogged(t *testing.T, path, key string, factor float64) {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(string(data), "\n")
	scaled := 0
	for i, line := range lines {
		payload, ok := strings.CutPrefix(line, ":::MLLOG ")
		var ev map[string]any
		if !ok || json.Unmarshal([]byte(payload), &ev) != nil || ev["key"] != key {
			continue
		}
		ev["value"] = ev["value"].(float64) * factor
		b, _ := json.Marshal(ev)
		lines[i] = ":::MLLOG " + string(b)
		scaled++
	}
	if scaled == 0 {
		t.Fatalf("%s has no %s line", path, key)
	}
	if err := os.WriteFile(path, []byte(strings.Join(lines, "\n")), 0o644); err != nil {
		t.Fatal(err)
	}
}

// onlyTiming reports whether every reason is a timing finding: a claim
// off its re-run's time, or a re-run too noisy to judge it (one stall of
// this shared machine), which an organiser would look at.
func onlyTiming(rs []d5list.Reason) bool {
	for _, r := range rs {
		switch r.Code {
		case verifier.CodeTimingMismatch, verifier.CodeRunTimingMismatch, verifier.CodeEpochTimeMismatch, verifier.CodeTimingTooNoisy:
		default:
			return false
		}
	}
	return len(rs) > 0
}
