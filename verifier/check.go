// Package verifier judges submissions: Check applies the static rules of a
// benchmark to an uploaded bundle (the same code path serves upload,
// `d5list check` and an organiser's re-check), CheckMLPerf scores an MLPerf
// results folder, and Compare sets claimed against measured results.
package verifier

import (
	"bytes"
	"errors"
	"fmt"
	"math"
	"path"
	"sort"
	"strings"
	"unicode"

	d5list "github.com/deep500/d5list"
	"github.com/deep500/d5list/bundle"
	"github.com/deep500/d5list/mllog"
)

// Reason codes of Check. Codes from mllog (mllog_syntax, missing_run_start,
// missing_run_stop, ...) pass through unchanged.
const (
	CodeManifestFormat       = "manifest_format"
	CodeManifestBenchmark    = "manifest_benchmark"
	CodeManifestDivision     = "manifest_division"
	CodeManifestAvailability = "manifest_availability"
	CodeManifestSubmitter    = "manifest_submitter"
	CodeManifestSystemName   = "manifest_system_name"

	CodeRecipeFixedMismatch = "recipe_fixed_mismatch"
	CodeRecipeImageMissing  = "recipe_image_missing"
	CodeRecipeFixedMissing  = "recipe_fixed_missing"
	CodeRecipeFixedUnknown  = "recipe_fixed_unknown"
	CodeRecipeMutableDenied = "recipe_mutable_not_allowed"
	CodeRecipeKeyInBoth     = "recipe_key_in_both"
	CodeRecipeMissingKey    = "recipe_missing_key"
	CodeRecipeUnknownMetric = "recipe_unknown_metric"
	CodeRecipeNotRunnable   = "recipe_not_runnable"
	CodeRunCount            = "wrong_run_count"
	CodeRunIndex            = "bad_run_index"
	CodeDuplicateRunStart   = "duplicate_run_start"
	CodeDuplicateRunStop    = "duplicate_run_stop"
	CodeTimeBackwards       = "time_backwards"
	CodeEvalOutOfRange      = "eval_out_of_range"
	CodeEvalEpochOrder      = "eval_epoch_not_increasing"
	CodeMissingSeed         = "missing_seed"
	CodeDuplicateSeed       = "duplicate_seed"
	CodeMissingBenchmarkKey = "missing_submission_benchmark"
	CodeWrongBenchmarkKey   = "wrong_submission_benchmark"
	CodeMissingBatchSize    = "missing_global_batch_size"
	CodeBatchSizeDiffers    = "global_batch_size_differs"
	CodeRunsOverlap         = "runs_overlap"
	CodeRunGap              = "run_gap"
	CodeTooManyUnconverged  = "too_many_unconverged"
	CodeTooManyEvents       = "too_many_events"
	CodeClaimMismatch       = "claim_mismatch"
	CodeClaimUnknown        = "claim_unknown"
	CodeConvergenceTooFast  = "convergence_too_fast"
	CodeMissingMetric       = "missing_metric"
	CodeOpShape             = "operator_shape"
	CodeOpShapesDiffer      = "operator_shapes_differ"
)

// MinRunGapSeconds is the floor of the allowed pause between two runs.
const MinRunGapSeconds = 60

// ClaimEpsilon is the relative tolerance between a claimed and a derived value.
const ClaimEpsilon = 1e-6

// requiredRecipeKeys are the keys a Deep500 training recipe must define
// (in fixed or mutable); they apply to level 2 and 3 benchmarks.
var requiredRecipeKeys = []string{"dataset", "model", "batch_size", "executor", "optimizer", "epochs"}

// KnownMetrics are the metric names a recipe may list: Deep500's metric
// classes in snake_case (TestAccuracy is test_accuracy) and the names the
// portal derives from logs.
var KnownMetrics = map[string]bool{
	"test_accuracy": true, "train_accuracy": true, "training_accuracy": true,
	"time_to_accuracy": true, "wallclock_time": true, "throughput": true,
	"l1_error": true, "l2_error": true, "max_error": true, "linf_error": true,
	"training_loss": true, "test_loss": true, "framework_overhead": true,
	"communication_volume": true, "dataset_bias": true, "latency": true,
	"eval_accuracy": true, "final_accuracy": true, "best_accuracy": true,
	"epochs_to_target": true, "time_to_train_s": true, "tta_s": true,
	"memory": true, "scaling_efficiency": true, "gradient_check": true,
	d5list.MetricOpTime: true, d5list.MetricOpGFLOPS: true, d5list.MetricOpRelL2Error: true,
	d5list.MetricOpMaxError: true, d5list.MetricLatencyP50: true, d5list.MetricLatencyP99: true,
	d5list.MetricPredictionChecksum: true,
}

// metricName turns Deep500 class-style names ("TestAccuracy",
// "d5.TestAccuracy") into the snake_case of KnownMetrics.
func metricName(s string) string {
	if i := strings.LastIndexByte(s, '.'); i >= 0 {
		s = s[i+1:]
	}
	var b strings.Builder
	for i, r := range s {
		if unicode.IsUpper(r) {
			if i > 0 && !unicode.IsUpper(rune(s[i-1])) && s[i-1] != '_' {
				b.WriteByte('_')
			}
			r = unicode.ToLower(r)
		}
		b.WriteRune(r)
	}
	return b.String()
}

// Check applies every static rule of bench to b and derives the claimed
// result from the logs. claimed is returned even when there are reasons, as
// far as the logs allow, so that tools can show it; a bundle is acceptable
// only when reasons is empty.
//
// Rules worth knowing (docs/bundle-format.md has the full list):
//   - Runs are numbered 0..N-1, or 1..N as MLPerf does.
//   - The runs must be consecutive in time, in index order: each run_start
//     after the previous run's run_stop, and no pause between them longer
//     than max(60 s, the shortest run's time_to_train). A hidden run that
//     trained to the target lasts about as long as the shortest submitted
//     one, so picking the best N of more runs leaves a gap that this
//     catches, while the restart and initialisation between honest runs
//     fit (MLPerf's ResNet runs pause about 110 s for 20-minute runs).
//   - Claims in the manifest: the ranking metric (or "score") is the olympic
//     score; any other metric is the arithmetic mean of that metric over
//     the runs that define it (final_accuracy: mean of the final accuracies).
//   - With reference convergence points, a submission whose trimmed mean of
//     epochs to target is significantly below the reference (see TestRCP)
//     is refused; outside the reference batch sizes the score's Note says
//     that convergence was not checked.
func Check(b *bundle.Bundle, bench *d5list.Benchmark) (claimed *d5list.Result, reasons []d5list.Reason) {
	c := &checker{b: b, bench: bench}
	c.manifest()
	c.reasons = append(c.reasons, b.Placeholders()...)
	c.recipe()
	runs := c.logs()
	// The claim's Runner is where its runs ran, as `d5list run` recorded it.
	claimed = &d5list.Result{Runs: runs, Runner: b.Manifest.Environment}
	claimed.Score = d5list.OlympicScore(runs, bench.Ranking.Metric, bench.Ranking.Direction)
	c.unconverged(runs)
	c.claims(claimed)
	if note := c.convergence(runs); note != "" {
		claimed.Score.Note = strings.TrimPrefix(claimed.Score.Note+"; "+note, "; ")
	}
	return claimed, c.reasons
}

type checker struct {
	b       *bundle.Bundle
	bench   *d5list.Benchmark
	reasons []d5list.Reason
	logs_   []runLog
	events  int // parsed so far, over all logs
	decoded int // their values' and metadata's bytes (mllog.DecodedBytes)
}

// maxUploadEvents bounds the MLLOG events of one upload's logs together:
// each costs the checker about a kilobyte, and MLPerf's largest published
// folder (unet3d, 40 runs) logs some 20,000. maxUploadDecodedBytes bounds
// the text of their values and metadata, which cost some ten times it
// decoded: the same folder decodes 2.9 MB.
var (
	maxUploadEvents       = 100_000 // variables so that tests can lower them
	maxUploadDecodedBytes = 8 << 20
)

// readTooMuch says what the logs read so far hold past the upload's
// bounds, or "".
func readTooMuch(events, decoded int) string {
	switch {
	case events > maxUploadEvents:
		return fmt.Sprintf("more than %d MLLOG events", maxUploadEvents)
	case decoded > maxUploadDecodedBytes:
		return fmt.Sprintf("more than %d bytes of MLLOG values and metadata", maxUploadDecodedBytes)
	}
	return ""
}

// runLog is what the cross-run rules need of one parsed result file.
type runLog struct {
	file      string
	index     int
	events    []mllog.Event
	parsed    bool
	startLine int
	stopLine  int
	lastLine  int
	seeds     []seedAt
	shapes    []string // Level 0: the operator shapes the run logged, in order
}

type seedAt struct {
	seed int64
	line int
}

func (c *checker) add(r d5list.Reason) { c.reasons = append(c.reasons, r) }

func (c *checker) addf(code, file string, line int, run *int, format string, args ...any) {
	c.add(d5list.Reason{Code: code, File: file, Line: line, Run: run, Message: fmt.Sprintf(format, args...)})
}

func (c *checker) manifest() {
	m, f := c.b.Manifest, c.b.ManifestFile
	if f == "" {
		f = "submission.json"
	}
	if m.Format != d5list.ManifestFormat {
		c.addf(CodeManifestFormat, f, 0, nil, "format is %q; this portal reads %q", m.Format, d5list.ManifestFormat)
	}
	if m.Benchmark != c.bench.ID {
		c.addf(CodeManifestBenchmark, f, 0, nil, "benchmark is %q but the bundle is checked against %q", m.Benchmark, c.bench.ID)
	}
	if m.Division != d5list.DivisionClosed && m.Division != d5list.DivisionOpen {
		c.addf(CodeManifestDivision, f, 0, nil, "division is %q; it must be %q or %q", m.Division, d5list.DivisionClosed, d5list.DivisionOpen)
	}
	switch m.Availability {
	case d5list.AvailabilityAvailable, d5list.AvailabilityPreview, d5list.AvailabilityRDI:
	default:
		c.addf(CodeManifestAvailability, f, 0, nil, "availability is %q; it must be available, preview or rdi", m.Availability)
	}
	if strings.TrimSpace(m.Submitter) == "" {
		c.addf(CodeManifestSubmitter, f, 0, nil, "submitter is empty")
	}
	if strings.TrimSpace(m.SystemName) == "" {
		c.addf(CodeManifestSystemName, f, 0, nil, "system_name is empty")
	}
}

func sortedKeys(m map[string]any) []string {
	ks := make([]string, 0, len(m))
	for k := range m {
		ks = append(ks, k)
	}
	sort.Strings(ks)
	return ks
}

// RecipeReader is the re-run's own reading of a recipe, made before it
// runs anything (workloads.PlanRecipe for the builtin workloads): what the
// run will measure, or the error it would stop with. The caller passes it
// in, so that the verifier depends on no workload.
type RecipeReader func(bench *d5list.Benchmark, r *d5list.Recipe) (d5list.RecipePlan, error)

// Runnable holds a bundle to what its re-run will do: a recipe the
// workload would refuse (a negative repeat count, a shape too large for a
// runner) is recipe_not_runnable, naming the field, and claimed Level 0
// runs that measured other shapes than the recipe's are
// operator_shapes_differ, so that the competitor learns either at upload
// and not from the re-run. A nil reader accepts every recipe.
func Runnable(b *bundle.Bundle, bench *d5list.Benchmark, claimed *d5list.Result, read RecipeReader) []d5list.Reason {
	if read == nil {
		return nil
	}
	file := b.RecipeFile
	if file == "" {
		file = "recipe"
	}
	plan, err := read(bench, &b.Recipe)
	if err != nil {
		return []d5list.Reason{{Code: CodeRecipeNotRunnable, File: file,
			Message: fmt.Sprintf("the %s workload that re-runs %s would refuse this recipe: %s", bench.Workload, bench.ID, d5list.ErrorMessage(err))}}
	}
	if len(plan.Shapes) == 0 || claimed == nil {
		return nil
	}
	want := strings.Join(plan.Shapes, ", ")
	for _, r := range claimed.Runs {
		if len(r.Shapes) == 0 {
			continue // no operator results at all: other checks say so
		}
		got := shapeNames(r.Shapes)
		if strings.Join(got, ", ") != want {
			// Check has every run measure the shapes of the first, so
			// the first run that differs speaks for the others.
			return []d5list.Reason{{Code: CodeOpShapesDiffer, File: r.File, Run: &r.Index,
				Message: fmt.Sprintf("run %d measures shapes [%s] but the recipe (%s) has [%s], which the re-run will measure; measure the recipe you submit", r.Index, strings.Join(got, ", "), file, want)}}
		}
	}
	return nil
}

func (c *checker) recipe() {
	r, f := c.b.Recipe, c.b.RecipeFile
	if f == "" {
		f = "recipe"
	}
	if r.Image != "" && !d5list.IsRegistryImage(r.Image) && !c.hasFile(r.Image) {
		c.addf(CodeRecipeImageMissing, f, 0, nil, "image %q is not a file of the bundle: put the image archive (docker save) there, or leave image out", r.Image)
	}
	for _, k := range sortedKeys(r.Fixed) {
		if _, both := r.Mutable[k]; both {
			c.addf(CodeRecipeKeyInBoth, f, 0, nil, "%q is defined both as fixed and as mutable", k)
		}
	}
	if c.bench.Level >= 2 {
		for _, k := range requiredRecipeKeys {
			if _, ok := r.Get(k); !ok {
				c.addf(CodeRecipeMissingKey, f, 0, nil, "the recipe does not define %q (a training recipe needs %s)", k, strings.Join(requiredRecipeKeys, ", "))
			}
		}
	}
	for _, m := range r.Metrics {
		if !KnownMetrics[metricName(m.Name)] {
			c.addf(CodeRecipeUnknownMetric, f, 0, nil, "metric %q is not one the portal knows", m.Name)
		}
	}
	if c.b.Manifest.Division != d5list.DivisionClosed {
		return
	}
	fixed := c.bench.Division.Fixed
	for _, k := range sortedKeys(fixed) {
		v, ok := r.Fixed[k]
		if !ok {
			c.addf(CodeRecipeFixedMissing, f, 0, nil, "closed division: fixed %q is missing; the benchmark fixes it to %s", k, show(fixed[k]))
		} else if !EqualValues(v, fixed[k]) {
			c.addf(CodeRecipeFixedMismatch, f, 0, nil, "closed division: fixed %q is %s; the benchmark fixes it to %s", k, show(v), show(fixed[k]))
		}
	}
	for _, k := range sortedKeys(r.Fixed) {
		if _, ok := fixed[k]; !ok {
			c.addf(CodeRecipeFixedUnknown, f, 0, nil, "closed division: %q is not a fixed component of the benchmark", k)
		}
	}
	for _, k := range sortedKeys(r.Mutable) {
		if _, ok := c.bench.Division.Mutable[k]; !ok {
			c.addf(CodeRecipeMutableDenied, f, 0, nil, "closed division: %q may not be changed (mutable keys: %s)", k, strings.Join(sortedKeys(c.bench.Division.Mutable), ", "))
		}
	}
}

// hasFile says whether the bundle holds a regular file of that name.
func (c *checker) hasFile(name string) bool {
	for _, f := range c.b.Files {
		if f.Name == name {
			return true
		}
	}
	return false
}

func show(v any) string {
	if s, ok := v.(string); ok {
		return fmt.Sprintf("%q", s)
	}
	return fmt.Sprintf("%v", v)
}

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

// DeriveClaim is the value a manifest claim named metric is compared with:
// the olympic score for the ranking metric (or "score"), the arithmetic
// mean of the metric over the runs that define it otherwise.
func DeriveClaim(res *d5list.Result, rankingMetric, metric string) (float64, bool) {
	if metric == "score" || metric == rankingMetric {
		return res.Score.Value, res.Score.Valid
	}
	sum, n := 0.0, 0
	for i := range res.Runs {
		if v, ok := res.Runs[i].Metric(metric); ok {
			sum += v
			n++
		}
	}
	if n == 0 {
		return 0, false
	}
	return sum / float64(n), true
}

func (c *checker) claims(res *d5list.Result) {
	f := c.b.ManifestFile
	if f == "" {
		f = "submission.json"
	}
	keys := make([]string, 0, len(c.b.Manifest.Claims))
	for k := range c.b.Manifest.Claims {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		claimed := c.b.Manifest.Claims[k]
		derived, ok := DeriveClaim(res, c.bench.Ranking.Metric, k)
		if !ok {
			c.addf(CodeClaimUnknown, f, 0, nil, "claim %q: the logs give no such value", k)
			continue
		}
		if !closeRel(claimed, derived, ClaimEpsilon) {
			cl, de := claimed, derived
			c.add(d5list.Reason{Code: CodeClaimMismatch, File: f, Claimed: &cl, Measured: &de,
				Message: fmt.Sprintf("claim %q is %v but the logs give %v", k, claimed, derived)})
		}
	}
}

func closeRel(a, b, eps float64) bool {
	if a == b {
		return true
	}
	return math.Abs(a-b) <= eps*math.Max(math.Abs(a), math.Abs(b))
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
