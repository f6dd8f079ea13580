package d5list

import "time"

// Leaderboard is the ranked list of one benchmark.
type Leaderboard struct {
	Benchmark Benchmark `json:"benchmark"`
	Entries   []Entry   `json:"entries"`
}

// Entry is one ranked row.
type Entry struct {
	Rank         int       `json:"rank"`
	SubmissionID int64     `json:"submission_id"`
	Submitter    string    `json:"submitter"`
	SystemName   string    `json:"system_name"`
	Framework    string    `json:"framework"`
	Division     string    `json:"division"`
	Availability string    `json:"availability"`
	Accelerator  string    `json:"accelerator,omitempty"`
	Accelerators int       `json:"accelerators,omitempty"`
	CostPerHour  float64   `json:"cost_per_hour,omitempty"`
	CodeURL      string    `json:"code_url,omitempty"`
	Status       Status    `json:"status"`
	Flag         string    `json:"flag,omitempty"`
	Metric       string    `json:"metric"`
	Value        float64   `json:"value"` // the olympic mean over runs
	Min          float64   `json:"min"`   // fastest/lowest run
	Max          float64   `json:"max"`
	Runs         int       `json:"runs"`
	CreatedAt    time.Time `json:"created_at"`
	// PrevRank is the rank of the same system in the previous edition, 0
	// when it was not listed there; New marks such an entry. Both are
	// unset when there is no previous edition to compare with.
	PrevRank int  `json:"prev_rank,omitempty"`
	New      bool `json:"new,omitempty"`
}
