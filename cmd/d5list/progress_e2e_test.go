package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/PuerkitoBio/goquery"

	d5list "github.com/deep500/d5list"
	"github.com/deep500/d5list/runner"
)

// sseEvent is one Server-Sent Event.
type sseEvent struct {
	name, id, data string
}

// openEvents opens a submission's event stream; token and lastID are
// optional.
func openEvents(t *testing.T, url, token, lastID string) (*http.Response, <-chan sseEvent) {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	if lastID != "" {
		req.Header.Set("Last-Event-ID", lastID)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { resp.Body.Close() })
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET %s: %d", url, resp.StatusCode)
	}
	if ct := resp.Header.Get("Content-Type"); ct != "text/event-stream" {
		t.Fatalf("GET %s: Content-Type %q, want text/event-stream", url, ct)
	}
	events := make(chan sseEvent, 1000)
	go func() {
		defer close(events)
		r := bufio.NewReader(resp.Body)
		var ev sseEvent
		for {
			line, err := r.ReadString('\n')
			if err != nil {
				return
			}
			line = strings.TrimRight(line, "\n")
			switch {
			case line == "":
				if ev.name != "" {
					events <- ev
				}
				ev = sseEvent{}
			case strings.HasPrefix(line, ":"):
			case strings.HasPrefix(line, "event: "):
				ev.name = strings.TrimPrefix(line, "event: ")
			case strings.HasPrefix(line, "id: "):
				ev.id = strings.TrimPrefix(line, "id: ")
			case strings.HasPrefix(line, "data: "):
				ev.data += strings.TrimPrefix(line, "data: ")
			}
		}
	}()
	return resp, events
}

// readAll collects events until the stream ends.
func readAll(t *testing.T, events <-chan sseEvent, within time.Duration) []sseEvent {
	t.Helper()
	var all []sseEvent
	timeout := time.After(within)
	for {
		select {
		case ev, ok := <-events:
			if !ok {
				return all
			}
			all = append(all, ev)
		case <-timeout:
			t.Fatalf("the event stream did not end within %s; got %d events", within, len(all))
		}
	}
}

type streamState struct {
	Status        d5list.Status   `json:"status"`
	Final         bool            `json:"final"`
	JobState      d5list.JobState `json:"job_state"`
	Attempt       int             `json:"attempt"`
	QueuePosition int             `json:"queue_position"`
	LogVisible    bool            `json:"log_visible"`
}

// A submission's event stream follows it from the queue through the
// re-run on a remote runner process (whose output lines arrive while it
// runs) to the verdict, and then ends. Visitors see the status only.
func TestSubmissionEventsFollowARemoteRun(t *testing.T) {
	p := startPool(t, 10*time.Second)
	job := p.queueJob(t, 150, "")
	url := fmt.Sprintf("%s/submissions/%d/events", p.url, job.SubmissionID)
	_, orgEvents := openEvents(t, url, p.orgToken, "")
	_, visitorEvents := openEvents(t, url, "", "")

	// The first state is sent at once: queued, first in line.
	select {
	case ev := <-orgEvents:
		var st streamState
		if ev.name != "state" || json.Unmarshal([]byte(ev.data), &st) != nil || st.JobState != d5list.JobQueued ||
			st.QueuePosition != 1 || !st.LogVisible {
			t.Fatalf("first event %+v, want the queued state, first in line, log visible to an organiser", ev)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("no first event within 5 s")
	}
	p.startRunner(t, "live")

	all := readAll(t, orgEvents, 60*time.Second)
	var sawRunning, sawLinesWhileRunning bool
	var lines []d5list.LogLine
	running := false
	var final d5list.Status
	for _, ev := range all {
		switch ev.name {
		case "state":
			var st streamState
			if err := json.Unmarshal([]byte(ev.data), &st); err != nil {
				t.Fatal(err)
			}
			if st.JobState == d5list.JobLeased && st.Attempt == 1 && st.QueuePosition == 0 {
				sawRunning, running = true, true
			}
			if st.Final {
				running, final = false, st.Status
			}
		case "log":
			var batch []d5list.LogLine
			if err := json.Unmarshal([]byte(ev.data), &batch); err != nil {
				t.Fatal(err)
			}
			if len(batch) == 0 || ev.id != fmt.Sprint(batch[len(batch)-1].Seq) {
				t.Errorf("log event id %q does not name its last line's seq", ev.id)
			}
			if running {
				sawLinesWhileRunning = true
			}
			lines = append(lines, batch...)
		}
	}
	t.Logf("%d events, %d lines", len(all), len(lines))
	if !sawRunning {
		t.Errorf("no state event showed the job leased on attempt 1")
	}
	if !sawLinesWhileRunning {
		t.Errorf("no log lines arrived while the job ran")
	}
	last := all[len(all)-1]
	var end streamState
	if last.name != "end" || json.Unmarshal([]byte(last.data), &end) != nil || !end.Final {
		t.Fatalf("last event %+v, want end with a final status", last)
	}
	if sub := p.submission(t, job.SubmissionID); sub.Status != end.Status {
		t.Errorf("end says %s, the store %s", end.Status, sub.Status)
	}
	var mllogLines, epochEnds int
	for i, l := range lines {
		if i > 0 && l.Seq <= lines[i-1].Seq {
			t.Fatalf("line %d: seq %d after %d", i, l.Seq, lines[i-1].Seq)
		}
		if l.Stream == d5list.StreamMLLOG && strings.HasPrefix(l.Text, ":::MLLOG") && l.Attempt == 1 && l.JobID == job.ID {
			mllogLines++
		}
		if strings.Contains(l.Text, `"key": "epoch_stop"`) || strings.Contains(l.Text, `"key":"epoch_stop"`) {
			epochEnds++
		}
	}
	if mllogLines == 0 || mllogLines != len(lines) {
		t.Errorf("%d of %d lines are attempt 1's MLLOG events; want all", mllogLines, len(lines))
	}
	if epochEnds != 150 {
		t.Errorf("%d epoch_stop events streamed, want 150 (one per epoch)", epochEnds)
	}

	// The visitor saw the same story without a line of the log.
	for _, ev := range readAll(t, visitorEvents, 10*time.Second) {
		if ev.name == "log" || strings.Contains(ev.data, `"log_visible":true`) {
			t.Fatalf("a visitor got %+v", ev)
		}
	}

	// A reconnecting client gets only the lines after the last it saw,
	// and the stream of a finished submission ends at once.
	mid := lines[len(lines)/2].Seq
	_, again := openEvents(t, url, p.orgToken, fmt.Sprint(mid))
	var resumed []d5list.LogLine
	for _, ev := range readAll(t, again, 10*time.Second) {
		if ev.name == "log" {
			var batch []d5list.LogLine
			json.Unmarshal([]byte(ev.data), &batch)
			resumed = append(resumed, batch...)
		}
	}
	if len(resumed) == 0 || resumed[0].Seq != mid+1 || resumed[len(resumed)-1].Seq != lines[len(lines)-1].Seq {
		t.Errorf("resumed after %d: %d lines, want %d..%d", mid, len(resumed), mid+1, lines[len(lines)-1].Seq)
	}

	// The organiser's page shows the log tail and the timeline; a
	// visitor's shows neither.
	org := submissionPage(t, p.url, job.SubmissionID, p.orgToken)
	if n := org.Find(`[data-testid="log-line"]`).Length(); n == 0 || n > 200 {
		t.Errorf("organiser's page: %d log lines, want the tail (1..200)", n)
	}
	var kinds []string
	org.Find(`[data-testid="timeline-entry"]`).Each(func(_ int, e *goquery.Selection) {
		kinds = append(kinds, e.AttrOr("data-kind", ""))
		if e.AttrOr("data-kind", "") == d5list.EventLeased && !strings.Contains(e.Text(), "pool/live-0") {
			t.Errorf("timeline entry %q does not name the runner", e.Text())
		}
	})
	if got, want := strings.Join(kinds, ","), "uploaded,checked,queued,leased,completed"; got != want {
		t.Errorf("timeline %s, want %s", got, want)
	}
	if (&d5list.Submission{Status: final}).Hidden() {
		// A verdict against the entry is not published: the visitor sees
		// no page at all.
		if code := httpStatus(t, fmt.Sprintf("%s/submissions/%d", p.url, job.SubmissionID), ""); code != http.StatusNotFound {
			t.Errorf("a visitor's GET of a hidden %s verdict: %d, want 404", final, code)
		}
	} else {
		visitor := submissionPage(t, p.url, job.SubmissionID, "")
		if visitor.Find(`[data-testid="log-tail"], [data-testid="timeline"]`).Length() != 0 {
			t.Errorf("a visitor's submission page shows the log or the timeline")
		}
	}
}

func submissionPage(t *testing.T, base string, id int64, token string) *goquery.Document {
	t.Helper()
	return getDoc(t, fmt.Sprintf("%s/submissions/%d", base, id), token)
}

// The progress endpoint takes lines only from the holder of the job's
// lease, refuses malformed or oversized batches without storing any of
// them, and answers 409 once the job was cancelled.
func TestProgressEndpointRefusesStrangersAndBadBatches(t *testing.T) {
	p := startPool(t, time.Minute)
	otherToken := p.admin(t, "runner-token", "--name", "other")
	job := p.queueJob(t, 1, "")
	ctx := context.Background()
	mine := &runner.Client{Server: p.url, Token: p.runnerToken}
	theirs := &runner.Client{Server: p.url, Token: otherToken}
	lease, err := mine.Lease(ctx, "m", nil)
	if err != nil || lease == nil || lease.Job.ID != job.ID {
		t.Fatalf("lease: %+v, %v", lease, err)
	}
	line := []d5list.LogLine{{Stream: d5list.StreamStdout, Text: "hello"}}
	for name, call := range map[string]func() error{
		"wrong secret":   func() error { return mine.Progress(ctx, job.ID, "not-the-secret", line) },
		"no secret":      func() error { return mine.Progress(ctx, job.ID, "", line) },
		"another runner": func() error { return theirs.Progress(ctx, job.ID, lease.Secret, line) },
	} {
		if err := call(); d5list.ErrorCode(err) != d5list.EFORBIDDEN {
			t.Errorf("%s: %v, want forbidden (403)", name, err)
		}
	}
	tooMany := make([]d5list.LogLine, 501)
	for i := range tooMany {
		tooMany[i] = d5list.LogLine{Stream: d5list.StreamStdout, Text: "x"}
	}
	for _, body := range []string{
		`{not json`,
		`{"lines": []}`,
		`{"lines": [{"stream": "stdout", "text": "ok"}, {"stream": "nowhere", "text": "x"}]}`,
		`{"lines": [{"stream": "stdout", "run": -1, "text": "x"}]}`,
		`{"lines": [{"stream": "stdout", "text": "` + strings.Repeat("y", 5000) + `"}]}`,
		mustJSON(t, map[string]any{"lines": tooMany}),
	} {
		req, _ := http.NewRequest(http.MethodPost, fmt.Sprintf("%s/api/v1/runner/jobs/%d/progress", p.url, job.ID), strings.NewReader(body))
		req.Header.Set("Authorization", "Bearer "+p.runnerToken)
		req.Header.Set(runner.SecretHeader, lease.Secret)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusBadRequest {
			t.Errorf("progress with %.60s...: %d, want 400", body, resp.StatusCode)
		}
	}
	if lines, err := p.db.JobLog(ctx, job.SubmissionID, 0, 100); err != nil || len(lines) != 0 {
		t.Errorf("after refused batches the log holds %d lines (%v), want none", len(lines), err)
	}
	if err := mine.Progress(ctx, job.ID, lease.Secret, line); err != nil {
		t.Fatalf("the holder's progress: %v", err)
	}
	if lines, _ := p.db.JobLog(ctx, job.SubmissionID, 0, 100); len(lines) != 1 || lines[0].Text != "hello" || lines[0].Attempt != 1 {
		t.Errorf("the log holds %+v, want the holder's one line on attempt 1", lines)
	}
	if code := p.api(t, http.MethodPost, fmt.Sprintf("/api/v1/jobs/%d/cancel", job.ID), p.orgToken, nil, nil); code != 200 {
		t.Fatalf("cancel: %d", code)
	}
	if err := mine.Progress(ctx, job.ID, lease.Secret, line); d5list.ErrorCode(err) != d5list.ECONFLICT {
		t.Errorf("progress on a cancelled job: %v, want conflict (409)", err)
	}
}

func mustJSON(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
