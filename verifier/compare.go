package verifier

import (
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"

	d5list "github.com/deep500/d5list"
)

// Reason codes of Compare.
const (
	CodeNoMeasurement        = "no_measurement"
	CodeNoClaim              = "no_claim"
	CodeRunMissing           = "run_missing" // claimed but not re-run
	CodeRunExtra             = "run_extra"   // re-run but not claimed
	CodeRunDuplicate         = "run_duplicate"
	CodeSeedMismatch         = "seed_mismatch"
	CodeAccuracyMismatch     = "accuracy_mismatch"
	CodeEpochMissing         = "epoch_missing" // in the claimed curve only
	CodeEpochExtra           = "epoch_extra"   // in the measured curve only
	CodeFinalAccuracy        = "final_accuracy_mismatch"
	CodeEpochsToTarget       = "epochs_to_target_mismatch"
	CodeConvergenceMismatch  = "convergence_mismatch"
	CodeConvergenceBorder    = "convergence_borderline"
	CodeClaimTargetNotMet    = "claimed_target_not_reached"
	CodeEvalAfterStop        = "eval_after_stop"
	CodeEvalTimeOrder        = "eval_time_order"
	CodeTimingMismatch       = "timing_mismatch"
	CodeRunTimingMismatch    = "run_timing_mismatch"
	CodeTimingTooNoisy       = "timing_too_noisy"
	CodeEpochTimeMismatch    = "epoch_time_mismatch"
	CodeTimingNotCompared    = "timing_not_compared"
	CodeTimingNotReproduced  = "timing_not_reproduced"
	CodeRerunMuchFaster      = "rerun_much_faster"
	CodeEnvironmentDiffers   = "environment_differs"
	CodeMetricMismatch       = "metric_mismatch" // a Verify.Reproduce metric differs
	CodeMetricMissing        = "metric_missing"  // ... or is absent on one side
	CodeWorkersNotSeen       = "workers_not_seen"
	CodeFreshSeedIgnored     = "fresh_seed_ignored"  // a fresh run logged another seed than it was given
	CodeFreshNotConverged    = "fresh_not_converged" // the claim's quality does not hold with fresh seeds
	timingNotReproducedWords = "timing not reproduced: no runner with the declared hardware"
)

// floatEps absorbs float formatting in the logs (0.1 printed and re-read)
// so a zero tolerance means "equal as logged", not "equal in every bit".
const floatEps = 1e-9

// Compare judges a claimed result (derived from the uploaded logs) against
// the portal's re-run of the same recipe (the measured result): the
// claim's own seeds, which must reproduce the claimed runs, and the runs
// with fresh seeds the portal drew (fresh.go), which are timed. Its rules,
// in the order a reader of a verdict needs them:
//
//  1. The re-runs of the claimed seeds are matched to the claimed runs by
//     RunMetrics.Index. A claimed run without a re-run,
//     a re-run without a claim, or a seed that differs is a discrepancy.
//  2. Per matched run, the evaluation curves are matched by epoch. An
//     accuracy that differs by more than bench.Verify.AccuracyTolerance (plus
//     1e-9 for float formatting) is a discrepancy, as is an epoch evaluated
//     in one curve only. With a tolerance above zero (non-deterministic
//     hardware) a curve may run longer or shorter than the other after the
//     shorter one stopped: a noisy run reaches the target an epoch sooner
//     or later, and rule 3 judges whether that matters.
//  3. Epochs to target and convergence: with zero tolerance they must be
//     equal. With a tolerance, a re-run that converges later than claimed
//     is a discrepancy only if its accuracy at the claimed epoch is more
//     than the tolerance short of the target; a claimed converged run whose
//     re-run missed the target by no more than the tolerance needs review
//     rather than being called a discrepancy. A re-run that does better than
//     claimed is never a discrepancy under a tolerance.
//  4. Final accuracy is compared directly only where a run has no
//     evaluation curve; otherwise the curve comparison already covers it.
//  5. Internal consistency of the claim, needing no hardware: evaluation
//     timestamps must not go backwards nor lie after run_stop, and a run
//     claimed converged must reach bench.Quality (Deep500 acceptable-metric
//     semantics) in its own curve.
//  6. Timing, only when sameHardware (timing.go; docs/timing.md says it
//     for a competitor): the claimed runs against the re-run's timed runs
//     (d5list.Result.TimedRuns) as two distributions, per unit of work,
//     with an allowance for a slower machine (Verify.TimingDrift), the
//     catalogue's precision and the noise the re-run measured. A claim
//     within it is verified whatever it says: the board ranks the
//     measurement. A verdict that rests on timing alone may wait for the
//     timed runs to be measured again (Remeasure).
//  7. Without sameHardware only rules 1-5 and 8 apply; if they pass the
//     verdict is needs_review with the reason timing_not_reproduced.
//  8. Every metric of bench.Verify.Reproduce (operator errors, which are
//     deterministic for a seed) must be equal in the claimed run and its
//     re-run: within bench.Verify.AccuracyTolerance plus a relative 1e-9
//     for float formatting. A relative margin, because an operator's error
//     is around 1e-15 and any absolute one would hide an edited value.
//  9. Operator shapes (Level 0): the claimed run must have measured the
//     shapes its re-run measured, which are the recipe's: a claim that
//     leaves out a slow shape would otherwise be faster by that shape's
//     time, which the timing tolerance can hide. The metrics of rule 8 are
//     then held to their re-run shape by shape, not only the worst shape's.
//
// The status is discrepancy if any compareFinding is one, otherwise needs_review
// if any compareFinding asks for review, otherwise verified. Reasons are sorted by
// run (submission-wide first), epoch, then code.
func Compare(bench *d5list.Benchmark, claimed, measured *d5list.Result, sameHardware bool) (d5list.Status, []d5list.Reason) {
	c := &comparison{bench: bench, tol: math.Max(bench.Verify.AccuracyTolerance, 0)}
	switch {
	case claimed == nil:
		c.review(d5list.Reason{Code: CodeNoClaim, Message: "the submission has no claimed result to compare with"})
		return c.verdict()
	case measured == nil:
		c.review(d5list.Reason{Code: CodeNoMeasurement, Message: "the re-run produced no result to compare with"})
		return c.verdict()
	}
	pairs := c.matchRuns(claimed.Runs, measured.ClaimedSeedRuns())
	c.judgeFresh(claimed, measured)
	c.judgeWindows(measured)
	c.judgeAudits(measured)
	for _, p := range pairs {
		c.claimConsistency(p.claimed)
		c.compareRun(p.claimed, p.measured)
		c.workersSeen(p.measured)
		if !c.compareShapes(p.claimed, p.measured) {
			c.compareReproduced(p.claimed, p.measured, nil)
		}
	}
	if c.discrepant {
		c.environmentNote(claimed.Runner, ranWith(measured))
	}
	if sameHardware {
		c.compareTiming(claimed.Runs, measured.TimedRuns())
	} else if !c.discrepant {
		c.review(d5list.Reason{Code: CodeTimingNotReproduced, Message: timingNotReproducedWords})
	}
	return c.verdict()
}

// workersSeen holds a competitor's data-parallel run to the workers its
// benchmark fixes: the runner counts the processes of the run's tree that
// computed for a quarter of its time, since a worker count the code logs
// is its own claim. Fewer goes to an organiser: a run on accelerators may
// compute little on its CPUs.
func (c *comparison) workersSeen(m *d5list.RunMetrics) {
	workers, ok := c.bench.FixedWorkers()
	if !ok || m.Clock == nil || !m.Clock.CompetitorLog || m.Clock.Processes == nil || *m.Clock.Processes >= workers {
		return
	}
	run := m.Index
	c.review(d5list.Reason{Code: CodeWorkersNotSeen, Run: &run, Message: fmt.Sprintf(
		"run %d: the runner saw %d processes computing for a quarter of the run or more; the benchmark fixes %d workers", m.Index, *m.Clock.Processes, workers)})
}

// environmentNote follows findings about the runs' values with what the
// claim's machine and the re-run's runner reported differently (a torch
// version, a CPU model), the first suspects of a result that does not
// reproduce.
func (c *comparison) environmentNote(claimed, measured map[string]string) {
	if len(measured) == 0 {
		return
	}
	if len(claimed) == 0 {
		c.reasons = append(c.reasons, d5list.Reason{Code: CodeEnvironmentDiffers,
			Message: "the claim does not say what its runs ran with (`d5list run` records it as submission.json's environment); the re-run's runner reported " + d5list.FormatLabels(measured)})
		return
	}
	differs := map[string]bool{}
	for k, v := range measured {
		if claimed[k] != v && !d5list.RunnerCapability(k) {
			differs[k] = true
		}
	}
	for k := range claimed {
		if _, ok := measured[k]; !ok {
			differs[k] = true
		}
	}
	if len(differs) == 0 {
		return
	}
	c.reasons = append(c.reasons, d5list.Reason{Code: CodeEnvironmentDiffers,
		Message: "what differs between where the claim ran and the re-run: the claim's " + d5list.FormatLabels(labelsOf(claimed, differs)) + "; the re-run's " + d5list.FormatLabels(labelsOf(measured, differs))})
}

// ranWith is what the re-run ran with: its runner's labels, where the
// runner recorded the versions inside the job's own sandbox
// (RunClock.Environment) with those in place of the framework.* labels it
// advertises, which describe its own python3 and not, say, an image's.
func ranWith(measured *d5list.Result) map[string]string {
	versions := measured.RecordedVersions()
	if len(versions) == 0 {
		return measured.Runner
	}
	labels := map[string]string{}
	for k, v := range measured.Runner {
		if !strings.HasPrefix(k, "framework.") {
			labels[k] = v
		}
	}
	for k, v := range versions {
		labels[k] = v
	}
	return labels
}

// labelsOf is labels restricted to keep, a missing one as "(none)".
func labelsOf(labels map[string]string, keep map[string]bool) map[string]string {
	out := make(map[string]string, len(keep))
	for k := range keep {
		v, ok := labels[k]
		if !ok {
			v = "(none)"
		}
		out[k] = v
	}
	return out
}

type comparison struct {
	bench      *d5list.Benchmark
	tol        float64
	reasons    []d5list.Reason
	discrepant bool
	needReview bool
	// shapesDiffer: rule 9 found the claimed shapes are not the re-run's.
	shapesDiffer bool
	// contended says, in words, how busy other work kept the runner while
	// the timed runs ran; "" where it left them the machine.
	contended string
}

type runPair struct{ claimed, measured *d5list.RunMetrics }

func (c *comparison) discrepancy(r d5list.Reason) {
	c.discrepant = true
	c.reasons = append(c.reasons, r)
}

func (c *comparison) review(r d5list.Reason) {
	c.needReview = true
	c.reasons = append(c.reasons, r)
}

// timingGap is a claimed time the re-run did not bear out, ratio of it
// where bound passes: a discrepancy, or a review where other work kept the
// runner busy while the timed runs ran (contended), since a neighbour on a
// sibling core slows a run by more than the drift allowance without making
// it wait for a CPU, and no honest entry may be called a cheat for its
// runner's load. Remeasure measures such a verdict again; one that stays
// under load goes to an organiser. A gap no load explains, one the claim
// would show against a re-run maxContentionSlowdown times faster, is a
// discrepancy however busy the runner was.
func (c *comparison) timingGap(r d5list.Reason, ratio, bound float64) {
	if c.contended == "" {
		c.discrepancy(r)
		return
	}
	r.Message += "; measured while " + c.contended
	if ratio*maxContentionSlowdown < bound-floatEps {
		r.Message += fmt.Sprintf(", at most %g times slower, less than this gap", maxContentionSlowdown)
		c.discrepancy(r)
		return
	}
	c.review(r)
}

func (c *comparison) verdict() (d5list.Status, []d5list.Reason) {
	sortCompareReasons(c.reasons)
	switch {
	case c.discrepant:
		return d5list.StatusDiscrepancy, c.reasons
	case c.needReview:
		return d5list.StatusNeedsReview, c.reasons
	}
	return d5list.StatusVerified, c.reasons
}

func sortCompareReasons(rs []d5list.Reason) {
	sort.SliceStable(rs, func(i, j int) bool {
		a, b := rs[i], rs[j]
		if ra, rb := reasonRunKey(a.Run), reasonRunKey(b.Run); ra != rb {
			return ra < rb
		}
		if ea, eb := reasonEpochKey(a.Epoch), reasonEpochKey(b.Epoch); ea != eb {
			return ea < eb
		}
		return a.Code < b.Code
	})
}

// Submission-wide findings (no run, no epoch) sort first.
func reasonRunKey(p *int) int {
	if p == nil {
		return math.MinInt
	}
	return *p
}

func reasonEpochKey(p *float64) float64 {
	if p == nil {
		return math.Inf(-1)
	}
	return *p
}

func cmpIntPtr(v int) *int           { return &v }
func cmpFloatPtr(v float64) *float64 { return &v }

// cmpNum prints a value in its shortest exact form, so that two values
// that differ never print the same: plain decimals, but an exponent for
// magnitudes below 1e-4 (operator errors near 1e-15 would otherwise be a
// row of zeros).
func cmpNum(v float64) string {
	if v != 0 && math.Abs(v) < 1e-4 {
		return strconv.FormatFloat(v, 'e', -1, 64)
	}
	return strconv.FormatFloat(v, 'f', -1, 64)
}

func (c *comparison) metricWords() string {
	switch c.bench.Quality.Metric {
	case "", "eval_accuracy":
		return "test accuracy"
	}
	return c.bench.Quality.Metric
}

func (c *comparison) matchRuns(claimed, measured []d5list.RunMetrics) []runPair {
	index := func(runs []d5list.RunMetrics, what string) map[int]*d5list.RunMetrics {
		m := make(map[int]*d5list.RunMetrics, len(runs))
		for i := range runs {
			r := &runs[i]
			if _, dup := m[r.Index]; dup {
				c.discrepancy(d5list.Reason{Code: CodeRunDuplicate, Run: cmpIntPtr(r.Index), File: r.File,
					Message: fmt.Sprintf("run %d appears more than once in the %s result", r.Index, what)})
				continue
			}
			m[r.Index] = r
		}
		return m
	}
	cm, mm := index(claimed, "claimed"), index(measured, "re-run")
	var pairs []runPair
	for idx, cr := range cm {
		mr, ok := mm[idx]
		if !ok {
			c.discrepancy(d5list.Reason{Code: CodeRunMissing, Run: cmpIntPtr(idx), File: cr.File,
				Message: fmt.Sprintf("run %d: the logs claim this run but the re-run has no run %d", idx, idx)})
			continue
		}
		if cr.Seed != mr.Seed {
			c.discrepancy(d5list.Reason{Code: CodeSeedMismatch, Run: cmpIntPtr(idx), File: cr.File,
				Claimed: cmpFloatPtr(float64(cr.Seed)), Measured: cmpFloatPtr(float64(mr.Seed)),
				Message: fmt.Sprintf("run %d: the log claims seed %d but the re-run used seed %d", idx, cr.Seed, mr.Seed)})
			continue
		}
		pairs = append(pairs, runPair{cr, mr})
	}
	for idx := range mm {
		if _, ok := cm[idx]; !ok {
			c.discrepancy(d5list.Reason{Code: CodeRunExtra, Run: cmpIntPtr(idx),
				Message: fmt.Sprintf("run %d: the re-run produced run %d but the logs claim no such run", idx, idx)})
		}
	}
	sort.Slice(pairs, func(i, j int) bool { return pairs[i].claimed.Index < pairs[j].claimed.Index })
	return pairs
}

// evalKey identifies an evaluation by its epoch (rounded, so 0.1+0.2 and
// 0.3 meet) and by occurrence, for logs that evaluate one epoch twice.
type evalKey struct {
	epoch int64
	nth   int
}

func keyedEvals(evals []d5list.EvalPoint) ([]evalKey, map[evalKey]d5list.EvalPoint) {
	keys := make([]evalKey, 0, len(evals))
	m := make(map[evalKey]d5list.EvalPoint, len(evals))
	seen := map[int64]int{}
	for _, e := range evals {
		k := evalKey{epoch: int64(math.Round(e.Epoch * 1e6))}
		k.nth = seen[k.epoch]
		seen[k.epoch]++
		keys = append(keys, k)
		m[k] = e
	}
	return keys, m
}

func (c *comparison) differs(a, b float64) bool { return math.Abs(a-b) > c.tol+floatEps }

func (c *comparison) compareRun(cr, mr *d5list.RunMetrics) {
	idx := cr.Index
	ckeys, cev := keyedEvals(cr.Evals)
	mkeys, mev := keyedEvals(mr.Evals)
	lastEpoch := func(evals []d5list.EvalPoint) float64 {
		if len(evals) == 0 {
			return math.Inf(-1)
		}
		return evals[len(evals)-1].Epoch
	}
	// Under a tolerance a run may stop sooner or later than its claim (it
	// reached the target earlier or later, or not at all); whether that
	// matters is judged by compareTarget, not by the missing epochs.
	shorterStop := math.Min(lastEpoch(cr.Evals), lastEpoch(mr.Evals))
	lengthNoise := c.tol > 0
	for _, k := range ckeys {
		ce := cev[k]
		me, ok := mev[k]
		if !ok {
			if lengthNoise && ce.Epoch > shorterStop {
				continue
			}
			c.discrepancy(d5list.Reason{Code: CodeEpochMissing, Run: cmpIntPtr(idx), Epoch: cmpFloatPtr(ce.Epoch), File: cr.File,
				Claimed: cmpFloatPtr(ce.Accuracy),
				Message: fmt.Sprintf("run %d, epoch %s: the log claims an evaluation (%s %s) that the re-run did not produce", idx, cmpNum(ce.Epoch), c.metricWords(), cmpNum(ce.Accuracy))})
			continue
		}
		if c.differs(ce.Accuracy, me.Accuracy) {
			c.discrepancy(d5list.Reason{Code: CodeAccuracyMismatch, Run: cmpIntPtr(idx), Epoch: cmpFloatPtr(ce.Epoch), File: cr.File,
				Claimed: cmpFloatPtr(ce.Accuracy), Measured: cmpFloatPtr(me.Accuracy),
				Message: fmt.Sprintf("run %d, epoch %s: the log claims %s %s but the re-run measured %s%s", idx, cmpNum(ce.Epoch), c.metricWords(), cmpNum(ce.Accuracy), cmpNum(me.Accuracy), c.tolWords())})
		}
	}
	for _, k := range mkeys {
		if _, ok := cev[k]; ok {
			continue
		}
		me := mev[k]
		if lengthNoise && me.Epoch > shorterStop {
			continue
		}
		c.discrepancy(d5list.Reason{Code: CodeEpochExtra, Run: cmpIntPtr(idx), Epoch: cmpFloatPtr(me.Epoch), File: cr.File,
			Measured: cmpFloatPtr(me.Accuracy),
			Message:  fmt.Sprintf("run %d, epoch %s: the re-run evaluated this epoch (%s %s) but the log has no evaluation there", idx, cmpNum(me.Epoch), c.metricWords(), cmpNum(me.Accuracy))})
	}
	if len(cr.Evals) == 0 || len(mr.Evals) == 0 {
		if c.differs(cr.FinalAccuracy, mr.FinalAccuracy) {
			c.discrepancy(d5list.Reason{Code: CodeFinalAccuracy, Run: cmpIntPtr(idx), File: cr.File,
				Claimed: cmpFloatPtr(cr.FinalAccuracy), Measured: cmpFloatPtr(mr.FinalAccuracy),
				Message: fmt.Sprintf("run %d: the log claims final %s %s but the re-run measured %s%s", idx, c.metricWords(), cmpNum(cr.FinalAccuracy), cmpNum(mr.FinalAccuracy), c.tolWords())})
		}
	}
	c.compareTarget(cr, mr, mev)
}

func (c *comparison) tolWords() string {
	if c.tol > 0 {
		return fmt.Sprintf(" (tolerance %s)", cmpNum(c.tol))
	}
	return ""
}

func cmpEpochsWords(e float64) string {
	if e < 0 {
		return "never"
	}
	return "at epoch " + cmpNum(e)
}

func (c *comparison) compareTarget(cr, mr *d5list.RunMetrics, mev map[evalKey]d5list.EvalPoint) {
	idx := cr.Index
	q := c.bench.Quality
	target := fmt.Sprintf("%s %s", c.metricWords(), cmpNum(q.Target))
	if c.tol == 0 {
		if cr.Converged != mr.Converged {
			words := func(ok bool) string { return cmpConvergedWords(ok, target) }
			if q.Metric == "" && q.Target == 0 {
				// No quality target (inference): a run counts when it ends.
				words = func(ok bool) string {
					if ok {
						return "ended with run_stop status success"
					}
					return "did not end with run_stop status success"
				}
			}
			c.discrepancy(d5list.Reason{Code: CodeConvergenceMismatch, Run: cmpIntPtr(idx), File: cr.File,
				Message: fmt.Sprintf("run %d: the log claims the run %s but the re-run %s", idx, words(cr.Converged), words(mr.Converged))})
		}
		if math.Abs(cr.EpochsToTarget-mr.EpochsToTarget) > floatEps {
			c.discrepancy(d5list.Reason{Code: CodeEpochsToTarget, Run: cmpIntPtr(idx), File: cr.File,
				Claimed: cmpFloatPtr(cr.EpochsToTarget), Measured: cmpFloatPtr(mr.EpochsToTarget),
				Message: fmt.Sprintf("run %d: the log reaches %s %s but the re-run %s", idx, target, cmpEpochsWords(cr.EpochsToTarget), cmpEpochsWords(mr.EpochsToTarget))})
		}
		return
	}
	if cr.Converged && !mr.Converged {
		if len(mr.Evals) > 0 && q.Reached(mr.BestAccuracy+c.signedTol()) {
			c.review(d5list.Reason{Code: CodeConvergenceBorder, Run: cmpIntPtr(idx), File: cr.File,
				Claimed: cmpFloatPtr(cr.BestAccuracy), Measured: cmpFloatPtr(mr.BestAccuracy),
				Message: fmt.Sprintf("run %d: the log claims the run reached %s; the re-run's best was %s, short of the target but within the tolerance %s", idx, target, cmpNum(mr.BestAccuracy), cmpNum(c.tol))})
		} else {
			c.discrepancy(d5list.Reason{Code: CodeConvergenceMismatch, Run: cmpIntPtr(idx), File: cr.File,
				Claimed: cmpFloatPtr(cr.BestAccuracy), Measured: cmpFloatPtr(mr.BestAccuracy),
				Message: fmt.Sprintf("run %d: the log claims the run reached %s but the re-run's best was %s, more than the tolerance %s short", idx, target, cmpNum(mr.BestAccuracy), cmpNum(c.tol))})
		}
		return
	}
	if cr.Converged && mr.Converged && cr.EpochsToTarget >= 0 && mr.EpochsToTarget > cr.EpochsToTarget+floatEps {
		// The re-run needed longer; the claim stands if, at the claimed
		// epoch, the re-run was within the tolerance of the target.
		at, ok := mev[evalKey{epoch: int64(math.Round(cr.EpochsToTarget * 1e6))}]
		if !ok || !q.Reached(at.Accuracy+c.signedTol()) {
			c.discrepancy(d5list.Reason{Code: CodeEpochsToTarget, Run: cmpIntPtr(idx), Epoch: cmpFloatPtr(cr.EpochsToTarget), File: cr.File,
				Claimed: cmpFloatPtr(cr.EpochsToTarget), Measured: cmpFloatPtr(mr.EpochsToTarget),
				Message: fmt.Sprintf("run %d: the log reaches %s at epoch %s but the re-run only at epoch %s, beyond the tolerance %s", idx, target, cmpNum(cr.EpochsToTarget), cmpNum(mr.EpochsToTarget), cmpNum(c.tol))})
		}
	}
}

// signedTol moves a value toward the target by the tolerance.
func (c *comparison) signedTol() float64 {
	if c.bench.Quality.Direction == d5list.LowerIsBetter {
		return -c.tol - floatEps
	}
	return c.tol + floatEps
}

func cmpConvergedWords(ok bool, target string) string {
	if ok {
		return "reached " + target
	}
	return "did not reach " + target
}

// claimConsistency checks what a claim must satisfy on its own.
func (c *comparison) claimConsistency(r *d5list.RunMetrics) {
	idx := r.Index
	prev := math.Inf(-1)
	for _, e := range r.Evals {
		if e.Seconds < prev-floatEps {
			c.discrepancy(d5list.Reason{Code: CodeEvalTimeOrder, Run: cmpIntPtr(idx), Epoch: cmpFloatPtr(e.Epoch), File: r.File,
				Claimed: cmpFloatPtr(e.Seconds),
				Message: fmt.Sprintf("run %d, epoch %s: the evaluation is logged at %s s, before the previous one (%s s)", idx, cmpNum(e.Epoch), cmpNum(cmpRound3(e.Seconds)), cmpNum(cmpRound3(prev)))})
		}
		prev = math.Max(prev, e.Seconds)
		if r.TimeToTrain > 0 && e.Seconds > r.TimeToTrain+1e-3 {
			c.discrepancy(d5list.Reason{Code: CodeEvalAfterStop, Run: cmpIntPtr(idx), Epoch: cmpFloatPtr(e.Epoch), File: r.File,
				Claimed: cmpFloatPtr(e.Seconds),
				Message: fmt.Sprintf("run %d, epoch %s: the evaluation is logged %s s after run_start, after run_stop at %s s", idx, cmpNum(e.Epoch), cmpNum(cmpRound3(e.Seconds)), cmpNum(cmpRound3(r.TimeToTrain)))})
		}
	}
	q := c.bench.Quality
	if !r.Converged || len(r.Evals) == 0 || (q.Metric == "" && q.Target == 0) {
		return
	}
	reached := false
	if q.Mode == "final" {
		reached = q.Reached(r.Evals[len(r.Evals)-1].Accuracy)
	} else {
		for _, e := range r.Evals {
			reached = reached || q.Reached(e.Accuracy)
		}
	}
	if !reached {
		c.discrepancy(d5list.Reason{Code: CodeClaimTargetNotMet, Run: cmpIntPtr(idx), File: r.File,
			Message: fmt.Sprintf("run %d: the run is claimed converged but none of its evaluations reaches %s %s", idx, c.metricWords(), cmpNum(q.Target))})
	}
}

func cmpRound3(v float64) float64 { return math.Round(v*1000) / 1000 }
