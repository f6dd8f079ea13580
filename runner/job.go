package runner

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"time"

	d5list "github.com/deep500/d5list"
	"github.com/deep500/d5list/bundle"
	"github.com/deep500/d5list/harness"
)

// jobSetup is what the bundle-running executors share: where a job's
// bundle is extracted, and the time limit when its benchmark sets none.
type jobSetup struct {
	fetch     FetchFunc
	dir       string
	limits    bundle.Limits
	keep      bool // keep the job folder after the job
	timeLimit time.Duration
	// prepare, when set, readies the extracted job folder for its runs
	// (a recipe's image) before the first run's clock starts, so that
	// no run is timed with it.
	prepare func(ctx context.Context, job string) error
	// record, when set, is asked after the runs, in the job folder still
	// there, for what they ran with; its labels go into every run's
	// RunClock.Environment.
	record func(ctx context.Context) map[string]string
	// afterRuns, when set, is called once the runs are over, in the job
	// folder still there, with their logs in index order (the benchmark's
	// evaluation of their models).
	afterRuns func(ctx context.Context, job string, logs []d5list.RunLog) error
	// freshFirst runs the job's fresh seeds before the claim's; the logs
	// come back in index order either way.
	freshFirst bool
}

// runFunc runs one seed of the entrypoint (mode: its file mode) in job and
// returns that run's MLLOG.
type runFunc func(ctx context.Context, spec d5list.JobSpec, job, entry string, mode os.FileMode, i int, seed int64) ([]byte, *d5list.RunClock, error)

// execute checks the entrypoint, extracts the bundle, and runs each seed in
// order under the benchmark's time limit.
func (s jobSetup) execute(ctx context.Context, spec d5list.JobSpec, run runFunc) ([]d5list.RunLog, error) {
	entry, err := checkEntrypoint(spec.Recipe.Entrypoint)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeoutCause(ctx, jobTimeLimit(spec, s.timeLimit),
		d5list.Errorf(d5list.ECONFLICT, "job %d exceeded the benchmark's time limit", spec.JobID))
	defer cancel()

	job, err := prepareJob(ctx, s.fetch, spec, s.dir, s.limits)
	if err != nil {
		return nil, err
	}
	if !s.keep {
		defer os.RemoveAll(job)
	}
	info, err := os.Stat(filepath.Join(job, "bundle", filepath.FromSlash(entry)))
	if err != nil || !info.Mode().IsRegular() {
		return nil, d5list.Errorf(d5list.EINVALID, "recipe: entrypoint %q is not a file of the bundle", entry)
	}
	if err := harness.Stage(filepath.Join(job, "lib")); err != nil {
		return nil, err
	}
	if s.prepare != nil {
		if err := s.prepare(ctx, job); err != nil {
			if c := context.Cause(ctx); c != nil {
				return nil, c
			}
			return nil, err
		}
	}
	runs := spec.Runs()
	if s.freshFirst {
		slices.SortStableFunc(runs, func(a, b d5list.SeededRun) int { return cmpBool(b.Fresh, a.Fresh) })
	}
	logs := make([]d5list.RunLog, 0, len(runs))
	for _, r := range runs {
		i, seed := r.Index, r.Seed
		start := time.Now()
		log, clock, err := run(ctx, spec, job, entry, info.Mode(), i, seed)
		if err != nil {
			if c := context.Cause(ctx); c != nil {
				// A cap met on the way to the time limit is the likelier
				// reason the run was slow, and the one its operator can act on.
				var capped *capError
				if errors.As(err, &capped) {
					return nil, fmt.Errorf("run %d (seed %d): %s; then %w", i, seed, capped.met, c)
				}
				return nil, fmt.Errorf("run %d (seed %d): %w", i, seed, c)
			}
			return nil, fmt.Errorf("run %d (seed %d): %w", i, seed, err)
		}
		// The runner's clock, not the entrypoint's: the log's timestamps
		// are the run's claim about itself.
		if clock == nil {
			clock = &d5list.RunClock{}
		}
		clock.WallS = time.Since(start).Seconds()
		logs = append(logs, d5list.RunLog{Index: i, Seed: seed, Fresh: r.Fresh, Log: log, Clock: clock})
	}
	slices.SortFunc(logs, func(a, b d5list.RunLog) int { return a.Index - b.Index })
	if s.afterRuns != nil {
		if err := s.afterRuns(ctx, job, logs); err != nil {
			if c := context.Cause(ctx); c != nil {
				return nil, fmt.Errorf("%w: %w", err, c)
			}
			return nil, err
		}
	}
	if s.record != nil {
		versions := s.record(ctx)
		for _, l := range logs {
			if len(versions) > 0 && l.Clock.Environment == nil {
				l.Clock.Environment = map[string]string{}
			}
			for k, v := range versions {
				l.Clock.Environment[k] = v
			}
		}
	}
	return logs, nil
}

// cmpBool orders false before true.
func cmpBool(a, b bool) int {
	switch {
	case a == b:
		return 0
	case a:
		return 1
	}
	return -1
}

// jobTimeLimit is the benchmark's bound on one re-run job.
func jobTimeLimit(spec d5list.JobSpec, def time.Duration) time.Duration {
	if s := spec.Benchmark.Verify.TimeLimitSeconds; s > 0 {
		return time.Duration(s) * time.Second
	}
	return def
}

// checkEntrypoint accepts only a clean path inside the bundle.
func checkEntrypoint(e string) (string, error) {
	if e == "" {
		return "", d5list.Errorf(d5list.EINVALID, "recipe: entrypoint is empty; the process executor needs one (for example code/run.sh)")
	}
	if strings.Contains(e, `\`) || path.IsAbs(e) || path.Clean(e) != e || e == "." || e == ".." || strings.HasPrefix(e, "../") {
		return "", d5list.Errorf(d5list.EINVALID, "recipe: entrypoint %q must be a relative path inside the bundle", e)
	}
	return e, nil
}

// prepareJob makes <work>/d5job-*/bundle with the extracted bundle. The job
// folder is world-traversable so that the sandbox user can reach the bind
// sources. Its name is random only: a run sees it (its bind mounts'
// sources, in /proc/self/mountinfo), and the job's id is not the run's to
// know.
func prepareJob(ctx context.Context, fetch FetchFunc, spec d5list.JobSpec, work string, lim bundle.Limits) (string, error) {
	if err := os.MkdirAll(work, 0o755); err != nil {
		return "", err
	}
	job, err := os.MkdirTemp(work, "d5job-")
	if err != nil {
		return "", err
	}
	ok := false
	defer func() {
		if !ok {
			os.RemoveAll(job)
		}
	}()
	if err := os.Chmod(job, 0o755); err != nil {
		return "", err
	}
	archive := filepath.Join(job, "bundle.archive")
	f, err := os.OpenFile(archive, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o600)
	if err != nil {
		return "", err
	}
	err = fetch(ctx, spec, f)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return "", fmt.Errorf("fetching the bundle of job %d: %w", spec.JobID, err)
	}
	if err := bundle.Extract(archive, filepath.Join(job, "bundle"), lim); err != nil {
		return "", fmt.Errorf("extracting the bundle of job %d: %w", spec.JobID, err)
	}
	if err := os.Remove(archive); err != nil {
		return "", err
	}
	ok = true
	return job, nil
}
