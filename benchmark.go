package d5list

import (
	"math"
	"strconv"
	"time"
)

// Direction says whether a smaller or a larger metric value is better.
type Direction string

const (
	LowerIsBetter  Direction = "lower"
	HigherIsBetter Direction = "higher"
)

// Better reports whether a is strictly better than b in direction d.
func (d Direction) Better(a, b float64) bool {
	if d == HigherIsBetter {
		return a > b
	}
	return a < b
}

// Metric names shared by benchmarks, derived results and rankings.
const (
	MetricTimeToTrain    = "time_to_train_s"  // run_stop - run_start, MLPerf's score of one run
	MetricTTA            = "tta_s"            // DAWNBench: run_start to the first evaluation at target
	MetricFinalAccuracy  = "final_accuracy"   // last eval_accuracy of a run
	MetricBestAccuracy   = "best_accuracy"    // highest eval_accuracy of a run
	MetricEpochsToTarget = "epochs_to_target" // epoch_num of the first evaluation at target
	MetricThroughput     = "throughput"       // samples per second
)

// Benchmark is one entry of the catalogue: what competitors run and how the
// list ranks it.
type Benchmark struct {
	ID          string `json:"id" yaml:"id"`
	Name        string `json:"name" yaml:"name"`
	Description string `json:"description" yaml:"description"`
	Level       int    `json:"level" yaml:"level"` // Deep500 level 0..3
	Category    string `json:"category" yaml:"category"`
	// Workload names the builtin CPU workload that re-runs this benchmark
	// (for example "digits-mlp"); empty means the bundle's own entrypoint.
	Workload string `json:"workload,omitempty" yaml:"workload"`

	Division DivisionRules `json:"division" yaml:"division"`
	Runs     int           `json:"runs" yaml:"runs"` // required number of runs
	Quality  QualityTarget `json:"quality" yaml:"quality"`
	Ranking  RankingRule   `json:"ranking" yaml:"ranking"`
	Timing   string        `json:"timing,omitempty" yaml:"timing"` // what is on the clock, in words
	Verify   VerifyPolicy  `json:"verify" yaml:"verify"`
	// Requires lists runner labels a runner must have to take this
	// benchmark's jobs, e.g. {"accelerator": "H100", "dataset.cifar10": "yes"}.
	Requires map[string]string `json:"requires,omitempty" yaml:"requires"`
	// RCP holds optional reference convergence points (MLPerf rcp_checker).
	RCP []ConvergencePoint `json:"rcp,omitempty" yaml:"rcp"`
	// DailyQuota caps one competitor's submissions to this benchmark per
	// UTC day (failed and rejected ones do not count). Zero means the
	// portal-wide `serve --quota`. Expensive re-runs (a GPU benchmark) set
	// a lower cap than cheap ones.
	DailyQuota int `json:"daily_quota,omitempty" yaml:"daily_quota"`
}

// LabelRuns is the runner label that says what its executor runs:
// RunsBuiltin (the portal's own workloads, named by Benchmark.Workload) or
// RunsEntrypoint (the bundle's own code: the process and Slurm executors).
// A runner that states it leases only the jobs its executor can run.
const (
	LabelRuns      = "runs"
	RunsBuiltin    = "builtin"
	RunsEntrypoint = "entrypoint"
)

// ReRunBy is what a runner's executor must run to re-run this benchmark.
func (b *Benchmark) ReRunBy() string {
	if b.Workload != "" {
		return RunsBuiltin
	}
	return RunsEntrypoint
}

// RunnableBy reports whether a runner with these labels may take this
// benchmark's jobs: it has every label of Requires with the same value
// ("*": with any value), and an executor that runs the benchmark.
func (b *Benchmark) RunnableBy(labels map[string]string) bool {
	return HasLabels(labels, b.Requires) && b.RunsOn(labels)
}

// HasLabels reports whether labels has every label of needs with the
// same value ("*": with any value).
func HasLabels(labels, needs map[string]string) bool {
	for k, want := range needs {
		have, ok := labels[k]
		if !ok || (want != "*" && have != want) {
			return false
		}
	}
	return true
}

// RunnerNeeds says in words what labels a runner needs for this
// benchmark and a job's own needs (Job.Requires), sorted:
// "framework.torch=*, runs=entrypoint".
func (b *Benchmark) RunnerNeeds(job map[string]string) string {
	needs := map[string]string{LabelRuns: b.ReRunBy()}
	for k, v := range b.Requires {
		needs[k] = v
	}
	for k, v := range job {
		needs[k] = v
	}
	return FormatLabels(needs)
}

// RunsOn reports whether a runner with these labels has an executor for
// this benchmark; one that does not say what it runs is taken at its word.
func (b *Benchmark) RunsOn(labels map[string]string) bool {
	runs, ok := labels[LabelRuns]
	return !ok || runs == b.ReRunBy()
}

// FixedWorkers is the number of data-parallel workers the benchmark's
// fixed part sets (`workers: 2`), and whether it sets one.
func (b *Benchmark) FixedWorkers() (int, bool) {
	switch v := b.Division.Fixed["workers"].(type) {
	case int:
		return v, v > 0
	case int64:
		return int(v), v > 0
	case float64:
		return int(v), v > 0 && v == float64(int(v))
	}
	return 0, false
}

// DivisionRules are the recipe rules of the closed division.
type DivisionRules struct {
	// Fixed components a closed-division recipe must match exactly.
	Fixed map[string]any `json:"fixed" yaml:"fixed"`
	// Mutable lists the keys a competitor may change, with their defaults.
	Mutable map[string]any `json:"mutable" yaml:"mutable"`
}

// FixedSamples is the number of samples the benchmark's fixed part sets
// (the key "samples": an inference benchmark's work), if it sets one.
func (b *Benchmark) FixedSamples() (float64, bool) {
	var n float64
	switch v := b.Division.Fixed["samples"].(type) {
	case int:
		n = float64(v)
	case int64:
		n = float64(v)
	case uint64:
		n = float64(v)
	case float64:
		n = v
	default:
		return 0, false
	}
	return n, n > 0 && !math.IsInf(n, 0)
}

// QualityTarget is the convergence criterion.
type QualityTarget struct {
	Metric string  `json:"metric" yaml:"metric"` // MLLOG key, usually "eval_accuracy"
	Target float64 `json:"target" yaml:"target"` // acceptable value, Deep500 semantics
	// Mode is "first" (the run reaches the target at some evaluation,
	// MLPerf/DAWNBench) or "final" (the last evaluation must reach it).
	Mode      string    `json:"mode" yaml:"mode"`
	Direction Direction `json:"direction" yaml:"direction"`
}

// Reached reports whether value satisfies the target, following Deep500's
// acceptable-metric semantics: accuracy at least, error and time at most.
func (q QualityTarget) Reached(value float64) bool {
	if q.Direction == LowerIsBetter {
		return value <= q.Target
	}
	return value >= q.Target
}

// RankingRule says which metric orders the list.
type RankingRule struct {
	Metric    string    `json:"metric" yaml:"metric"`
	Direction Direction `json:"direction" yaml:"direction"`
	Unit      string    `json:"unit" yaml:"unit"`
	// Secondary breaks ties before submission time does.
	Secondary          string    `json:"secondary,omitempty" yaml:"secondary"`
	SecondaryDirection Direction `json:"secondary_direction,omitempty" yaml:"secondary_direction"`
}

// VerifyPolicy says how a re-run is compared with the claim.
type VerifyPolicy struct {
	// AccuracyTolerance is the allowed absolute difference of an accuracy
	// (0 for the deterministic builtin workloads).
	AccuracyTolerance float64 `json:"accuracy_tolerance" yaml:"accuracy_tolerance"`
	// Reproduce lists per-run metrics (operator errors, ...) a re-run must
	// give again: equal as logged, within AccuracyTolerance.
	Reproduce []string `json:"reproduce,omitempty" yaml:"reproduce"`
	// Timed lists the per-run metrics whose claimed values are held against
	// the re-run's, each in its TimingDirection. Empty means
	// time_to_train_s, the training levels' clock.
	Timed []string `json:"timed,omitempty" yaml:"timed"`
	// TimingPrecision is the noise the portal allows between a claim and
	// its re-run on the same machine at the same speed: the re-run may be
	// this share slower per unit of work than the claim. The verifier adds
	// TimingDrift and the noise the runner measured during the re-run
	// (docs/timing.md); zero means DefaultTimingPrecision.
	TimingPrecision float64 `json:"timing_precision,omitempty" yaml:"timing_precision"`
	// TimingDrift is how much slower than the competitor's machine a
	// runner of the same model may be without a sign of it in the wait
	// the runner measured: another machine that runs warmer, a slower
	// clock at re-run time, a neighbour on the same physical core. A
	// claim's timing is a discrepancy only beyond it. Zero means
	// DefaultTimingDrift.
	TimingDrift float64 `json:"timing_drift,omitempty" yaml:"timing_drift"`
	// Remeasures bounds how often a verdict that rests on timing alone
	// (a gap, or a re-run too noisy to judge) waits for the timed runs to
	// be measured again, later and on another runner where there is one,
	// before it stands. Zero means DefaultRemeasures; negative means none.
	Remeasures int `json:"remeasures,omitempty" yaml:"remeasures"`
	// SameHardware lists the runner labels that must equal the declared
	// system's for timing to be verified.
	SameHardware []string `json:"same_hardware,omitempty" yaml:"same_hardware"`
	// TimeLimitSeconds bounds one re-run job.
	TimeLimitSeconds int `json:"time_limit_s,omitempty" yaml:"time_limit_s"`
	// MaxRunGapSeconds bounds the pause between one run's last logged event
	// and the next run's first, so that a run left out (best N of N+1)
	// shows as a gap. Zero means max(60 s, the shortest run): generous for
	// frameworks whose runs are launched one by one. Workloads whose runs
	// follow each other in one process set a small bound, well below the
	// duration of one run.
	MaxRunGapSeconds float64 `json:"max_run_gap_s,omitempty" yaml:"max_run_gap_s"`
	// FreshRuns is how many runs with seeds the portal draws at lease time
	// every re-run adds to the claimed seeds' (JobSpec.FreshSeeds). Zero
	// means as many as the benchmark's runs; negative means none, for a
	// benchmark whose every run costs too much to run twice.
	FreshRuns int `json:"fresh_runs,omitempty" yaml:"fresh_runs"`
	// Harness names the runner's harness that runs the timed loop of a
	// benchmark of the competitor's code and audits its outputs (harness
	// package): "operator" (Level 0: the fixed op, shapes and repeats) or
	// "mlp-inference" (Level 1). Empty: the competitor's code times itself.
	Harness string `json:"harness,omitempty" yaml:"harness"`
	// Evaluation is the runner's own evaluation of the model each run of
	// a benchmark without a harness ends with: the run hands its final
	// model over before its run_stop, and the runner scores it with the
	// benchmark's reference evaluation on its own copy of the test data,
	// never taking the accuracy the run logged. Nil: no evaluation.
	Evaluation *ModelEvaluation `json:"evaluation,omitempty" yaml:"evaluation"`
	// Steps is the runner's audit of the training steps of a benchmark
	// with an evaluation: each run hands its state over at the end of
	// every stretch of its steps as it trains, and the runner recomputes
	// stretches it drew before the run began. Nil: only the final model
	// is checked.
	Steps *StepAudit `json:"steps,omitempty" yaml:"steps"`
	// AuditEscape is the stated probability that a job whose fresh runs
	// skip AuditSkipShare of their work passes every audit of the runner
	// (harness.Task.EscapeProbability): 1 for a benchmark of the
	// competitor's code that the runner does not audit, 0 for the portal's
	// own workloads. The catalogue computes it; no file sets it.
	AuditEscape float64 `json:"audit_escape,omitempty" yaml:"-"`
}

// ModelEvaluation is a benchmark's reference evaluation of a run's final
// model (VerifyPolicy.Evaluation). The organiser who defines the benchmark
// writes it; the runner runs it once a job, in the sandbox of the job's
// runs once they are over, as `python3 -I SCRIPT MODEL...` with their
// environment ($D5_DATA_DIR is the runner's data sets), and it prints one
// JSON line a model, in order: {"accuracy": A}. Each MODEL holds the bytes
// a run wrote into $D5_MODEL before its run_stop.
type ModelEvaluation struct {
	// Script is the Python source of the evaluation.
	Script string `json:"script" yaml:"script"`
	// MaxModelBytes bounds the model a run hands over; zero means
	// DefaultMaxModelBytes.
	MaxModelBytes int64 `json:"max_model_bytes,omitempty" yaml:"max_model_bytes"`
	// TimeLimitSeconds bounds the evaluation of a job's models; zero
	// means DefaultEvaluationSeconds.
	TimeLimitSeconds int `json:"time_limit_s,omitempty" yaml:"time_limit_s"`
}

// Defaults of a ModelEvaluation.
const (
	DefaultMaxModelBytes     = 1 << 30
	DefaultEvaluationSeconds = 600
)

// ModelBytes is the most a run's model may hold.
func (e *ModelEvaluation) ModelBytes() int64 {
	if e.MaxModelBytes > 0 {
		return e.MaxModelBytes
	}
	return DefaultMaxModelBytes
}

// TimeLimit is how long the evaluation of a job's models may take.
func (e *ModelEvaluation) TimeLimit() time.Duration {
	if e.TimeLimitSeconds > 0 {
		return time.Duration(e.TimeLimitSeconds) * time.Second
	}
	return DefaultEvaluationSeconds * time.Second
}

// StepAudit is a benchmark's audit of the training steps of runs whose
// loop is the competitor's own (VerifyPolicy.Steps). A run splits its
// minibatch steps into Stretches stretches, as even as the benchmark's
// rules say, and writes into $D5_STATES, as it trains, its state before
// the first (state 0) and at the end of each stretch (state i), each a
// JSON header line {"state": i, "size": bytes} and the state's bytes in
// the benchmark's format. The runner keeps the states of the stretches it
// drew before the run's window opened and, once the job's runs are over,
// runs the organiser's Script as `python3 -I SCRIPT CHECKS` in the runs'
// sandbox on its own /usr. CHECKS is a JSON file: {"stretches": G,
// "fixed": {...}, "mutable": {...}, "checks": [{"seed": S, "stretch": i,
// "before": FILE or null, "after": FILE, "model": FILE or null}]}, the
// recipe's parts as the competitor fixed them before the run. For each
// check the script recomputes stretch i from before (null: the initial
// state the benchmark's rules make from the seed) with the seed's data
// order and the recipe's hyperparameters, and prints {"error": E}: how far
// after is from its recomputation, relative to the stretch's change. The
// last stretch's check also names the model the run handed to the
// evaluation, which must be its state's weights.
type StepAudit struct {
	Script    string `json:"script" yaml:"script"`
	Stretches int    `json:"stretches" yaml:"stretches"`
	// MaxStateBytes bounds one state; zero means DefaultMaxStateBytes.
	// The runner holds the drawn stretches' states of a run in memory it
	// touched before the window, so it is also what each kept state costs.
	MaxStateBytes int64 `json:"max_state_bytes,omitempty" yaml:"max_state_bytes"`
	// Tolerance is the largest error of a stretch that passes; zero means
	// DefaultStepTolerance.
	Tolerance float64 `json:"tolerance,omitempty" yaml:"tolerance"`
	// TimeLimitSeconds bounds the script's checks of a job; zero means
	// DefaultEvaluationSeconds.
	TimeLimitSeconds int `json:"time_limit_s,omitempty" yaml:"time_limit_s"`
}

// Defaults and bounds of a StepAudit.
const (
	DefaultMaxStateBytes = 16 << 20
	MaxStepStretches     = 1_000_000
	// DefaultStepTolerance passes float32 recomputations of a stretch in
	// another order (about 1e-6 of its change) and fails one minibatch
	// left out of it (about 1/steps of its change, for stretches of a
	// few steps) or one short step.
	DefaultStepTolerance = 1e-2
)

// StateBytes is the most one state may hold.
func (s *StepAudit) StateBytes() int64 {
	if s.MaxStateBytes > 0 {
		return s.MaxStateBytes
	}
	return DefaultMaxStateBytes
}

// ErrorTolerance is the largest error of a stretch that passes.
func (s *StepAudit) ErrorTolerance() float64 {
	if s.Tolerance > 0 {
		return s.Tolerance
	}
	return DefaultStepTolerance
}

// TimeLimit is how long the script's checks of a job may take.
func (s *StepAudit) TimeLimit() time.Duration {
	if s.TimeLimitSeconds > 0 {
		return time.Duration(s.TimeLimitSeconds) * time.Second
	}
	return DefaultEvaluationSeconds * time.Second
}

// Audited reports whether the runner checks the work of b's runs itself:
// its harness recomputes their calls or steps, or its evaluation scores
// their final models.
func (b *Benchmark) Audited() bool {
	return b.Verify.Harness != "" || b.Verify.Evaluation != nil
}

// AuditSkipShare is the share of its work a job skips in the coverage the
// portal states (VerifyPolicy.AuditEscape).
const AuditSkipShare = 0.05

// FreshRunCount is how many fresh-seed runs a re-run of bench makes.
func (b *Benchmark) FreshRunCount() int {
	switch n := b.Verify.FreshRuns; {
	case n < 0:
		return 0
	case n > 0:
		return n
	}
	return b.Runs
}

// DefaultTimingPrecision is the timing precision of a benchmark that
// states none.
const DefaultTimingPrecision = 0.10

// Precision is the benchmark's promised timing precision.
func (v VerifyPolicy) Precision() float64 {
	if v.TimingPrecision > 0 {
		return v.TimingPrecision
	}
	return DefaultTimingPrecision
}

// DefaultTimingDrift allows a runner a quarter slower than the machine a
// claim was made on: more than two machines of one model differ by, or one
// machine between a cool and a hot afternoon (docs/timing.md).
const DefaultTimingDrift = 0.25

// Drift is the benchmark's allowance for a slower machine (TimingDrift).
func (v VerifyPolicy) Drift() float64 {
	if v.TimingDrift > 0 {
		return v.TimingDrift
	}
	return DefaultTimingDrift
}

// DefaultRemeasures is how many more measurements a timing verdict may
// wait for: with the first, three, so that one busy moment of a runner
// decides nothing.
const DefaultRemeasures = 2

// RemeasureCount is how many more measurements of its timed runs a timing
// verdict may wait for (Remeasures).
func (v VerifyPolicy) RemeasureCount() int {
	switch n := v.Remeasures; {
	case n < 0:
		return 0
	case n > 0:
		return n
	}
	return DefaultRemeasures
}

// RemeasuredOn reports whether a re-run on a runner with these labels
// measured sub's timing: the runner matches the declared system in every
// label the benchmark names (a benchmark that names none times on any
// runner). Only then is the portal's measurement the submission's value.
// The system description declares the CPU and the accelerators' model and
// count; the GPU driver is what the claim's environment recorded (`d5list
// run` writes the accelerator_driver label nvidia-smi gives), since a
// system.json does not say it.
func (b *Benchmark) RemeasuredOn(sub *Submission, runner map[string]string) bool {
	declared := map[string]string{
		"cpu_model":         sub.HostCPU,
		"accelerator_model": sub.Accelerator,
		"accelerator_count": strconv.Itoa(sub.Accelerators),
	}
	if sub.Claimed != nil {
		declared["accelerator_driver"] = sub.Claimed.Runner["accelerator_driver"]
	}
	for _, label := range b.Verify.SameHardware {
		want, ok := declared[label]
		if !ok || want == "" || runner[label] != want {
			return false
		}
	}
	return true
}

// ConvergencePoint is a reference: runs at this global batch size need
// EpochsMean epochs (with EpochsStdev) to reach the target.
type ConvergencePoint struct {
	GlobalBatchSize int     `json:"global_batch_size" yaml:"global_batch_size"`
	EpochsMean      float64 `json:"epochs_mean" yaml:"epochs_mean"`
	EpochsStdev     float64 `json:"epochs_stdev" yaml:"epochs_stdev"`
	Samples         int     `json:"samples" yaml:"samples"`
}
