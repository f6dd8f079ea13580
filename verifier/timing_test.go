package verifier

import (
	"slices"
	"strings"
	"testing"

	d5list "github.com/deep500/d5list"
)

// timedRerun is a re-run of the competitor's code for baseResult's claim:
// its claimed seeds, then five runs with fresh seeds that train as the
// claimed runs did, timed by the runner's clock.
func timedRerun(claimed *d5list.Result) *d5list.Result {
	m := withFresh(claimed, []int64{9001, 9002, 9003, 9004, 9005}, nil, nil)
	for i := range freshRuns(m) {
		r := &freshRuns(m)[i]
		r.Clock = &d5list.RunClock{CompetitorLog: true, WallS: r.TimeToTrain, CPUS: r.TimeToTrain}
	}
	return m
}

// freshRuns are the timed runs of a re-run made by timedRerun.
func freshRuns(m *d5list.Result) []d5list.RunMetrics { return m.Runs[len(m.Runs)-5:] }

// The timing rules, one case each, on a claim re-run with fresh seeds: a
// claim within the drift a machine shows stays verified, a clock forged
// by 0.6 is not, and load can neither make an honest claim look forged
// nor a forged one look honest.
func TestTimingRules(t *testing.T) {
	// A uniform forgery shows in the olympic mean and in each of the five
	// runs, its evaluations and its run_stop.
	everyRunFlagged := []string{CodeTimingMismatch}
	for range 5 {
		everyRunFlagged = append(everyRunFlagged, CodeEpochTimeMismatch, CodeRunTimingMismatch)
	}
	cases := []struct {
		name string
		edit func(claimed *d5list.Result, fresh []d5list.RunMetrics)
		want d5list.Status
		// codes are the findings' codes, in order.
		codes []string
		// words must appear in the first finding's message.
		words []string
	}{
		{name: "as claimed", edit: func(*d5list.Result, []d5list.RunMetrics) {}, want: d5list.StatusVerified},
		{
			// A machine a quarter slower at re-run time than the one the
			// claim was made on, with no wait to show for it: machine drift.
			name: "re-run 25 % slower without a measured wait",
			edit: func(_ *d5list.Result, fresh []d5list.RunMetrics) {
				for i := range fresh {
					scaleTimes(&fresh[i], 1.25, true)
				}
			},
			want: d5list.StatusVerified,
		},
		{
			name: "re-run 25 % slower, each run off by up to 5 %",
			edit: func(_ *d5list.Result, fresh []d5list.RunMetrics) {
				for i, f := range []float64{1.25, 1.3, 1.2, 1.27, 1.23} {
					scaleTimes(&fresh[i], f, true)
				}
			},
			want: d5list.StatusVerified,
		},
		{
			name: "every claimed time at 0.6",
			edit: func(c *d5list.Result, _ []d5list.RunMetrics) {
				for i := range c.Runs {
					scaleTimes(&c.Runs[i], 0.6, true)
				}
			},
			want:  d5list.StatusDiscrepancy,
			codes: everyRunFlagged,
			words: []string{"the logs' olympic mean is 6.20 s an epoch, 0.6 of the 10.3 s an epoch the portal measured with seeds it drew; claims down to 0.735 of the re-run pass (drift 25 % + precision 10 % + the re-run's own spread 1.9 %, 1.0 % over the runs its olympic mean keeps); claimed 24.8 s, measured 41.3 s, the olympic means the board shows"},
		},
		{
			// Load on the runner that it measured is taken off: the forgery
			// shows as on a quiet runner, and the finding shows both values.
			name: "every claimed time at 0.6, re-run on a busy runner",
			edit: func(c *d5list.Result, fresh []d5list.RunMetrics) {
				for i := range c.Runs {
					scaleTimes(&c.Runs[i], 0.6, true)
				}
				for i := range fresh {
					busy(&fresh[i], 1.8)
				}
			},
			want:  d5list.StatusDiscrepancy,
			codes: everyRunFlagged,
			words: []string{"0.6 of the 10.3 s an epoch the portal measured with seeds it drew, with the waits for a CPU the runner measured taken off (18.6 s an epoch as measured)",
				"claimed 24.8 s, measured 74.3 s, the olympic means the board shows"},
		},
		{
			// At the most noise the re-run may judge with, the bound is
			// still above 0.6.
			name: "every claimed time at 0.6, the re-run as noisy as may judge",
			edit: func(c *d5list.Result, fresh []d5list.RunMetrics) {
				for i := range c.Runs {
					scaleTimes(&c.Runs[i], 0.6, true)
				}
				for i, f := range []float64{0.75, 0.82, 1.0, 1.18, 1.3} {
					scaleTimes(&fresh[i], f, true)
				}
			},
			want:  d5list.StatusDiscrepancy,
			codes: []string{CodeTimingMismatch},
			words: []string{"0.599 of the 10.3 s an epoch", "claims down to 0.649 of the re-run pass", "19.0 % over the runs its olympic mean keeps"},
		},
		{
			name: "every claimed time at 0.6, the re-run too noisy to judge",
			edit: func(c *d5list.Result, fresh []d5list.RunMetrics) {
				for i := range c.Runs {
					scaleTimes(&c.Runs[i], 0.6, true)
				}
				for i, f := range []float64{0.7, 0.75, 1.0, 1.25, 1.3} {
					scaleTimes(&fresh[i], f, true)
				}
			},
			want:  d5list.StatusNeedsReview,
			codes: []string{CodeTimingTooNoisy},
			words: []string{"too noisy to judge", "the runs its olympic mean keeps ±26 %"},
		},
		{
			// Only the three runs the olympic drop keeps are sped up.
			name: "the kept runs at 0.6",
			edit: func(c *d5list.Result, _ []d5list.RunMetrics) {
				for i := 1; i < 4; i++ {
					scaleTimes(&c.Runs[i], 0.6, true)
				}
			},
			want: d5list.StatusDiscrepancy,
			codes: []string{CodeTimingMismatch,
				CodeEpochTimeMismatch, CodeRunTimingMismatch, CodeEpochTimeMismatch, CodeRunTimingMismatch, CodeEpochTimeMismatch, CodeRunTimingMismatch},
		},
		{
			// One run alone: the olympic mean drops it, its own ratio shows it.
			name:  "one claimed run halved",
			edit:  func(c *d5list.Result, _ []d5list.RunMetrics) { scaleTimes(&c.Runs[2], 0.5, true) },
			want:  d5list.StatusDiscrepancy,
			codes: []string{CodeEpochTimeMismatch, CodeRunTimingMismatch},
			words: []string{"run 2: the log's evaluations are a median 5.10 s an epoch apart, 0.5 of the 10.2 s the portal measured with seeds it drew as the median epoch of its runs"},
		},
		{
			name:  "evaluation timestamps halved, run_stop kept",
			edit:  func(c *d5list.Result, _ []d5list.RunMetrics) { scaleTimes(&c.Runs[3], 0.5, false) },
			want:  d5list.StatusDiscrepancy,
			codes: []string{CodeEpochTimeMismatch},
		},
		{
			// What the competitor's code that writes a converging log
			// instead of training measures.
			name: "re-run 3 times faster than the claim",
			edit: func(_ *d5list.Result, fresh []d5list.RunMetrics) {
				for i := range fresh {
					scaleTimes(&fresh[i], 1.0/3, true)
				}
			},
			want:  d5list.StatusNeedsReview,
			codes: []string{CodeRerunMuchFaster},
			words: []string{"the re-run's olympic mean is 3.44 s an epoch as measured, 3 times better than the logs' 10.3 s an epoch", "claimed 41.3 s, measured 13.8 s"},
		},
		{
			// An honest claim, re-run on a runner that waited for a CPU for
			// 72 % of each run: taken off, the re-run would be 3.6 times
			// faster than the claim; as measured it is as fast.
			name: "claim as fast as a busy re-run measured",
			edit: func(c *d5list.Result, fresh []d5list.RunMetrics) {
				for i := range c.Runs {
					scaleTimes(&c.Runs[i], 3.6, true)
				}
				for i := range fresh {
					busy(&fresh[i], 3.6)
				}
			},
			want: d5list.StatusVerified,
		},
		{
			name: "re-run 1.8 times faster than the claim",
			edit: func(_ *d5list.Result, fresh []d5list.RunMetrics) {
				for i := range fresh {
					scaleTimes(&fresh[i], 1/1.8, true)
				}
			},
			want: d5list.StatusVerified,
		},
		{
			name: "busy runner, irregularly slower, its waits measured",
			edit: func(_ *d5list.Result, fresh []d5list.RunMetrics) {
				for i, f := range []float64{1.9, 1.2, 1.6, 1.05, 4} {
					busy(&fresh[i], f)
				}
			},
			want: d5list.StatusVerified,
		},
		{
			name: "busy runner, two runs ten times as slow, their waits measured",
			edit: func(_ *d5list.Result, fresh []d5list.RunMetrics) {
				busy(&fresh[0], 10)
				busy(&fresh[3], 10)
			},
			want: d5list.StatusVerified,
		},
		{
			// Two runs ten times as slow with nothing to explain it.
			name: "two runs ten times as slow without a measured wait",
			edit: func(_ *d5list.Result, fresh []d5list.RunMetrics) {
				scaleTimes(&fresh[0], 10, true)
				scaleTimes(&fresh[3], 10, true)
			},
			want:  d5list.StatusNeedsReview,
			codes: []string{CodeTimingTooNoisy},
		},
		{
			// Fresh seeds train for other numbers of epochs than the
			// claimed ones: time to train differs, the epoch does not.
			name: "fresh runs that train two epochs longer",
			edit: func(_ *d5list.Result, fresh []d5list.RunMetrics) {
				for i := range fresh {
					r := &fresh[i]
					last := r.Evals[len(r.Evals)-1]
					epoch := last.Seconds / last.Epoch
					for e := 1; e <= 2; e++ {
						r.Evals = append(r.Evals, d5list.EvalPoint{Epoch: last.Epoch + float64(e), Seconds: last.Seconds + float64(e)*epoch, Accuracy: last.Accuracy})
					}
					r.TimeToTrain = r.Evals[len(r.Evals)-1].Seconds + 0.5
				}
			},
			want: d5list.StatusVerified,
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			bench := compareBench(0, 0.1)
			claimed := baseResult(bench.Quality)
			measured := timedRerun(claimed)
			tc.edit(claimed, freshRuns(measured))
			status, reasons := Compare(bench, claimed, measured, true)
			var codes []string
			for _, r := range reasons {
				codes = append(codes, r.Code)
			}
			if status != tc.want || !slices.Equal(codes, tc.codes) {
				t.Fatalf("status %s, findings %v; want %s, %v\n%s", status, codes, tc.want, tc.codes, reasonMessages(reasons))
			}
			for _, w := range tc.words {
				if !strings.Contains(reasons[0].Message, w) {
					t.Errorf("message %q lacks %q", reasons[0].Message, w)
				}
			}
			for _, r := range reasons {
				if strings.Contains(r.Message, "same seed") || strings.Contains(r.Message, "%!") {
					t.Errorf("%s: %q", r.Code, r.Message)
				}
			}
		})
	}
}

// The portal's own workload cannot have skipped its work: a re-run of it
// three times faster than the claim is a claim made on a busier machine.
func TestPortalsOwnWorkloadIsNeverTooFast(t *testing.T) {
	bench := compareBench(0, 0.1)
	claimed := baseResult(bench.Quality)
	measured := withFresh(claimed, []int64{9001, 9002}, nil, nil)
	for i := range measured.Runs {
		r := &measured.Runs[i]
		scaleTimes(r, 1.0/3, true)
		r.Clock = &d5list.RunClock{WallS: r.TimeToTrain, CPUS: r.TimeToTrain}
	}
	if st, reasons := Compare(bench, claimed, measured, true); st != d5list.StatusVerified {
		t.Fatalf("%s\n%s", st, reasonMessages(reasons))
	}
	for i := range measured.Runs {
		measured.Runs[i].Clock.CompetitorLog = true
	}
	if st, reasons := Compare(bench, claimed, measured, true); st != d5list.StatusNeedsReview || !hasCode(reasons, CodeRerunMuchFaster) {
		t.Fatalf("the same re-run of the competitor's code: %s\n%s", st, reasonMessages(reasons))
	}
}

// A finding states the measured value the board ranks, never a corrected
// one in its place: the olympic mean of the timed runs as measured.
func TestTimingFindingsStateTheRankedValue(t *testing.T) {
	bench := compareBench(0, 0.1)
	claimed := baseResult(bench.Quality)
	measured := timedRerun(claimed)
	for i := range claimed.Runs {
		scaleTimes(&claimed.Runs[i], 0.5, true)
	}
	fresh := freshRuns(measured)
	for i := range fresh {
		busy(&fresh[i], 1.5)
	}
	ranked := d5list.OlympicScore(fresh, bench.Ranking.Metric, bench.Ranking.Direction).Value
	_, reasons := Compare(bench, claimed, measured, true)
	if len(reasons) == 0 {
		t.Fatal("no findings")
	}
	for _, r := range reasons {
		if r.Code == CodeEpochTimeMismatch {
			continue // its quantity is the time between evaluations
		}
		if r.Measured == nil || *r.Measured != ranked {
			t.Errorf("%s: measured %v, want the ranked %v", r.Code, r.Measured, ranked)
		}
		if !strings.Contains(r.Message, "measured "+timedValue(bench.Ranking.Metric, ranked)) {
			t.Errorf("%s: %q does not name the ranked %s", r.Code, r.Message, timedValue(bench.Ranking.Metric, ranked))
		}
	}
}

func TestRemeasure(t *testing.T) {
	bench := compareBench(0, 0.1)
	honest := baseResult(bench.Quality)
	at := func(f float64) *d5list.Result {
		c := baseResult(bench.Quality)
		for i := range c.Runs {
			scaleTimes(&c.Runs[i], f, true)
		}
		return c
	}
	quiet := timedRerun(honest)
	// A runner that waited for a CPU for a sixth of each run.
	loaded := timedRerun(honest)
	for i := range freshRuns(loaded) {
		busy(&freshRuns(loaded)[i], 1.2)
	}
	finding := func(codes ...string) []d5list.Reason {
		var rs []d5list.Reason
		for _, c := range codes {
			rs = append(rs, d5list.Reason{Code: c})
		}
		return rs
	}
	cases := []struct {
		name              string
		status            d5list.Status
		reasons           []d5list.Reason
		claimed, measured *d5list.Result
		gapsSeen          int
		want              bool
	}{
		{"too noisy to judge", d5list.StatusNeedsReview, finding(CodeTimingTooNoisy), honest, quiet, 0, true},
		{"too noisy, and another question for an organiser", d5list.StatusNeedsReview, finding(CodeConvergenceBorder, CodeTimingTooNoisy), honest, quiet, 0, false},
		{"much faster than claimed", d5list.StatusNeedsReview, finding(CodeRerunMuchFaster), honest, quiet, 0, false},
		{"a gap seen once", d5list.StatusDiscrepancy, finding(CodeTimingMismatch, CodeRunTimingMismatch, CodeEpochTimeMismatch), at(0.5), quiet, 0, true},
		{"a gap seen again on a quiet runner", d5list.StatusDiscrepancy, finding(CodeTimingMismatch, CodeEnvironmentDiffers), at(0.7), quiet, 1, false},
		// With the waits taken off twice the claim of 0.7 is 0.84 of the
		// re-run, within the bound: the load could have made the gap.
		{"a gap seen again on a runner that waited, as wide as its waits", d5list.StatusDiscrepancy, finding(CodeTimingMismatch), at(0.7), loaded, 2, true},
		// ... that of 0.5 is 0.6 of it: no load of the kind it measured did.
		{"a gap seen again on a runner that waited, wider than its waits", d5list.StatusDiscrepancy, finding(CodeTimingMismatch), at(0.5), loaded, 1, false},
		{"a gap and an edited accuracy", d5list.StatusDiscrepancy, finding(CodeAccuracyMismatch, CodeTimingMismatch), at(0.5), quiet, 0, false},
		{"a replay", d5list.StatusDiscrepancy, finding(CodeFreshSeedIgnored, CodeTimingMismatch), at(0.5), loaded, 0, false},
		{"verified", d5list.StatusVerified, nil, honest, loaded, 0, false},
	}
	for _, c := range cases {
		why := Remeasure(bench, c.claimed, c.measured, c.status, c.reasons, c.gapsSeen)
		if (why != "") != c.want {
			t.Errorf("%s: Remeasure %q, want a re-measure %t", c.name, why, c.want)
		}
	}
}

// Forged 0.6 and re-measured: every measurement shows the gap, so the
// verdict waits once, then stands as a discrepancy on a quiet runner; on
// a busy one it waits as long as the caller allows.
func TestForgedClockIsConfirmedByRemeasuring(t *testing.T) {
	bench := compareBench(0, 0.1)
	claimed := baseResult(bench.Quality)
	for i := range claimed.Runs {
		scaleTimes(&claimed.Runs[i], 0.6, true)
	}
	gaps := 0
	var whys []string
	for attempt := range 3 {
		measured := timedRerun(baseResult(bench.Quality))
		status, reasons := Compare(bench, claimed, measured, true)
		if status != d5list.StatusDiscrepancy {
			t.Fatalf("measurement %d: %s\n%s", attempt, status, reasonMessages(reasons))
		}
		why := Remeasure(bench, claimed, measured, status, reasons, gaps)
		if why == "" {
			break
		}
		whys = append(whys, why)
		gaps++
	}
	if len(whys) != 1 {
		t.Fatalf("waited for %d measurements (%q), want one: the gap, seen twice on a quiet runner, stands", len(whys), whys)
	}
	t.Logf("it waited once: %s", whys[0])
}

// A re-run 1.7 times slower than its honest claim with no wait to show
// for it, because a neighbour kept the other core busy (ForeignCPUS): not
// a discrepancy but a review, measured again; a gap measured again while
// the runner was left alone stands as one. The same gap with the runner
// idle around it is a discrepancy from the first measurement.
func TestTimingGapUnderANeighboursLoadIsNoDiscrepancy(t *testing.T) {
	bench := compareBench(0, 0.1)
	claimed := baseResult(bench.Quality)
	slowerBy := func(factor, neighbour float64) *d5list.Result {
		m := timedRerun(baseResult(bench.Quality))
		for i := range freshRuns(m) {
			r := &freshRuns(m)[i]
			scaleTimes(r, factor, true)
			r.Clock.WallS, r.Clock.CPUS, r.Clock.ForeignCPUS = r.TimeToTrain, r.TimeToTrain, neighbour*r.TimeToTrain
		}
		return m
	}
	slower := func(neighbour float64) *d5list.Result { return slowerBy(1.7, neighbour) }
	contended := slower(0.9)
	status, reasons := Compare(bench, claimed, contended, true)
	if status != d5list.StatusNeedsReview || !hasCode(reasons, CodeTimingMismatch) {
		t.Fatalf("beside a busy neighbour: %s, want needs_review with %s\n%s", status, CodeTimingMismatch, reasonMessages(reasons))
	}
	if msg := reasons[0].Message; !strings.Contains(msg, "other work kept 0.90 of the runner's CPUs busy") {
		t.Errorf("the finding does not say what the runner saw: %s", msg)
	}
	if why := Remeasure(bench, claimed, contended, status, reasons, 0); why == "" {
		t.Error("a gap measured under a neighbour's load is not measured again")
	}
	for _, neighbour := range []float64{0, 0.2} {
		status, reasons = Compare(bench, claimed, slower(neighbour), true)
		if status != d5list.StatusDiscrepancy {
			t.Errorf("other work at %.1f of a CPU: %s, want discrepancy\n%s", neighbour, status, reasonMessages(reasons))
		}
	}
	// A claim three times faster than its re-run is no neighbour's doing,
	// however busy the runner was: a discrepancy that says so.
	status, reasons = Compare(bench, claimed, slowerBy(3, 0.9), true)
	if status != d5list.StatusDiscrepancy || !hasCode(reasons, CodeTimingMismatch) || !strings.Contains(reasons[0].Message, "less than this gap") {
		t.Errorf("a claim three times faster beside a busy neighbour: %s, want a discrepancy no load explains\n%s", status, reasonMessages(reasons))
	}
}
