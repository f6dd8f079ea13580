package verifier

import (
	"fmt"
	"math"
	"slices"
	"strings"

	d5list "github.com/deep500/d5list"
	"github.com/deep500/d5list/leaderboard"
	"github.com/deep500/d5list/stats"
)

// Timing: rule 6 of Compare, for a re-run on the declared hardware
// (docs/timing.md says it for a competitor).
//
// The claimed runs are held against the re-run's timed runs
// (d5list.Result.TimedRuns): the runs with seeds the portal drew when it
// leased the job, whose results the competitor's code could not have
// computed before the clock started. Their seeds are not the claim's, so
// the two are compared as distributions, not run by run, and per unit of
// work: an epoch for training, whose runs of different seeds stop at
// different epochs; the whole run for operators and inference, whose runs
// do the same work.
//
// What the board ranks is the olympic mean of the timed runs as measured;
// every finding that names a measured value names that one, and where a
// check uses the re-run with the waits for a CPU the runner measured taken
// off, the finding shows both. The correction only ever favours the claim:
// a claim is judged against the corrected re-run, and "the re-run is much
// faster" against the re-run as measured.
//
// A claim may be slower than the re-run per unit of work by as much as a
// machine of the same model drifts (Verify.TimingDrift: a runner warmer or
// busier than it measures), the catalogue's precision and the spread of
// the re-run's own runs, added up: bound = 1 / (1 + drift + precision +
// spread). Within it the claim is verified, as "claimed X, measured Y":
// the board ranks the measurement, so a claim somewhat faster than its
// re-run buys nothing, and calling it false would wrong an honest
// competitor in public.

const (
	// maxRerunSpeedup is how many times better than its claim, per unit of
	// work and as measured, a re-run may be before an organiser looks at
	// it: far beyond what a busier machine of the claim explains, and what
	// a run that replays logs instead of training shows.
	maxRerunSpeedup = 2.0
	// maxTimingSpread is the most noise a re-run may show over all its
	// timed runs and still judge a claim: runs whose work differed by more
	// than ±40 % of their median measured load, not the recipe.
	maxTimingSpread = 0.4
	// maxKeptSpread is the same over the runs the olympic mean keeps. It
	// bounds the widening of the score's bound: at the default drift and
	// precision a claim down to 1 / (1 + 0.25 + 0.10 + 0.2) = 0.645 of the
	// re-run passes, so a clock forged by 0.6 is never verified, however
	// noisy the runner.
	maxKeptSpread = 0.2
	// waitedShare is the share of its wall time a timed run must have
	// waited for a CPU for its re-run to count as measured on a busy
	// machine (Remeasure): the waits are taken off, but a machine that
	// busy also slows the run in ways the runner does not measure (shared
	// caches and memory bandwidth).
	waitedShare = 0.1
)

// timedMetrics are the metrics rule 6 compares.
func (c *comparison) timedMetrics() []string { return timedMetricsOf(c.bench) }

// timedMetricsOf are the metrics whose claims bench holds against the
// re-run: its own list, else the speed it ranks by. A benchmark ranked by
// a speed holds the claims of that speed even where its entry names no
// timed metric: what ranks must never go unchecked.
func timedMetricsOf(bench *d5list.Benchmark) []string {
	if len(bench.Verify.Timed) > 0 {
		return bench.Verify.Timed
	}
	switch m := bench.Ranking.Metric; m {
	case d5list.MetricTTA, d5list.MetricOpTime, d5list.MetricThroughput, d5list.MetricLatencyP50, d5list.MetricLatencyP99:
		return []string{m}
	}
	return []string{d5list.MetricTimeToTrain}
}

func timedWords(metric string) string {
	if metric == d5list.MetricTimeToTrain {
		return "time to train"
	}
	return metric
}

// timedValue prints a timed metric's value with its unit as the pages
// print it (leaderboard.FormatValue), so that a finding's working quotes
// the figures its claimed and measured values show beside it.
func timedValue(metric string, v float64) string {
	return leaderboard.FormatValue(v, timedUnit(metric))
}

// timedRun is one run's value of a timed metric.
type timedRun struct {
	run *d5list.RunMetrics
	// value is the metric as the run logged it, a re-run's on the runner's
	// clock: what the board ranks.
	value float64
	// unit is value per unit of work; fair is unit with the run's wait
	// for a CPU taken off (a claim's: unit).
	unit, fair float64
}

// timedSample is one timed metric of the claimed runs and of the timed
// re-runs.
type timedSample struct {
	metric            string
	rate              bool // higher is better
	perEpoch          bool // units are epochs
	claimed, measured []timedRun
	// board is the measured olympic mean of the metric, as the board ranks
	// it; claim is the claim's. Zero where it is not valid.
	board, claim float64
}

// timedSampleOf takes metric from the claimed runs and the timed re-runs,
// each run that has a value of it.
func timedSampleOf(metric string, claimed, timed []d5list.RunMetrics) timedSample {
	dir := d5list.TimingDirection(metric)
	s := timedSample{metric: metric, rate: dir == d5list.HigherIsBetter,
		perEpoch: metric == d5list.MetricTimeToTrain || metric == d5list.MetricTTA}
	for _, runs := range [][]d5list.RunMetrics{claimed, timed} {
		for i := range runs {
			if _, ok := timedOf(&runs[i], metric); ok && epochsOf(&runs[i], metric) <= 0 {
				s.perEpoch = false // a run without evaluations has no epochs to count
			}
		}
	}
	take := func(runs []d5list.RunMetrics, rerun bool) []timedRun {
		var out []timedRun
		for i := range runs {
			m := &runs[i]
			v, ok := timedOf(m, metric)
			if !ok {
				continue
			}
			unit := v
			if s.perEpoch {
				unit = v / epochsOf(m, metric)
			}
			fair := unit
			if rerun {
				fair = corrected(unit, m.Clock, s.rate)
			}
			out = append(out, timedRun{run: m, value: v, unit: unit, fair: fair})
		}
		return out
	}
	s.claimed, s.measured = take(claimed, false), take(timed, true)
	if sc := d5list.OlympicScore(timed, metric, dir); sc.Valid {
		s.board = sc.Value
	}
	if sc := d5list.OlympicScore(claimed, metric, dir); sc.Valid {
		s.claim = sc.Value
	}
	return s
}

// timedOf is a run's value of a timed metric, where it has a usable one.
func timedOf(m *d5list.RunMetrics, metric string) (float64, bool) {
	v, ok := m.Metric(metric)
	return v, ok && v > 0 && !math.IsInf(v, 0)
}

// epochsOf is the work behind a run's training time: the epochs it ran
// (time to train), or ran until it reached the target (time to accuracy).
func epochsOf(m *d5list.RunMetrics, metric string) float64 {
	if metric == d5list.MetricTTA {
		return m.EpochsToTarget
	}
	if n := len(m.Evals); n > 0 {
		return m.Evals[n-1].Epoch
	}
	return 0
}

// corrected is a re-run's value of a timed metric as if nothing else had
// run on the machine: the time it waited for a CPU taken off a time, or
// added back to a rate.
func corrected(v float64, clock *d5list.RunClock, rate bool) float64 {
	a := clock.Availability()
	if rate {
		return v / a
	}
	return v * a
}

// ratio is claimed over measured for a time and measured over claimed for
// a rate: below 1 always means the claim is faster.
func (s timedSample) ratio(claimed, measured float64) float64 {
	if s.rate {
		return measured / claimed
	}
	return claimed / measured
}

// perUnit names the unit of work after a value: " an epoch", or nothing
// for a whole run.
func (s timedSample) perUnit() string {
	if s.perEpoch {
		return " an epoch"
	}
	return ""
}

// val prints a value of the sample's metric with its unit of work.
func (s timedSample) val(v float64) string { return timedValue(s.metric, v) + s.perUnit() }

// boardWords states the olympic means the board shows, where a finding
// compared values per epoch (otherwise it stated them already).
func (s timedSample) boardWords() string {
	if !s.perEpoch || s.claim == 0 || s.board == 0 {
		return ""
	}
	return fmt.Sprintf("; claimed %s, measured %s, the olympic means the board shows", timedValue(s.metric, s.claim), timedValue(s.metric, s.board))
}

// best is the fastest timed re-run, with its waits taken off.
func (s timedSample) best() timedRun {
	best := s.measured[0]
	for _, m := range s.measured[1:] {
		if s.ratio(m.fair, best.fair) < 1 { // m is faster
			best = m
		}
	}
	return best
}

func units(runs []timedRun, fair bool) []float64 {
	out := make([]float64, len(runs))
	for i, r := range runs {
		out[i] = r.unit
		if fair {
			out[i] = r.fair
		}
	}
	return out
}

// timingNoise is the slack a claim gets against the re-run (the bound
// above), and what the re-run measured of its own noise.
type timingNoise struct {
	drift     float64 // the catalogue's allowance for a slower machine
	precision float64 // the catalogue's promise
	spread    float64 // half the relative range of the re-run's work units
	kept      float64 // the same over the units the olympic drop keeps
}

// bound is how far below the re-run a claim's olympic mean may be.
func (n timingNoise) bound() float64 { return 1 / (1 + n.drift + n.precision + n.kept) }

// runBound is the same for one claimed run against the fastest re-run,
// whose noise is not averaged over runs: twice the precision and the
// spread of all runs.
func (n timingNoise) runBound() float64 { return 1 / (1 + n.drift + 2*(n.precision+n.spread)) }

func (n timingNoise) tooNoisy() bool { return n.spread > maxTimingSpread || n.kept > maxKeptSpread }

func (n timingNoise) words() string {
	return fmt.Sprintf("drift %.0f %% + precision %.0f %% + the re-run's own spread %.1f %%, %.1f %% over the runs its olympic mean keeps",
		n.drift*100, n.precision*100, n.spread*100, n.kept*100)
}

// measureNoise derives the slack from the catalogue and the re-run: the
// spread of its converged runs' work units, waits taken off (half their
// range over their median: a nonparametric measure that needs no
// distribution).
func (c *comparison) measureNoise(s timedSample) timingNoise {
	n := timingNoise{drift: c.bench.Verify.Drift(), precision: c.bench.Verify.Precision()}
	var fair []float64
	for _, m := range s.measured {
		if m.run.Converged {
			fair = append(fair, m.fair)
		}
	}
	if med := stats.Median(fair); len(fair) >= 2 && med > 0 {
		n.spread = halfRange(fair) / med
		n.kept = n.spread
		if len(fair) >= 3 {
			kept := slices.Sorted(slices.Values(fair))
			n.kept = halfRange(kept[1:len(kept)-1]) / med
		}
	}
	return n
}

func halfRange(v []float64) float64 { return (slices.Max(v) - slices.Min(v)) / 2 }

// against states what a check held a claimed value to: r of fair, the
// measured value with the waits for a CPU the runner measured taken off,
// and the value as measured where the two differ ("0.7 of the 10.3 s an
// epoch the portal measured, with the waits for a CPU the runner measured
// taken off (18.6 s an epoch as measured)").
func (s timedSample) against(r, raw, fair float64, who string) string {
	w := fmt.Sprintf("%.3g of the %s %s", r, s.val(fair), who)
	if math.Abs(raw-fair) > 1e-6*raw {
		w += fmt.Sprintf(", with the waits for a CPU the runner measured taken off (%s as measured)", s.val(raw))
	}
	return w
}

// compareTiming applies rule 6 to every timed metric, then holds each
// claimed run's evaluations to the timed runs' epochs.
func (c *comparison) compareTiming(claimed, timed []d5list.RunMetrics) {
	who := "the portal's re-run measured"
	if len(timed) > 0 && timed[0].Fresh {
		who = "the portal measured with seeds it drew"
	}
	c.contended = contention(timed)
	compared := false
	metrics := c.timedMetrics()
	var first timingNoise
	for i, metric := range metrics {
		s := timedSampleOf(metric, claimed, timed)
		if len(s.claimed) == 0 || len(s.measured) == 0 {
			continue
		}
		compared = true
		noise := c.measureNoise(s)
		if i == 0 {
			first = noise
		}
		c.judgeTiming(s, noise, who)
	}
	if !compared {
		if !c.discrepant {
			names := make([]string, len(metrics))
			for i, m := range metrics {
				names[i] = timedWords(m)
			}
			c.review(d5list.Reason{Code: CodeTimingNotCompared,
				Message: "timing not compared: no run has a " + strings.Join(names, " or a ") + " in both the logs and the re-run"})
		}
		return
	}
	if !first.tooNoisy() {
		c.compareEpochTimes(claimed, timed, first, who)
	}
}

// judgeTiming holds one timed metric's claim to the re-run.
func (c *comparison) judgeTiming(s timedSample, noise timingNoise, who string) {
	if noise.tooNoisy() {
		// A re-run this noisy cannot tell an honest claim from a forged
		// one: its timed runs are measured again (Remeasure), then an
		// organiser decides. The board ranks the measurement anyway.
		if !c.discrepant {
			c.review(d5list.Reason{Code: CodeTimingTooNoisy,
				Message: fmt.Sprintf("%s: the re-run was too noisy to judge the claimed times: its runs' work took from %.2f to %.2f of their median with the waits for a CPU taken off, and the runs its olympic mean keeps ±%.0f %% (at most ±%.0f %% and ±%.0f %% judge a claim)",
					timedWords(s.metric), 1-noise.spread, 1+noise.spread, noise.kept*100, maxTimingSpread*100, maxKeptSpread*100)})
		}
		return
	}
	cs := stats.OlympicMean(units(s.claimed, false))
	raw, fair := stats.OlympicMean(units(s.measured, false)), stats.OlympicMean(units(s.measured, true))
	bound := noise.bound()
	if r := s.ratio(cs, fair); r < bound-floatEps {
		c.timingGap(d5list.Reason{Code: CodeTimingMismatch, Claimed: stated(s.claim), Measured: stated(s.board),
			Message: fmt.Sprintf("%s: the logs' olympic mean is %s, %s; claims down to %.3g of the re-run pass (%s)%s",
				timedWords(s.metric), s.val(cs), s.against(r, raw, fair, who), bound, noise.words(), s.boardWords())}, r, bound)
	}
	// The other side, as measured: a re-run of the competitor's code far
	// faster than its claim on the declared hardware must not rank unseen
	// (a run that writes a converging log instead of training takes no
	// time). An honest claim made on a busier machine is slower than its
	// re-run too, hence a review; and none for the portal's own workloads,
	// whose re-runs cannot have skipped their work.
	if r := s.ratio(cs, raw); r > maxRerunSpeedup && s.competitorCode() {
		c.review(d5list.Reason{Code: CodeRerunMuchFaster, Claimed: stated(s.claim), Measured: stated(s.board),
			Message: fmt.Sprintf("%s: the re-run's olympic mean is %s as measured, %.3g times better than the logs' %s; a re-run more than %g times better than its claim ranks once an organiser has looked at it (a run that replays logs instead of training takes no time)%s",
				timedWords(s.metric), s.val(raw), r, s.val(cs), maxRerunSpeedup, s.boardWords())})
	}
	// Each claimed run on its own against the fastest timed run, with
	// twice the slack: one forged run that the olympic drop would outvote.
	best, runBound := s.best(), noise.runBound()
	for _, cr := range s.claimed {
		r := s.ratio(cr.unit, best.fair)
		if r >= runBound-floatEps {
			continue
		}
		idx := cr.run.Index
		c.timingGap(d5list.Reason{Code: CodeRunTimingMismatch, Run: cmpIntPtr(idx), File: cr.run.File,
			Claimed: cmpFloatPtr(cr.value), Measured: stated(s.board),
			Message: fmt.Sprintf("run %d: the log claims %s %s%s, %s in its fastest run; one run may be down to %.3g of it (%s, the precision and the spread counted twice for one run)%s",
				idx, timedWords(s.metric), timedValue(s.metric, cr.value), s.ownUnitWords(cr), s.against(r, best.unit, best.fair, who), runBound, noise.words(), s.boardOrMeasured())}, r, runBound)
	}
}

// stated is a finding's value, none where the olympic mean is not valid.
func stated(v float64) *float64 {
	if v == 0 {
		return nil
	}
	return &v
}

// competitorCode reports whether the competitor's code wrote the timed
// runs' logs, or the runner does not say.
func (s timedSample) competitorCode() bool {
	return slices.ContainsFunc(s.measured, func(m timedRun) bool { return m.run.Clock == nil || m.run.Clock.CompetitorLog })
}

// ownUnitWords is a claimed run's value per epoch, where the sample
// compares epochs: ", 2.05 s an epoch".
func (s timedSample) ownUnitWords(r timedRun) string {
	if !s.perEpoch {
		return ""
	}
	return ", " + s.val(r.unit)
}

// boardOrMeasured states the board's measured value after a finding about
// one run.
func (s timedSample) boardOrMeasured() string {
	if s.board == 0 {
		return ""
	}
	return fmt.Sprintf("; measured %s, the olympic mean the board shows", timedValue(s.metric, s.board))
}

// compareEpochTimes holds each claimed run's evaluations, their median
// spacing per epoch, to the median epoch of the timed runs (waits taken
// off), under the bound of one run: this catches evaluation timestamps
// edited apart from run_stop, a false time to accuracy.
func (c *comparison) compareEpochTimes(claimed, timed []d5list.RunMetrics, noise timingNoise, who string) {
	var raw, fair []float64
	for i := range timed {
		a := timed[i].Clock.Availability()
		for _, d := range epochDurations(timed[i].Evals) {
			raw = append(raw, d)
			fair = append(fair, d*a)
		}
	}
	ref, refRaw := stats.Median(fair), stats.Median(raw)
	if len(fair) == 0 || !(ref > 0) {
		return
	}
	runBound := noise.runBound()
	for i := range claimed {
		cr := &claimed[i]
		d := epochDurations(cr.Evals)
		if len(d) == 0 {
			continue
		}
		own := stats.Median(d)
		if own/ref >= runBound-floatEps {
			continue
		}
		epochs := timedSample{metric: d5list.MetricTimeToTrain}
		c.timingGap(d5list.Reason{Code: CodeEpochTimeMismatch, Run: cmpIntPtr(cr.Index), File: cr.File,
			Claimed: cmpFloatPtr(own), Measured: cmpFloatPtr(refRaw),
			Message: fmt.Sprintf("run %d: the log's evaluations are a median %s an epoch apart, %s as the median epoch of its runs; one run may be down to %.3g of it (%s, the precision and the spread counted twice for one run)",
				cr.Index, timedValue(d5list.MetricTimeToTrain, own), epochs.against(own/ref, refRaw, ref, who), runBound, noise.words())}, own/ref, runBound)
	}
}

// epochDurations are the times between consecutive evaluations, the first
// measured from run_start, normalised per epoch so evaluating every second
// epoch compares with evaluating every epoch.
func epochDurations(evals []d5list.EvalPoint) []float64 {
	var d []float64
	prevT, prevE := 0.0, 0.0
	for _, e := range evals {
		if de := e.Epoch - prevE; de > 0 {
			d = append(d, (e.Seconds-prevT)/de)
		}
		prevT, prevE = e.Seconds, e.Epoch
	}
	return d
}

// Remeasure says why a verdict should wait for its timed runs to be
// measured again, or "" when it stands as it is. Only a verdict that rests
// on timing alone waits, since a new measurement changes nothing else: one
// whose re-run was too noisy to judge (timing_too_noisy, and nothing else
// for an organiser to look at), one whose timing gap was measured while
// other work kept the runner busy (a review, timingGap), and a timing
// discrepancy (nothing
// discrepant but the times) the first time a gap is seen (gapsSeen counts
// the earlier measurements of this claim that found one), or again where
// the timed runs waited for a CPU and that load could have made the gap
// (loadCouldClose). A discrepancy is thus only ever called on a gap
// measured twice, the last time one no load explains. The caller bounds
// how often a verdict waits (Verify.RemeasureCount).
func Remeasure(bench *d5list.Benchmark, claimed, measured *d5list.Result, st d5list.Status, reasons []d5list.Reason, gapsSeen int) string {
	switch st {
	case d5list.StatusNeedsReview:
		if onlyFindings(reasons, CodeTimingTooNoisy) {
			return "the re-run was too noisy to judge the claimed times"
		}
		if onlyFindings(reasons, CodeTimingTooNoisy, CodeTimingMismatch, CodeRunTimingMismatch, CodeEpochTimeMismatch) {
			return "the claimed times are faster than the re-run's, measured while other work kept the runner busy"
		}
	case d5list.StatusDiscrepancy:
		if !onlyFindings(reasons, CodeTimingMismatch, CodeRunTimingMismatch, CodeEpochTimeMismatch) {
			return ""
		}
		if gapsSeen == 0 {
			return "the claimed times are faster than the re-run's, seen once"
		}
		if w := waitedFor(measured.TimedRuns()); w > waitedShare && loadCouldClose(bench, claimed, measured) {
			return fmt.Sprintf("the claimed times are faster than the re-run's, whose runs waited for a CPU for up to %.0f %% of their time, which could account for the gap", w*100)
		}
	}
	return ""
}

// contendedCPUs is how much of a CPU other work may keep busy on average
// during a timed run before the run counts as contended (timingGap): more
// than the runner's own and its portal's bookkeeping, far less than a
// neighbour that computes.
const contendedCPUs = 0.25

// maxContentionSlowdown is the most a neighbour the runner measured
// (contended) may have slowed a timed run: a busy sibling core and shared
// caches. The verdict study measured an honest PyTorch run 1.75 times
// slower beside a compiler with no wait to show for it (docs/timing.md); a
// claim that fails even against a re-run this much faster is no load's
// doing.
const maxContentionSlowdown = 2.0

// contention says how busy other work kept the runner during the busiest
// timed run, or "" where no run reached contendedCPUs.
func contention(timed []d5list.RunMetrics) string {
	most := 0.0
	for _, r := range timed {
		if r.Clock != nil && r.Clock.WallS > 0 {
			most = math.Max(most, r.Clock.ForeignCPUS/r.Clock.WallS)
		}
	}
	if most < contendedCPUs {
		return ""
	}
	return fmt.Sprintf("other work kept %.2f of the runner's CPUs busy on average during a timed run, which slows a run (a busy sibling core, shared caches) without making it wait for a CPU", most)
}

// loadCouldClose reports whether the load the runner measured could also
// account for the gap the verdict found: whether the claim passes, for
// every timed metric, against the re-run with its waits taken off twice,
// as if the machine had been as much faster again. A machine that busy
// also slows a run in ways the runner does not see (caches and memory
// bandwidth it shares), taken here to be at most as much as the wait it
// does see; a claim that fails even so fails for no load's reason.
func loadCouldClose(bench *d5list.Benchmark, claimed, measured *d5list.Result) bool {
	c := &comparison{bench: bench}
	for _, metric := range c.timedMetrics() {
		s := timedSampleOf(metric, claimed.Runs, measured.TimedRuns())
		if len(s.claimed) == 0 || len(s.measured) == 0 {
			continue
		}
		cs := stats.OlympicMean(units(s.claimed, false))
		raw, fair := stats.OlympicMean(units(s.measured, false)), stats.OlympicMean(units(s.measured, true))
		if s.ratio(cs, fair*fair/raw) < c.measureNoise(s).bound()-floatEps {
			return false
		}
	}
	return true
}

// onlyFindings reports whether every finding of reasons is one of codes,
// notes aside.
func onlyFindings(reasons []d5list.Reason, codes ...string) bool {
	for _, r := range reasons {
		if r.Code != CodeEnvironmentDiffers && !slices.Contains(codes, r.Code) {
			return false
		}
	}
	return len(reasons) > 0
}

// waitedFor is the largest share of its wall time a run waited for a CPU.
func waitedFor(runs []d5list.RunMetrics) float64 {
	w := 0.0
	for _, r := range runs {
		w = math.Max(w, 1-r.Clock.Availability())
	}
	return w
}
