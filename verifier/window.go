package verifier

import (
	"fmt"

	d5list "github.com/deep500/d5list"
)

// judgeWindows makes each breach the runner saw of a re-run's timed window
// (runner/window.go: a seed never taken, a run_start before it, a window
// logged twice or not at all) a discrepancy: an honest run takes its seed,
// then logs one run_start and one run_stop. Such a run is timed by its
// whole wall time (portal.onRunnerClock), so it buys nothing even if an
// organiser accepts it.
func (c *comparison) judgeWindows(measured *d5list.Result) {
	for _, r := range measured.Runs {
		if r.Clock == nil {
			continue
		}
		for _, b := range r.Clock.Breaches {
			c.discrepancy(d5list.Reason{Code: b.Code, Run: cmpIntPtr(r.Index),
				Message: fmt.Sprintf("re-run %d: %s", r.Index, b.Message)})
		}
	}
}
