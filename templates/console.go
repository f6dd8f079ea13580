package templates

import d5list "github.com/deep500/d5list"

// Console is what the organiser console shows. Parts the server lacks
// (no runner pool, no review, no editions) are nil and say so.
type Console struct {
	Accounts   []d5list.Account
	Benchmarks []d5list.Benchmark
	// YAML is the editor's text: what was posted when it failed, else the
	// definition it starts from (From's copy, or catalog.Skeleton).
	YAML string
	// From is the benchmark whose copy the editor starts from, "" for the
	// skeleton.
	From      string
	YAMLError string
	// ReviewError and EditionError re-show a refused form's reason beside
	// the form, which keeps what was typed where the browser can.
	ReviewError  string
	EditionError string
	UsersError   string
	// EditionName is the edition form's text when it was refused.
	EditionName string
	Notice      string
	// NoticeEntry, where not 0, is the submission the notice is about,
	// linked beside it.
	NoticeEntry int64
	NewRunner   string // a runner token just created, shown once
	RunnerName  string
	HasRunners  bool
	HasReview   bool
	Review      []d5list.Submission
	// Decisions are the organisers' latest decisions, newest first.
	Decisions []d5list.AuditEntry
	// Appeals are the competitors' messages waiting, by submission.
	Appeals    map[int64]d5list.AuditEntry
	Editions   []d5list.EditionSummary
	HasEdition bool
	// Roles an organiser may give; an admin may also give admin.
	Roles []d5list.Role
	// AuditFailures are the failed audits, newest first; ShowFailedAudits
	// is whether everyone sees the entries that failed one.
	HasAuditFailures bool
	AuditFailures    []d5list.AuditFailure
	ShowFailedAudits bool
	AuditError       string
}

// benchmark is the console's benchmark of id, nil if it has none.
func (c Console) benchmark(id string) *d5list.Benchmark {
	for i := range c.Benchmarks {
		if c.Benchmarks[i].ID == id {
			return &c.Benchmarks[i]
		}
	}
	return nil
}

// reviewValue is a review row's claimed or measured score with its unit,
// as the entry's page prints it.
func (c Console) reviewValue(s d5list.Submission, r *d5list.Result) string {
	unit := ""
	if b := c.benchmark(s.BenchmarkID); b != nil {
		unit = b.Ranking.Unit
	}
	return scoreValue(r, unit)
}

// reviewFinding is the finding a review row's verdict turns on, in the
// words of the entry's verdict, and how many more there are.
func (c Console) reviewFinding(s d5list.Submission) string {
	if len(s.Reasons) == 0 {
		return "—"
	}
	return leadSentence(s.Reasons, c.benchmark(s.BenchmarkID))
}

// reviewActionWords are the review actions' labels and what each does,
// in the order d5list.ReviewActions lists them.
var reviewActionWords = map[d5list.ReviewAction]struct{ label, does string }{
	d5list.ActionAccept: {"Accept: rank it",
		"Ranks the entry despite its findings, which stay on its page; the board marks it \u201caccepted by an organiser\u201d. A value no runner of its hardware re-measured is ranked only among the unverified entries."},
	d5list.ActionReject: {"Reject: refuse it for good",
		"Takes the entry off every board; the reason you give (required) is shown to its competitor. Only a re-run undoes it."},
	d5list.ActionMoveOpen: {"Move to the open division",
		"Keeps its status and ranks it with the open division's entries, for a recipe that changed what the closed division fixes."},
	d5list.ActionFlag: {"Flag with a public note",
		"Keeps its status and shows your note on its page and on the board; a flagged entry is listed only with the unverified ones."},
	d5list.ActionRerun: {"Run it again",
		"Queues a new verification with the same seeds; the current verdict is kept in the entry's history."},
	d5list.ActionPublish: {"Publish the verdict",
		"Makes a verdict against the entry public: until then only its competitor and the organisers see the entry."},
}

func actionLabel(a d5list.ReviewAction) string { return reviewActionWords[a].label }
func actionDoes(a d5list.ReviewAction) string  { return reviewActionWords[a].does }

// decisionText is what an organiser wrote with a decision: the reason
// given to the competitor, and the public note where there is one.
func decisionText(d d5list.AuditEntry) string {
	switch {
	case d.Reason != "" && d.Note != "":
		return d.Reason + " (public note: " + d.Note + ")"
	case d.Note != "":
		return "public note: " + d.Note
	}
	return d.Reason
}
