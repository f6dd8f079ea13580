package d5list

import (
	"strings"
	"time"
)

// JobState is where a verification job is in the queue.
type JobState string

const (
	JobQueued    JobState = "queued"
	JobLeased    JobState = "leased"
	JobDone      JobState = "done"
	JobFailed    JobState = "failed"
	JobCancelled JobState = "cancelled"
)

// Job is one verification re-run of a submission.
type Job struct {
	ID           int64    `json:"id"`
	SubmissionID int64    `json:"submission_id"`
	BenchmarkID  string   `json:"benchmark"`
	State        JobState `json:"state"`
	Attempts     int      `json:"attempts"`
	MaxAttempts  int      `json:"max_attempts"`
	RunnerID     string   `json:"runner_id,omitempty"`
	// Requires are the runner labels the submission itself needs beyond
	// its benchmark's (Recipe.RunnerNeeds: images=yes for a recipe image,
	// and registry.HOST=yes for a registry one), stored at upload and
	// copied to a re-run's job. Leasing also checks the recipe's needs as
	// RunnerNeeds says today, for jobs stored before a need was added; a
	// benchmark's requires are read at lease time.
	Requires map[string]string `json:"requires,omitempty"`
	// FreshSeeds are the seeds the latest lease drew for the job's fresh
	// runs (JobSpec.FreshSeeds); never published, so not in JSON.
	FreshSeeds []int64 `json:"-"`
	// Remeasure is 0 for a re-run of the whole claim, and n for the n-th
	// measurement again of the timed runs of a verdict that rested on
	// timing alone (VerifyPolicy.Remeasures).
	Remeasure    int       `json:"remeasure,omitempty"`
	LeaseExpires time.Time `json:"lease_expires,omitempty"`
	Error        string    `json:"error,omitempty"`
	CreatedAt    time.Time `json:"created_at"`
	UpdatedAt    time.Time `json:"updated_at"`
}

// ClaimedSeedsToRun are the claimed seeds a lease of j for bench re-runs
// beside freshRuns fresh ones: all of them, but none in a re-measure of
// the competitor's code that has fresh runs, which times only those
// (Result.TimedRuns; the job it repeats reproduced the claimed seeds'
// runs).
func (j *Job) ClaimedSeedsToRun(bench *Benchmark, claimed []int64, freshRuns int) []int64 {
	if j.Remeasure > 0 && freshRuns > 0 && bench.ReRunBy() == RunsEntrypoint {
		return nil
	}
	return claimed
}

// RemeasureRequest asks for the timed runs of a submission to be measured
// again before its verdict stands.
type RemeasureRequest struct {
	// Why is what in the verdict asks for it, for the timeline.
	Why string
	// After is how long no runner may take the new job: a busy moment of
	// a machine passes.
	After time.Duration
	// Elsewhere is how long after that only another runner than the last
	// may take it, where one that can run it is online.
	Elsewhere time.Duration
}

// Lease is what a runner holds while it works on a job. The secret proves
// the holder on every callback; it is never stored in clear.
type Lease struct {
	Job    Job     `json:"job"`
	Secret string  `json:"secret"`
	Spec   JobSpec `json:"spec"`
}

// JobSpec is everything a runner needs to re-run a submission.
type JobSpec struct {
	JobID        int64     `json:"job_id"`
	SubmissionID int64     `json:"submission_id"`
	Benchmark    Benchmark `json:"benchmark"`
	Recipe       Recipe    `json:"recipe"`
	Seeds        []int64   `json:"seeds"` // one per claimed run, in run order
	// FreshSeeds are seeds the portal drew when it leased the job and
	// published nowhere: the runs after the claimed ones. The competitor's
	// code cannot have computed, stored or tuned anything for them, so
	// they are the runs whose times rank (Result.TimedRuns), and they are
	// judged against the claim's distribution rather than run by run.
	FreshSeeds   []int64 `json:"fresh_seeds,omitempty"`
	BundleSHA256 string  `json:"bundle_sha256"`
	// FullAudit asks the runner to check every call of every section of
	// every run (harness.Task.Challenge), not a sample: the portal sets it
	// where the submission's account failed an audit of the benchmark that
	// no organiser has cleared (AuditFailure), so a failed audit makes the
	// next one certain rather than a draw.
	FullAudit bool `json:"full_audit,omitempty"`
}

// SeededRun is one run a job asks for: its index in the re-run, its seed,
// and whether the seed is one of the job's fresh ones.
type SeededRun struct {
	Index int
	Seed  int64
	Fresh bool
}

// Runs are the runs of the job in order: the claimed seeds, then the
// fresh ones.
func (s JobSpec) Runs() []SeededRun {
	runs := make([]SeededRun, 0, len(s.Seeds)+len(s.FreshSeeds))
	for _, seed := range s.Seeds {
		runs = append(runs, SeededRun{Index: len(runs), Seed: seed})
	}
	for _, seed := range s.FreshSeeds {
		runs = append(runs, SeededRun{Index: len(runs), Seed: seed, Fresh: true})
	}
	return runs
}

// RunLog is the MLLOG text of one re-run, and what the runner's own clocks
// said of it.
type RunLog struct {
	Index int   `json:"index"`
	Seed  int64 `json:"seed"`
	// Fresh says Seed is one of the job's fresh seeds (JobSpec.FreshSeeds).
	Fresh bool      `json:"fresh,omitempty"`
	Log   []byte    `json:"log"`
	Clock *RunClock `json:"clock,omitempty"`
}

// RunClock is what a runner measured of one run with its own clocks, never
// with the timestamps the run wrote: the noise a timing verdict must allow
// for, and a check on the run's own log; and, as the runner's own record
// of the run, what it ran with (Environment).
type RunClock struct {
	// WallS is the runner's monotonic clock from the start of the run
	// (before its own set-up: its folders and sandbox) to its end. The
	// job's preparation (fetching the bundle, a recipe image's pull and
	// unpack) comes before every run's start and is on no run's clock.
	WallS float64 `json:"wall_s"`
	// CPUS is the CPU time the run spent (its thread for the builtin
	// workloads, the whole process tree for the process executor).
	CPUS float64 `json:"cpu_s"`
	// WaitS is the time other work on the machine kept the run waiting
	// for a CPU (the kernel's run-queue delay), where the executor can
	// read it; 0 where it cannot, which corrects nothing. For a run with
	// helper processes it is the share of the run that foreign work
	// delayed them by, times WallS (docs/timing.md).
	WaitS float64 `json:"wait_s"`
	// ForeignCPUS is the CPU time the machine spent on other work while
	// the run ran, every CPU counted (/proc/stat's busy time less the
	// run's own; the process executor): a neighbour that keeps a sibling
	// core busy slows a run without making it wait, which WaitS does not
	// show. 0 where the executor does not read it.
	ForeignCPUS float64 `json:"foreign_cpu_s,omitempty"`
	// CompetitorLog says the run's log was written by the competitor's
	// code (the process executor): its timestamps are a claim like the
	// bundle's, and LogS and WallS are the runner's measure of them.
	CompetitorLog bool `json:"competitor_log,omitempty"`
	// LogS is the run's timed window on the runner's clock: from the run
	// opening its gate (taking its seed) to its run_stop line arriving in
	// the result log the runner reads (runners before the gate: from the
	// run_start line arriving). 0 where the run breached its window, and
	// then the run's whole wall time is its measure.
	LogS float64 `json:"log_s,omitempty"`
	// BeforeWindowCPUS is the CPU time the run's processes spent before its
	// window opened (starting, importing, loading; the process executor):
	// work that could not use the run's seed, shown beside the window.
	BeforeWindowCPUS float64 `json:"before_window_cpu_s,omitempty"`
	// BeforeWindowS is the wall time from the run's start to its window
	// opening, on the runner's clock: the sandbox's start and the run's own
	// start-up. What is left of WallS after it and LogS is the run's end
	// (what it did after run_stop, its reveal, its exit). 0 where no window
	// opened, or the runner did not record it.
	BeforeWindowS float64 `json:"before_window_s,omitempty"`
	// Breaches are what the run did to its window that no honest run does
	// (Breach* codes), as the runner saw it: each is a discrepancy.
	Breaches []Reason `json:"breaches,omitempty"`
	// Audit is the runner's check of a harness benchmark's work after the
	// window (harness package): nil where the benchmark has no harness.
	Audit *Audit `json:"audit,omitempty"`
	// Processes counts the run's processes that the runner saw computing
	// for at least a quarter of its wall time (the process executor): the
	// workers of a data-parallel run, seen rather than taken from the log.
	// Nil where the executor does not count them.
	Processes *int `json:"processes,omitempty"`
	// Environment is what the run ran with, as the runner recorded it
	// (the process executor): the versions its sandbox's python3 reports
	// (framework.python, framework.torch, framework.numpy,
	// framework.blas, framework.cuda, ...), asked once per job inside the
	// job's own sandbox, image and all, and every variable the runner set
	// in the sandbox (env.NAME; the value of one whose name says it may
	// hold a secret is HiddenValue, see SecretName). A re-run whose
	// accuracies differ from the claim's names the versions that differ.
	// Nil where none was recorded. It is published with the measured
	// result.
	Environment map[string]string `json:"environment,omitempty"`
}

// HiddenValue stands in for the value of a recorded environment variable
// that may hold a secret: the record is public, and a run's environment
// includes its image's, which the competitor or a site's registry wrote.
const HiddenValue = "(hidden)"

// SecretName reports whether an environment variable's name says it may
// hold a secret (HF_TOKEN, AWS_SECRET_ACCESS_KEY, DB_PASSWORD, ...). The
// runner sets none of its own in a sandbox; this keeps an image's out of
// the published record.
func SecretName(name string) bool {
	n := strings.ToUpper(name)
	for _, w := range []string{"TOKEN", "SECRET", "PASSWORD", "PASSWD", "CREDENTIAL", "AUTH", "KEY", "COOKIE", "SESSION"} {
		if strings.Contains(n, w) {
			return true
		}
	}
	return false
}

// TimedS is the time the runner's clock gives a run whose log the
// competitor's code wrote (CompetitorLog), the time that ranks it: its
// window (LogS), or its whole wall time where it breached the window or no
// window was measured, and then whole is true.
func (c *RunClock) TimedS() (s float64, whole bool) {
	if c.LogS == 0 || len(c.Breaches) > 0 {
		return c.WallS, true
	}
	return c.LogS, false
}

// Availability is the share of the run's wall time it was not kept
// waiting for a CPU by other work on the machine: 1 on a quiet machine, or
// where the wait is unknown.
func (c *RunClock) Availability() float64 {
	if c == nil || !(c.WallS > 0) || !(c.WaitS > 0) {
		return 1
	}
	a := 1 - c.WaitS/c.WallS
	if a < 0.05 {
		// A run that waited for 95 % of its time says nothing reliable
		// about its speed; do not let it scale a time twentyfold.
		a = 0.05
	}
	return a
}

// Breach codes: how a run of the competitor's code broke its timed window
// (runner/window.go).
const (
	BreachGateNotOpened  = "gate_not_opened" // it never took its seed
	BreachWindowMissing  = "window_missing"  // no run_start, or no run_stop, arrived
	BreachWindowRepeated = "window_repeated" // a second run_start or run_stop arrived
)

// Audit is what a runner found when it checked the outputs of a run of a
// harness benchmark (Benchmark.Verify.Harness) after its window: the run
// committed to every call's output during the window, and the runner
// recomputed a few calls it picked only then with its own reference.
type Audit struct {
	Sections []AuditSection `json:"sections"`
	// Failures are the checks that did not hold (AuditMissing,
	// AuditMismatch, AuditNonFinite): each is a discrepancy.
	Failures []Reason `json:"failures,omitempty"`
	// CPUS is the CPU time the runner spent on this audit.
	CPUS float64 `json:"cpu_s,omitempty"`
}

// AuditSection is one committed stream of calls: an operator shape, or the
// batches of an inference run.
type AuditSection struct {
	Name  string `json:"name"`
	Calls int    `json:"calls"`
	// Checked are the calls the runner recomputed and compared.
	Checked []int `json:"checked"`
	// MaxRelError and MaxAbsError are the largest errors of the checked
	// outputs against the runner's reference: the runner's own measure of
	// the run's accuracy.
	MaxRelError float64 `json:"max_rel_error"`
	MaxAbsError float64 `json:"max_abs_error"`
	// Accuracy is the test accuracy of a training run's last weights by the
	// runner's own evaluation; nil where the section has none.
	Accuracy *float64 `json:"accuracy,omitempty"`
}

// Audit failure codes.
const (
	AuditMissing  = "audit_missing"  // no commitment in the window, or no answer to the audit
	AuditMismatch = "audit_mismatch" // an output that was not the one committed, or not the operator's
	// AuditNonFinite: a NaN or an infinity in what the run committed to or
	// reported, which no tolerance can judge: never excused as in doubt.
	AuditNonFinite = "audit_nonfinite"
)

// IsAuditFailure reports whether a reason's code is a failure of the
// runner's audit of the run's work (AuditMissing, AuditMismatch and any
// later audit_* code the runner reports). AuditNotRun is not one: the
// runner did not audit, which is not the competitor's doing.
func IsAuditFailure(code string) bool {
	return strings.HasPrefix(code, "audit_") && code != AuditNotRun
}

// AuditNotRun is a harness benchmark's re-run that came back without the
// runner's audit (verifier.CodeAuditNotRun): a runner older than the
// harness.
const AuditNotRun = "audit_not_run"

// IsBreach reports whether code is one of the Breach codes.
func IsBreach(code string) bool {
	switch code {
	case BreachGateNotOpened, BreachWindowMissing, BreachWindowRepeated:
		return true
	}
	return false
}

// FailureOutputMarker starts the tail of a run's output that a runner may
// append to a failure message. What follows it is the competitor's private
// output: the portal keeps it out of every public text.
const FailureOutputMarker = "; last output:"
