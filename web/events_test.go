package web_test

import (
	"bufio"
	"context"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	d5list "github.com/deep500/d5list"
	"github.com/deep500/d5list/handlers"
	"github.com/deep500/d5list/web"
)

// A submission's event stream outlives the server's WriteTimeout (each
// write moves the deadline), keeps quiet connections alive with comment
// lines, reports the lease and new log lines as they happen, and ends
// with the final status.
func TestSubmissionEventsOutliveTheWriteTimeout(t *testing.T) {
	defer func(poll, alive time.Duration) { handlers.EventsPoll, handlers.EventsKeepAlive = poll, alive }(handlers.EventsPoll, handlers.EventsKeepAlive)
	handlers.EventsPoll, handlers.EventsKeepAlive = 20*time.Millisecond, 100*time.Millisecond
	p := startReal(t)
	srv := httptest.NewUnstartedServer(p.handler)
	srv.Config.WriteTimeout = 300 * time.Millisecond
	srv.Start()
	t.Cleanup(srv.Close)
	ctx := context.Background()
	owner := p.users["competitor"]
	id := p.queueSubmission(t, owner)
	token, err := p.db.CreateToken(ctx, owner.ID, "events")
	if err != nil {
		t.Fatal(err)
	}

	req, _ := http.NewRequest(http.MethodGet, srv.URL+"/submissions/"+strconv.FormatInt(id, 10)+"/events", nil)
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != "text/event-stream" {
		t.Fatalf("%d %s", resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	lines := make(chan string, 1000)
	go func() {
		defer close(lines)
		sc := bufio.NewScanner(resp.Body)
		for sc.Scan() {
			lines <- sc.Text()
		}
	}()
	// next returns the next line starting with prefix, failing after 5 s.
	next := func(prefix string) string {
		t.Helper()
		timeout := time.After(5 * time.Second)
		for {
			select {
			case l, ok := <-lines:
				if !ok {
					t.Fatalf("the stream ended while waiting for %q", prefix)
				}
				if strings.HasPrefix(l, prefix) {
					return l
				}
			case <-timeout:
				t.Fatalf("no %q line within 5 s", prefix)
			}
		}
	}
	if !strings.Contains(next("data: "), `"job_state":"queued"`) {
		t.Fatal("the first state is not queued")
	}
	time.Sleep(2 * srv.Config.WriteTimeout)
	next(": keep-alive") // past the WriteTimeout, the stream still writes

	lease, err := p.db.LeaseJob(ctx, "pool/r-0", map[string]string{}, time.Minute)
	if err != nil || lease == nil {
		t.Fatalf("lease: %v %v", lease, err)
	}
	if l := next("data: "); !strings.Contains(l, `"job_state":"leased"`) || !strings.Contains(l, `"attempt":1`) {
		t.Fatalf("after the lease: %s", l)
	}
	if err := p.db.AppendJobLog(ctx, lease.Job.ID, lease.Secret, []d5list.LogLine{{Stream: d5list.StreamStdout, Text: "step 1"}}); err != nil {
		t.Fatal(err)
	}
	next("event: log")
	if l := next("data: "); !strings.Contains(l, `"text":"step 1"`) {
		t.Fatalf("log event data: %s", l)
	}
	if err := p.db.CancelJob(ctx, lease.Job.ID); err != nil {
		t.Fatal(err)
	}
	next("event: end")
	if l := next("data: "); !strings.Contains(l, `"status":"failed"`) || !strings.Contains(l, `"final":true`) {
		t.Fatalf("end event data: %s", l)
	}
	select {
	case _, ok := <-lines:
		for ok {
			_, ok = <-lines
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the stream did not close after the end event")
	}
}

// Each open stream polls the database, so their number is bounded: one
// past the bound is refused with 503 and Retry-After (the page then polls
// the JSON API), and a closed stream frees its place.
func TestEventStreamsAreBounded(t *testing.T) {
	p := startReal(t, func(c *web.Config) { c.MaxEventStreams = 1 })
	id := p.queueSubmission(t, p.users["competitor"])
	url := p.url + "/submissions/" + strconv.FormatInt(id, 10) + "/events"
	open := func() *http.Response {
		t.Helper()
		resp, err := http.Get(url)
		if err != nil {
			t.Fatal(err)
		}
		return resp
	}
	first := open()
	if first.StatusCode != http.StatusOK {
		t.Fatalf("first stream: %d", first.StatusCode)
	}
	second := open()
	second.Body.Close()
	if second.StatusCode != http.StatusServiceUnavailable || second.Header.Get("Retry-After") == "" {
		t.Fatalf("a stream past the bound: %d, Retry-After %q; want 503 with Retry-After", second.StatusCode, second.Header.Get("Retry-After"))
	}
	first.Body.Close()
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		resp := open()
		resp.Body.Close()
		if resp.StatusCode == http.StatusOK {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the closed stream's place was not freed: %d", resp.StatusCode)
		}
	}
}
