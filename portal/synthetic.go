package portal

import (
	"context"
	"fmt"
	"time"

	d5list "github.com/deep500/d5list"
	"github.com/deep500/d5list/leaderboard"
)

// SyntheticSubmitter is the submitter of made-up submissions
// (store.SyntheticSubmitter), repeated to keep the portal off the store
// package.
const SyntheticSubmitter = "synthetic (d5list admin seed-synthetic)"

// The kinds of made-up change SyntheticChange writes, each through the
// store method of the real one: every write that changes a board.
const (
	ChangeUpload  = "upload"  // a queued submission with its claim (CreateSubmission)
	ChangeVerdict = "verdict" // the oldest queued job leased and judged verified (LeaseJob, CompleteJob)
	ChangeRescore = "rescore" // the leader re-judged under changed rules, to needs_review (ApplyReview)
	ChangeReview  = "review"  // an organiser accepting an entry in needs_review (Review)
	ChangeEdition = "edition" // an edition frozen (FreezeEdition)
)

// SyntheticChangeKinds are the kinds, in an order in which each can follow
// the one before: a verdict takes the upload's job, a review accepts the
// rescore's entry.
var SyntheticChangeKinds = []string{ChangeUpload, ChangeVerdict, ChangeRescore, ChangeReview, ChangeEdition}

// syntheticOrganiser decides the made-up reviews and freezes; it has no
// account, and the audit names it.
var syntheticOrganiser = &d5list.User{Name: "synthetic changes (d5list serve --synthetic-changes)", Role: d5list.RoleOrganiser}

// SyntheticChange writes the seq-th made-up change, of kind, to bench's
// board, for load measurements on a data folder of synthetic submissions
// only (serve --synthetic-changes). Each goes through the store method
// (and where there is one, the service method) of the real change, so
// that the board's caches follow it as they follow a real one.
func (s *Service) SyntheticChange(ctx context.Context, bench *d5list.Benchmark, kind string, seq int) error {
	switch kind {
	case ChangeUpload:
		sub := leaderboard.SyntheticRange(bench, seq, seq+1, 1000, SyntheticSubmitter, uint64(time.Now().UnixNano()))[0]
		sub.Measured, sub.Status = nil, d5list.StatusQueued
		if err := s.store.CreateSubmission(ctx, &sub); err != nil {
			return err
		}
		s.changed()
		return nil
	case ChangeVerdict:
		return s.syntheticVerdict(ctx)
	case ChangeRescore:
		return s.syntheticRescore(ctx, bench)
	case ChangeReview:
		subs, err := s.store.Submissions(ctx, d5list.SubmissionFilter{BenchmarkID: bench.ID, Statuses: []d5list.Status{d5list.StatusNeedsReview}, Limit: 1})
		if err != nil {
			return err
		}
		if len(subs) == 0 {
			return d5list.Errorf(d5list.ECONFLICT, "synthetic review: no entry of %s is in needs_review; a rescore change puts one there", bench.ID)
		}
		_, _, err = s.Review(ctx, syntheticOrganiser, subs[0].ID, d5list.ReviewRequest{Action: d5list.ActionAccept, Reason: "synthetic review"})
		return err
	case ChangeEdition:
		_, err := s.FreezeEdition(ctx, syntheticOrganiser, fmt.Sprintf("synthetic-%d-%d", time.Now().Unix(), seq))
		return err
	}
	return d5list.Errorf(d5list.EINVALID, "synthetic change %q: want one of %v", kind, SyntheticChangeKinds)
}

// syntheticVerdict leases the oldest queued job and completes it as
// verified, its claim re-measured as the seed's are. The folder holds
// synthetic submissions only (serve checks), so a job is refused only
// where a real one got in since.
func (s *Service) syntheticVerdict(ctx context.Context) error {
	lease, err := s.store.LeaseJob(ctx, "synthetic-changes", map[string]string{"runs": "builtin"}, time.Minute)
	if err != nil || lease == nil {
		return err // nothing queued: no verdict to write
	}
	sub, err := s.store.Submission(ctx, lease.Job.SubmissionID)
	if err != nil {
		return err
	}
	if sub.Submitter != SyntheticSubmitter {
		return d5list.Errorf(d5list.ECONFLICT, "synthetic verdicts: the queue holds submission %d of %q; run them on a data folder of synthetic submissions only", sub.ID, sub.Submitter)
	}
	if err := s.store.CompleteJob(ctx, lease.Job.ID, lease.Secret, leaderboard.SyntheticMeasured(sub.Claimed), d5list.StatusVerified, nil); err != nil {
		return err
	}
	s.changed()
	return nil
}

// syntheticRescore re-judges the leader of bench's board as a rescore
// under changed rules does where the claim no longer passes: it goes to
// needs_review, off the default board, until a review accepts it.
func (s *Service) syntheticRescore(ctx context.Context, bench *d5list.Benchmark) error {
	rs, err := s.reviewStore()
	if err != nil {
		return err
	}
	top, _, err := s.BoardPage(ctx, bench.ID, leaderboard.Options{}, leaderboard.Page{Per: leaderboard.MinPerPage})
	if err != nil {
		return err
	}
	if len(top.Entries) == 0 {
		return d5list.Errorf(d5list.ECONFLICT, "synthetic rescore: the board of %s is empty", bench.ID)
	}
	reasons := []d5list.Reason{{Code: "synthetic", Message: "a made-up rescore for a load measurement"}}
	_, err = rs.ApplyReview(ctx, d5list.ReviewChange{SubmissionID: top.Entries[0].SubmissionID, Actor: syntheticOrganiser,
		Action: d5list.ActionRescore, Reason: "synthetic rescore", FromStatus: d5list.StatusVerified, ToStatus: d5list.StatusNeedsReview,
		Reasons: &reasons})
	if err == nil {
		s.changed()
	}
	return err
}
