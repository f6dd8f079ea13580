// Package web assembles the portal's HTTP server: the route table, the
// middleware every request passes, and the embedded static files.
package web

import (
	"context"
	"log/slog"
	"net/http"
	"time"

	"github.com/go-chi/chi/v5"
	"github.com/go-chi/chi/v5/middleware"

	"github.com/deep500/d5list/handlers"
	"github.com/deep500/d5list/static"
)

// Config tunes the HTTP layer.
type Config struct {
	// Addr is where the server listens; the caller binds it, and it is
	// kept here so that one value describes the server.
	Addr string
	// MaxUploadBytes bounds a submission's body; 0 means 1 GiB.
	MaxUploadBytes int64
	// ScratchDir is handlers.Options.ScratchDir.
	ScratchDir string
	// StaticMaxAge is how long browsers may keep /static/ files without
	// asking again; 0 means one hour. They revalidate by ETag after.
	StaticMaxAge time.Duration
	// Metrics is the Prometheus registry served at /metrics; nil gets one
	// with the HTTP series only (no queue or runner gauges).
	Metrics *Metrics
	// Browser configures accounts, sessions and their rate limits
	// (issue 7); without Accounts only API tokens authenticate.
	Browser handlers.BrowserOptions
	// MaxEventStreams bounds the live submission streams open at once;
	// 0 means handlers.DefaultMaxEventStreams.
	MaxEventStreams int
}

// New returns the portal's HTTP handler over svc.
func New(cfg Config, svc handlers.Service, log *slog.Logger) http.Handler {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	h, assets := newHandlers(cfg, svc, log)
	if cfg.Metrics == nil {
		cfg.Metrics = NewMetrics(nil, log)
	}
	return newRouter(h, assets, cfg.Metrics, log)
}

// WarmBoards renders each benchmark's default board page and JSON export
// once before the portal serves, and keeps neither
// (handlers.Handler.WarmBoards), through the handlers New serves them
// with but none of its middleware: no request is logged or counted.
func WarmBoards(ctx context.Context, cfg Config, svc handlers.Service, log *slog.Logger, benchmarkIDs []string) error {
	h, _ := newHandlers(cfg, svc, log)
	return h.WarmBoards(ctx, benchmarkIDs)
}

func newHandlers(cfg Config, svc handlers.Service, log *slog.Logger) (*handlers.Handler, *assets) {
	if cfg.StaticMaxAge <= 0 {
		cfg.StaticMaxAge = time.Hour
	}
	h := handlers.New(svc, log, handlers.Options{MaxUploadBytes: cfg.MaxUploadBytes, ScratchDir: cfg.ScratchDir, Browser: cfg.Browser, MaxEventStreams: cfg.MaxEventStreams})
	assets, err := newAssets(static.FS, cfg.StaticMaxAge, h.NotFound)
	if err != nil {
		// The files are compiled in; failing to read them is a broken build.
		panic("web: reading embedded static files: " + err.Error())
	}
	return h, assets
}

// newRouter is the middleware chain and the route table over h and the
// static files; the request-path benchmarks serve through it too.
func newRouter(h *handlers.Handler, assets *assets, metrics *Metrics, log *slog.Logger) chi.Router {
	r := chi.NewRouter()
	// GetHead answers HEAD on every GET route, for monitors and link checkers.
	r.Use(requestID, accessLog(log), metrics.Middleware, recoverer(log, h), securityHeaders, middleware.GetHead, crossOrigin(h), h.Current, h.Session)
	// Operations (issue 8): Prometheus scrapes; see docs/operations.md.
	r.Get("/metrics", metrics.Handler().ServeHTTP)
	r.NotFound(h.NotFound)
	r.MethodNotAllowed(h.MethodNotAllowed)
	routes(r, h, assets)
	return r
}
