package portal

import (
	"context"
	"fmt"
	"sort"
	"strconv"
	"time"
	"unicode/utf8"

	d5list "github.com/deep500/d5list"
)

// ProgressStore keeps the live progress of jobs: the output lines runners
// stream and the events of each job's life. It is asked of the Store by
// type assertion, like the pool.
type ProgressStore interface {
	AppendJobLog(ctx context.Context, jobID int64, secret string, lines []d5list.LogLine) error
	JobLog(ctx context.Context, submissionID, after int64, limit int) ([]d5list.LogLine, error)
	JobEvents(ctx context.Context, submissionID int64) ([]d5list.JobEvent, error)
}

// MaxProgressLines bounds one batch of progress lines; runners send one
// about every second, or sooner when this many are waiting.
const MaxProgressLines = 500

func (s *Service) progressStore() (ProgressStore, error) {
	ps, ok := s.store.(ProgressStore)
	if !ok {
		return nil, d5list.Errorf(d5list.EUNAVAILABLE, "this portal keeps no live progress")
	}
	return ps, nil
}

// CheckLogLines refuses a malformed batch before anything is stored,
// naming the first bad line.
func CheckLogLines(lines []d5list.LogLine) error {
	if len(lines) == 0 {
		return d5list.Errorf(d5list.EINVALID, "lines: empty; send at least one line")
	}
	if len(lines) > MaxProgressLines {
		return d5list.Errorf(d5list.EINVALID, "lines: %d lines in one batch; at most %d", len(lines), MaxProgressLines)
	}
	for i, l := range lines {
		switch {
		case l.Stream != d5list.StreamStdout && l.Stream != d5list.StreamStderr && l.Stream != d5list.StreamMLLOG:
			return d5list.Errorf(d5list.EINVALID, "lines[%d].stream: %q; use stdout, stderr or mllog", i, l.Stream)
		case l.Run < 0 || l.Run > 1000:
			return d5list.Errorf(d5list.EINVALID, "lines[%d].run: %d is not a run index", i, l.Run)
		case len(l.Text) > d5list.MaxLogLineBytes+16:
			return d5list.Errorf(d5list.EINVALID, "lines[%d].text: %d bytes; cut lines at %d", i, len(l.Text), d5list.MaxLogLineBytes)
		case !utf8.ValidString(l.Text):
			return d5list.Errorf(d5list.EINVALID, "lines[%d].text: not UTF-8", i)
		}
	}
	return nil
}

// Progress stores a batch of output lines from the holder of a job's
// lease (the in-process agents call it directly).
func (s *Service) Progress(ctx context.Context, jobID int64, secret string, lines []d5list.LogLine) error {
	if err := CheckLogLines(lines); err != nil {
		return err
	}
	ps, err := s.progressStore()
	if err != nil {
		return err
	}
	// The runner's clock is not trusted for ordering: lines are stamped
	// when they arrive.
	for i := range lines {
		lines[i].Time = time.Time{}
	}
	if err := ps.AppendJobLog(ctx, jobID, secret, lines); err != nil {
		return err
	}
	s.changed()
	return nil
}

// RunnerProgress is Progress for a remote runner: the job must be held
// by one of the agents of its token.
func (s *Service) RunnerProgress(ctx context.Context, tokenName string, jobID int64, secret string, lines []d5list.LogLine) error {
	if err := CheckLogLines(lines); err != nil {
		return err
	}
	if _, err := s.heldBy(ctx, tokenName, jobID, secret); err != nil {
		return err
	}
	return s.Progress(ctx, jobID, secret, lines)
}

// SubmissionLog returns up to limit progress lines of a submission, oldest
// first: those after seq after, or the latest ones when after is negative.
// Who may read them is the caller's decision: a competitor's output may be
// private.
func (s *Service) SubmissionLog(ctx context.Context, submissionID, after int64, limit int) ([]d5list.LogLine, error) {
	ps, err := s.progressStore()
	if err != nil {
		return nil, err
	}
	return ps.JobLog(ctx, submissionID, after, limit)
}

// Timeline tells a submission's story in time order: upload and checks,
// each job queued, leased (by which runner, which attempt), its lease
// expiring, its end and the verdict, and every review action.
func (s *Service) Timeline(ctx context.Context, submissionID int64) ([]d5list.TimelineEntry, error) {
	sub, err := s.store.Submission(ctx, submissionID)
	if err != nil {
		return nil, err
	}
	out := []d5list.TimelineEntry{
		{Time: sub.CreatedAt, Kind: "uploaded", Text: fmt.Sprintf("uploaded (%d bytes)", sub.BundleSize)},
		{Time: sub.CreatedAt, Kind: "checked", Text: "passed the static checks"},
	}
	var jobs []d5list.Job
	if pool, err := s.poolStore(); err == nil {
		if jobs, err = pool.Jobs(ctx, submissionID); err != nil {
			return nil, err
		}
	}
	for i, j := range jobs {
		text := "queued for verification (job " + itoa64(j.ID) + ")"
		if i > 0 {
			text = "queued again for a re-run (job " + itoa64(j.ID) + ")"
		}
		out = append(out, d5list.TimelineEntry{Time: j.CreatedAt, Kind: "queued", Text: text, JobID: j.ID})
	}
	if ps, err := s.progressStore(); err == nil {
		events, err := ps.JobEvents(ctx, submissionID)
		if err != nil {
			return nil, err
		}
		for _, e := range events {
			out = append(out, eventEntry(e))
		}
		// An expired lease is recorded when the job is next handed out;
		// until then it shows from the job itself.
		now := time.Now()
		for _, j := range jobs {
			if j.State == d5list.JobLeased && !j.LeaseExpires.IsZero() && j.LeaseExpires.Before(now) {
				out = append(out, eventEntry(d5list.JobEvent{JobID: j.ID, Attempt: j.Attempts, Kind: d5list.EventLeaseExpired,
					Runner: j.RunnerID, Time: j.LeaseExpires}))
			}
		}
	}
	if rs, err := s.reviewStore(); err == nil {
		audit, err := rs.AuditLog(ctx, submissionID)
		if err != nil {
			return nil, err
		}
		for _, a := range audit {
			text := "review: " + string(a.Action)
			if a.FromStatus != a.ToStatus {
				text += " (" + string(a.FromStatus) + " → " + string(a.ToStatus) + ")"
			}
			if a.Reason != "" {
				text += ": " + a.Reason
			}
			out = append(out, d5list.TimelineEntry{Time: a.CreatedAt, Kind: "review", Text: text, Actor: a.Actor, JobID: a.JobID})
		}
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].Time.Before(out[j].Time) })
	return out, nil
}

func eventEntry(e d5list.JobEvent) d5list.TimelineEntry {
	t := d5list.TimelineEntry{Time: e.Time, Kind: e.Kind, JobID: e.JobID, Attempt: e.Attempt, Runner: e.Runner}
	attempt := "attempt " + strconv.Itoa(e.Attempt)
	switch e.Kind {
	case d5list.EventLeased:
		t.Text = "leased by runner " + e.Runner + ", " + attempt
	case d5list.EventLeaseExpired:
		t.Text = "the lease of runner " + e.Runner + " expired without a report (" + attempt + ")"
	case d5list.EventRequeued:
		t.Text = "runner " + e.Runner + " reported a failure (" + attempt + "); queued again: " + e.Detail
	case d5list.EventFailed:
		t.Text = "verification failed (" + attempt + "): " + e.Detail
	case d5list.EventCompleted:
		t.Text = "re-run completed by runner " + e.Runner + " (" + attempt + "); verdict: " + e.Detail
	case d5list.EventRemeasure:
		t.Text = "re-run completed by runner " + e.Runner + " (" + attempt + "); its verdict (" + e.Detail + ") waits for its timed runs to be measured again"
	case d5list.EventCancelled:
		t.Text = "cancelled by an organiser (" + attempt + ")"
	default:
		t.Text = e.Kind + " " + e.Detail
	}
	return t
}

func itoa64(n int64) string { return strconv.FormatInt(n, 10) }
