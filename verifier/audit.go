package verifier

import (
	"fmt"

	d5list "github.com/deep500/d5list"
)

// CodeAuditNotRun is a harness benchmark's re-run that came back without
// the runner's audit: a runner older than the harness, not the
// competitor's doing, so an organiser looks.
const CodeAuditNotRun = "audit_not_run"

// judgeAudits makes each failure of the runner's audit of a re-run's
// outputs (harness package: a commitment missing from the window, outputs
// other than those committed to, or outputs the runner's reference does
// not give) a discrepancy. The audit is the runner's own check that the
// work the window timed was done: a run that skipped calls, computed them
// less precisely or ahead of its window fails it.
func (c *comparison) judgeAudits(measured *d5list.Result) {
	for _, r := range measured.Runs {
		if r.Clock == nil || !r.Clock.CompetitorLog {
			continue
		}
		a := r.Clock.Audit
		if a == nil {
			if c.bench.Verify.Harness != "" {
				c.review(d5list.Reason{Code: CodeAuditNotRun, Run: cmpIntPtr(r.Index),
					Message: fmt.Sprintf("re-run %d: the runner did not audit its outputs, which this benchmark's harness needs: an organiser will look", r.Index)})
			}
			continue
		}
		for _, f := range a.Failures {
			c.discrepancy(d5list.Reason{Code: f.Code, Run: cmpIntPtr(r.Index),
				Message: fmt.Sprintf("re-run %d: %s", r.Index, f.Message)})
		}
	}
}
