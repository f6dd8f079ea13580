package verifier

import (
	"fmt"

	d5list "github.com/deep500/d5list"
)

// judgeFresh holds the re-run's fresh-seed runs to the claim as a
// distribution, since no claimed run shares their seeds: each must have
// run with the seed it was given (a run that replays a stored log names
// the seed the log was made with), and they must reach the benchmark's
// quality as the claimed runs do, with MLPerf's allowance of one run that
// does not (the olympic mean drops it). A claim whose seeds were picked
// among many for converging fails here.
func (c *comparison) judgeFresh(claimed, measured *d5list.Result) {
	var fresh []d5list.RunMetrics
	for _, r := range measured.Runs {
		if !r.Fresh {
			continue
		}
		fresh = append(fresh, r)
		if r.GivenSeed != 0 && r.Seed != r.GivenSeed {
			c.discrepancy(d5list.Reason{Code: CodeFreshSeedIgnored, Run: cmpIntPtr(r.Index),
				Claimed: cmpFloatPtr(float64(r.Seed)), Measured: cmpFloatPtr(float64(r.GivenSeed)),
				Message: fmt.Sprintf("re-run %d was given the fresh seed %d but its log names seed %d: the code did not run with the seed the portal drew", r.Index, r.GivenSeed, r.Seed)})
		}
	}
	if len(fresh) == 0 {
		return
	}
	// A run with a seed the portal drew is held to the benchmark's workers
	// as a claimed seed's run is.
	for i := range fresh {
		c.workersSeen(&fresh[i])
	}
	failed := 0
	for _, r := range fresh {
		if !r.Converged {
			failed++
		}
	}
	claimedFailed := 0
	for _, r := range claimed.Runs {
		if !r.Converged {
			claimedFailed++
		}
	}
	if failed > 1 && failed > claimedFailed {
		c.discrepancy(d5list.Reason{Code: CodeFreshNotConverged,
			Claimed: cmpFloatPtr(float64(len(claimed.Runs) - claimedFailed)), Measured: cmpFloatPtr(float64(len(fresh) - failed)),
			Message: fmt.Sprintf("with seeds the portal drew, %d of %d re-runs did not reach the %s target (the claimed runs: %d of %d did); MLPerf allows one",
				failed, len(fresh), c.metricWords(), len(claimed.Runs)-claimedFailed, len(claimed.Runs))})
	}
}
