package portal

import (
	"cmp"
	"context"
	"slices"
	"strings"

	d5list "github.com/deep500/d5list"
	"github.com/deep500/d5list/bundle"
	"github.com/deep500/d5list/verifier"
)

// ReviewStore is the persistence of organiser review. It is asked of the
// Store by type assertion so that stores without review (tests' fakes)
// still serve the rest of the portal.
type ReviewStore interface {
	ApplyReview(ctx context.Context, ch d5list.ReviewChange) (*d5list.AuditEntry, error)
	AuditLog(ctx context.Context, submissionID int64) ([]d5list.AuditEntry, error)
	LastDecision(ctx context.Context, submissionID int64) (*d5list.AuditEntry, error)
	Attempts(ctx context.Context, submissionID int64) ([]d5list.Attempt, error)
	PendingAppeals(ctx context.Context) (map[int64]d5list.AuditEntry, error)
	RecentDecisions(ctx context.Context, limit int) ([]d5list.AuditEntry, error)
}

// MaxReviewText bounds a reason or a note.
const MaxReviewText = 2000

func (s *Service) reviewStore() (ReviewStore, error) {
	rs, ok := s.store.(ReviewStore)
	if !ok {
		return nil, d5list.Errorf(d5list.EINTERNAL, "this store keeps no audit log")
	}
	return rs, nil
}

func requireOrganiser(user *d5list.User) error {
	if user == nil || !user.Role.AtLeast(d5list.RoleOrganiser) {
		return d5list.Errorf(d5list.EFORBIDDEN, "only organisers may review submissions")
	}
	return nil
}

// RecentDecisionsShown is how many of the latest decisions the console
// lists.
const RecentDecisionsShown = 20

// RecentDecisions lists the organisers' latest decisions on any entry,
// newest first, for organisers: what the console shows as just changed.
func (s *Service) RecentDecisions(ctx context.Context, user *d5list.User) ([]d5list.AuditEntry, error) {
	if err := requireOrganiser(user); err != nil {
		return nil, err
	}
	rs, err := s.reviewStore()
	if err != nil {
		return nil, err
	}
	return rs.RecentDecisions(ctx, RecentDecisionsShown)
}

// ReviewQueue lists the submissions waiting for an organiser's decision:
// discrepancies, those needing review, and failed ones whose competitor
// appealed, newest first.
func (s *Service) ReviewQueue(ctx context.Context, user *d5list.User) ([]d5list.Submission, error) {
	if err := requireOrganiser(user); err != nil {
		return nil, err
	}
	subs, err := s.store.Submissions(ctx, d5list.SubmissionFilter{
		Statuses: []d5list.Status{d5list.StatusDiscrepancy, d5list.StatusNeedsReview}})
	if err != nil {
		return nil, err
	}
	appeals, err := s.Appeals(ctx, user)
	if err != nil {
		return nil, err
	}
	for id := range appeals {
		sub, err := s.store.Submission(ctx, id)
		if err != nil {
			return nil, err
		}
		if sub.Status == d5list.StatusFailed {
			subs = append(subs, *sub)
		}
	}
	slices.SortStableFunc(subs, func(a, b d5list.Submission) int { return cmp.Compare(b.ID, a.ID) })
	return subs, nil
}

// Appeals returns the competitors' messages no organiser has answered
// yet, by submission.
func (s *Service) Appeals(ctx context.Context, user *d5list.User) (map[int64]d5list.AuditEntry, error) {
	if err := requireOrganiser(user); err != nil {
		return nil, err
	}
	rs, err := s.reviewStore()
	if err != nil {
		return nil, err
	}
	return rs.PendingAppeals(ctx)
}

// PendingAppeal returns the competitor's message on submission id that no
// organiser has answered yet, or nil; for the competitor and organisers.
func (s *Service) PendingAppeal(ctx context.Context, user *d5list.User, id int64) (*d5list.AuditEntry, error) {
	sub, err := s.store.Submission(ctx, id)
	if err != nil {
		return nil, err
	}
	if user == nil || (user.ID != sub.OwnerID && !user.Role.AtLeast(d5list.RoleOrganiser)) {
		return nil, d5list.Errorf(d5list.EFORBIDDEN, "only the competitor and the organisers see messages about submission %d", id)
	}
	rs, err := s.reviewStore()
	if err != nil {
		return nil, err
	}
	return s.pendingAppeal(ctx, rs, id)
}

func (s *Service) pendingAppeal(ctx context.Context, rs ReviewStore, id int64) (*d5list.AuditEntry, error) {
	entries, err := rs.AuditLog(ctx, id)
	if err != nil || len(entries) == 0 {
		return nil, err
	}
	if last := entries[len(entries)-1]; last.Action == d5list.ActionAppeal {
		return &last, nil
	}
	return nil, nil
}

// Appeal is a competitor asking the organisers to look at a verdict, with
// a message; it lands in the review queue beside the entry. One message
// waits at a time: a second before an organiser has acted is ECONFLICT.
func (s *Service) Appeal(ctx context.Context, user *d5list.User, id int64, message string) (*d5list.AuditEntry, error) {
	message = strings.TrimSpace(message)
	switch {
	case message == "":
		return nil, fieldError("message", "appeal_message_missing", "say what the organisers should look at")
	case len(message) > MaxReviewText:
		return nil, fieldError("message", "appeal_message_long", "at most %d bytes", MaxReviewText)
	}
	rs, err := s.reviewStore()
	if err != nil {
		return nil, err
	}
	sub, err := s.store.Submission(ctx, id)
	if err != nil {
		return nil, err
	}
	if user == nil || user.ID != sub.OwnerID {
		if sub.MayView(user) {
			return nil, d5list.Errorf(d5list.EFORBIDDEN, "only the competitor who uploaded submission %d may ask for its review", id)
		}
		return nil, d5list.Errorf(d5list.ENOTFOUND, "submission %d not found", id)
	}
	if !d5list.ActionAppeal.Allowed(sub.Status) {
		return nil, d5list.Errorf(d5list.ECONFLICT, "submission %d is %s: only a discrepancy, a failed re-run or an entry waiting for review can be appealed", id, sub.Status)
	}
	pending, err := s.pendingAppeal(ctx, rs, id)
	if err != nil {
		return nil, err
	}
	if pending != nil {
		return nil, d5list.Errorf(d5list.ECONFLICT, "your message on submission %d waits for an organiser already; they will answer on its page", id)
	}
	entry, err := rs.ApplyReview(ctx, d5list.ReviewChange{SubmissionID: id, Actor: user, Action: d5list.ActionAppeal,
		Note: message, FromStatus: sub.Status, ToStatus: sub.Status})
	if err != nil {
		return nil, err
	}
	s.log.Info("appeal", "submission", id, "by", user.Name)
	return entry, nil
}

func fieldError(field, code, format string, args ...any) error {
	e := d5list.Errorf(d5list.EINVALID, field+": "+format, args...)
	e.Reasons = []d5list.Reason{{Code: code, Message: e.Message}}
	return e
}

// validateReview checks the request on its own, before any status is read.
func validateReview(req *d5list.ReviewRequest) error {
	req.Reason = strings.TrimSpace(req.Reason)
	req.Note = strings.TrimSpace(req.Note)
	known := false
	names := make([]string, len(d5list.ReviewActions))
	for i, a := range d5list.ReviewActions {
		names[i] = string(a)
		known = known || a == req.Action
	}
	switch {
	case req.Action == "":
		return fieldError("action", "review_action_missing", "an action is required (one of %s)", strings.Join(names, ", "))
	case !known:
		return fieldError("action", "review_action_unknown", "%q is not an action; use one of %s", req.Action, strings.Join(names, ", "))
	case req.Action == d5list.ActionReject && req.Reason == "":
		return fieldError("reason", "review_reason_missing", "a rejection needs a reason, shown to the competitor")
	case req.Action == d5list.ActionFlag && req.Note == "":
		return fieldError("note", "review_note_missing", "a flag needs a public note")
	case len(req.Reason) > MaxReviewText:
		return fieldError("reason", "review_reason_long", "at most %d bytes", MaxReviewText)
	case len(req.Note) > MaxReviewText:
		return fieldError("note", "review_note_long", "at most %d bytes", MaxReviewText)
	}
	return nil
}

// Review applies an organiser's action to a submission and records it in
// the audit log, in one transaction. A status the action does not apply to
// is ECONFLICT.
func (s *Service) Review(ctx context.Context, user *d5list.User, id int64, req d5list.ReviewRequest) (*d5list.Submission, *d5list.AuditEntry, error) {
	if err := requireOrganiser(user); err != nil {
		return nil, nil, err
	}
	if err := validateReview(&req); err != nil {
		return nil, nil, err
	}
	rs, err := s.reviewStore()
	if err != nil {
		return nil, nil, err
	}
	sub, err := s.store.Submission(ctx, id)
	if err != nil {
		return nil, nil, err
	}
	if !req.Action.Allowed(sub.Status) {
		return nil, nil, d5list.Errorf(d5list.ECONFLICT, "submission %d is %s; %s does not apply to it", id, sub.Status, req.Action)
	}
	ch := d5list.ReviewChange{SubmissionID: id, Actor: user, Action: req.Action, Reason: req.Reason, Note: req.Note,
		FromStatus: sub.Status, ToStatus: req.Action.Target(sub.Status)}
	switch req.Action {
	case d5list.ActionMoveOpen:
		if sub.Division == d5list.DivisionOpen {
			return nil, nil, d5list.Errorf(d5list.ECONFLICT, "submission %d is already in the open division", id)
		}
		open := d5list.DivisionOpen
		ch.Division = &open
	case d5list.ActionFlag:
		ch.Flag = &req.Note
	case d5list.ActionRerun:
		// The store archives the verdict with who could see it and clears
		// it from the entry, published mark included: a re-run that fails
		// again is hidden until an organiser publishes the new verdict.
		ch.Rerun = true
	case d5list.ActionPublish:
		if sub.Published {
			return nil, nil, d5list.Errorf(d5list.ECONFLICT, "submission %d's verdict is public already", id)
		}
		published := true
		ch.Published = &published
	}
	entry, err := rs.ApplyReview(ctx, ch)
	if err != nil {
		return nil, nil, err
	}
	s.changed()
	if ch.Rerun {
		s.pool.wake()
	}
	s.log.Info("review", "submission", id, "action", req.Action, "by", user.Name, "from", entry.FromStatus, "to", entry.ToStatus)
	sub, err = s.store.Submission(ctx, id)
	return sub, entry, err
}

// AuditLog returns a submission's audit entries and its verification
// attempts, oldest first. It is public: the list is worth what its
// decisions are open to see.
func (s *Service) AuditLog(ctx context.Context, id int64) ([]d5list.AuditEntry, []d5list.Attempt, error) {
	rs, err := s.reviewStore()
	if err != nil {
		return nil, nil, err
	}
	entries, err := rs.AuditLog(ctx, id)
	if err != nil {
		return nil, nil, err
	}
	attempts, err := rs.Attempts(ctx, id)
	return entries, attempts, err
}

// Rescore re-judges every submission of a benchmark under its current
// rules, without re-running anything: the claimed result is derived again
// from the stored bundle (verifier.Check), and where a re-run was measured,
// verifier.Compare sets the new claim against it. Submissions still queued,
// running or failed only get the new claim. Rejected submissions, and
// those whose status an organiser decided (accept or reject) since their
// last verdict, are skipped: a rules change does not overturn a person's
// decision silently. A bundle that no longer passes the static checks
// goes to needs_review with the checks' reasons.
func (s *Service) Rescore(ctx context.Context, user *d5list.User, benchmarkID string) (*d5list.RescoreReport, error) {
	if err := requireOrganiser(user); err != nil {
		return nil, err
	}
	rs, err := s.reviewStore()
	if err != nil {
		return nil, err
	}
	bench, err := s.store.Benchmark(ctx, benchmarkID)
	if err != nil {
		return nil, err
	}
	subs, err := s.store.Submissions(ctx, d5list.SubmissionFilter{BenchmarkID: bench.ID})
	if err != nil {
		return nil, err
	}
	rep := &d5list.RescoreReport{Benchmark: bench.ID, Changed: []d5list.AuditEntry{}, Skipped: []int64{}}
	defer s.cache.Invalidate(bench.ID)
	for i := range subs {
		sub := &subs[i]
		if sub.Status == d5list.StatusRejected {
			rep.Skipped = append(rep.Skipped, sub.ID)
			continue
		}
		last, err := rs.LastDecision(ctx, sub.ID)
		if err != nil {
			return rep, err
		}
		if last != nil && (last.Action == d5list.ActionAccept || last.Action == d5list.ActionReject) {
			rep.Skipped = append(rep.Skipped, sub.ID)
			continue
		}
		b, err := bundle.Open(s.blobs.Path(sub.BundleSHA256), s.cfg.Limits)
		if err != nil {
			s.log.Error("rescore: reading the bundle", "submission", sub.ID, "err", err)
			rep.Skipped = append(rep.Skipped, sub.ID)
			continue
		}
		rep.Checked++
		claimed, checkReasons := verifier.Check(b, bench)
		ch := d5list.ReviewChange{SubmissionID: sub.ID, Actor: user, Action: d5list.ActionRescore,
			Reason: "rescored under the current rules of " + bench.ID, FromStatus: sub.Status, ToStatus: sub.Status,
			Claimed: claimed, AuditOnlyStatusChange: true}
		switch {
		case !sub.Status.Final() || sub.Measured == nil:
			// No verdict to revise; the runner's verdict will use the new claim.
		case len(checkReasons) > 0:
			ch.ToStatus, ch.Reasons = d5list.StatusNeedsReview, &checkReasons
		default:
			st, reasons := verifier.Compare(bench, claimed, sub.Measured, bench.RemeasuredOn(sub, sub.Measured.Runner))
			ch.ToStatus, ch.Reasons = st, &reasons
		}
		entry, err := rs.ApplyReview(ctx, ch)
		if d5list.ErrorCode(err) == d5list.ECONFLICT {
			// A verdict arrived meanwhile; it was judged under the new rules.
			rep.Skipped = append(rep.Skipped, sub.ID)
			continue
		} else if err != nil {
			return rep, err
		}
		if entry != nil {
			s.changed()
			rep.Changed = append(rep.Changed, *entry)
		}
	}
	s.log.Info("rescore", "benchmark", bench.ID, "by", user.Name, "checked", rep.Checked, "changed", len(rep.Changed))
	return rep, nil
}

// OrganisationStore records which organisation an account submits for.
type OrganisationStore interface {
	SetOrganisation(ctx context.Context, userID int64, organisation string) error
}

// ConfirmOrganisation confirms an account as a member of organisation (an
// organiser's decision). The boards mark unconfirmed organisations, so
// every cached board is dropped.
func (s *Service) ConfirmOrganisation(ctx context.Context, user *d5list.User, userID int64, organisation string) error {
	if err := requireOrganiser(user); err != nil {
		return err
	}
	orgs, ok := s.store.(OrganisationStore)
	if !ok {
		return d5list.Errorf(d5list.EUNAVAILABLE, "this store keeps no organisations")
	}
	s.cache.BeginChangeAll()
	err := orgs.SetOrganisation(ctx, userID, organisation)
	s.cache.EndChangeAll()
	if err != nil {
		return err
	}
	s.changed()
	s.log.Info("organisation confirmed", "user_id", userID, "organisation", d5list.CleanOrganisation(organisation), "by", user.Name)
	return nil
}
