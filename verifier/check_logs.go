package verifier

import (
	"bytes"
	"errors"
	"fmt"
	"math"
	"path"
	"sort"
	"strings"

	d5list "github.com/deep500/d5list"
	"github.com/deep500/d5list/bundle"
	"github.com/deep500/d5list/mllog"
)

// logs checks the result files one by one, then across runs, and derives
// each run's metrics.
func (c *checker) logs() []d5list.RunMetrics {
	results := append([]bundle.ResultFile(nil), c.b.Results...)
	sort.SliceStable(results, func(i, j int) bool { return results[i].Index < results[j].Index })
	want := c.bench.Runs
	if len(results) != want {
		c.addf(CodeRunCount, "results/", 0, nil, "the benchmark needs exactly %d runs; the bundle has %d result files", want, len(results))
	}
	if len(results) > 0 {
		base := results[0].Index
		if base != 0 && base != 1 {
			base = 0
		}
		for i, r := range results {
			if r.Index != base+i {
				c.addf(CodeRunIndex, r.Name, 0, nil, "result files must be numbered %d..%d without gaps or repeats; found index %d at position %d", base, base+len(results)-1, r.Index, i+1)
				break
			}
		}
	}
	runs := make([]d5list.RunMetrics, 0, len(results))
	for _, r := range results {
		if tooMuch := readTooMuch(c.events, c.decoded); tooMuch != "" {
			idx := r.Index
			c.addf(CodeTooManyEvents, r.Name, 0, &idx, "not read: the logs before it hold %s together", tooMuch)
			c.logs_ = append(c.logs_, runLog{file: r.Name, index: r.Index})
			runs = append(runs, d5list.RunMetrics{Index: r.Index, File: r.Name, EpochsToTarget: -1, Evals: []d5list.EvalPoint{}})
			continue
		}
		runs = append(runs, c.logFile(r))
	}
	c.crossRun(runs)
	c.sameShapes()
	return runs
}

func (c *checker) logFile(rf bundle.ResultFile) d5list.RunMetrics {
	file, idx := rf.Name, rf.Index
	run := &idx
	placeholder := d5list.RunMetrics{Index: idx, File: file, EpochsToTarget: -1, Evals: []d5list.EvalPoint{}}
	events, err := mllog.Parse(bytes.NewReader(rf.Data), file)
	c.events += len(events)
	c.decoded += mllog.DecodedBytes(events)
	if err != nil {
		var de *d5list.Error
		if errors.As(err, &de) && len(de.Reasons) > 0 {
			for _, r := range de.Reasons {
				r.Run = run
				c.add(r)
			}
		} else {
			c.addf(mllog.CodeSyntax, file, 0, run, "cannot read the log: %v", err)
		}
		c.logs_ = append(c.logs_, runLog{file: file, index: idx})
		return placeholder
	}
	lg := runLog{file: file, index: idx, events: events, parsed: true}
	if len(events) > 0 {
		lg.lastLine = events[len(events)-1].Line
	}
	if len(events) == 0 {
		c.addf(mllog.CodeMissingRunStart, file, 1, run, "the file holds no :::MLLOG lines")
		c.logs_ = append(c.logs_, lg)
		return placeholder
	}
	m, rs := mllog.Derive(events, c.bench.Quality, file, idx)
	c.reasons = append(c.reasons, rs...)

	metric := c.bench.Quality.Metric
	if metric == "" {
		metric = mllog.KeyEvalAccuracy
	}
	var (
		starts, stops   int
		maxTime         int64 = math.MinInt64
		timeReported    bool
		benchKeySeen    bool
		gbsSeen         bool
		lastEpoch       = math.Inf(-1)
		lastEpochLine   int
		inRun, afterRun bool
		inRunKeys       = map[string]bool{}
		ops             = newOpShapes()
	)
	for i := range events {
		e := &events[i]
		if e.TimeMS < maxTime && !timeReported {
			c.addf(CodeTimeBackwards, file, e.Line, run, "time_ms %d is earlier than %d logged before it; timestamps must not decrease", e.TimeMS, maxTime)
			timeReported = true
		}
		maxTime = max(maxTime, e.TimeMS)
		switch e.Key {
		case mllog.KeyRunStart:
			starts++
			if starts == 1 {
				lg.startLine = e.Line
				inRun = true
			} else {
				c.addf(CodeDuplicateRunStart, file, e.Line, run, "second run_start (the first is on line %d); a log holds exactly one run", lg.startLine)
			}
		case mllog.KeyRunStop:
			stops++
			if stops == 1 {
				lg.stopLine = e.Line
				inRun, afterRun = false, true
			} else {
				c.addf(CodeDuplicateRunStop, file, e.Line, run, "second run_stop (the first is on line %d); a log holds exactly one run", lg.stopLine)
			}
		case mllog.KeySeed:
			if s, ok := mllog.Int(e.Value); ok {
				lg.seeds = append(lg.seeds, seedAt{s, e.Line})
			}
		case mllog.KeySubmissionBenchmark:
			benchKeySeen = true
			if v, _ := e.Value.(string); v != c.bench.ID {
				c.addf(CodeWrongBenchmarkKey, file, e.Line, run, "submission_benchmark is %s but the submission is for %q", show(e.Value), c.bench.ID)
			}
		case mllog.KeyGlobalBatchSize:
			gbsSeen = true
		}
		if inRun || (afterRun && mllog.IsOffClockMetric(e.Key)) {
			inRunKeys[e.Key] = true
			if c.bench.Level == 0 && mllog.IsShapeMetric(e.Key) {
				ops.add(c, file, run, e)
			}
		}
		if e.Key == mllog.KeyEvalAccuracy {
			if v, ok := mllog.Float(e.Value); ok && (v < 0 || v > 1) {
				c.addf(CodeEvalOutOfRange, file, e.Line, run, "eval_accuracy %v is outside [0, 1]", v)
			}
		}
		if e.Key == metric && inRun && !afterRun {
			ep, ok := mllog.Float(e.Meta("epoch_num"))
			if !ok {
				ep, ok = mllog.Float(e.Meta("samples_count"))
			}
			if ok {
				if ep <= lastEpoch {
					c.addf(CodeEvalEpochOrder, file, e.Line, run, "%s at epoch %v does not come after the evaluation at epoch %v (line %d)", metric, ep, lastEpoch, lastEpochLine)
				}
				lastEpoch, lastEpochLine = ep, e.Line
			}
		}
	}
	if len(lg.seeds) == 0 {
		c.addf(CodeMissingSeed, file, lg.lastLine, run, "no integer seed is logged (read to line %d); every run logs its seed", lg.lastLine)
	}
	if !benchKeySeen {
		c.addf(CodeMissingBenchmarkKey, file, lg.lastLine, run, "no submission_benchmark event (read to line %d); it must name %q", lg.lastLine, c.bench.ID)
	}
	if c.bench.Level >= 2 && !gbsSeen {
		c.addf(CodeMissingBatchSize, file, lg.lastLine, run, "no global_batch_size event (read to line %d); training benchmarks log it", lg.lastLine)
	}
	if c.bench.Level <= 1 && lg.startLine > 0 && lg.stopLine > 0 {
		for _, k := range LoggedMetrics(c.bench) {
			if !inRunKeys[k] {
				c.addf(CodeMissingMetric, file, lg.stopLine, run, "no %s event between run_start (line %d) and run_stop (line %d) (an error may also come after run_stop); a level %d run of %s logs it", k, lg.startLine, lg.stopLine, c.bench.Level, c.bench.ID)
			}
		}
	}
	if c.bench.Level == 0 {
		lg.shapes = ops.complete(c, file, run, lg.stopLine)
	}
	c.logs_ = append(c.logs_, lg)
	return m
}

// crossRun applies the rules that relate runs: unique seeds, one batch
// size, consecutive runs in index order.
func (c *checker) crossRun(runs []d5list.RunMetrics) {
	owner := map[int64]int{} // seed -> position in c.logs_
	for i, lg := range c.logs_ {
		seen := map[int64]bool{}
		for _, s := range lg.seeds {
			if seen[s.seed] {
				continue // ranks of one run may log the same seed
			}
			seen[s.seed] = true
			if j, dup := owner[s.seed]; dup {
				idx := lg.index
				c.addf(CodeDuplicateSeed, lg.file, s.line, &idx, "seed %d is also the seed of %s; every run needs its own seed", s.seed, c.logs_[j].file)
				continue
			}
			owner[s.seed] = i
		}
	}
	gbs := 0
	for i, r := range runs {
		if r.GlobalBatchSize == 0 {
			continue
		}
		if gbs == 0 {
			gbs = r.GlobalBatchSize
		} else if r.GlobalBatchSize != gbs {
			idx := r.Index
			c.addf(CodeBatchSizeDiffers, r.File, c.lineOf(i, mllog.KeyGlobalBatchSize), &idx, "global_batch_size is %d but earlier runs used %d; all runs of a submission use one", r.GlobalBatchSize, gbs)
		}
	}

	shortest := math.Inf(1)
	for i, r := range runs {
		if c.logs_[i].startLine > 0 && c.logs_[i].stopLine > 0 && r.TimeToTrain > 0 {
			shortest = math.Min(shortest, r.TimeToTrain)
		}
	}
	allowed := math.Max(MinRunGapSeconds, shortest)
	rule := fmt.Sprintf("max(%d s, shortest run)", MinRunGapSeconds)
	if g := c.bench.Verify.MaxRunGapSeconds; g > 0 {
		allowed, rule = g, "the benchmark's max_run_gap_s"
	}
	for i := 1; i < len(runs); i++ {
		prev, cur := runs[i-1], runs[i]
		if c.logs_[i-1].stopLine == 0 || c.logs_[i].startLine == 0 {
			continue
		}
		idx := cur.Index
		if overlap := float64(cur.StartMS-prev.StopMS) / 1000; overlap < 0 {
			c.addf(CodeRunsOverlap, cur.File, c.logs_[i].startLine, &idx, "run_start is %.3f s before %s's run_stop; runs must follow one another in index order", -overlap, prev.File)
			continue
		}
		// From the end of one log to the start of the next: initialisation
		// logged before run_start is not a pause, but a dropped run is.
		prevEvents, curEvents := c.logs_[i-1].events, c.logs_[i].events
		if len(prevEvents) == 0 || len(curEvents) == 0 {
			continue
		}
		gap := float64(curEvents[0].TimeMS-prevEvents[len(prevEvents)-1].TimeMS) / 1000
		if gap > allowed {
			c.addf(CodeRunGap, cur.File, 1, &idx, "%s starts %.3g s after %s ends; at most %.3g s (%s) may pass between runs, so a run left out between them shows here", cur.File, gap, prev.File, allowed, rule)
		}
	}
}

func (c *checker) lineOf(i int, key string) int {
	for _, e := range c.logs_[i].events {
		if e.Key == key {
			return e.Line
		}
	}
	return c.logs_[i].lastLine
}

func (c *checker) unconverged(runs []d5list.RunMetrics) {
	var bad []d5list.RunMetrics
	var where []int
	for i, r := range runs {
		if !r.Converged {
			bad = append(bad, r)
			where = append(where, i)
		}
	}
	if len(bad) <= 1 {
		return
	}
	names := make([]string, len(bad))
	for i, r := range bad {
		names[i] = path.Base(r.File)
	}
	second := bad[1]
	line := c.logs_[where[1]].stopLine
	if line == 0 {
		line = c.logs_[where[1]].lastLine
	}
	idx := second.Index
	what := fmt.Sprintf("did not reach %s %v", c.bench.Quality.Metric, c.bench.Quality.Target)
	if c.bench.Quality.Metric == "" && c.bench.Quality.Target == 0 {
		what = "did not end with run_stop status success"
	}
	c.addf(CodeTooManyUnconverged, second.File, line, &idx, "%d runs %s (%s); at most one may fail", len(bad), what, strings.Join(names, ", "))
}

// convergence runs the RCP test and returns a note when it could not.
func (c *checker) convergence(runs []d5list.RunMetrics) string {
	if len(c.bench.RCP) == 0 || len(runs) == 0 {
		return ""
	}
	bs := 0
	for _, r := range runs {
		if r.GlobalBatchSize > 0 {
			bs = r.GlobalBatchSize
			break
		}
	}
	if bs == 0 {
		return "convergence not checked: no global_batch_size"
	}
	res := TestRCP(c.bench.RCP, bs, runs)
	if !res.Checked {
		return res.Note
	}
	if !res.Pass {
		// Name the first run's log: the finding is about the set of runs.
		idx := runs[0].Index
		line := c.logs_[0].stopLine
		m, ref := res.Mean, res.Reference.EpochsMean
		c.add(d5list.Reason{Code: CodeConvergenceTooFast, File: runs[0].File, Line: line, Run: &idx, Claimed: &m, Measured: &ref,
			Message: fmt.Sprintf("runs reach the target in %.3f epochs on average (trimmed: %v), significantly fewer than the reference %.3f ± %.3f epochs at global batch size %d (one-sided t = %.3f, p = %.4f < %.2f)",
				res.Mean, res.Epochs, ref, res.Reference.EpochsStdev, bs, res.T, res.P, RCPAlpha)})
	}
	return ""
}

// derivedMetrics are computed from run_start, run_stop and the evaluation
// curve; no event carries them.
var derivedMetrics = map[string]bool{
	d5list.MetricTimeToTrain: true, d5list.MetricTTA: true, d5list.MetricFinalAccuracy: true,
	d5list.MetricBestAccuracy: true, d5list.MetricEpochsToTarget: true,
}

// LoggedMetrics are the MLLOG keys every run of a Level 0 or 1 benchmark
// must log between run_start and run_stop: what the benchmark ranks by,
// targets, reproduces and times, less what is derived from the run's clock
// and curve.
func LoggedMetrics(b *d5list.Benchmark) []string {
	names := append([]string{b.Ranking.Metric, b.Ranking.Secondary, b.Quality.Metric}, b.Verify.Reproduce...)
	names = append(names, b.Verify.Timed...)
	var out []string
	seen := map[string]bool{}
	for _, n := range names {
		if n == "" || derivedMetrics[n] || seen[n] {
			continue
		}
		seen[n] = true
		out = append(out, n)
	}
	return out
}

// opShapes collects an operator run's per-shape results, so that a run
// whose time leaves out a shape it checked (or the reverse) is caught: the
// run's op_time_ms is a sum over its shapes.
type opShapes struct {
	order []string
	seen  map[string]map[string]int // shape -> key -> line
}

func newOpShapes() *opShapes { return &opShapes{seen: map[string]map[string]int{}} }

func (o *opShapes) add(c *checker, file string, run *int, e *mllog.Event) {
	shape, _ := e.Meta("shape").(string)
	if shape == "" {
		c.addf(CodeOpShape, file, e.Line, run, "%s has no metadata.shape; an operator run logs its results per shape", e.Key)
		return
	}
	keys, ok := o.seen[shape]
	if !ok {
		keys = map[string]int{}
		o.seen[shape] = keys
		o.order = append(o.order, shape)
	}
	if first, dup := keys[e.Key]; dup {
		c.addf(CodeOpShape, file, e.Line, run, "second %s for shape %s (the first is on line %d); each shape logs it once", e.Key, shape, first)
		return
	}
	keys[e.Key] = e.Line
}

// complete reports shapes that lack a result and returns the shapes seen.
func (o *opShapes) complete(c *checker, file string, run *int, line int) []string {
	want := []string{d5list.MetricOpTime, d5list.MetricOpRelL2Error, d5list.MetricOpMaxError}
	for _, shape := range o.order {
		for _, k := range want {
			if _, ok := o.seen[shape][k]; !ok {
				c.addf(CodeOpShape, file, line, run, "shape %s has no %s; each shape logs %s", shape, k, strings.Join(want, ", "))
			}
		}
	}
	return o.order
}

// sameShapes requires every operator run to measure the shapes of the
// first: a run that drops a slow shape would otherwise look faster.
func (c *checker) sameShapes() {
	if c.bench.Level != 0 || len(c.logs_) < 2 {
		return
	}
	ref := c.logs_[0]
	want := strings.Join(ref.shapes, ", ")
	for _, lg := range c.logs_[1:] {
		if !lg.parsed || !ref.parsed {
			continue
		}
		if got := strings.Join(lg.shapes, ", "); got != want {
			idx := lg.index
			line := lg.stopLine
			if line == 0 {
				line = lg.lastLine
			}
			c.addf(CodeOpShapesDiffer, lg.file, line, &idx, "the run measures shapes [%s] but %s measures [%s]; every run measures the same shapes", got, ref.file, want)
		}
	}
}
