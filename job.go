package d5list

import "time"

// JobState is where a verification job is in the queue.
type JobState string

const (
	JobQueued    JobState = "queued"
	JobLeased    JobState = "leased"
	JobDone      JobState = "done"
	JobFailed    JobState = "failed"
	JobCancelled JobState = "cancelled"
)

// Job is one verification re-run of a submission.
type Job struct {
	ID           int64     `json:"id"`
	SubmissionID int64     `json:"submission_id"`
	BenchmarkID  string    `json:"benchmark"`
	State        JobState  `json:"state"`
	Attempts     int       `json:"attempts"`
	MaxAttempts  int       `json:"max_attempts"`
	RunnerID     string    `json:"runner_id,omitempty"`
	LeaseExpires time.Time `json:"lease_expires,omitempty"`
	Error        string    `json:"error,omitempty"`
	CreatedAt    time.Time `json:"created_at"`
	UpdatedAt    time.Time `json:"updated_at"`
}

// Lease is what a runner holds while it works on a job. The secret proves
// the holder on every callback; it is never stored in clear.
type Lease struct {
	Job    Job     `json:"job"`
	Secret string  `json:"secret"`
	Spec   JobSpec `json:"spec"`
}

// JobSpec is everything a runner needs to re-run a submission.
type JobSpec struct {
	JobID        int64     `json:"job_id"`
	SubmissionID int64     `json:"submission_id"`
	Benchmark    Benchmark `json:"benchmark"`
	Recipe       Recipe    `json:"recipe"`
	Seeds        []int64   `json:"seeds"` // one per run, in run order
	BundleSHA256 string    `json:"bundle_sha256"`
}

// RunLog is the MLLOG text of one re-run.
type RunLog struct {
	Index int    `json:"index"`
	Seed  int64  `json:"seed"`
	Log   []byte `json:"log"`
}
