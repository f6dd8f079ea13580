package web_test

import (
	"io"
	"log/slog"
	"net/http"
	"strings"
	"testing"
	"time"

	d5list "github.com/deep500/d5list"
	"github.com/deep500/d5list/handlers"
	"github.com/deep500/d5list/web"
)

func newLimitedServer(t *testing.T, opts handlers.BrowserOptions) *server {
	t.Helper()
	fake := newFake()
	h := web.New(web.Config{Addr: "127.0.0.1:0", Browser: opts}, fake, slog.New(slog.DiscardHandler))
	return &server{Handler: h, fake: fake}
}

// heldUpload starts an upload whose body stays open, and returns once the
// service is reading it: a pipe's Write returns only when read.
func heldUpload(t *testing.T, s *server, token string) (release func() int) {
	t.Helper()
	pr, pw := io.Pipe()
	status := make(chan int, 1)
	go func() { status <- s.do(upload(pr, "application/gzip", token)).Code }()
	if _, err := pw.Write(bundleBytes(64)); err != nil {
		t.Fatal(err)
	}
	return func() int { _ = pw.Close(); return <-status }
}

func TestUploadsInFlightPerUser(t *testing.T) {
	s := newLimitedServer(t, handlers.BrowserOptions{UploadsInFlight: 1, ChecksInFlight: 4})
	release := heldUpload(t, s, "Bearer d5_alice")

	rec := s.do(upload(strings.NewReader("x"), "application/gzip", "Bearer d5_alice"))
	e := decodeError(t, rec)
	if rec.Code != http.StatusTooManyRequests || e.Code != d5list.ELIMIT || rec.Header().Get("Retry-After") == "" {
		t.Fatalf("a second upload while one is checked: %d %q Retry-After %q, want 429 %q with Retry-After", rec.Code, e.Code, rec.Header().Get("Retry-After"), d5list.ELIMIT)
	}
	if !strings.Contains(e.Message, "being checked") {
		t.Errorf("message %q does not say why", e.Message)
	}
	if rec := s.do(upload(strings.NewReader("x"), "application/gzip", "Bearer d5_bob")); rec.Code != http.StatusCreated {
		t.Fatalf("another user's upload: %d %s, want 201", rec.Code, rec.Body)
	}
	if code := release(); code != http.StatusCreated {
		t.Fatalf("the held upload ended %d", code)
	}
	if rec := s.do(upload(strings.NewReader("x"), "application/gzip", "Bearer d5_alice")); rec.Code != http.StatusCreated {
		t.Fatalf("an upload after the first was answered: %d %s, want 201", rec.Code, rec.Body)
	}
}

func TestChecksInFlightPortalWide(t *testing.T) {
	s := newLimitedServer(t, handlers.BrowserOptions{UploadsInFlight: 2, ChecksInFlight: 1})
	release := heldUpload(t, s, "Bearer d5_alice")

	pr, pw := io.Pipe()
	status := make(chan int, 1)
	go func() { status <- s.do(upload(pr, "application/gzip", "Bearer d5_bob")).Code }()
	read := make(chan struct{})
	go func() { _, _ = pw.Write([]byte("x")); close(read) }()
	select {
	case <-read:
		t.Fatal("a second upload was read while the only check slot was held")
	case <-time.After(300 * time.Millisecond):
	}
	if code := release(); code != http.StatusCreated {
		t.Fatalf("the held upload ended %d", code)
	}
	<-read // the waiting upload gets the slot
	_ = pw.Close()
	if code := <-status; code != http.StatusCreated {
		t.Fatalf("the waiting upload ended %d, want 201", code)
	}
}

func TestUploadsPerDay(t *testing.T) {
	s := newLimitedServer(t, handlers.BrowserOptions{UploadsPerDay: 2})
	for i := range 2 {
		if rec := s.do(upload(strings.NewReader("x"), "application/gzip", "Bearer d5_alice")); rec.Code != http.StatusCreated {
			t.Fatalf("upload %d: %d %s", i+1, rec.Code, rec.Body)
		}
	}
	rec := s.do(upload(strings.NewReader("x"), "application/gzip", "Bearer d5_alice"))
	e := decodeError(t, rec)
	if rec.Code != http.StatusTooManyRequests || !strings.Contains(e.Message, "2 a day") {
		t.Fatalf("third upload of the day: %d %q, want 429 naming the daily limit", rec.Code, e.Message)
	}
	if rec.Header().Get("Retry-After") == "" {
		t.Error("429 without Retry-After")
	}
	if rec := s.do(upload(strings.NewReader("x"), "application/gzip", "Bearer d5_bob")); rec.Code != http.StatusCreated {
		t.Fatalf("another user's first upload: %d", rec.Code)
	}
}
