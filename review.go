package d5list

import "time"

// ReviewAction is what an organiser does to a submission from the review
// queue (or "rescore", the portal re-judging it after a rules change).
type ReviewAction string

const (
	ActionAccept   ReviewAction = "accept"       // -> verified
	ActionReject   ReviewAction = "reject"       // -> rejected; a reason is required
	ActionMoveOpen ReviewAction = "move_to_open" // division -> open, status kept
	ActionFlag     ReviewAction = "flag"         // public note, status kept
	ActionRerun    ReviewAction = "rerun"        // a new verification attempt -> queued
	ActionRescore  ReviewAction = "rescore"      // re-judged under changed rules
	ActionPublish  ReviewAction = "publish"      // a hidden verdict made public, status kept
	// ActionAppeal is the competitor's: a message asking the organisers to
	// look at a verdict, status kept.
	ActionAppeal ReviewAction = "appeal"
)

// ReviewActions are the actions an organiser may post, in the order the
// API documents them.
var ReviewActions = []ReviewAction{ActionAccept, ActionReject, ActionMoveOpen, ActionFlag, ActionRerun, ActionPublish}

// Allowed reports whether the action may be taken on a submission in
// status from. Nothing is done to a submission a runner may be working on
// (queued, running, checking), so that a verdict arriving meanwhile cannot
// overwrite the decision; accept and reject decide what a verdict left
// open or contested, and a rejection is final except for a re-run.
func (a ReviewAction) Allowed(from Status) bool {
	switch from {
	case StatusQueued, StatusRunning, StatusChecking:
		return false
	}
	switch a {
	case ActionAccept:
		return from == StatusDiscrepancy || from == StatusNeedsReview
	case ActionReject, ActionMoveOpen, ActionFlag:
		return from != StatusRejected
	case ActionRerun:
		return true
	case ActionPublish:
		return from == StatusDiscrepancy || from == StatusFailed || from == StatusRejected
	case ActionAppeal:
		return from == StatusDiscrepancy || from == StatusFailed || from == StatusNeedsReview
	}
	return false
}

// Target is the status the action leaves a submission in.
func (a ReviewAction) Target(from Status) Status {
	switch a {
	case ActionAccept:
		return StatusVerified
	case ActionReject:
		return StatusRejected
	case ActionRerun:
		return StatusQueued
	}
	return from
}

// ReviewRequest is the body of POST /api/v1/submissions/{id}/review.
type ReviewRequest struct {
	Action ReviewAction `json:"action"`
	Reason string       `json:"reason"` // why; required for reject
	Note   string       `json:"note"`   // the public note of a flag
}

// AuditEntry is one row of a submission's append-only audit log.
type AuditEntry struct {
	ID           int64        `json:"id"`
	SubmissionID int64        `json:"submission_id"`
	ActorID      int64        `json:"-"`
	Actor        string       `json:"actor"`
	Action       ReviewAction `json:"action"`
	Reason       string       `json:"reason,omitempty"`
	Note         string       `json:"note,omitempty"`
	FromStatus   Status       `json:"from_status"`
	ToStatus     Status       `json:"to_status"`
	// JobID is the new verification job of a re-run.
	JobID     int64     `json:"job_id,omitempty"`
	CreatedAt time.Time `json:"created_at"`
}

// ReviewChange is one audited change of a submission, applied by the store
// in one transaction with its audit entry. Nil fields are left unchanged.
type ReviewChange struct {
	SubmissionID int64
	Actor        *User
	Action       ReviewAction
	Reason, Note string
	// FromStatus must still be the submission's status when the change is
	// applied; otherwise the store answers ECONFLICT.
	FromStatus Status
	ToStatus   Status
	Division   *string
	Flag       *string
	Published  *bool
	Claimed    *Result
	Reasons    *[]Reason
	// Rerun keeps the latest job and its verdict as history and queues a
	// new job; the submission's own measurement, reasons and published
	// mark are cleared, so that the next verdict is judged and shown anew.
	Rerun bool
	// AuditOnlyStatusChange writes the audit entry only when the status
	// changes (rescore updates claimed results silently otherwise).
	AuditOnlyStatusChange bool
}

// Attempt is one verification job of a submission with the verdict it
// produced, kept when an organiser asks for a re-run.
type Attempt struct {
	Job      Job      `json:"job"`
	Status   Status   `json:"status,omitempty"`
	Measured *Result  `json:"measured,omitempty"`
	Reasons  []Reason `json:"reasons,omitempty"`
	// Hidden says that the archived verdict went against the entry and no
	// organiser had published it when a re-run replaced it: it stays the
	// competitor's and the organisers' to see (Submission.Hidden).
	Hidden bool `json:"-"`
}

// RescoreReport says what "rescore all" changed.
type RescoreReport struct {
	Benchmark string       `json:"benchmark"`
	Checked   int          `json:"checked"`
	Changed   []AuditEntry `json:"changed"`
	Skipped   []int64      `json:"skipped"` // decided by an organiser, or not yet judged
}
