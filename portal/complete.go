package portal

import (
	"context"
	"math"
	"strings"
	"time"

	d5list "github.com/deep500/d5list"
	"github.com/deep500/d5list/mllog"
	"github.com/deep500/d5list/verifier"
)

// Complete turns the re-run logs of a job into the submission's verdict.
// A malformed report is refused without touching the job.
func (s *Service) Complete(ctx context.Context, jobID int64, secret string, logs []d5list.RunLog, runner map[string]string) error {
	job, err := s.store.CheckLease(ctx, jobID, secret)
	if err != nil {
		return err
	}
	sub, err := s.store.Submission(ctx, job.SubmissionID)
	if err != nil {
		return err
	}
	bench, err := s.store.Benchmark(ctx, sub.BenchmarkID)
	if err != nil {
		return err
	}
	claimedSeeds := job.ClaimedSeedsToRun(bench, sub.Seeds(), len(job.FreshSeeds))
	if err := reportsTheLeasedRuns(claimedSeeds, job.FreshSeeds, logs); err != nil {
		return err
	}
	measured, err := Measure(bench, logs)
	if err != nil {
		return err
	}
	measured.Runner = runner
	if err := s.keepRerunLogs(measured, logs); err != nil {
		return err
	}
	rs, remeasures := s.store.(RemeasureStore)
	gapsSeen := 0
	if remeasures && job.Remeasure > 0 {
		earlier, gaps, err := remeasureChain(ctx, rs, job)
		if err != nil {
			return err
		}
		if len(claimedSeeds) == 0 {
			measured = withReproducedRuns(measured, earlier)
		}
		gapsSeen = gaps
	}
	status, reasons := verifier.Compare(bench, sub.Claimed, measured, bench.RemeasuredOn(sub, runner))
	if why := remeasureWhy(bench, job, sub.Claimed, measured, status, reasons, gapsSeen); remeasures && why != "" {
		return s.remeasure(ctx, rs, job, secret, measured, status, reasons, why)
	}
	if err := s.store.CompleteJob(ctx, jobID, secret, measured, status, reasons); err != nil {
		return err
	}
	s.changed()
	if s.cfg.OnJobEnd != nil {
		s.cfg.OnJobEnd(string(status), time.Since(job.CreatedAt))
	}
	s.log.InfoContext(ctx, "verdict", "submission", sub.ID, "status", status, "reasons", len(reasons))
	return nil
}

// keepRerunLogs files each re-run's MLLOG, as the runner reported it, in
// the blob store and names it on its measured run, so that the logs the
// verdict was derived from can be downloaded beside the claimed ones. A
// report sent again files the same blobs again, which changes nothing. A
// service without a blob store keeps none.
func (s *Service) keepRerunLogs(measured *d5list.Result, logs []d5list.RunLog) error {
	if s.blobs == nil {
		return nil
	}
	for i, l := range logs {
		w, err := s.blobs.Create()
		if err != nil {
			return err
		}
		if _, err := w.Write(l.Log); err != nil {
			w.Abort()
			return err
		}
		sha, _, err := w.Commit()
		if err != nil {
			return err
		}
		measured.Runs[i].LogSHA256 = sha
	}
	return nil
}

// onRunnerClock puts a re-run whose log the competitor's code wrote on the
// runner's clock: its time to train is its window as the runner saw it
// (LogS: from the run taking its seed at the gate to its run_stop line
// arriving), or the run's whole wall time where it breached its window.
// The log's evaluation times and time to accuracy are stretched or shrunk
// with it (and the throughput inversely): a re-run that sleeps 5 s and
// logs 10 ms measures 5 s, and one that replays a claim's logs in no time
// measures no time. The log's own timestamps are the run's claim.
func onRunnerClock(run *d5list.RunMetrics) {
	c := run.Clock
	if c == nil || !c.CompetitorLog {
		return
	}
	seen, _ := c.TimedS()
	if seen == run.TimeToTrain {
		return
	}
	if run.TimeToTrain <= 0 {
		run.TimeToTrain = seen
		return
	}
	f := seen / run.TimeToTrain
	run.TimeToTrain = seen
	run.TTA *= f
	for i := range run.Evals {
		run.Evals[i].Seconds *= f
	}
	run.Throughput /= f
}

// throughputOnRunnerClock ranks a re-run of the competitor's own code by
// the samples its benchmark fixes over the time the runner saw, where the
// benchmark ranks throughput: the throughput the code logs is a number it
// chose, and stretching it with the run's time (onRunnerClock) leaves a
// forged figure forged whenever the run_start and run_stop lines are
// honest.
func throughputOnRunnerClock(bench *d5list.Benchmark, run *d5list.RunMetrics) {
	if run.Clock == nil || !run.Clock.CompetitorLog || bench.Ranking.Metric != d5list.MetricThroughput {
		return
	}
	samples, ok := bench.FixedSamples()
	if !ok || !(run.TimeToTrain > 0) {
		return
	}
	run.Throughput = samples / run.TimeToTrain
}

// Measure derives the metrics of re-run logs the same way as a submitter's.
// A run's recorded environment, which a remote runner sends and the
// measured result publishes, is bounded, and the values of variables that
// may hold secrets are hidden, whatever the runner did.
func Measure(bench *d5list.Benchmark, logs []d5list.RunLog) (*d5list.Result, error) {
	// The runner records at most 64 variables and 64 framework.* versions,
	// keys of at most 68 bytes and values of at most 200 (runner.envRecord).
	const (
		maxEnvironmentEntries = 128
		maxEnvironmentBytes   = 200
	)
	if len(logs) == 0 {
		return nil, d5list.Errorf(d5list.EINVALID, "the report holds no run logs")
	}
	res := &d5list.Result{}
	for i, l := range logs {
		if l.Index != i {
			return nil, d5list.Errorf(d5list.EINVALID, "run logs out of order: position %d holds run %d", i, l.Index)
		}
		file := rerunFile(l.Index)
		events, err := mllog.Parse(bytesReader(l.Log), file)
		if err != nil {
			return nil, err
		}
		run, _ := mllog.Derive(events, bench.Quality, file, l.Index)
		run.NonFinite = mllog.NonFinite(events, file, maxNonFinite)
		if l.Clock != nil {
			c := *l.Clock
			for _, v := range []float64{c.WallS, c.CPUS, c.WaitS, c.LogS, c.BeforeWindowCPUS, c.BeforeWindowS} {
				if math.IsNaN(v) || math.IsInf(v, 0) || v < 0 {
					return nil, d5list.Errorf(d5list.EINVALID, "run %d: clock: wall, CPU, wait, window and before-window times must be finite and not negative", l.Index)
				}
			}
			if err := checkBreaches(l.Index, c.Breaches); err != nil {
				return nil, err
			}
			if err := checkAudit(l.Index, c.Audit); err != nil {
				return nil, err
			}
			if len(c.Environment) > maxEnvironmentEntries {
				return nil, d5list.Errorf(d5list.EINVALID, "run %d: clock: the recorded environment holds %d entries, more than %d", l.Index, len(c.Environment), maxEnvironmentEntries)
			}
			env := make(map[string]string, len(c.Environment))
			for k, v := range c.Environment {
				if len(k) > maxEnvironmentBytes || len(v) > maxEnvironmentBytes {
					return nil, d5list.Errorf(d5list.EINVALID, "run %d: clock: the recorded environment's entry %.40q is longer than %d bytes", l.Index, k, maxEnvironmentBytes)
				}
				if name, ok := strings.CutPrefix(k, "env."); ok && d5list.SecretName(name) {
					v = d5list.HiddenValue
				}
				env[k] = v
			}
			c.Environment = nil
			if len(env) > 0 {
				c.Environment = env
			}
			run.Clock = &c
			onRunnerClock(&run)
			throughputOnRunnerClock(bench, &run)
		}
		run.Fresh, run.GivenSeed = l.Fresh, l.Seed
		res.Runs = append(res.Runs, run)
	}
	res.Score = d5list.OlympicScore(res.TimedRuns(), bench.Ranking.Metric, bench.Ranking.Direction)
	return res, nil
}

// maxNonFinite bounds the non-finite values a re-run's findings name: one
// decides, a few show the pattern.
const maxNonFinite = 5

// rerunFile names a re-run's log in findings.
func rerunFile(index int) string { return "rerun/result_" + itoa(index) + ".txt" }

// checkBreaches bounds a run's reported breaches of its window: the
// runner's codes only, each message a sentence, a handful at most (a run
// breaches its window in one way at a time).
func checkBreaches(run int, breaches []d5list.Reason) error {
	const maxBreaches, maxBreachMessage = 4, 300
	if len(breaches) > maxBreaches {
		return d5list.Errorf(d5list.EINVALID, "run %d: clock: %d breaches, more than %d", run, len(breaches), maxBreaches)
	}
	for _, b := range breaches {
		if !d5list.IsBreach(b.Code) || len(b.Message) > maxBreachMessage {
			return d5list.Errorf(d5list.EINVALID, "run %d: clock: breach %.40q is not one the runner reports, or its message is over %d bytes", run, b.Code, maxBreachMessage)
		}
	}
	return nil
}

// checkAudit bounds a run's reported audit as the runner makes it: a
// section per operator shape (the harness's 64 commitments at most), a
// few calls checked in each, finite errors, and failures with the audit's
// codes in a sentence each.
func checkAudit(run int, a *d5list.Audit) error {
	if a == nil {
		return nil
	}
	// maxChecked: a full audit checks up to 1,024 calls a section
	// (harness.MaxFullChecks).
	const maxSections, maxChecked, maxMessage = 64, 1024, 300
	if len(a.Sections) > maxSections || len(a.Failures) > maxSections*(maxChecked+1) {
		return d5list.Errorf(d5list.EINVALID, "run %d: audit: %d sections and %d failures, more than a runner reports", run, len(a.Sections), len(a.Failures))
	}
	for _, s := range a.Sections {
		bad := len(s.Name) > maxMessage || len(s.Checked) > maxChecked || s.Calls < 0
		for _, v := range []float64{s.MaxRelError, s.MaxAbsError} {
			bad = bad || math.IsNaN(v) || math.IsInf(v, 0) || v < 0
		}
		if bad {
			return d5list.Errorf(d5list.EINVALID, "run %d: audit: section %.40q is not one a runner reports", run, s.Name)
		}
	}
	for _, f := range a.Failures {
		known := f.Code == d5list.AuditMissing || f.Code == d5list.AuditMismatch || f.Code == d5list.AuditNonFinite
		if !known || len(f.Message) > maxMessage {
			return d5list.Errorf(d5list.EINVALID, "run %d: audit: failure %.40q is not one a runner reports", run, f.Code)
		}
	}
	return nil
}

// reportsTheLeasedRuns checks that a runner's report holds the runs its
// lease asked for, in order: the claimed seeds, then the fresh seeds the
// lease drew. A runner that knows no fresh seeds (older than the portal)
// reports too few runs and is told so.
func reportsTheLeasedRuns(claimed, fresh []int64, logs []d5list.RunLog) error {
	want := d5list.JobSpec{Seeds: claimed, FreshSeeds: fresh}.Runs()
	if len(logs) != len(want) {
		return d5list.Errorf(d5list.EINVALID, "the report holds %d runs; the lease asked for %d (%d with the claimed seeds, %d with fresh ones): is the runner older than the portal?",
			len(logs), len(want), len(claimed), len(fresh))
	}
	for i, w := range want {
		if l := logs[i]; l.Seed != w.Seed || l.Fresh != w.Fresh {
			return d5list.Errorf(d5list.EINVALID, "run %d: the report says seed %d (fresh %t); the lease asked for seed %d (fresh %t)",
				i, l.Seed, l.Fresh, w.Seed, w.Fresh)
		}
	}
	return nil
}
