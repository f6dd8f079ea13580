package verifier

import (
	"testing"

	d5list "github.com/deep500/d5list"
)

// What the runner found of a re-run of the competitor's code decides the
// verdict as a claim's own findings do: a breach of the window and a
// failed audit are discrepancies naming the run; a harness benchmark's
// re-run that came back unaudited waits for an organiser; a training
// run's accuracy by the runner's evaluation must be the one its log says.
func TestRunnerFindingsOfACompetitorsRun(t *testing.T) {
	bench := compareBench(0, 0.1)
	harnessBench := *bench
	harnessBench.Verify.Harness = "mlp-training"
	evaluated := *bench
	evaluated.Verify.AccuracyTolerance = 0.01
	evaluated.Verify.Evaluation = &d5list.ModelEvaluation{Script: "print('{\"accuracy\": 1}')"}
	claimed := baseResult(bench.Quality)
	acc := func(v float64) *float64 { return &v }
	evaluation := func(off float64) func(run int) *d5list.RunClock {
		return func(run int) *d5list.RunClock {
			a := &d5list.Audit{Sections: []d5list.AuditSection{{Name: "evaluation", Calls: 1, Checked: []int{0}, Accuracy: acc(claimed.Runs[run%5].FinalAccuracy)}}}
			if run == 3 {
				a.Sections[0].Accuracy = acc(claimed.Runs[run%5].FinalAccuracy - off)
			}
			return &d5list.RunClock{CompetitorLog: true, Audit: a}
		}
	}
	cases := []struct {
		name  string
		bench *d5list.Benchmark
		clock func(run int) *d5list.RunClock
		want  d5list.Status
		code  string
	}{
		{"a clean window", bench, func(int) *d5list.RunClock { return &d5list.RunClock{CompetitorLog: true} }, d5list.StatusVerified, ""},
		{"a window logged twice", bench, func(run int) *d5list.RunClock {
			c := &d5list.RunClock{CompetitorLog: true}
			if run == 2 {
				c.Breaches = []d5list.Reason{{Code: d5list.BreachWindowRepeated, Message: "2 run_start and 2 run_stop lines arrived"}}
			}
			return c
		}, d5list.StatusDiscrepancy, d5list.BreachWindowRepeated},
		{"an audit that failed", &harnessBench, func(run int) *d5list.RunClock {
			a := &d5list.Audit{Sections: []d5list.AuditSection{{Name: "training", Calls: 5}}}
			if run == 1 {
				a.Failures = []d5list.Reason{{Code: d5list.AuditMismatch, Message: "training, call 3: the output is 0.5 (relative) from the runner's own computation of the call"}}
			}
			return &d5list.RunClock{CompetitorLog: true, Audit: a}
		}, d5list.StatusDiscrepancy, d5list.AuditMismatch},
		{"a harness run the runner did not audit", &harnessBench, func(int) *d5list.RunClock { return &d5list.RunClock{CompetitorLog: true} },
			d5list.StatusNeedsReview, CodeAuditNotRun},
		{"a harness run without the runner's clock (Slurm)", &harnessBench, func(int) *d5list.RunClock { return nil },
			d5list.StatusNeedsReview, CodeAuditNotRun},
		{"a harness run with the runner's wall time alone (Slurm)", &harnessBench, func(int) *d5list.RunClock { return &d5list.RunClock{WallS: 3} },
			d5list.StatusNeedsReview, CodeAuditNotRun},
		{"a run without the runner's clock, no harness", bench, func(int) *d5list.RunClock { return nil }, d5list.StatusVerified, ""},
		{"an accuracy the runner's evaluation does not give", &harnessBench, func(run int) *d5list.RunClock {
			a := &d5list.Audit{Sections: []d5list.AuditSection{{Name: "training", Calls: 5, Accuracy: acc(claimed.Runs[run%5].FinalAccuracy)}}}
			if run == 4 {
				a.Sections[0].Accuracy = acc(0.5)
			}
			return &d5list.RunClock{CompetitorLog: true, Audit: a}
		}, d5list.StatusDiscrepancy, d5list.AuditMismatch},
		// A benchmark's own evaluation script may score on another device
		// or in another order than the run: its accuracy tolerance holds.
		{"a model the benchmark's evaluation scores within its tolerance", &evaluated, evaluation(0.009), d5list.StatusVerified, ""},
		{"a model the benchmark's evaluation scores below what its log says", &evaluated, evaluation(0.011), d5list.StatusDiscrepancy, d5list.AuditMismatch},
		{"a model the benchmark's evaluation did not score (Slurm)", &evaluated, func(int) *d5list.RunClock { return &d5list.RunClock{WallS: 3} },
			d5list.StatusNeedsReview, CodeAuditNotRun},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			measured := cloneResult(claimed)
			for i := range measured.Runs {
				measured.Runs[i].Clock = c.clock(i)
			}
			st, reasons := Compare(c.bench, claimed, measured, true)
			if st != c.want || (c.code != "" && !hasCode(reasons, c.code)) {
				t.Fatalf("%s %+v, want %s with %s", st, reasons, c.want, c.code)
			}
		})
	}
}
