package portal

import (
	"context"
	"fmt"
	"time"

	d5list "github.com/deep500/d5list"
	"github.com/deep500/d5list/verifier"
)

// Re-measuring. A verdict that rests on timing alone (a re-run too noisy
// to judge, or a gap between the claimed and the measured times that a
// busy or drifting machine may have made) is not published at once: the
// submission's timed runs are measured again, later and on another runner
// where there is one, up to the benchmark's Verify.RemeasureCount times
// (verifier.Remeasure says when). Each measurement stays in the
// submission's history; the last one is the verdict and what ranks.

// Defaults of Config.RemeasureAfter and Config.RemeasureElsewhere.
const (
	DefaultRemeasureAfter     = 15 * time.Second
	DefaultRemeasureElsewhere = 30 * time.Second
)

// RemeasureStore is what re-measuring needs of the store, asked by type
// assertion: a store without it publishes every verdict as it comes.
type RemeasureStore interface {
	RemeasureJob(ctx context.Context, jobID int64, secret string, measured *d5list.Result, st d5list.Status,
		reasons []d5list.Reason, req d5list.RemeasureRequest) error
	Attempts(ctx context.Context, submissionID int64) ([]d5list.Attempt, error)
}

// remeasureChain reads what the earlier measurements of a re-measure job
// found: the latest one's measurement, whose re-runs of the claimed seeds
// this job did not repeat, and how many of them found a timing gap.
func remeasureChain(ctx context.Context, rs RemeasureStore, job *d5list.Job) (last *d5list.Result, gapsSeen int, err error) {
	attempts, err := rs.Attempts(ctx, job.SubmissionID)
	if err != nil {
		return nil, 0, err
	}
	for _, a := range attempts {
		switch {
		case a.Job.ID >= job.ID:
			continue
		case a.Job.Remeasure == 0:
			// A first re-run starts the chain: an organiser's re-run
			// starts a new one.
			last, gapsSeen = nil, 0
		}
		if a.Measured != nil {
			last = a.Measured
		}
		if a.Status == d5list.StatusDiscrepancy {
			gapsSeen++
		}
	}
	if last == nil {
		return nil, 0, fmt.Errorf("job %d re-measures submission %d, which has no earlier measurement", job.ID, job.SubmissionID)
	}
	return last, gapsSeen, nil
}

// withReproducedRuns completes the measurement of a re-measure that ran
// only the timed runs with the re-runs of the claimed seeds of the
// measurement it repeats, which come first, as in a whole re-run: the
// claim's reproduction is judged as it was, its times anew.
func withReproducedRuns(timed, earlier *d5list.Result) *d5list.Result {
	reproduced := earlier.ClaimedSeedRuns()
	out := *timed
	out.Runs = make([]d5list.RunMetrics, 0, len(reproduced)+len(timed.Runs))
	out.Runs = append(out.Runs, reproduced...)
	for _, r := range timed.Runs {
		r.Index = len(out.Runs)
		r.File = rerunFile(r.Index)
		out.Runs = append(out.Runs, r)
	}
	return &out
}

// remeasure holds the verdict back and queues the timed runs again.
func (s *Service) remeasure(ctx context.Context, rs RemeasureStore, job *d5list.Job, secret string, measured *d5list.Result,
	status d5list.Status, reasons []d5list.Reason, why string) error {
	req := d5list.RemeasureRequest{Why: why, After: s.cfg.RemeasureAfter, Elsewhere: s.cfg.RemeasureElsewhere}
	if err := rs.RemeasureJob(ctx, job.ID, secret, measured, status, reasons, req); err != nil {
		return err
	}
	s.changed()
	if s.cfg.OnJobEnd != nil {
		s.cfg.OnJobEnd("remeasure", time.Since(job.CreatedAt))
	}
	s.log.InfoContext(ctx, "verdict held back: timed runs to be measured again", "submission", job.SubmissionID, "job", job.ID,
		"status", status, "why", why, "remeasure", job.Remeasure+1)
	return nil
}

// remeasureWhy says why the verdict of job on claimed waits for another
// measurement, or "".
func remeasureWhy(bench *d5list.Benchmark, job *d5list.Job, claimed, measured *d5list.Result, status d5list.Status, reasons []d5list.Reason, gapsSeen int) string {
	if job.Remeasure >= bench.Verify.RemeasureCount() {
		return ""
	}
	return verifier.Remeasure(bench, claimed, measured, status, reasons, gapsSeen)
}
