package web

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"runtime/debug"
	"strconv"
	"sync/atomic"
	"time"

	d5list "github.com/deep500/d5list"
	"github.com/deep500/d5list/handlers"
)

type requestIDKey struct{}

// requestIDPrefix makes this process's request ids unlike another's (or
// an earlier run's, whose logs may sit beside): 8 random hex digits, then
// a count. Reading crypto/rand on every request cost a system call on a
// path that a cached board makes as cheap as a static file.
var (
	requestIDPrefix = func() string {
		var b [4]byte
		_, _ = rand.Read(b[:])
		return hex.EncodeToString(b[:]) + "-"
	}()
	requestCount atomic.Uint64
)

// nextRequestID is this process's next request id: unique, not secret.
func nextRequestID() string {
	var buf [32]byte
	b := append(buf[:0], requestIDPrefix...)
	return string(strconv.AppendUint(b, requestCount.Add(1), 36))
}

// requestID tags each request with an id, taken from X-Request-Id when a
// proxy set a sane one, so that a user's report can be found in the logs.
func requestID(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		id := r.Header.Get("X-Request-Id")
		if !saneID(id) {
			id = nextRequestID()
		}
		w.Header()["X-Request-Id"] = []string{id}
		next.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), requestIDKey{}, id)))
	})
}

func saneID(id string) bool {
	if id == "" || len(id) > 64 {
		return false
	}
	for _, c := range id {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_' || c == '.') {
			return false
		}
	}
	return true
}

// RequestID returns the id requestID gave the request.
func RequestID(ctx context.Context) string {
	id, _ := ctx.Value(requestIDKey{}).(string)
	return id
}

// recorder remembers what was answered, for the access log and so that
// recoverer knows whether an error answer can still be written.
type recorder struct {
	http.ResponseWriter
	status int
	bytes  int64
}

func (rec *recorder) WriteHeader(status int) {
	if rec.status == 0 {
		rec.status = status
	}
	rec.ResponseWriter.WriteHeader(status)
}

func (rec *recorder) Write(p []byte) (int, error) {
	if rec.status == 0 {
		rec.status = http.StatusOK
	}
	n, err := rec.ResponseWriter.Write(p)
	rec.bytes += int64(n)
	return n, err
}

// ReadFrom lets http.ServeContent copy through the connection's own
// ReadFrom (a pooled buffer, or sendfile) where it has one: without it
// io.Copy allocates and clears a 32 KB buffer for every answer, which was
// a third of the cost of a cached board page.
func (rec *recorder) ReadFrom(src io.Reader) (int64, error) {
	if rec.status == 0 {
		rec.status = http.StatusOK
	}
	var n int64
	var err error
	if rf, ok := rec.ResponseWriter.(io.ReaderFrom); ok {
		n, err = rf.ReadFrom(src)
	} else {
		n, err = io.Copy(struct{ io.Writer }{rec.ResponseWriter}, src)
	}
	rec.bytes += n
	return n, err
}

// Unwrap lets http.ResponseController reach the connection's writer.
func (rec *recorder) Unwrap() http.ResponseWriter { return rec.ResponseWriter }

// accessLog logs one line per request. It logs the path without the query
// and no header at all, so that tokens never reach the logs.
func accessLog(log *slog.Logger) func(http.Handler) http.Handler {
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			start := time.Now()
			rec := &recorder{ResponseWriter: w}
			next.ServeHTTP(rec, r)
			status := rec.status
			if status == 0 {
				status = http.StatusOK
			}
			level := slog.LevelInfo
			if status >= 500 {
				level = slog.LevelError
			}
			log.LogAttrs(r.Context(), level, "request",
				slog.String("request_id", RequestID(r.Context())),
				slog.String("method", r.Method),
				slog.String("path", r.URL.Path),
				slog.Int("status", status),
				slog.Int64("bytes", rec.bytes),
				slog.Duration("duration", time.Since(start)),
				slog.String("remote", r.RemoteAddr),
			)
		})
	}
}

// recoverer turns a panic into a logged internal error, answered through
// the handlers' error helper when nothing was written yet.
func recoverer(log *slog.Logger, h *handlers.Handler) func(http.Handler) http.Handler {
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			rec, ok := w.(*recorder)
			if !ok {
				rec = &recorder{ResponseWriter: w}
			}
			defer func() {
				p := recover()
				if p == nil {
					return
				}
				if p == http.ErrAbortHandler {
					panic(p)
				}
				log.ErrorContext(r.Context(), "panic serving request", "request_id", RequestID(r.Context()),
					"method", r.Method, "path", r.URL.Path, "panic", fmt.Sprint(p), "stack", string(debug.Stack()))
				if rec.status == 0 {
					h.Error(rec, r, d5list.Errorf(d5list.EINTERNAL, "panic: %v", p))
				}
			}()
			next.ServeHTTP(rec, r)
		})
	}
}

// contentSecurityPolicy lets pages load scripts, styles and images from
// the portal only: no inline script, no other origin, no framing.
const contentSecurityPolicy = "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; object-src 'none'; frame-ancestors 'none'; base-uri 'self'; form-action 'self'"

// The security headers' values, made once and shared by every answer:
// assigned into the header map under their canonical keys, which saves
// Header.Set's canonicalisation and a slice per header per request. Each
// slice's capacity is its length, so an Add to one answer's header copies
// instead of writing into the shared array.
var (
	hdrCSP        = []string{contentSecurityPolicy}
	hdrNoSniff    = []string{"nosniff"}
	hdrReferrer   = []string{"strict-origin-when-cross-origin"}
	hdrFrameDeny  = []string{"DENY"}
	hdrOpenerSame = []string{"same-origin"}
)

func securityHeaders(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hd := w.Header()
		hd["Content-Security-Policy"] = hdrCSP
		hd["X-Content-Type-Options"] = hdrNoSniff
		hd["Referrer-Policy"] = hdrReferrer
		hd["X-Frame-Options"] = hdrFrameDeny
		hd["Cross-Origin-Opener-Policy"] = hdrOpenerSame
		next.ServeHTTP(w, r)
	})
}
