package templates

import (
	"fmt"
	"sort"
	"strconv"
	"strings"
	"time"

	d5list "github.com/deep500/d5list"
	"github.com/deep500/d5list/leaderboard"
)

// SubmissionLive is the live part of the submission page: the job's place
// in the queue, and for the submitter and organisers the re-run's log tail
// and the submission's timeline.
type SubmissionLive struct {
	// Place is where the entry stands on its benchmark's default board:
	// its rank there, or the entry of its system that supersedes it.
	Place         leaderboard.EntryPlace
	JobID         int64
	JobState      d5list.JobState
	Attempt       int
	MaxAttempts   int
	QueuePosition int
	// NextStep says what the viewer can do about the verdict (nothing for
	// a visitor).
	NextStep NextStep
	// CanDownload: the viewer may download the bundle and the run logs.
	CanDownload bool
	// NoRunner, for a queued job, says that no online runner can take it
	// and what one needs.
	NoRunner string
	// LogVisible: the viewer may read the re-run's output; Log is its
	// tail and Progress how far it got (nil before its first line).
	LogVisible bool
	Log        []d5list.LogLine
	Progress   *d5list.RerunProgress
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

// progressLine is where a re-run is, in a line: "run 2 of 5 · epoch 11 ·
// accuracy 0.9100".
func progressLine(p *d5list.RerunProgress) string {
	if p.Current == 0 {
		return fmt.Sprintf("All %d runs done; the verdict comes next.", len(p.Runs))
	}
	r := p.Runs[p.Current-1]
	s := fmt.Sprintf("run %d of %d", r.Number, len(p.Runs))
	if r.State == d5list.RunWaiting {
		return s + " · starting"
	}
	if d := runValues(r, p.Metric); d != "" {
		s += " · " + d
	}
	return s
}

// runValues are a run's latest epoch and quality value, as far as it
// logged them: "epoch 11 · accuracy 0.9100".
func runValues(r d5list.RunProgress, metric string) string {
	var parts []string
	if r.Epoch != nil {
		parts = append(parts, "epoch "+leaderboard.FormatCount(*r.Epoch))
	}
	if r.Value != nil {
		parts = append(parts, MetricLabel(metric)+" "+formatMetric(metric, *r.Value))
	}
	return strings.Join(parts, " · ")
}

// runDetail is what a run's bar says beside it.
func runDetail(r d5list.RunProgress, metric string) string {
	switch r.State {
	case d5list.RunWaiting:
		return "waiting"
	case d5list.RunDone:
		s := "done"
		if r.Seconds > 0 {
			s += " in " + ageWords(r.Seconds)
		}
		if v := runValues(r, metric); v != "" {
			s += " · " + v
		}
		return s
	}
	s := ageWords(r.Seconds) + " so far"
	if v := runValues(r, metric); v != "" {
		s = v + " · " + s
	}
	return s
}

// timeLeftWords is the re-run's time left and what it is estimated from,
// "" where nothing tells it yet.
func timeLeftWords(p *d5list.RerunProgress) string {
	if p.SecondsLeft < 0 || p.Current == 0 {
		return ""
	}
	from := "the claimed times of the runs"
	if p.EstimatedFrom == d5list.EstimateFromRuns {
		from = "the times of the runs done"
	}
	return "About " + ageWords(p.SecondsLeft) + " left, estimated from " + from + "."
}

func fractionText(f float64) string { return strconv.FormatFloat(f, 'f', 3, 64) }
func percentText(f float64) string  { return strconv.Itoa(int(f*100)) + " %" }

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

// leadersOf are the benchmarks whose boards have a leader, by level, as the
// front page leads with them.
func leadersOf(benchmarks []d5list.Benchmark, o Overview) []d5list.Benchmark {
	var out []d5list.Benchmark
	for _, level := range Levels(benchmarks) {
		for _, b := range level.Benchmarks {
			if o.Boards[b.ID].Leader != nil {
				out = append(out, b)
			}
		}
	}
	return out
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
