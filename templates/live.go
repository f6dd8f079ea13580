package templates

import (
	"fmt"
	"sort"
	"strings"
	"time"

	d5list "github.com/deep500/d5list"
)

// SubmissionLive is the live part of the submission page: the job's place
// in the queue, and for the submitter and organisers the re-run's log tail
// and the submission's timeline.
type SubmissionLive struct {
	JobID         int64
	JobState      d5list.JobState
	Attempt       int
	MaxAttempts   int
	QueuePosition int
	// NextStep says what the competitor can do about the verdict.
	NextStep string
	// CanDownload: the viewer may download the bundle and the run logs.
	CanDownload bool
	// NoRunner, for a queued job, says that no online runner can take it
	// and what one needs.
	NoRunner string
	// LogVisible: the viewer may read the re-run's output; Log is its tail.
	LogVisible bool
	Log        []d5list.LogLine
	// Timeline is shown when ShowTimeline (the submitter and organisers).
	ShowTimeline bool
	Timeline     []d5list.TimelineEntry
	// Hidden: the verdict goes against the entry and is not published, so
	// only its competitor and the organisers see the page.
	Hidden bool
	// CanAppeal: the viewer is the entry's competitor and may send the
	// organisers a message about its verdict; AppealSent is when the one
	// still waiting for them was sent.
	CanAppeal     bool
	AppealSent    time.Time
	AppealError   string
	AppealMessage string
	// Repeated: the viewer's upload of files they had uploaded before
	// brought them here, to the entry those files made.
	Repeated bool
}

// JobLine says where the verification job is, in words.
func (l SubmissionLive) JobLine() string {
	if l.JobState == "" {
		return ""
	}
	var b strings.Builder
	b.WriteString("Job: " + strings.ReplaceAll(string(l.JobState), "_", " "))
	if l.QueuePosition > 0 {
		fmt.Fprintf(&b, ", number %d in line", l.QueuePosition)
	}
	if l.Attempt > 0 {
		fmt.Fprintf(&b, ", attempt %d", l.Attempt)
		if l.MaxAttempts > 0 {
			fmt.Fprintf(&b, " of %d", l.MaxAttempts)
		}
	}
	return b.String()
}

func (l SubmissionLive) lastSeq() string {
	if len(l.Log) == 0 {
		return "0"
	}
	return i64toa(l.Log[len(l.Log)-1].Seq)
}

// PoolPage is what the organisers' runners and queue pages show.
type PoolPage struct {
	Runners []d5list.Runner
	Queue   *d5list.QueueView
	Notice  string
}

func labelList(labels map[string]string) []string {
	out := make([]string, 0, len(labels))
	for k, v := range labels {
		out = append(out, k+"="+v)
	}
	sort.Strings(out)
	return out
}

// ageWords is a duration in seconds as people say it.
func ageWords(seconds float64) string {
	d := time.Duration(seconds * float64(time.Second)).Round(time.Second)
	switch {
	case d < time.Minute:
		return fmt.Sprintf("%d s", int(d/time.Second))
	case d < time.Hour:
		return fmt.Sprintf("%d min %d s", int(d/time.Minute), int(d%time.Minute/time.Second))
	}
	return fmt.Sprintf("%d h %d min", int(d/time.Hour), int(d%time.Hour/time.Minute))
}

func sinceWords(t time.Time) string {
	if t.IsZero() {
		return "never"
	}
	return ageWords(max(time.Since(t).Seconds(), 0)) + " ago"
}

// jobStateWords tells a leased job whose lease ran out from a running one.
func jobStateWords(j d5list.QueuedJob) string {
	if j.State == d5list.JobLeased {
		if j.Position > 0 {
			return "waiting (lease expired)"
		}
		return "running"
	}
	return string(j.State)
}

func boolWord(b bool) string {
	if b {
		return "true"
	}
	return "false"
}

// Overview is what the home page shows beside the benchmarks: each
// board's leader and how many entries it ranks, and the newest results.
type Overview struct {
	Boards map[string]BoardSummary
	Latest []LatestResult
}

// BoardSummary is one benchmark's board in a line.
type BoardSummary struct {
	Leader *d5list.Entry
	Ranked int
}

// LatestResult is a ranked entry with its benchmark.
type LatestResult struct {
	Benchmark d5list.Benchmark
	Entry     d5list.Entry
}
