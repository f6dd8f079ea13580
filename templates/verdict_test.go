package templates

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/PuerkitoBio/goquery"

	d5list "github.com/deep500/d5list"
)

func TestVerdictSummary(t *testing.T) {
	bench := &d5list.Benchmark{Runs: 5, Ranking: d5list.RankingRule{Metric: d5list.MetricTimeToTrain, Unit: "s", Direction: d5list.LowerIsBetter}}
	score := func(v float64) *d5list.Result {
		return &d5list.Result{Runs: make([]d5list.RunMetrics, 5), Score: d5list.Score{Value: v, Valid: true}}
	}
	two := 2
	mismatch := d5list.Reason{Code: "accuracy_mismatch", Message: "eval_accuracy at epoch 3 is 0.9 claimed, 0.8 re-run", Run: &two}
	timing := d5list.Reason{Code: "timing_not_reproduced", Message: "no runner with the declared CPU."}
	// A tampered entry: the verifier lists its timing finding first (it
	// names no run), and five accuracies the re-run did not reproduce.
	tampered := []d5list.Reason{{Code: "timing_mismatch", Message: "time to train: the logs' olympic mean is 3 s, 0.5 of the re-run's 6 s"}}
	for run := range 5 {
		tampered = append(tampered, d5list.Reason{Code: "accuracy_mismatch", Run: &run,
			Message: fmt.Sprintf("run %d, epoch 4: the log claims eval_accuracy 0.99 but the re-run measured 0.9", run)})
	}
	noisy := d5list.Reason{Code: "timing_too_noisy", Message: "time to train: the re-run was too noisy to judge the claimed times: its runs' work took from 0.30 to 1.70 of their median after correcting for waits (precision 10 % + the re-run's own spread 69.6 %)"}
	for _, tc := range []struct {
		name    string
		sub     d5list.Submission
		want    []string
		notWant []string
	}{
		{"pending", d5list.Submission{Status: d5list.StatusRunning}, nil, nil},
		{"verified", d5list.Submission{Status: d5list.StatusVerified, Claimed: score(1.43), Measured: score(1.47)},
			[]string{"Verified", "5 runs with the submitted seeds", "ranks its own measurement", "1.47", "the claim said 1.43"}, []string{"organiser", "agrees", "slower"}},
		{"verified, twice as slow as claimed", d5list.Submission{Status: d5list.StatusVerified, Claimed: score(0.9), Measured: score(1.87)},
			[]string{"1.87", "0.900 s", "slower than the claim", "portal's value"}, []string{"agrees"}},
		{"accepted after review", d5list.Submission{Status: d5list.StatusVerified, Claimed: score(1), Measured: score(1), Reasons: []d5list.Reason{timing}},
			[]string{"accepted the entry", "1.00 s", "Verified after review"}, []string{"agrees"}},
		{"tampered leads with the accuracies", d5list.Submission{Status: d5list.StatusDiscrepancy, Reasons: tampered},
			[]string{"does not support the claim: run 0, epoch 4: the log claims eval_accuracy 0.99 but the re-run measured 0.9 (one of 5 such findings below, with 1 other)"},
			[]string{"olympic"}},
		{"too noisy in plain words", d5list.Submission{Status: d5list.StatusNeedsReview, Reasons: []d5list.Reason{noisy}},
			[]string{"could not settle", "varied too much from run to run"}, []string{"%", "1.70"}},
		{"discrepancy names the run", d5list.Submission{Status: d5list.StatusDiscrepancy, Reasons: []d5list.Reason{mismatch, timing}},
			[]string{"does not support", "run 2: eval_accuracy at epoch 3", "1 more finding below", "not ranked"}, nil},
		{"needs review", d5list.Submission{Status: d5list.StatusNeedsReview, Reasons: []d5list.Reason{timing}},
			[]string{"could not settle", "no runner with the declared CPU.", "organiser will decide"}, []string{"CPU..", "more finding"}},
		{"failed is not the competitor's fault", d5list.Submission{Status: d5list.StatusFailed, Reasons: []d5list.Reason{{Code: "runner_error", Message: "runner lost"}}},
			[]string{"does not count against"}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := VerdictSummary(&tc.sub, bench)
			if tc.want == nil && got != "" {
				t.Fatalf("a pending submission got a verdict: %q", got)
			}
			for _, w := range tc.want {
				if !strings.Contains(got, w) {
					t.Errorf("summary %q lacks %q", got, w)
				}
			}
			for _, w := range tc.notWant {
				if strings.Contains(got, w) {
					t.Errorf("summary %q should not contain %q", got, w)
				}
			}
		})
	}
}

// The findings list leads with the decisive kind, and a timing finding
// reads in plain words with the verifier's working folded under them.
func TestReasonListFoldsTheWorking(t *testing.T) {
	run := 0
	noisy := d5list.Reason{Code: "timing_too_noisy", Message: "its runs' work took from 0.30 to 1.70 of their median (precision 10 % + spread 69.6 %)"}
	mismatch := d5list.Reason{Code: "accuracy_mismatch", Run: &run, Message: "run 0, epoch 4: the log claims eval_accuracy 0.99 but the re-run measured 0.9"}
	var b strings.Builder
	if err := reasonList([]d5list.Reason{noisy, mismatch}, nil).Render(context.Background(), &b); err != nil {
		t.Fatal(err)
	}
	doc, err := goquery.NewDocumentFromReader(strings.NewReader(b.String()))
	if err != nil {
		t.Fatal(err)
	}
	items := doc.Find(`[data-testid="reason"]`)
	if items.Length() != 2 || items.First().AttrOr("data-code", "") != "accuracy_mismatch" {
		t.Fatalf("findings in the order %v, want the accuracy first", items.Map(func(_ int, s *goquery.Selection) string { return s.AttrOr("data-code", "") }))
	}
	timing := items.Last()
	if msg := timing.Find(`[data-testid="reason-message"]`).Text(); strings.Contains(msg, "%") || !strings.Contains(msg, "varied too much") {
		t.Errorf("the timing finding reads %q, want plain words", msg)
	}
	if working := timing.Find(`details[data-testid="reason-working"]`); working.Length() != 1 || !strings.Contains(working.Text(), "69.6 %") || working.AttrOr("open", "none") != "none" {
		t.Errorf("the working is not folded under the finding: %q", working.Text())
	}
	if items.First().Find(`[data-testid="reason-working"]`).Length() != 0 {
		t.Error("a finding whose message is plain has a fold")
	}
}
