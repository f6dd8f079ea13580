// Package handlers is the HTTP layer of the portal: one file per action,
// each with the same shape (parse, validate, call the service, render) and
// one error helper that turns a *d5list.Error into a status and a body.
// The package knows the service only through the Service interface below,
// defined here where it is consumed.
package handlers

import (
	"context"
	"io"
	"log/slog"
	"time"

	d5list "github.com/deep500/d5list"
)

// Service is what the HTTP layer needs from the portal. Errors are
// *d5list.Error; anything else is reported as an internal error.
type Service interface {
	// Submit answers repeated where the user uploaded the same files
	// before: sub is then that entry, and nothing was stored or queued.
	Submit(ctx context.Context, user *d5list.User, body io.Reader) (sub *d5list.Submission, repeated bool, err error)
	Benchmarks(ctx context.Context) ([]d5list.Benchmark, error)
	Benchmark(ctx context.Context, id string) (*d5list.Benchmark, error)
	Submission(ctx context.Context, id int64) (*d5list.Submission, error)
	Leaderboard(ctx context.Context, benchmarkID string) (*d5list.Leaderboard, error)
	Authenticate(ctx context.Context, token string) (*d5list.User, error)
}

// DefaultMaxUploadBytes bounds a submission body when no limit is given.
const DefaultMaxUploadBytes int64 = 1 << 30

// Options tunes the handlers.
type Options struct {
	// MaxUploadBytes bounds the body of POST /api/v1/submissions,
	// multipart framing included; 0 means DefaultMaxUploadBytes.
	MaxUploadBytes int64
	// LeaseWait is how long a runner's lease request waits for a job;
	// 0 means DefaultLeaseWait.
	LeaseWait time.Duration
	// Browser configures accounts and sessions (auth_session.go).
	Browser BrowserOptions
	// ScratchDir holds the scratch folders of folder uploads; "" is the
	// system's temporary folder. `d5list serve` gives one under --data and
	// empties it at start, so a portal killed mid-upload leaves nothing.
	ScratchDir string
	// MaxEventStreams bounds the submission event streams open at once
	// (each polls the database); 0 means DefaultMaxEventStreams.
	MaxEventStreams int
}

// DefaultMaxEventStreams is enough for every competitor watching their own
// submissions on a busy day; past it, pages poll the JSON API instead.
const DefaultMaxEventStreams = 256

// Handler holds the dependencies every action uses.
type Handler struct {
	svc  Service
	log  *slog.Logger
	opts Options
	// runners is svc's runner pool side, nil when svc has none.
	runners RunnerService
	// browser is opts.Browser with defaults, and the rate limiters.
	browser browserState
	// eventStreams holds one token per open event stream.
	eventStreams chan struct{}
}

// New returns the handlers over svc. A nil logger discards.
func New(svc Service, log *slog.Logger, opts Options) *Handler {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	if opts.MaxUploadBytes <= 0 {
		opts.MaxUploadBytes = DefaultMaxUploadBytes
	}
	if opts.LeaseWait <= 0 {
		opts.LeaseWait = DefaultLeaseWait
	}
	if opts.MaxEventStreams <= 0 {
		opts.MaxEventStreams = DefaultMaxEventStreams
	}
	h := &Handler{svc: svc, log: log, opts: opts, eventStreams: make(chan struct{}, opts.MaxEventStreams)}
	h.runners, _ = svc.(RunnerService)
	h.browser = newBrowserState(opts.Browser)
	return h
}
