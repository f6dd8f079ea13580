package web_test

import (
	"io"
	"log/slog"
	"net/http"
	"strings"
	"testing"
	"time"

	d5list "github.com/deep500/d5list"
	"github.com/deep500/d5list/bundle"
	"github.com/deep500/d5list/handlers"
	"github.com/deep500/d5list/web"
)

func newLimitedServer(t *testing.T, opts handlers.BrowserOptions) *server {
	t.Helper()
	fake := newFake()
	h := web.New(web.Config{Addr: "127.0.0.1:0", Browser: opts}, fake, slog.New(slog.DiscardHandler))
	return &server{Handler: h, fake: fake}
}

// sizedUpload is an upload whose body declares size bytes (-1: not said).
func sizedUpload(body io.Reader, token string, size int64) *http.Request {
	req := upload(body, "application/gzip", token)
	req.ContentLength = size
	return req
}

// heldUpload starts an upload whose body stays open, and returns once the
// service is reading it: a pipe's Write returns only when read.
func heldUpload(t *testing.T, s *server, token string, size int64) (release func() int) {
	t.Helper()
	pr, pw := io.Pipe()
	status := make(chan int, 1)
	go func() { status <- s.do(sizedUpload(pr, token, size)).Code }()
	if _, err := pw.Write(bundleBytes(64)); err != nil {
		t.Fatal(err)
	}
	return func() int { _ = pw.Close(); return <-status }
}

// waitingUpload starts an upload, checks that its body is not read while
// what is held stays held (why says what), and returns the function that
// waits for it to be read and answered.
func waitingUpload(t *testing.T, s *server, token string, size int64, why string) (answered func() int) {
	t.Helper()
	pr, pw := io.Pipe()
	status := make(chan int, 1)
	go func() { status <- s.do(sizedUpload(pr, token, size)).Code }()
	read := make(chan struct{})
	go func() { _, _ = pw.Write([]byte("x")); close(read) }()
	select {
	case <-read:
		t.Fatalf("an upload was read while %s", why)
	case <-time.After(300 * time.Millisecond):
	}
	return func() int {
		<-read
		_ = pw.Close()
		return <-status
	}
}

func TestUploadsInFlightPerUser(t *testing.T) {
	s := newLimitedServer(t, handlers.BrowserOptions{UploadsInFlight: 1, ChecksInFlight: 4})
	release := heldUpload(t, s, "Bearer d5_alice", -1)

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
	release := heldUpload(t, s, "Bearer d5_alice", -1)
	waiting := waitingUpload(t, s, "Bearer d5_bob", -1, "the only check slot was held")
	if code := release(); code != http.StatusCreated {
		t.Fatalf("the held upload ended %d", code)
	}
	if code := waiting(); code != http.StatusCreated {
		t.Fatalf("the waiting upload ended %d, want 201", code)
	}
}

// Uploads are admitted by the most memory their checks may take, by
// their declared size (bundle.Limits.CheckMemory): with room for one
// upload of the largest kind and a small one, a small one goes through
// while a large one is checked, and a second large one is not read until
// the first is answered.
func TestUploadsAdmittedByTheirMemory(t *testing.T) {
	lim := bundle.DefaultLimits()
	large, small := int64(10<<20), int64(200)
	s := newLimitedServer(t, handlers.BrowserOptions{UploadsInFlight: 2, ChecksInFlight: 8,
		CheckMemory: lim.CheckMemory(large) + lim.CheckMemory(small)})
	release := heldUpload(t, s, "Bearer d5_alice", large)
	if rec := s.do(sizedUpload(strings.NewReader("x"), "Bearer d5_alice", small)); rec.Code != http.StatusCreated {
		t.Fatalf("a small upload while a large one is checked: %d %s, want 201", rec.Code, rec.Body)
	}
	waiting := waitingUpload(t, s, "Bearer d5_bob", large, "a large upload's check held the memory")
	if code := release(); code != http.StatusCreated {
		t.Fatalf("the first large upload ended %d", code)
	}
	if code := waiting(); code != http.StatusCreated {
		t.Fatalf("the waiting large upload ended %d, want 201", code)
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
