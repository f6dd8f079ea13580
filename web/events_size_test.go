package web_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	d5list "github.com/deep500/d5list"
	"github.com/deep500/d5list/handlers"
)

// A competitor following a re-run on its stream gets every log line once,
// with little more than its text, and the progress section at most once
// per EventsProgressEvery: a re-run that logs a line every 25 ms for
// 1.5 s, polled every 20 ms, costs about the bytes of its lines' text.
func TestEventStreamIsCompact(t *testing.T) {
	defer func(poll, alive, refresh, every time.Duration) {
		handlers.EventsPoll, handlers.EventsKeepAlive, handlers.EventsRefresh, handlers.EventsProgressEvery = poll, alive, refresh, every
	}(handlers.EventsPoll, handlers.EventsKeepAlive, handlers.EventsRefresh, handlers.EventsProgressEvery)
	handlers.EventsPoll, handlers.EventsKeepAlive, handlers.EventsRefresh, handlers.EventsProgressEvery =
		20*time.Millisecond, time.Minute, 20*time.Millisecond, 500*time.Millisecond
	p := startReal(t)
	srv := httptest.NewServer(p.handler)
	t.Cleanup(srv.Close)
	ctx := context.Background()
	owner := p.users["competitor"]
	sub := &d5list.Submission{
		BenchmarkID: "l2-digits-mlp-cpu", OwnerID: owner.ID, Status: d5list.StatusQueued,
		Division: d5list.DivisionClosed, Availability: d5list.AvailabilityAvailable,
		Submitter: "Carl", SystemName: "box", Framework: "go", BundleSHA256: strings.Repeat("ab", 32),
		Recipe: &d5list.Recipe{}, Claimed: result(2, 3), Reasons: []d5list.Reason{},
	}
	if err := p.db.CreateSubmission(ctx, sub); err != nil {
		t.Fatal(err)
	}
	token, err := p.db.CreateToken(ctx, owner.ID, "events")
	if err != nil {
		t.Fatal(err)
	}
	lines, next := openEvents(t, srv.URL, sub.ID, token)
	next("data: ")
	lease, err := p.db.LeaseJob(ctx, "pool/r-0", map[string]string{}, time.Minute)
	if err != nil || lease == nil {
		t.Fatalf("lease: %v %v", lease, err)
	}
	// Three runs of 20 lines each, a line every 25 ms.
	start := time.Now()
	logged, textBytes := 0, 0
	for run := range 3 {
		for i := range 20 {
			text := fmt.Sprintf(`:::MLLOG {"time_ms": %d, "key": "eval_accuracy", "value": 0.%02d, "metadata": {"epoch_num": %d}}`, 1000+i*10, 50+i, i+1)
			if i == 0 {
				text = `:::MLLOG {"time_ms": 1000, "key": "run_start", "value": null}`
			}
			if err := p.db.AppendJobLog(ctx, lease.Job.ID, lease.Secret, []d5list.LogLine{{Run: run, Stream: d5list.StreamMLLOG, Text: text}}); err != nil {
				t.Fatal(err)
			}
			logged++
			quoted, _ := json.Marshal(text)
			textBytes += len(quoted)
			time.Sleep(25 * time.Millisecond)
		}
	}
	elapsed := time.Since(start)
	time.Sleep(100 * time.Millisecond) // the last lines' poll
	if err := p.db.CancelJob(ctx, lease.Job.ID); err != nil {
		t.Fatal(err)
	}

	total, progress, progressBytes, biggest, logLines := 0, 0, 0, 0, 0
	event := ""
	timeout := time.After(10 * time.Second)
	for done := false; !done; {
		select {
		case l, ok := <-lines:
			if !ok {
				done = true
				break
			}
			total += len(l) + 1
			switch {
			case strings.HasPrefix(l, "event: "):
				event = strings.TrimPrefix(l, "event: ")
			case strings.HasPrefix(l, "data: ") && event == "progress":
				progress++
				progressBytes += len(l)
				biggest = max(biggest, len(l))
			case strings.HasPrefix(l, "data: ") && event == "log":
				logLines += strings.Count(l, `"seq":`)
			}
		case <-timeout:
			t.Fatal("the stream did not end after the job was cancelled")
		}
	}
	t.Logf("%d lines logged over %v: %d bytes on the stream, %d progress events (%d bytes), %d log lines", logged, elapsed.Round(time.Millisecond), total, progress, progressBytes, logLines)
	if logLines != logged {
		t.Errorf("the stream carried %d log lines, want each of the %d once", logLines, logged)
	}
	if progress == 0 {
		t.Error("the stream sent no progress section")
	}
	sections := int(elapsed/handlers.EventsProgressEvery) + 2
	if progress > sections {
		t.Errorf("%d progress events in %v, want at most %d (one per %v)", progress, elapsed.Round(time.Millisecond), sections, handlers.EventsProgressEvery)
	}
	// Each line's text and at most 70 bytes around it (its seq and
	// stream, and the event's own lines were it alone in its event), that
	// many progress sections and 1 KB of states. Lines that carried their
	// job, attempt, run and arrival time each took some 100 bytes more,
	// and a section sent at each poll made the stream some 110 KB.
	if most := textBytes + 70*logged + sections*biggest + 1024; total > most {
		t.Errorf("the stream sent %d bytes for %d log lines of %d bytes of text, want at most %d", total, logged, textBytes, most)
	}
}
