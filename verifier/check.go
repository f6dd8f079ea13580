// Package verifier judges submissions: Check applies the static rules of a
// benchmark to an uploaded bundle (the same code path serves upload,
// `d5list check` and an organiser's re-check), CheckMLPerf scores an MLPerf
// results folder, and Compare sets claimed against measured results.
package verifier

import (
	"fmt"
	"math"
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
// each costs the checker about a kilobyte, and MLPerf's published folders
// log up to some 20,000 (unet3d, 40 runs). maxUploadDecodedBytes bounds
// the text of their values and metadata, which cost some ten times it
// decoded: the same folder decodes 2.9 MB. One published folder is past
// both (round 2.0's maskrcnn on two A30s: 39,443 events, over 8 MB of
// training statistics), which d5list check reads from the disk
// (LocalReadLimits) and an upload refuses.
var (
	maxUploadEvents       = 100_000 // variables so that tests can lower them
	maxUploadDecodedBytes = 8 << 20
)

// ReadLimits bound what one check reads of a folder's logs: all its MLLOG
// events together and the bytes of their values and metadata, and those
// of each file (File).
type ReadLimits struct {
	Events, DecodedBytes int
	File                 mllog.Limits
}

// UploadReadLimits bound an upload's logs, whose check's memory the portal
// admits by them.
func UploadReadLimits() ReadLimits {
	return ReadLimits{maxUploadEvents, maxUploadDecodedBytes, mllog.UploadLimits}
}

// LocalReadLimits bound the logs of a folder on the checker's own disk
// (d5list check): a published MLPerf folder past the upload's bounds (one
// of round 2.0, 39,443 events, 16 MB of maskrcnn logs, under 3 MB decoded
// a file) is read whole there, with room to spare four times over, in
// some ten times its decoded bytes of memory: a folder built to cost the
// most takes some 350 MB, not the machine.
var LocalReadLimits = ReadLimits{Events: 400_000, DecodedBytes: 32 << 20,
	File: mllog.Limits{Events: 100_000, DecodedBytes: 8 << 20}}

// readTooMuch says what the logs read so far hold past the upload's
// bounds, or "".
func readTooMuch(events, decoded int) string { return UploadReadLimits().tooMuch(events, decoded) }

// tooMuch says what the logs read so far hold past l, or "".
func (l ReadLimits) tooMuch(events, decoded int) string {
	switch {
	case events > l.Events:
		return fmt.Sprintf("more than %d MLLOG events", l.Events)
	case decoded > l.DecodedBytes:
		return fmt.Sprintf("more than %d bytes of MLLOG values and metadata", l.DecodedBytes)
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
