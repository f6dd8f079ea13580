package d5list

import "time"

// Log streams of a re-run's live progress.
const (
	StreamStdout = "stdout"
	StreamStderr = "stderr"
	StreamMLLOG  = "mllog" // the run's MLLOG events, as the workload writes them
)

// LogLine is one line of a re-run's output, streamed by the runner while it
// works. Seq is assigned by the portal and grows with every line stored for
// a submission, so that a reader can ask for what came after the last line
// it saw; Attempt is the lease the line was written under.
type LogLine struct {
	Seq     int64     `json:"seq"`
	JobID   int64     `json:"job_id"`
	Attempt int       `json:"attempt"`
	Run     int       `json:"run"`
	Stream  string    `json:"stream"`
	Text    string    `json:"text"`
	Time    time.Time `json:"time"`
}

// MaxLogLineBytes bounds one progress line; executors cut longer ones.
const MaxLogLineBytes = 4096

// JobEvent is one step of a verification job's life, recorded as it
// happens: leased (by Runner, on Attempt), lease_expired, requeued (the
// runner reported a failure with attempts left), failed, completed (Detail
// is the verdict), remeasure (a verdict held back for another measurement)
// or cancelled.
type JobEvent struct {
	JobID   int64     `json:"job_id"`
	Attempt int       `json:"attempt"`
	Kind    string    `json:"kind"`
	Runner  string    `json:"runner,omitempty"`
	Detail  string    `json:"detail,omitempty"`
	Time    time.Time `json:"time"`
}

// Job event kinds.
const (
	EventLeased       = "leased"
	EventLeaseExpired = "lease_expired"
	EventRequeued     = "requeued"
	EventFailed       = "failed"
	EventCompleted    = "completed"
	// EventRemeasure ends a job whose verdict waits for its timed runs to
	// be measured again (Detail: the verdict held back and why).
	EventRemeasure = "remeasure"
	EventCancelled = "cancelled"
)

// TimelineEntry is one line of a submission's timeline: its upload and
// checks, each job's queueing, leases and end, the verdict, and every
// review action, in time order.
type TimelineEntry struct {
	Time    time.Time `json:"time"`
	Kind    string    `json:"kind"`
	Text    string    `json:"text"`
	JobID   int64     `json:"job_id,omitempty"`
	Attempt int       `json:"attempt,omitempty"`
	Runner  string    `json:"runner,omitempty"`
	Actor   string    `json:"actor,omitempty"`
}
