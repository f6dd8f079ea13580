package d5list

import "time"

// Leaderboard is the ranked list of one benchmark.
type Leaderboard struct {
	Benchmark Benchmark `json:"benchmark"`
	Entries   []Entry   `json:"entries"`
}

// Entry is one ranked row.
type Entry struct {
	Rank         int    `json:"rank"`
	SubmissionID int64  `json:"submission_id"`
	Submitter    string `json:"submitter"`
	// SubmitterConfirmed: an organiser confirmed the uploading account as
	// a member of Submitter.
	SubmitterConfirmed bool    `json:"submitter_confirmed,omitempty"`
	SystemName         string  `json:"system_name"`
	Framework          string  `json:"framework"`
	Division           string  `json:"division"`
	Availability       string  `json:"availability"`
	Accelerator        string  `json:"accelerator,omitempty"`
	Accelerators       int     `json:"accelerators,omitempty"`
	HostCPU            string  `json:"host_cpu,omitempty"`
	CostPerHour        float64 `json:"cost_per_hour,omitempty"`
	CodeURL            string  `json:"code_url,omitempty"`
	Status             Status  `json:"status"`
	Accepted           bool    `json:"accepted,omitempty"` // an organiser accepted it over its re-run's findings (Submission.Accepted)
	Flag               string  `json:"flag,omitempty"`
	Metric             string  `json:"metric"`
	Value              float64 `json:"value"` // the olympic mean over runs, of Basis
	Min                float64 `json:"min"`   // fastest/lowest run
	Max                float64 `json:"max"`
	Runs               int     `json:"runs"`
	// Basis says whose runs Value is the olympic mean of: BasisMeasured,
	// the portal's re-run on the declared hardware, or BasisClaimed, the
	// submitted logs, not re-measured.
	Basis string `json:"basis"`
	// Claimed is the submitted logs' olympic mean beside a measured Value,
	// for the reader to see what was claimed (0 when it had none).
	Claimed float64 `json:"claimed,omitempty"`
	// ClaimedRuns is how many runs the submitted logs hold, beside a
	// measured Value whose Runs are the re-run's; FreshRuns is how many of
	// those re-runs used seeds the portal drew (RunMetrics.Fresh), which is
	// why a re-run can count more runs than its claim. Both are 0 where
	// Basis is claimed.
	ClaimedRuns int `json:"claimed_runs,omitempty"`
	FreshRuns   int `json:"fresh_runs,omitempty"`
	// Measures are the level's other measurements (d5list.LevelColumns),
	// each the median over the same runs as Value; absent where no run
	// logged it.
	Measures  map[string]float64 `json:"measures,omitempty"`
	CreatedAt time.Time          `json:"created_at"`
	// PrevRank is the rank of the same system in the previous edition, 0
	// when it was not listed there; New marks such an entry. Both are
	// unset when there is no previous edition to compare with.
	PrevRank int  `json:"prev_rank,omitempty"`
	New      bool `json:"new,omitempty"`
}

// The bases of an entry's value.
const (
	BasisMeasured = "measured"
	BasisClaimed  = "claimed"
)

// ClaimRatio is the claimed value over the measured one (0 where the entry
// is not measured or claimed nothing): below 1, the claim was faster or
// smaller than the portal measured.
func (e *Entry) ClaimRatio() float64 {
	if e.Basis != BasisMeasured || e.Claimed == 0 || e.Value == 0 {
		return 0
	}
	return e.Claimed / e.Value
}
