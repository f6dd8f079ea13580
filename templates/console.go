package templates

import d5list "github.com/deep500/d5list"

// Console is what the organiser console shows. Parts the server lacks
// (no runner pool, no review, no editions) are nil and say so.
type Console struct {
	Accounts   []d5list.Account
	Benchmarks []d5list.Benchmark
	// YAML is the editor's text: what was posted when it failed, else empty.
	YAML      string
	YAMLError string
	// ReviewError and EditionError re-show a refused form's reason beside
	// the form, which keeps what was typed where the browser can.
	ReviewError  string
	EditionError string
	UsersError   string
	// EditionName is the edition form's text when it was refused.
	EditionName string
	Notice      string
	NewRunner   string // a runner token just created, shown once
	RunnerName  string
	HasRunners  bool
	HasReview   bool
	Review      []d5list.Submission
	// Appeals are the competitors' messages waiting, by submission.
	Appeals    map[int64]d5list.AuditEntry
	Editions   []d5list.EditionSummary
	HasEdition bool
	// Roles an organiser may give; an admin may also give admin.
	Roles []d5list.Role
}
