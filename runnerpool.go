package d5list

import (
	"sort"
	"strings"
	"time"
)

// RunnerToken is an organiser-issued credential of one runner machine. The
// token itself is shown once; only its hash is kept.
type RunnerToken struct {
	ID        int64     `json:"id"`
	Name      string    `json:"name"`
	CreatedAt time.Time `json:"created_at"`
}

// Runner is one agent of the pool as the portal last saw it. Online is
// derived from LastSeen: an agent long-polls or heartbeats every few
// seconds, so one silent for longer is gone.
type Runner struct {
	Name       string            `json:"name"`
	Labels     map[string]string `json:"labels"`
	LastSeen   time.Time         `json:"last_seen"`
	CurrentJob int64             `json:"current_job,omitempty"`
	Online     bool              `json:"online"`
}

// QueuedJob is a job of the queue with its place in the line: 1 is the
// next to be leased; 0 means it is not waiting (a live lease holds it).
type QueuedJob struct {
	Job
	Position int `json:"position"`
}

// Backlog is what waits for runners on one benchmark.
type Backlog struct {
	Benchmark string    `json:"benchmark"`
	Waiting   int       `json:"waiting"` // queued, or leased with an expired lease
	Running   int       `json:"running"` // held by a live lease
	Oldest    time.Time `json:"oldest,omitempty"`
	// OldestAgeSeconds is the age of the oldest waiting job when the view
	// was made; 0 when nothing waits.
	OldestAgeSeconds float64 `json:"oldest_age_s"`
}

// QueueView is the whole queue: backlog per benchmark and every job not
// finished yet, oldest first.
type QueueView struct {
	Backlog []Backlog   `json:"backlog"`
	Jobs    []QueuedJob `json:"jobs"`
}

// FormatLabels prints runner labels sorted by name, as
// "cpu_model=AMD EPYC, runs=builtin".
func FormatLabels(labels map[string]string) string {
	keys := make([]string, 0, len(labels))
	for k := range labels {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = k + "=" + labels[k]
	}
	return strings.Join(parts, ", ")
}
