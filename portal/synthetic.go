package portal

import (
	"context"
	"time"

	d5list "github.com/deep500/d5list"
	"github.com/deep500/d5list/leaderboard"
)

// SyntheticSubmitter is the submitter of made-up submissions
// (store.SyntheticSubmitter), repeated to keep the portal off the store
// package.
const SyntheticSubmitter = "synthetic (d5list admin seed-synthetic)"

// SyntheticVerdict writes one made-up verdict the way a real one is
// written, for load measurements on a data folder of synthetic
// submissions (serve --synthetic-verdicts): the seq-th synthetic
// submission of bench is queued with its job, leased, and completed as
// verified with its claim as the measurement through the store's
// CompleteJob, the store method of every verdict; then its board's caches
// are dropped, as after a runner's report.
func (s *Service) SyntheticVerdict(ctx context.Context, bench *d5list.Benchmark, seq int) error {
	sub := leaderboard.SyntheticRange(bench, seq, seq+1, 1000, SyntheticSubmitter, uint64(time.Now().UnixNano()))[0]
	measured := sub.Measured
	sub.Measured, sub.Status = nil, d5list.StatusQueued
	if err := s.store.CreateSubmission(ctx, &sub); err != nil {
		return err
	}
	// The folder holds synthetic submissions only (serve checks), so a
	// job ahead of this one is one a stopped process left queued: it gets
	// its verdict too, its claim as the measurement, rather than blocking
	// every later one.
	for range 100 {
		lease, err := s.store.LeaseJob(ctx, "synthetic-verdicts", map[string]string{"runs": "builtin"}, time.Minute)
		if err != nil {
			return err
		}
		if lease == nil {
			return d5list.Errorf(d5list.ECONFLICT, "synthetic verdicts: submission %d's job is not in the queue", sub.ID)
		}
		result, reasons := measured, sub.Reasons
		if lease.Job.SubmissionID != sub.ID {
			left, err := s.store.Submission(ctx, lease.Job.SubmissionID)
			if err != nil {
				return err
			}
			if left.Submitter != SyntheticSubmitter {
				return d5list.Errorf(d5list.ECONFLICT, "synthetic verdicts: the queue holds submission %d of %q; run them on a data folder of synthetic submissions only", left.ID, left.Submitter)
			}
			result, reasons = leaderboard.SyntheticMeasured(left.Claimed), nil
		}
		if err := s.store.CompleteJob(ctx, lease.Job.ID, lease.Secret, result, d5list.StatusVerified, reasons); err != nil {
			return err
		}
		s.changed()
		if lease.Job.SubmissionID == sub.ID {
			return nil
		}
	}
	return d5list.Errorf(d5list.ECONFLICT, "synthetic verdicts: more than 100 jobs queued ahead of submission %d", sub.ID)
}
