package handlers

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	d5list "github.com/deep500/d5list"
	"github.com/deep500/d5list/templates"
)

// ProgressService is the live-progress side of the portal: runners' output
// lines and the submission timeline. It is asked of the Service by type
// assertion, so that services without it still serve every other route.
type ProgressService interface {
	RunnerProgress(ctx context.Context, tokenName string, jobID int64, secret string, lines []d5list.LogLine) error
	SubmissionLog(ctx context.Context, submissionID, after int64, limit int) ([]d5list.LogLine, error)
	Timeline(ctx context.Context, submissionID int64) ([]d5list.TimelineEntry, error)
}

// maxProgressBytes bounds one progress batch: 500 lines of 4 KiB and
// their JSON.
const maxProgressBytes = 3 << 20

// The event stream's pace. Variables so that tests need not wait.
var (
	// EventsPoll is how often a stream looks for a new state and lines.
	EventsPoll = 500 * time.Millisecond
	// EventsKeepAlive is the longest silence on a stream: proxies close
	// idle connections, and a comment line keeps them open.
	EventsKeepAlive = 15 * time.Second
	// EventsMaxAge ends a stream after this long; EventSource reconnects
	// (with Last-Event-ID), so no connection is held forever.
	EventsMaxAge = 30 * time.Minute
	// EventsRefresh is the longest a stream goes without reading the
	// store when the service reports no change (ChangeCounter): a lease
	// that expires, or a write by another process, shows within it.
	EventsRefresh = 5 * time.Second
	// EventsProgressEvery is the least time between two "progress" events
	// of a stream. The section is whole HTML, about a kilobyte, and can
	// change at every poll (a run's epoch, its time left): it is sent with
	// what changed meanwhile rather than at each poll. The log lines still
	// go out at each poll.
	EventsProgressEvery = 2 * time.Second
)

// ChangeCounter is asked of the Service by type assertion: a count of the
// writes that change what a submission's live view shows. An open stream
// reads the store only when it moved (or EventsRefresh passed), so idle
// streams cost nothing but their keep-alives.
type ChangeCounter interface {
	Changes() uint64
}

// ProgressReader reads how far a re-run has got from its lines; asked of
// the Service by type assertion, like ProgressService.
type ProgressReader interface {
	RerunProgress(ctx context.Context, sub *d5list.Submission) (*d5list.RerunProgress, error)
}

// rerunProgress is how far sub's re-run got, for a viewer who may read
// its log: nil where the service keeps none or nothing arrived yet.
func (h *Handler) rerunProgress(ctx context.Context, sub *d5list.Submission) (*d5list.RerunProgress, error) {
	pr, ok := h.svc.(ProgressReader)
	if !ok || sub.Status.Final() {
		return nil, nil
	}
	return pr.RerunProgress(ctx, sub)
}

// logTailLines is how many lines the page and one stream event carry.
const logTailLines = 200

func (h *Handler) progress() ProgressService {
	ps, _ := h.svc.(ProgressService)
	return ps
}

type progressRequest struct {
	Lines []d5list.LogLine `json:"lines"`
}

// JobProgress is POST /api/v1/runner/jobs/{id}/progress: a batch of the
// held job's output lines. Like every call about a job it needs the lease
// secret; a malformed batch is 400 and nothing of it is stored.
func (h *Handler) JobProgress(w http.ResponseWriter, r *http.Request) {
	id, secret, err := jobCall(r)
	if err != nil {
		h.Error(w, r, err)
		return
	}
	ps := h.progress()
	if ps == nil {
		h.Error(w, r, d5list.Errorf(d5list.EUNAVAILABLE, "this portal keeps no live progress"))
		return
	}
	var req progressRequest
	if err := decodeJSONBody(r, maxProgressBytes, &req); err != nil {
		h.Error(w, r, err)
		return
	}
	if err := ps.RunnerProgress(r.Context(), runnerFrom(r.Context()).Name, id, secret, req.Lines); err != nil {
		h.Error(w, r, err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

// viewer is who asks, on routes open to everyone: the bearer token's user,
// the session's, or nil for a visitor.
func (h *Handler) viewer(r *http.Request) (*d5list.User, error) {
	if token, ok := bearerToken(r); ok {
		user, err := h.svc.Authenticate(r.Context(), token)
		if err != nil || user == nil {
			return nil, d5list.Errorf(d5list.EUNAUTHORIZED, "the API token is not valid")
		}
		return user, nil
	}
	return sessionUser(r), nil
}

// mayReadLog says who sees a re-run's output: it runs the competitor's
// code, whose output may be private, so only the submitter and organisers
// do. Everyone sees the status.
func mayReadLog(u *d5list.User, sub *d5list.Submission) bool {
	return u != nil && (u.ID == sub.OwnerID || u.Role.AtLeast(d5list.RoleOrganiser))
}

// liveState is the "state" event of a submission's stream.
type liveState struct {
	Status        d5list.Status   `json:"status"`
	Final         bool            `json:"final"`
	JobID         int64           `json:"job_id,omitempty"`
	JobState      d5list.JobState `json:"job_state,omitempty"`
	Attempt       int             `json:"attempt"`
	MaxAttempts   int             `json:"max_attempts,omitempty"`
	QueuePosition int             `json:"queue_position"`
	LogVisible    bool            `json:"log_visible"`
	// Message explains a state that is not the submission's own: the
	// end of a stream whose verdict the viewer may not see.
	Message string `json:"message,omitempty"`
}

// hiddenEnd is the last event of a stream whose entry got a verdict the
// viewer may not see (Submission.MayView): that the verification ended,
// and nothing of how.
var hiddenEnd = liveState{Status: "ended", Final: true,
	Message: "the verification ended; its verdict is not public until an organiser publishes it"}

func (h *Handler) liveState(ctx context.Context, id int64, logVisible bool) (*d5list.Submission, liveState, error) {
	sub, err := h.svc.Submission(ctx, id)
	if err != nil {
		return nil, liveState{}, err
	}
	st := liveState{Status: sub.Status, Final: sub.Status.Final(), LogVisible: logVisible}
	if h.runners != nil {
		job, err := h.runners.SubmissionJob(ctx, id)
		if err != nil {
			return nil, liveState{}, err
		}
		if job != nil {
			st.JobID, st.JobState, st.Attempt, st.MaxAttempts, st.QueuePosition =
				job.ID, job.State, job.Attempts, job.MaxAttempts, job.Position
		}
	}
	return sub, st, nil
}

// SubmissionEvents is GET /submissions/{id}/events, a Server-Sent Events
// stream of the submission's progress: "state" events (status, job state,
// attempt, place in line) when it changes, "log" events with new output
// lines (their id is the last line's seq, so a reconnecting EventSource
// resumes after it) for the submitter and organisers, and a last "end"
// event once the verdict is final. Comment lines keep it alive.
func (h *Handler) SubmissionEvents(w http.ResponseWriter, r *http.Request) {
	id, err := submissionID(r)
	if err != nil {
		h.Error(w, r, err)
		return
	}
	user, err := h.viewer(r)
	if err != nil {
		h.Error(w, r, err)
		return
	}
	ctx := r.Context()
	sub, err := h.svc.Submission(ctx, id)
	if err != nil {
		h.Error(w, r, err)
		return
	}
	if !sub.MayView(user) {
		h.Error(w, r, hiddenSubmission(id))
		return
	}
	ps := h.progress()
	logVisible := ps != nil && mayReadLog(user, sub)
	after := int64(0)
	for _, raw := range []string{r.Header.Get("Last-Event-ID"), r.URL.Query().Get("after")} {
		if n, err := strconv.ParseInt(raw, 10, 64); err == nil && n > after {
			after = n
		}
	}

	select {
	case h.eventStreams <- struct{}{}:
		defer func() { <-h.eventStreams }()
	default:
		// The page's script falls back to polling the JSON API.
		w.Header().Set("Retry-After", "30")
		h.Error(w, r, d5list.Errorf(d5list.EUNAVAILABLE, "%d live streams are open, the most this portal serves; poll /api/v1/submissions/%d instead", cap(h.eventStreams), id))
		return
	}
	rc := http.NewResponseController(w)
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-store")
	w.Header().Set("X-Accel-Buffering", "no") // nginx: pass events on at once
	w.WriteHeader(http.StatusOK)
	// The server's WriteTimeout would cut the stream; each write moves the
	// deadline on instead.
	extend := func() { _ = rc.SetWriteDeadline(time.Now().Add(EventsKeepAlive + time.Minute)) }
	extend()
	if _, err := fmt.Fprint(w, "retry: 3000\n\n"); err != nil {
		return
	}

	var last liveState
	var lastProgress string
	first := true
	lastWrite := time.Now()
	ends := time.Now().Add(EventsMaxAge)
	tick := time.NewTicker(EventsPoll)
	defer tick.Stop()
	counter, counts := h.svc.(ChangeCounter)
	keeper, keeps := h.svc.(currentKeeper)
	var seen uint64 // the change count the last read saw
	var lastRead, lastProgressAt time.Time
	progressDue := false // a change not yet in a "progress" event
	for {
		extend()
		wrote := false
		var changes uint64
		if keeps {
			// Another process's commit moves the count too.
			if err := keeper.Current(ctx); err != nil {
				return
			}
		}
		if counts {
			// Taken before the reads: a change during them is read at
			// the next tick.
			changes = counter.Changes()
		}
		progressNow := time.Since(lastProgressAt) >= EventsProgressEvery
		if first || !counts || changes != seen || time.Since(lastRead) >= EventsRefresh || (progressDue && progressNow) {
			sub, st, err := h.liveState(ctx, id, logVisible)
			if err != nil {
				if ctx.Err() == nil {
					h.log.WarnContext(ctx, "submission events", "submission", id, "err", err)
				}
				return
			}
			// Who may see the entry is asked again at each read: a visitor
			// follows an entry on its way, but a verdict against it is its
			// competitor's and the organisers' until it is published.
			if !sub.MayView(user) {
				_ = writeEvent(w, "end", "", hiddenEnd)
				_ = rc.Flush()
				return
			}
			if first || st != last {
				if writeEvent(w, "state", "", st) != nil {
					return
				}
				first, last, wrote = false, st, true
			}
			// The lines are read after the state: once it is final,
			// every line is in. A reader behind gets them all, batch
			// after batch.
			for logVisible {
				lines, err := ps.SubmissionLog(ctx, id, after, logTailLines)
				if err != nil {
					return
				}
				if len(lines) == 0 {
					break
				}
				after = lines[len(lines)-1].Seq
				if writeEvent(w, "log", strconv.FormatInt(after, 10), streamLines(lines)) != nil {
					return
				}
				wrote = true
				if len(lines) < logTailLines {
					break
				}
				extend()
			}
			if st.Final {
				_ = writeEvent(w, "end", "", st)
				_ = rc.Flush()
				return
			}
			// A read between two progress events only marks the section
			// due: it is rendered and sent once EventsProgressEvery has
			// passed, with whatever changed meanwhile.
			if logVisible && !progressNow {
				progressDue = true
			}
			if logVisible && progressNow {
				progressDue = false
				html, err := h.progressHTML(ctx, sub)
				if err != nil {
					return
				}
				if html != lastProgress {
					if writeEvent(w, "progress", "", progressEvent{HTML: html}) != nil {
						return
					}
					lastProgress, lastProgressAt, wrote = html, time.Now(), true
				}
			}
			seen, lastRead = changes, time.Now()
		}
		if !wrote && time.Since(lastWrite) >= EventsKeepAlive {
			if _, err := fmt.Fprint(w, ": keep-alive\n\n"); err != nil {
				return
			}
			wrote = true
		}
		if wrote {
			lastWrite = time.Now()
			if rc.Flush() != nil {
				return
			}
		}
		if time.Now().After(ends) {
			return
		}
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
	}
}

// progressEvent is the "progress" event of a submission's stream: the
// page's progress section, rendered as the page renders it, which the
// page's script swaps in.
type progressEvent struct {
	HTML string `json:"html"`
}

// progressHTML renders sub's re-run progress as the page shows it.
func (h *Handler) progressHTML(ctx context.Context, sub *d5list.Submission) (string, error) {
	p, err := h.rerunProgress(ctx, sub)
	if err != nil {
		return "", err
	}
	var b strings.Builder
	err = templates.RerunProgress(p).Render(ctx, &b)
	return b.String(), err
}

// streamLine is a log line as a "log" event carries it: what the page
// shows of it, and which job, attempt and run it came from, so that a
// client following a re-measured entry tells its attempts apart. The
// arrival time is left out: with it every line cost some 100 bytes more
// than its text, more than a typical line's text.
type streamLine struct {
	Seq     int64  `json:"seq"`
	JobID   int64  `json:"job_id"`
	Attempt int    `json:"attempt"`
	Run     int    `json:"run"`
	Stream  string `json:"stream"`
	Text    string `json:"text"`
}

func streamLines(lines []d5list.LogLine) []streamLine {
	out := make([]streamLine, len(lines))
	for i, l := range lines {
		out[i] = streamLine{Seq: l.Seq, JobID: l.JobID, Attempt: l.Attempt, Run: l.Run, Stream: l.Stream, Text: l.Text}
	}
	return out
}

// writeEvent writes one event; data is JSON, on one line.
func writeEvent(w http.ResponseWriter, event, id string, data any) error {
	b, err := json.Marshal(data)
	if err != nil {
		return err
	}
	msg := "event: " + event + "\n"
	if id != "" {
		msg += "id: " + id + "\n"
	}
	_, err = fmt.Fprintf(w, "%sdata: %s\n\n", msg, b)
	return err
}
