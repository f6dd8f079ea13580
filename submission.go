package d5list

import (
	"strconv"
	"time"
)

// Status is where a submission is in its life.
type Status string

const (
	StatusChecking    Status = "checking"
	StatusRejected    Status = "rejected"
	StatusQueued      Status = "queued"
	StatusRunning     Status = "running"
	StatusVerified    Status = "verified"
	StatusDiscrepancy Status = "discrepancy"
	StatusFailed      Status = "failed" // the re-run broke; not the competitor's fault
	StatusNeedsReview Status = "needs_review"
)

// Final reports whether no more work is scheduled for the status.
func (s Status) Final() bool {
	switch s {
	case StatusRejected, StatusVerified, StatusDiscrepancy, StatusFailed, StatusNeedsReview:
		return true
	}
	return false
}

// Divisions and availabilities, as in MLPerf.
const (
	DivisionClosed = "closed"
	DivisionOpen   = "open"

	AvailabilityAvailable = "available"
	AvailabilityPreview   = "preview"
	AvailabilityRDI       = "rdi"
)

// Manifest is submission.json, the bundle's cover sheet.
type Manifest struct {
	Format       string `json:"format"` // "d5list/v1"
	Benchmark    string `json:"benchmark"`
	Division     string `json:"division"`
	Availability string `json:"availability"`
	Submitter    string `json:"submitter"`
	SystemName   string `json:"system_name"`
	Framework    string `json:"framework"`
	CodeURL      string `json:"code_url,omitempty"`
	// PaperURL is the paper or write-up that describes the submission.
	PaperURL string `json:"paper_url,omitempty"`
	// Claims are explicit claimed values; they must equal what the logs give.
	Claims map[string]float64 `json:"claims,omitempty"`
	// Environment is what the claim's runs ran with, as `d5list run`
	// recorded it: the runner labels of that machine and sandbox (cpu_model,
	// framework.torch, ...). A re-run whose accuracies differ names the
	// labels that differ from its own.
	Environment map[string]string `json:"environment,omitempty"`
}

// ManifestFormat is the only bundle format version this portal reads.
const ManifestFormat = "d5list/v1"

// Submission is one uploaded result and its verification state.
type Submission struct {
	ID           int64    `json:"id"`
	BenchmarkID  string   `json:"benchmark"`
	OwnerID      int64    `json:"owner_id"`
	Owner        string   `json:"owner"`
	Division     string   `json:"division"`
	Availability string   `json:"availability"`
	Submitter    string   `json:"submitter"`
	SystemName   string   `json:"system_name"`
	Framework    string   `json:"framework"`
	Accelerator  string   `json:"accelerator,omitempty"`
	Accelerators int      `json:"accelerators,omitempty"` // total count over all nodes
	HostCPU      string   `json:"host_cpu,omitempty"`     // declared host processor model
	Status       Status   `json:"status"`
	BundleSHA256 string   `json:"bundle_sha256"`
	BundleSize   int64    `json:"bundle_size"`
	Recipe       *Recipe  `json:"recipe,omitempty"`
	Claimed      *Result  `json:"claimed,omitempty"`
	Measured     *Result  `json:"measured,omitempty"`
	Reasons      []Reason `json:"reasons"`
	Flag         string   `json:"flag,omitempty"`          // public note when flagged
	CodeURL      string   `json:"code_url,omitempty"`      // submission.json code_url
	CostPerHour  float64  `json:"cost_per_hour,omitempty"` // system.json price in USD, 0 when undeclared
	// PaperURL is submission.json's paper_url, beside CodeURL.
	PaperURL string `json:"paper_url,omitempty"`
	// ContentSHA256 is the sum of the bundle's files, whatever archive
	// held them (bundle.Bundle.ContentSHA256); empty for entries uploaded
	// before it was kept.
	ContentSHA256 string `json:"content_sha256,omitempty"`
	// SubmitterConfirmed says that an organiser confirmed the uploading
	// account as a member of Submitter.
	SubmitterConfirmed bool `json:"submitter_confirmed,omitempty"`
	// Published makes a verdict against the entry (Hidden) public; only an
	// organiser sets it.
	Published bool `json:"published,omitempty"`
	// System is the system description (system.json) as the portal read it
	// at upload: MLPerf's field names to their values, other_software_stack
	// and unknown fields included. Nil for entries uploaded before it was
	// kept, and in listings: only DB.Submission reads it.
	System    map[string]any `json:"system,omitempty"`
	CreatedAt time.Time      `json:"created_at"`
	UpdatedAt time.Time      `json:"updated_at"`
}

// RepeatedUpload is the answer to storing a submission whose account
// already uploaded the same files (ContentSHA256) as an entry that did
// not fail: nothing is stored, and Existing is that entry. A failed entry
// is not matched, so that its competitor can upload it again when a
// re-run broke.
type RepeatedUpload struct{ Existing int64 }

func (e *RepeatedUpload) Error() string {
	return "the same files as submission " + strconv.FormatInt(e.Existing, 10)
}

// Accepted reports whether an organiser accepted the entry over the
// findings of its re-run: only a discrepancy or a verdict that needs
// review can be accepted, and the findings stay with it, whereas the
// portal verifies an entry only where its re-run found nothing.
func (s *Submission) Accepted() bool {
	return s.Status == StatusVerified && len(s.Reasons) > 0
}

// Seeds returns the seeds of the claimed runs in run order.
func (s *Submission) Seeds() []int64 {
	if s.Claimed == nil {
		return nil
	}
	seeds := make([]int64, len(s.Claimed.Runs))
	for i, r := range s.Claimed.Runs {
		seeds[i] = r.Seed
	}
	return seeds
}

// Reason explains one check failure or one verification finding.
type Reason struct {
	Code     string   `json:"code"`
	Message  string   `json:"message"`
	File     string   `json:"file,omitempty"`
	Line     int      `json:"line,omitempty"`
	Run      *int     `json:"run,omitempty"`
	Epoch    *float64 `json:"epoch,omitempty"`
	Claimed  *float64 `json:"claimed,omitempty"`
	Measured *float64 `json:"measured,omitempty"`
}

// SubmissionFilter selects submissions in listings.
type SubmissionFilter struct {
	BenchmarkID string
	Statuses    []Status
	OwnerID     int64
	// Submitter and SystemName match case-insensitively.
	Submitter  string
	SystemName string
	Limit      int
}

// Hidden reports whether the submission's verdict goes against it
// (discrepancy, failed, rejected) and no organiser has published it: such
// an entry is seen only by its submitter and the organisers, as a failed
// attempt on EvalAI or Codabench is private to its team. Entries on their
// way, verified or waiting for review are public.
func (s *Submission) Hidden() bool {
	switch s.Status {
	case StatusDiscrepancy, StatusFailed, StatusRejected:
		return !s.Published
	}
	return false
}

// MayView says who may see a submission at all: anyone, unless it is
// Hidden; its owner and the organisers always.
func (s *Submission) MayView(user *User) bool {
	if !s.Hidden() {
		return true
	}
	return user != nil && (user.ID == s.OwnerID || user.Role.AtLeast(RoleOrganiser))
}

// MayDownload says who may download a submission's bundle and run logs:
// anyone once it is verified, as MLPerf publishes the code and logs of
// its results; its owner and the organisers always, whatever its verdict.
func (s *Submission) MayDownload(user *User) bool {
	if s.Status == StatusVerified {
		return true
	}
	return user != nil && (user.ID == s.OwnerID || user.Role.AtLeast(RoleOrganiser))
}
