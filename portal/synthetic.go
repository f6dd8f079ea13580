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
	lease, err := s.store.LeaseJob(ctx, "synthetic-verdicts", map[string]string{"runs": "builtin"}, time.Minute)
	if err != nil {
		return err
	}
	if lease == nil || lease.Job.SubmissionID != sub.ID {
		return d5list.Errorf(d5list.ECONFLICT, "synthetic verdicts: the queue holds other jobs; run them on a data folder of synthetic submissions only")
	}
	if err := s.store.CompleteJob(ctx, lease.Job.ID, lease.Secret, measured, d5list.StatusVerified, sub.Reasons); err != nil {
		return err
	}
	s.changed()
	s.cache.Invalidate(bench.ID)
	return nil
}
