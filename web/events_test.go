package web_test

import (
	"bufio"
	"context"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	d5list "github.com/deep500/d5list"
	"github.com/deep500/d5list/handlers"
	"github.com/deep500/d5list/portal"
	"github.com/deep500/d5list/store"
	"github.com/deep500/d5list/web"
)

// A submission's event stream outlives the server's WriteTimeout (each
// write moves the deadline), keeps quiet connections alive with comment
// lines, reports the lease and new log lines as they happen, and ends
// with the final status. The changes are written to the store directly,
// as another process would, behind the service's back: the stream sees
// them at its periodic refresh.
func TestSubmissionEventsOutliveTheWriteTimeout(t *testing.T) {
	defer func(poll, alive, refresh time.Duration) {
		handlers.EventsPoll, handlers.EventsKeepAlive, handlers.EventsRefresh = poll, alive, refresh
	}(handlers.EventsPoll, handlers.EventsKeepAlive, handlers.EventsRefresh)
	handlers.EventsPoll, handlers.EventsKeepAlive, handlers.EventsRefresh = 20*time.Millisecond, 100*time.Millisecond, 60*time.Millisecond
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

	lines, next := openEvents(t, srv.URL, id, token)
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

// A visitor may follow an entry on its way, but a verdict against it is
// its competitor's and the organisers' until published: the visitor's
// stream ends saying only that the verification ended (issue 16).
func TestVisitorsStreamDoesNotTellAHiddenVerdict(t *testing.T) {
	defer func(poll, refresh time.Duration) {
		handlers.EventsPoll, handlers.EventsRefresh = poll, refresh
	}(handlers.EventsPoll, handlers.EventsRefresh)
	handlers.EventsPoll, handlers.EventsRefresh = 20*time.Millisecond, 60*time.Millisecond
	p := startReal(t)
	ctx := context.Background()
	id := p.queueSubmission(t, p.users["competitor"])
	lines, next := openEvents(t, p.url, id, "")
	if !strings.Contains(next("data: "), `"status":"queued"`) {
		t.Fatal("the visitor's first state is not queued")
	}
	lease, err := p.db.LeaseJob(ctx, "pool/r-0", map[string]string{}, time.Minute)
	if err != nil || lease == nil {
		t.Fatalf("lease: %v %v", lease, err)
	}
	if err := p.db.CancelJob(ctx, lease.Job.ID); err != nil { // the entry fails
		t.Fatal(err)
	}
	var seen []string
	for ended := time.After(10 * time.Second); ; {
		l, ok := "", false
		select {
		case l, ok = <-lines:
		case <-ended:
			t.Fatalf("the visitor's stream did not end: %q", seen)
		}
		if !ok {
			break
		}
		seen = append(seen, l)
	}
	all := strings.Join(seen, "\n")
	if strings.Contains(all, `"failed"`) || !strings.Contains(all, "event: end") || !strings.Contains(all, "not public") {
		t.Errorf("the visitor's stream after a hidden verdict:\n%s\nwant an end event that does not say failed", all)
	}
}

// Each open stream holds a connection and reads the store when something
// changed, so their number is bounded: one
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

// readCounter is the real store, counting the reads of a submission's
// live state.
type readCounter struct {
	store.Quota
	reads atomic.Int64
}

func (c *readCounter) Submission(ctx context.Context, id int64) (*d5list.Submission, error) {
	c.reads.Add(1)
	return c.Quota.Submission(ctx, id)
}

// An idle stream does not read the store: it reads again when the service
// reports a change (here a lease and output lines through the service),
// which then shows at once.
func TestIdleEventStreamsDoNotRead(t *testing.T) {
	defer func(poll, alive, refresh time.Duration) {
		handlers.EventsPoll, handlers.EventsKeepAlive, handlers.EventsRefresh = poll, alive, refresh
	}(handlers.EventsPoll, handlers.EventsKeepAlive, handlers.EventsRefresh)
	handlers.EventsPoll, handlers.EventsKeepAlive, handlers.EventsRefresh = 10*time.Millisecond, 50*time.Millisecond, time.Hour
	ctx := context.Background()
	var counted *readCounter
	p := startRealOn(t, func(q store.Quota) portal.Store {
		counted = &readCounter{Quota: q}
		return counted
	})
	owner := p.users["competitor"]
	id := p.queueSubmission(t, owner)
	token, err := p.db.CreateToken(ctx, owner.ID, "events")
	if err != nil {
		t.Fatal(err)
	}
	_, next := openEvents(t, p.url, id, token)
	if !strings.Contains(next("data: "), `"job_state":"queued"`) {
		t.Fatal("the first state is not queued")
	}
	// Three keep-alives: at least 15 ticks of the stream with nothing new.
	afterFirst := counted.reads.Load()
	for range 3 {
		next(": keep-alive")
	}
	if idle := counted.reads.Load() - afterFirst; idle != 0 {
		t.Fatalf("an idle stream read the submission %d times in 15 ticks, want none", idle)
	}

	lease, err := p.svc.Lease(ctx, "pool/r-0", map[string]string{})
	if err != nil || lease == nil {
		t.Fatalf("lease: %v %v", lease, err)
	}
	if l := next("data: "); !strings.Contains(l, `"job_state":"leased"`) {
		t.Fatalf("after a lease through the service: %s", l)
	}
	if err := p.svc.Progress(ctx, lease.Job.ID, lease.Secret, []d5list.LogLine{{Stream: d5list.StreamStdout, Text: "step 1"}}); err != nil {
		t.Fatal(err)
	}
	next("event: log")
	if l := next("data: "); !strings.Contains(l, `"text":"step 1"`) {
		t.Fatalf("log event data: %s", l)
	}
	if counted.reads.Load() == afterFirst {
		t.Fatal("the stream showed the changes without reading them")
	}
}

// openEvents opens a submission's event stream as token's user and returns
// its lines as they come, and next: the next line starting with prefix,
// failing the test after 5 s or when the stream ends first.
func openEvents(t *testing.T, base string, id int64, token string) (<-chan string, func(prefix string) string) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodGet, base+"/submissions/"+strconv.FormatInt(id, 10)+"/events", nil)
	if token != "" { // "" is a visitor
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { resp.Body.Close() })
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
	return lines, next
}
