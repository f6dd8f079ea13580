package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	d5list "github.com/deep500/d5list"
)

// TestVerdictStudy counts what honest entries get from the real portal
// (issue 24; BENCHMARKS.md, "Honest re-runs through the portal"): for each
// benchmark, three claims made with `d5list run` on a quiet machine, as a
// competitor makes them on their own, submitted again and again, each
// re-run by a real runner (the portal's own for the builtin workload, a
// `d5list runner --executor process` for a PyTorch example), trials
// times on a quiet machine and trials times beside a busy loop that keeps
// the other core spinning. Each submission waits for its verdict before
// the next, so a condition is the machine's, not the queue's. It logs
// every verdict, the measurements it took, and a summary line a condition.
//
// It takes about an hour for 30 trials, so it runs only when asked:
//
//	D5LIST_VERDICT_STUDY=30 go test ./cmd/d5list -run TestVerdictStudy -v -timeout 3h
//
// (D5LIST_VERDICT_STUDY_BENCH=id,id runs the named benchmarks instead of
// l2-digits-mlp-cpu and l2-digits-mlp-torch-cpu: a CPU PyTorch example's
// in studyExamples, or a builtin workload's, which `d5list init` starts;
// D5LIST_VERDICT_STUDY_CONDITION=quiet or loaded runs one condition, so
// that each can hold the machine's lock on its own).
func TestVerdictStudy(t *testing.T) {
	trials, _ := strconv.Atoi(os.Getenv("D5LIST_VERDICT_STUDY"))
	if trials <= 0 {
		t.Skip("verdict study: set D5LIST_VERDICT_STUDY=<trials> to run it (an hour at 30)")
	}
	benches := []string{"l2-digits-mlp-cpu", "l2-digits-mlp-torch-cpu"}
	if only := os.Getenv("D5LIST_VERDICT_STUDY_BENCH"); only != "" {
		benches = strings.Split(only, ",")
	}
	for _, bench := range benches {
		example, ok := studyExamples[bench]
		t.Run(bench, func(t *testing.T) {
			var p *portalUnderTest
			var claim func(dir string)
			if ok {
				needSandboxedTorch(t)
				p = startPortal(t, 0)
				startProcessRunner(t, p, adminToken(t, "runner-token", "--data", p.data, "--name", "torch"), 1)
				claim = func(dir string) {
					copyDir(t, "../../examples/"+example, dir)
					studyCLI(t, "run", dir)
				}
			} else {
				p = startPortal(t, 1)
				claim = func(dir string) {
					studyCLI(t, "init", bench, dir, "--submitter", "Study Lab")
					studyCLI(t, "run", dir)
				}
			}
			var claims []string
			for k := range 3 {
				dir := filepath.Join(t.TempDir(), "claim"+strconv.Itoa(k))
				claim(dir)
				claims = append(claims, dir)
			}
			conditions := map[string][]bool{"": {false, true}, "quiet": {false}, "loaded": {true}}[os.Getenv("D5LIST_VERDICT_STUDY_CONDITION")]
			if conditions == nil {
				t.Fatalf("D5LIST_VERDICT_STUDY_CONDITION=%q: want quiet or loaded", os.Getenv("D5LIST_VERDICT_STUDY_CONDITION"))
			}
			for _, loaded := range conditions {
				condition, stop := "quiet", func() {}
				if loaded {
					condition, stop = "busy loop on the other core", busyLoop(t)
				}
				start := time.Now()
				counts := map[d5list.Status]int{}
				remeasured, measurements := 0, 0
				for k := range trials {
					// Each trial its own system: the same files again would
					// point to the first trial's entry, not be re-run.
					dir := claims[k%len(claims)]
					setManifestField(t, dir, "system_name", fmt.Sprintf("study-%t-%d", loaded, k))
					id := p.submitFolder(t, dir)
					got := p.waitFinal(t, id)
					n := len(p.audit(t, id).Attempts)
					counts[got.Status]++
					measurements += n
					if n > 1 {
						remeasured++
					}
					var codes []string
					for _, r := range got.Reasons {
						codes = append(codes, r.Code)
						// What went wrong, for the trials that are not verified.
						t.Logf("REASON trial %d: %s: %s", k, r.Code, r.Message)
					}
					measured := 0.0
					if got.Measured != nil {
						measured = got.Measured.Score.Value
					}
					auditCPU, runsCPU := auditAndRunsCPU(got.Measured)
					t.Logf("TRIAL %s | %s | %d | %s | measurements %d | claimed %.3f measured %.3f | audit CPU %.2f s, runs' CPU %.2f s | %v",
						bench, condition, k, got.Status, n, got.Claimed.Score.Value, measured, auditCPU, runsCPU, codes)
				}
				stop()
				t.Logf("STUDY %s | %s | trials %d | verified %d | needs_review %d | discrepancy %d | failed %d | re-measured %d (%d measurements in all) | %s",
					bench, condition, trials, counts[d5list.StatusVerified], counts[d5list.StatusNeedsReview], counts[d5list.StatusDiscrepancy],
					counts[d5list.StatusFailed], remeasured, measurements, time.Since(start).Round(time.Second))
			}
		})
	}
}

// studyExamples are the CPU PyTorch examples the study can claim and
// re-run, by their benchmark.
var studyExamples = map[string]string{
	"l0-gemm-torch-cpu":                 "pytorch-gemm",
	"l0-conv2d-torch-cpu":               "pytorch-conv2d",
	"l1-digits-mlp-inference-torch-cpu": "pytorch-digits-inference",
	"l2-digits-mlp-torch-cpu":           "pytorch-digits-mlp",
	"l3-digits-mlp-torch-ddp-cpu":       "pytorch-digits-mlp-ddp",
}

// studyCLI runs a d5list command as a competitor does.
func studyCLI(t *testing.T, args ...string) {
	t.Helper()
	var errOut strings.Builder
	if err := run(context.Background(), args, io.Discard, &errOut); err != nil {
		t.Fatalf("d5list %s: %v\n%s", strings.Join(args, " "), err, errOut.String())
	}
}
