package templates

import (
	"testing"

	d5list "github.com/deep500/d5list"
)

// A comparison shows the figures the board ranks: a re-run on other
// hardware than the entry declares does not replace its claim, and an
// entry of another quality metric is named instead of drawn.
func TestCompareReadsTheRankedRuns(t *testing.T) {
	bench := &d5list.Benchmark{ID: "b", Level: 2,
		Quality: d5list.QualityTarget{Metric: "top1"},
		Verify:  d5list.VerifyPolicy{SameHardware: []string{"cpu_model"}}}
	other := &d5list.Benchmark{ID: "o", Level: 2, Quality: d5list.QualityTarget{Metric: "bleu"}}
	run := func(ttt float64) []d5list.RunMetrics {
		return []d5list.RunMetrics{{Converged: true, TimeToTrain: ttt,
			Evals: []d5list.EvalPoint{{Epoch: 1, Seconds: ttt, Accuracy: 0.9}}}}
	}
	sub := func(id int64, runner string) *d5list.Submission {
		return &d5list.Submission{ID: id, HostCPU: "AMD EPYC 7B13", Claimed: &d5list.Result{Runs: run(10)},
			Measured: &d5list.Result{Runs: run(20), Runner: map[string]string{"cpu_model": runner}}}
	}
	same, elsewhere := sub(1, "AMD EPYC 7B13"), sub(2, "Intel Xeon Platinum 8480+")
	v := NewCompareView([]CompareEntry{{Sub: same, Bench: bench}, {Sub: elsewhere, Bench: bench}, {Sub: sub(3, ""), Bench: other}})

	if got := v.curveOf(v.Entries[0]).TimeToTrain; got != 20 {
		t.Errorf("re-measured on the declared CPU: the chart draws the run of %v s, want the re-run's 20 s", got)
	}
	if got := v.curveOf(v.Entries[1]).TimeToTrain; got != 10 {
		t.Errorf("re-run on another CPU: the chart draws the run of %v s, want the claim's 10 s", got)
	}
	if v.curveOf(v.Entries[2]) != nil {
		t.Error("an entry measuring bleu is drawn on a top1 axis")
	}
	if got := v.uncharted(); len(got) != 1 || got[0] != "submission 3" {
		t.Errorf("entries named as not drawn: %v, want [submission 3]", got)
	}
}
