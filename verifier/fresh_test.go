package verifier

import (
	"testing"

	d5list "github.com/deep500/d5list"
)

// withFresh appends fresh-seed re-runs to a same-seed re-run of the
// competitor's code: copies of its runs with the seeds a lease drew, which
// the logs name unless ignore says otherwise, converged unless failed
// says otherwise.
func withFresh(measured *d5list.Result, seeds []int64, ignore map[int]bool, failed map[int]bool) *d5list.Result {
	m := cloneResult(measured)
	for i := range m.Runs {
		m.Runs[i].Clock = &d5list.RunClock{CompetitorLog: true}
	}
	n := len(m.Runs)
	for k, seed := range seeds {
		r := m.Runs[k%n]
		r.Index, r.Fresh, r.GivenSeed, r.Seed = n+k, true, seed, seed
		if ignore[k] {
			r.Seed = measured.Runs[k%n].Seed // the log of a run it had stored
		}
		if failed[k] {
			r.Converged, r.EpochsToTarget = false, -1
		}
		m.Runs = append(m.Runs, r)
	}
	return m
}

func TestFreshRunsAreJudgedAsADistribution(t *testing.T) {
	bench := compareBench(0, 0.1)
	claimed := baseResult(bench.Quality)
	fresh := []int64{9001, 9002, 9003, 9004, 9005}
	cases := []struct {
		name           string
		ignore, failed map[int]bool
		want           d5list.Status
		code           string
	}{
		{name: "honest", want: d5list.StatusVerified},
		{name: "one fresh run short of the target, as MLPerf allows", failed: map[int]bool{2: true}, want: d5list.StatusVerified},
		{name: "two fresh runs short of the target", failed: map[int]bool{1: true, 3: true}, want: d5list.StatusDiscrepancy, code: CodeFreshNotConverged},
		{name: "a replay names the seed of its stored log", ignore: map[int]bool{4: true}, want: d5list.StatusDiscrepancy, code: CodeFreshSeedIgnored},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			measured := withFresh(claimed, fresh, c.ignore, c.failed)
			st, reasons := Compare(bench, claimed, measured, true)
			if st != c.want {
				t.Fatalf("status %s, want %s: %+v", st, c.want, reasons)
			}
			if c.code != "" && !hasCode(reasons, c.code) {
				t.Fatalf("reasons %+v lack %s", reasons, c.code)
			}
			for _, r := range reasons {
				if r.Code == CodeRunExtra {
					t.Fatalf("a fresh run was taken for a run the logs do not claim: %+v", r)
				}
			}
		})
	}
}

// The times compared are the fresh runs': a re-run of the claimed seeds
// that the code answered from results computed before the clock started
// takes no time, and must neither pass a forged claim nor fail an honest
// one.
func TestTimingComparesTheFreshRuns(t *testing.T) {
	bench := compareBench(0, 0.1)
	claimed := baseResult(bench.Quality)
	measured := withFresh(claimed, []int64{9001, 9002, 9003, 9004, 9005}, nil, nil)
	for i := range len(claimed.Runs) {
		scaleTimes(&measured.Runs[i], 0.01, true) // precomputed: near no time
	}
	if st, reasons := Compare(bench, claimed, measured, true); st != d5list.StatusVerified {
		t.Fatalf("honest claim against its fresh runs: %s %+v", st, reasons)
	}
	forged := cloneResult(claimed)
	for i := range forged.Runs {
		scaleTimes(&forged.Runs[i], 0.5, true)
	}
	if st, reasons := Compare(bench, forged, measured, true); st != d5list.StatusDiscrepancy || !hasCode(reasons, CodeTimingMismatch) {
		t.Fatalf("a claim twice as fast as the fresh runs: %s %+v", st, reasons)
	}
}

func hasCode(rs []d5list.Reason, code string) bool {
	for _, r := range rs {
		if r.Code == code {
			return true
		}
	}
	return false
}
