package verifier

import (
	"fmt"
	"math"
	"os"
	"slices"
	"sort"
	"strings"

	"github.com/deep500/d5list/stats"
)

// MLPerf's RCP checker (mlcommons/logging rcp_checker.py), as the package
// checker runs it on a closed-division benchmark folder: each run's
// convergence point read from its log, the reference convergence points
// (RCPs) of the round pruned to the fastest-converging envelope, and the
// submission's olympic mean of convergence points compared with the
// reference at its batch size, interpolated between two references, or
// refused where the round has none.

const (
	rcpAlpha     = 0.05
	rcpTolerance = 0.0001
	// rcpNotConverged is the convergence point of a run that did not end
	// with run_stop status success: MLPerf's "infinite".
	rcpNotConverged = 1e9

	RCPFound        = "RCP found"
	RCPInterpolated = "RCP Interpolation"
	RCPSlower       = "RCP not found but slower convergence on smaller batch size"
	RCPNone         = "Cannot find any RCPs"
	RCPNoBatchSize  = "Could not detect global_batch_size"
	RCPInsufficient = "Insufficient convergence"
	rcpBypassed     = " passed using rcp_bypass"
)

func rcpMissing(bs any) string { return "Missing RCP, please submit RCP with BS = " + pyStr(bs) }

// MLPerfRCP is the RCP checker's verdict on a folder: Message is its own
// words ("RCP found", "Missing RCP, please submit RCP with BS = 28", ...).
type MLPerfRCP struct {
	Passed  bool   `json:"passed"`
	Message string `json:"message"`
	// The reference the submission was compared with (when one was): its
	// batch size, mean convergence point and the smallest mean it accepts.
	ReferenceBS       float64  `json:"reference_batch_size,omitempty"`
	ReferenceMean     float64  `json:"reference_mean,omitempty"`
	MinAcceptableMean float64  `json:"min_acceptable_mean,omitempty"`
	SubmissionMean    *float64 `json:"submission_mean,omitempty"`
	// Points are the runs' convergence points (epochs or samples), 1e9
	// for a run that did not converge.
	Points []float64 `json:"points"`
	// Scaling is the normalisation the checker writes to scaling.json
	// (1: none) when it compared the submission with a reference.
	Scaling    float64 `json:"scaling"`
	compared   bool
	stop       string
	bypassable bool
}

// rcpRecord is one reference: its mean (olympic), standard deviation and
// the smallest submission mean the t-test accepts.
type rcpRecord struct {
	name       string
	bs         float64
	mean       float64
	stdev      float64
	minEpochs  float64
	maxSpeedup float64
}

type rcpReference struct {
	records []rcpRecord
	pruned  []rcpRecord
}

// reference computes the records' statistics and prunes them once.
func (rc *rcpRules) reference(trim int) *rcpReference {
	rc.once.Do(func() {
		ref := &rcpReference{}
		for _, r := range rc.Refs {
			eps := slices.Clone(r.Epochs)
			sort.Float64s(eps)
			mean := stats.Mean(eps[trim : len(eps)-trim])
			sd := populationStdDev(eps)
			if rc.trimmedStdev {
				sd = populationStdDev(eps[trim : len(eps)-trim])
			}
			min := rc.minAcceptableMean(mean, sd, len(eps)-2*trim)
			ref.records = append(ref.records, rcpRecord{name: r.Name, bs: float64(r.BS), mean: mean, stdev: sd, minEpochs: min, maxSpeedup: mean / min})
		}
		sort.SliceStable(ref.records, func(i, j int) bool { return ref.records[i].bs < ref.records[j].bs })
		ref.pruned = rc.prune(ref.records)
		if rc.unpruned {
			ref.pruned = ref.records
		}
		rc.ref = ref
	})
	return rc.ref
}

// prune keeps the references on the fastest-converging envelope: none
// with a smaller batch size than the fastest one, and none converging
// slower than the interpolation of its neighbours.
func (rc *rcpRules) prune(records []rcpRecord) []rcpRecord {
	if len(records) == 0 {
		return nil
	}
	// speed is what the envelope is drawn on: a reference's mean, or
	// where the release pruned so, its smallest acceptable mean (of an
	// interpolated reference: from its interpolated mean and deviation).
	speed := func(r rcpRecord) float64 { return r.mean }
	speedBetween := func(bs float64, lo, hi rcpRecord) float64 { return interp(bs, lo.bs, hi.bs, lo.mean, hi.mean) }
	if rc.pruneByMinEpochs {
		speed = func(r rcpRecord) float64 { return r.minEpochs }
		speedBetween = func(bs float64, lo, hi rcpRecord) float64 {
			return rc.minAcceptableMean(interp(bs, lo.bs, hi.bs, lo.mean, hi.mean), interp(bs, lo.bs, hi.bs, lo.stdev, hi.stdev), rc.Runs*2)
		}
	}
	fastest := records[0]
	for _, r := range records {
		if speed(r) < speed(fastest) {
			fastest = r
		}
	}
	var env []rcpRecord
	for _, r := range records {
		if r.bs >= fastest.bs {
			env = append(env, r)
		}
	}
	for i := 1; i < len(env)-1; i++ {
		if speed(env[i]) > speedBetween(env[i].bs, env[i-1], env[i+1]) {
			env = slices.Delete(env, i, i+1)
			i--
		}
	}
	var out []rcpRecord
	for _, r := range records {
		if slices.ContainsFunc(env, func(e rcpRecord) bool { return e.bs == r.bs }) {
			out = append(out, r)
		}
	}
	return out
}

// interp is numpy's interp between two points.
func interp(x, x0, x1, y0, y1 float64) float64 {
	slope := (y1 - y0) / (x1 - x0)
	return slope*(x-x0) + y0
}

// minAcceptableMean is the checker's bisection for the smallest mean a
// submission of rc.Runs runs (less the two dropped) may have before a
// one-sided pooled t-test at alpha 0.05 says it converges faster than
// the reference.
func (rc *rcpRules) minAcceptableMean(mean, sd float64, refSamples int) float64 {
	if sd == 0 {
		return mean
	}
	subm := rc.Runs - 2
	lo, hi := 0.0, mean
	mid := (lo + hi) / 2
	for hi-lo > rcpTolerance {
		if rcpPValue(mid, sd, refSamples, mean, sd, subm) > rcpAlpha {
			hi = mid
		} else {
			lo = mid
		}
		mid = (lo + hi) / 2
	}
	return mid
}

// rcpPValue is scipy's ttest_ind_from_stats with equal variances, made
// one-sided as the checker makes it: the probability of a t this low.
func rcpPValue(m1, s1 float64, n1 int, m2, s2 float64, n2 int) float64 {
	df := float64(n1 + n2 - 2)
	pooled := (float64(n1-1)*s1*s1 + float64(n2-1)*s2*s2) / df
	t := (m1 - m2) / math.Sqrt(pooled*(1/float64(n1)+1/float64(n2)))
	return stats.StudentTCDF(t, df)
}

func populationStdDev(xs []float64) float64 {
	m := stats.Mean(xs)
	ss := 0.0
	for _, x := range xs {
		ss += (x - m) * (x - m)
	}
	return math.Sqrt(ss / float64(len(xs)))
}

// rcpRun is what the RCP checker reads of one result file.
type rcpRun struct {
	converged bool
	point     float64
	bs        any // -1 when the file logs none
	benchmark any // nil when the file logs none
	stop      string
	// listed is the file's place in its folder as the file system lists
	// it (Python's glob keeps that order).
	listed int
}

// readRCPRun reads a run's convergence point as the checker's own reader
// does: the last global_batch_size and submission_benchmark logged, and
// at a run_stop with status success the convergence point of the
// evaluations before it (the checker's measure for the benchmark the file
// names). Where the checker's reader would stop with an exception (an
// evaluation without the field it reads), stop says so.
func (r *MLPerfRound) readRCPRun(lines []ruleLine) rcpRun {
	run := rcpRun{point: rcpNotConverged, bs: int64(-1)}
	var last any
	lastSet := false
	var steps []any
	passing := map[string]map[string]any{}
	for i := range lines {
		ln := &lines[i]
		if strings.Contains(ln.Key, "global_batch_size") {
			run.bs = ln.Value
		}
		if strings.Contains(ln.Key, "submission_benchmark") {
			run.benchmark = ln.Value
		}
		var conv struct {
			LastEval, FirstPassing string
			Passing                *ruleExpr
		}
		if b, ok := run.benchmark.(string); ok {
			if rules := r.Benchmarks[b].RCP; rules != nil {
				conv.LastEval, conv.FirstPassing, conv.Passing = rules.Converge.LastEval, rules.Converge.FirstPassing, rules.Converge.Passing
			}
		}
		isEval := strings.Contains(ln.Key, "eval_error") || strings.Contains(ln.Key, "eval_accuracy")
		switch {
		case isEval && conv.FirstPassing != "":
			step, ok1 := ln.Meta[conv.FirstPassing]
			metric, ok2 := ln.Meta["metric"]
			if !ok1 || !ok2 {
				run.stop = fmt.Sprintf("line %d: %s has no metadata %s and metric, which MLCommons' RCP checker reads", ln.Line, ln.Key, conv.FirstPassing)
				return run
			}
			k := pyRepr(step)
			if passing[k] == nil {
				passing[k] = map[string]any{}
				steps = append(steps, step)
			}
			passing[k][pyStr(metric)] = ln.Value
		case isEval:
			field := conv.LastEval
			if field == "" {
				field = "epoch_num"
			}
			v, ok := ln.Meta[field]
			if !ok {
				run.stop = fmt.Sprintf("line %d: %s has no metadata %s, which MLCommons' RCP checker reads", ln.Line, ln.Key, field)
				return run
			}
			if f, isNum := pyFloat(v); isNum && field == "epoch_num" {
				v = math.Round(f*1000) / 1000
			}
			last, lastSet = v, true
		}
		if ln.Key != "run_stop" {
			continue
		}
		status, ok := ln.Meta["status"]
		if !ok {
			run.stop = fmt.Sprintf("line %d: run_stop has no metadata status, which MLCommons' RCP checker reads", ln.Line)
			return run
		}
		if status != "success" {
			run.converged, run.point = false, rcpNotConverged
			continue
		}
		if conv.FirstPassing != "" {
			var best any
			for _, step := range steps {
				env := &ruleEnv{line: &ruleLine{Value: passing[pyRepr(step)]}, state: map[string]any{}}
				ok, err := conv.Passing.holds(env)
				if err != nil {
					run.stop = fmt.Sprintf("line %d: MLCommons' RCP checker cannot judge the evaluation at %s %s: %v", ln.Line, conv.FirstPassing, pyRepr(step), err)
					return run
				}
				if c, _ := pyOrder(step, best); ok && (best == nil || c < 0) {
					best = step
				}
			}
			if best == nil {
				run.stop = fmt.Sprintf("line %d: no evaluation meets %s, which MLCommons' RCP checker needs of a successful run", ln.Line, conv.Passing)
				return run
			}
			last, lastSet = best, true
		}
		if !lastSet {
			run.stop = fmt.Sprintf("line %d: a successful run_stop with no evaluation before it, which MLCommons' RCP checker cannot read", ln.Line)
			return run
		}
		f, isNum := pyFloat(last)
		if !isNum {
			run.stop = fmt.Sprintf("line %d: the convergence point %s is not a number", ln.Line, pyRepr(last))
			return run
		}
		run.converged, run.point = true, f
	}
	return run
}

// checkRCP is the RCP checker on a folder's runs (in the order they were
// read) for a round; bypass is package_checker_params' rcp-bypass.
func (r *MLPerfRound) checkRCP(runs []rcpRun, bypass bool) MLPerfRCP {
	res := MLPerfRCP{Scaling: 1, Points: []float64{}}
	var bs, benchmark any = int64(-1), nil
	notConverged := 0
	// Today's reader stops at the first file whose batch size or benchmark
	// differs from the first file's, the batch size compared first.
	bsMismatch, benchMismatch := "", ""
	bsAt, benchAt := len(runs), len(runs)
	for i, run := range runs {
		if run.stop != "" {
			res.stop = run.stop
			return res
		}
		res.Points = append(res.Points, run.point)
		if !run.converged {
			notConverged++
		}
		switch {
		case bsMismatch != "":
		case pyEqual(bs, int64(-1)):
			bs = run.bs
		case !pyEqual(run.bs, bs):
			bsMismatch, bsAt = fmt.Sprintf("the files log different global batch sizes (%s and %s)", pyRepr(bs), pyRepr(run.bs)), i
		}
		switch {
		case benchMismatch != "":
		case benchmark == nil:
			benchmark = run.benchmark
		case !pyEqual(run.benchmark, benchmark):
			benchMismatch, benchAt = fmt.Sprintf("the files name different benchmarks (%s and %s)", pyRepr(benchmark), pyRepr(run.benchmark)), i
		}
	}
	mismatch := bsMismatch
	if benchAt < bsAt {
		mismatch = benchMismatch
	}
	name, _ := benchmark.(string)
	bench, known := r.Benchmarks[name]
	if known && bench.RCP != nil && bench.RCP.lastListedBatchSize {
		// The release's reader kept the batch size of the last file glob
		// listed that logs one, and compared none.
		bs, mismatch = int64(-1), benchMismatch
		last := -1
		for _, run := range runs {
			if !pyEqual(run.bs, int64(-1)) && run.listed > last {
				bs, last = run.bs, run.listed
			}
		}
	}
	switch {
	case mismatch != "":
		res.stop = "MLCommons' RCP checker stops: " + mismatch
		return res
	case !known || bench.RCP == nil:
		res.stop = fmt.Sprintf("MLCommons' RCP checker stops: MLPerf Training %s has no reference convergence points for %s", r.Round, pyRepr(benchmark))
		return res
	case bench.RCP.Runs == 0:
		res.stop = fmt.Sprintf("MLCommons' RCP checker stops: its table of run counts has no %s (KeyError)", name)
		return res
	}
	rc := bench.RCP
	if pyEqual(bs, int64(-1)) {
		res.Message = RCPNoBatchSize
		return res
	}
	if notConverged > bench.MaxFailed {
		res.Message = RCPInsufficient
		return res
	}
	b, ok := pyFloat(bs)
	if !ok {
		res.stop = fmt.Sprintf("MLCommons' RCP checker stops: global_batch_size %s is not a number", pyRepr(bs))
		return res
	}
	ref := rc.reference(bench.MaxFailed)
	var record *rcpRecord
	var below, above *rcpRecord
	for i := range ref.pruned {
		p := &ref.pruned[i]
		switch {
		case p.bs == b && record == nil:
			record = p
		case p.bs < b && (below == nil || p.bs > below.bs):
			below = p
		case p.bs > b && (above == nil || p.bs < above.bs):
			above = p
		}
	}
	res.bypassable = true
	switch {
	case record != nil:
		res.Message = RCPFound
		res.Passed = rc.compare(&res, *record, bench.MaxFailed)
	case below != nil && above != nil:
		res.Message = RCPInterpolated
		mean := interp(b, below.bs, above.bs, below.mean, above.mean)
		sd := interp(b, below.bs, above.bs, below.stdev, above.stdev)
		min := rc.minAcceptableMean(mean, sd, rc.Runs*2)
		res.Passed = rc.compare(&res, rcpRecord{name: fmt.Sprintf("%s_interp_%s", name, pyStr(bs)), bs: b, mean: mean, stdev: sd, minEpochs: min, maxSpeedup: mean / min}, bench.MaxFailed)
	case below != nil:
		res.Message = rcpMissing(bs)
	case above != nil:
		smallest := ref.pruned[0]
		res.Passed = rc.compare(&res, smallest, bench.MaxFailed)
		res.Message = RCPSlower
		if !res.Passed {
			res.Message = rcpMissing(bs)
		}
	default:
		res.Message = RCPNone
		res.bypassable = false
	}
	if bypass && !res.Passed && res.bypassable {
		res.Message += rcpBypassed
		res.Passed = true
	}
	return res
}

// compare is the checker's evaluation of a submission against a
// reference: the olympic mean of the runs' points (as many dropped at
// each end as may fail) at or above the smallest acceptable mean, and
// the score's normalisation where it converges faster than the
// reference within that range.
func (rc *rcpRules) compare(res *MLPerfRCP, rec rcpRecord, trim int) bool {
	points := slices.Clone(res.Points)
	sort.Float64s(points)
	kept := []float64{}
	if len(points) > 2*trim {
		kept = points[trim : len(points)-trim]
	}
	mean := math.NaN()
	if len(kept) > 0 {
		mean = stats.Mean(kept)
	}
	if rc.SpeedupOffset != 0 {
		rec.maxSpeedup = rec.mean / (rec.minEpochs - rc.SpeedupOffset)
	}
	res.compared = true
	res.ReferenceBS, res.ReferenceMean = rec.bs, rec.mean
	res.MinAcceptableMean = rec.mean / rec.maxSpeedup
	res.SubmissionMean = &mean
	if math.IsNaN(mean) {
		res.SubmissionMean = nil
	}
	pass := mean >= res.MinAcceptableMean
	if pass && mean < rec.mean {
		res.Scaling = rec.mean / mean
	}
	return pass
}

// readRCPRuns reads each of a folder's logs as the RCP checker does, with
// its place in the folder's listing.
func (r *MLPerfRound) readRCPRuns(dir string, logs []*mlperfLog) []rcpRun {
	runs := make([]rcpRun, len(logs))
	listed := listingOrder(dir)
	for i, log := range logs {
		runs[i] = r.readRCPRun(log.lines)
		runs[i].listed = i
		if at, ok := listed[log.name]; ok {
			runs[i].listed = at
		}
	}
	return runs
}

// listingOrder is each file's place in dir as the file system lists it
// (getdents, unsorted), the order Python's glob gives MLCommons' tools;
// nil where dir cannot be listed.
func listingOrder(dir string) map[string]int {
	d, err := os.Open(dir)
	if err != nil {
		return nil
	}
	defer d.Close()
	names, _ := d.Readdirnames(-1)
	at := make(map[string]int, len(names))
	for i, n := range names {
		at[n] = i
	}
	return at
}
