package verifier

import (
	"fmt"
	"math"

	d5list "github.com/deep500/d5list"
)

// CodeAuditNotRun is a harness benchmark's re-run that came back without
// the runner's audit: a runner older than the harness, not the
// competitor's doing, so an organiser looks.
const CodeAuditNotRun = d5list.AuditNotRun

// judgeAudits makes each failure of the runner's audit of a re-run's
// outputs (harness package: a commitment missing from the window, outputs
// other than those committed to, or outputs the runner's reference does
// not give) a discrepancy. The audit is the runner's own check that the
// work the window timed was done: a run that skipped calls, computed them
// less precisely or ahead of its window fails it.
func (c *comparison) judgeAudits(measured *d5list.Result) {
	if c.bench.Workload != "" {
		return // the portal's own workload: no competitor's code to audit
	}
	for _, r := range measured.Runs {
		// Not in doubt, not left out: a value no comparison can judge is
		// the run's own finding against itself.
		for _, nf := range r.NonFinite {
			c.discrepancy(d5list.Reason{Code: d5list.AuditNonFinite, Run: cmpIntPtr(r.Index), File: nf.File, Line: nf.Line,
				Message: fmt.Sprintf("re-run %d: %s: the runner judges no NaN or infinity", r.Index, nf.Message)})
		}
	}
	for _, r := range measured.Runs {
		// A run without the runner's window (a Slurm executor's, whose
		// compute nodes cannot reach the runner's FIFOs: its clock has
		// the wall time alone) has no audit.
		var a *d5list.Audit
		if r.Clock != nil {
			a = r.Clock.Audit
		}
		if a == nil {
			switch {
			case c.bench.Verify.Harness != "":
				c.review(d5list.Reason{Code: CodeAuditNotRun, Run: cmpIntPtr(r.Index),
					Message: fmt.Sprintf("re-run %d: the runner did not audit its outputs, which this benchmark's harness needs: an organiser will look", r.Index)})
			case c.bench.Verify.Evaluation != nil:
				c.review(d5list.Reason{Code: CodeAuditNotRun, Run: cmpIntPtr(r.Index),
					Message: fmt.Sprintf("re-run %d: the runner did not evaluate the model it ended with, which this benchmark's evaluation needs (a Slurm runner cannot take it): an organiser will look", r.Index)})
			}
			continue
		}
		for _, f := range a.Failures {
			c.discrepancy(d5list.Reason{Code: f.Code, Run: cmpIntPtr(r.Index),
				Message: fmt.Sprintf("re-run %d: %s", r.Index, f.Message)})
		}
		for _, s := range a.Sections {
			// The runner's own evaluation of the run's last weights must be
			// what the run logged (a float32 mean, maybe rounded: hence a
			// margin, far below one test sample's share). A benchmark's
			// evaluation script may evaluate in another order or on another
			// device than the run: its accuracy tolerance applies.
			margin := 1e-4
			if c.bench.Verify.Evaluation != nil {
				margin = max(margin, c.bench.Verify.AccuracyTolerance)
			}
			if s.Accuracy != nil && math.Abs(*s.Accuracy-r.FinalAccuracy) > margin {
				c.discrepancy(d5list.Reason{Code: d5list.AuditMismatch, Run: cmpIntPtr(r.Index),
					Claimed: cmpFloatPtr(r.FinalAccuracy), Measured: cmpFloatPtr(*s.Accuracy),
					Message: fmt.Sprintf("re-run %d: the model it ended with classifies %.4f of the test split by the runner's own evaluation; its log says %.4f", r.Index, *s.Accuracy, r.FinalAccuracy)})
			}
		}
	}
}
