package leaderboard

import (
	"strings"
	"testing"

	d5list "github.com/deep500/d5list"
)

// TestRankOperatorAndInference ranks Level 0 entries by operator time,
// lower first, and Level 1 entries by throughput, higher first, with the
// values taken from each run's logged metrics.
func TestRankOperatorAndInference(t *testing.T) {
	run := func(i int, extra map[string]float64, throughput float64) d5list.RunMetrics {
		return d5list.RunMetrics{Index: i, Seed: int64(i + 1), Status: "success", Converged: true, EpochsToTarget: -1, Extra: extra, Throughput: throughput}
	}
	subOf := func(id int64, system string, vals []float64, op bool) d5list.Submission {
		res := &d5list.Result{}
		for i, v := range vals {
			if op {
				res.Runs = append(res.Runs, run(i, map[string]float64{d5list.MetricOpTime: v, d5list.MetricOpRelL2Error: 1e-15}, 0))
			} else {
				res.Runs = append(res.Runs, run(i, map[string]float64{d5list.MetricLatencyP50: 0.007}, v))
			}
		}
		return d5list.Submission{ID: id, Submitter: "lab", SystemName: system, Status: d5list.StatusVerified, Claimed: res, Measured: res, CreatedAt: t0}
	}
	op := &d5list.Benchmark{ID: "l0-gemm-cpu", Level: 0, Runs: 3,
		Quality: d5list.QualityTarget{Metric: d5list.MetricOpRelL2Error, Target: 1e-12, Mode: "final", Direction: d5list.LowerIsBetter},
		Ranking: d5list.RankingRule{Metric: d5list.MetricOpTime, Direction: d5list.LowerIsBetter, Unit: "ms"}}
	entries := Rank(op, []d5list.Submission{
		subOf(1, "slow", []float64{30, 31, 32}, true),
		subOf(2, "fast", []float64{20, 21, 22}, true),
	}, Options{})
	if len(entries) != 2 || entries[0].SubmissionID != 2 || entries[0].Value != 21 || entries[0].Metric != d5list.MetricOpTime || entries[1].SubmissionID != 1 {
		t.Fatalf("operator board %+v, want #2 (21 ms) before #1", entries)
	}

	inf := &d5list.Benchmark{ID: "l1-mlp-inference-cpu", Level: 1, Runs: 3,
		Ranking: d5list.RankingRule{Metric: d5list.MetricThroughput, Direction: d5list.HigherIsBetter, Unit: "samples/s"}}
	entries = Rank(inf, []d5list.Submission{
		subOf(3, "slow", []float64{100, 110, 120}, false),
		subOf(4, "fast", []float64{200, 210, 220}, false),
	}, Options{})
	if len(entries) != 2 || entries[0].SubmissionID != 4 || entries[0].Value != 210 || entries[1].SubmissionID != 3 {
		t.Fatalf("inference board %+v, want #4 (210 samples/s) before #3", entries)
	}
	if rules := Rules(inf); !strings.Contains(rules, "higher is better") || !strings.Contains(rules, "run_stop status success") {
		t.Errorf("rules %q", rules)
	}
}
