package handlers_test

import (
	"context"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/deep500/d5list/handlers"
	"github.com/deep500/d5list/portal"
	"github.com/deep500/d5list/store"
)

// errorRecords keeps the log records at ERROR and above.
type errorRecords struct {
	mu      sync.Mutex
	records []string
}

func (e *errorRecords) Enabled(_ context.Context, l slog.Level) bool { return l >= slog.LevelError }
func (e *errorRecords) Handle(_ context.Context, r slog.Record) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.records = append(e.records, r.Message)
	return nil
}
func (e *errorRecords) WithAttrs([]slog.Attr) slog.Handler { return e }
func (e *errorRecords) WithGroup(string) slog.Handler      { return e }

// An agent that stops while its lease request waits is no server error:
// the request ends as 499 (client closed), without an ERROR log.
func TestCancelledLeaseRequestIsNoServerError(t *testing.T) {
	ctx := context.Background()
	db, err := store.Open(ctx, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	token, err := db.CreateRunnerToken(ctx, "box")
	if err != nil {
		t.Fatal(err)
	}
	logs := &errorRecords{}
	log := slog.New(logs)
	svc := portal.New(db, nil, portal.Config{}, log)
	defer svc.StopWaiting()
	h := handlers.New(svc, log, handlers.Options{LeaseWait: time.Minute})
	statuses := make(chan int, 1)
	lease := h.RequireRunner(http.HandlerFunc(h.LeaseJob))
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		rec := &statusRecorder{ResponseWriter: w}
		lease.ServeHTTP(rec, r)
		statuses <- rec.status
	}))
	defer srv.Close()

	reqCtx, cancel := context.WithCancel(ctx)
	req, _ := http.NewRequestWithContext(reqCtx, http.MethodPost, srv.URL+"/api/v1/runner/lease",
		strings.NewReader(`{"runner_id":"a","labels":{}}`))
	req.Header.Set("Authorization", "Bearer "+token)
	go func() {
		// Long enough to be waiting in line; either way the request is
		// cancelled mid-way.
		time.Sleep(300 * time.Millisecond)
		cancel()
	}()
	if resp, err := http.DefaultClient.Do(req); err == nil {
		resp.Body.Close()
		t.Fatalf("the lease request answered %d with nothing queued and a minute to wait", resp.StatusCode)
	}
	select {
	case st := <-statuses:
		if st != 499 {
			t.Fatalf("the cancelled lease request ended with %d, want 499", st)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the cancelled lease request is still waiting on the server")
	}
	logs.mu.Lock()
	defer logs.mu.Unlock()
	if len(logs.records) > 0 {
		t.Fatalf("a cancelled lease request logged errors: %q", logs.records)
	}
}

type statusRecorder struct {
	http.ResponseWriter
	status int
}

func (s *statusRecorder) WriteHeader(code int) {
	if s.status == 0 {
		s.status = code
	}
	s.ResponseWriter.WriteHeader(code)
}
