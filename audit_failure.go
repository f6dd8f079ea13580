package d5list

import "time"

// AuditFailure is one re-run whose audit failed (a verdict with reasons
// that IsAuditFailure): a discrepancy that costs its account something. The
// account's next job of the benchmark is audited in full (JobSpec.FullAudit)
// while any failure of it is uncleared, and HoldAfterAuditFailures of them
// hold its uploads of the benchmark until an organiser clears them.
type AuditFailure struct {
	ID           int64  `json:"id"`
	SubmissionID int64  `json:"submission_id"`
	JobID        int64  `json:"job_id"`
	OwnerID      int64  `json:"owner_id"`
	Owner        string `json:"owner"`
	// Organisation is the account's organisation when the audit failed,
	// or the entry's submitter where the account named none.
	Organisation string    `json:"organisation"`
	BenchmarkID  string    `json:"benchmark"`
	Reasons      []Reason  `json:"reasons"`
	CreatedAt    time.Time `json:"created_at"`
	// ClearedAt and ClearedBy say which organiser cleared the failure, and
	// when; nil while it counts.
	ClearedAt *time.Time `json:"cleared_at,omitempty"`
	ClearedBy string     `json:"cleared_by,omitempty"`
}

// HoldAfterAuditFailures is how many uncleared failed audits of a
// benchmark hold an account's uploads of it.
const HoldAfterAuditFailures = 2

// SettingShowFailedAudits is the organisers' setting that shows the
// entries whose audit failed to everyone ("on"); off by default, they are
// their competitor's and the organisers' to see.
const SettingShowFailedAudits = "show_failed_audits"

// AuditFailureReasons are the reasons of a verdict that are failures of
// the runner's audit.
func AuditFailureReasons(reasons []Reason) []Reason {
	var out []Reason
	for _, r := range reasons {
		if IsAuditFailure(r.Code) {
			out = append(out, r)
		}
	}
	return out
}
