package handlers

import (
	"bytes"
	"context"
	"errors"
	"net/http"
	"strings"
	"time"

	"github.com/deep500/d5list/leaderboard"
)

// BoardCache is the service's store of finished board answers (pages,
// JSON, CSV), dropped whenever the board changes (a verdict, a review, a
// rescore, a new submission, an edition frozen). A service without it has
// every request rendered.
type BoardCache interface {
	RenderBoard(benchmarkID, variant string, render func() (*leaderboard.Rendered, error)) (*leaderboard.Rendered, error)
}

// boardInvalidator drops a benchmark's cached boards (the portal's
// InvalidateBoards), for the changes that reach the store without the
// service: the console's benchmark definitions.
type boardInvalidator interface {
	InvalidateBoards(benchmarkID string)
}

// errNotCanonical: the board found under an id is filed under another one,
// so an answer kept under the requested id would miss its invalidations.
var errNotCanonical = errors.New("handlers: benchmark id is not the board's own")

// cachedBoard returns the cached answer, or false when the service keeps
// none or this one may not be kept; the caller then renders as usual.
// The shared rendering runs without the request's cancellation: a visitor
// who leaves must not fail the others waiting on it.
//
// The answer says in X-D5-Board-Cache whether this request rendered it
// (miss: the first request after a change) or found it kept (hit), for
// operators and for the load measurements of BENCHMARKS.md.
func (h *Handler) cachedBoard(w http.ResponseWriter, r *http.Request, id, variant string, render func(ctx context.Context) (*leaderboard.Rendered, string, error)) (*leaderboard.Rendered, bool, error) {
	bc, ok := h.svc.(BoardCache)
	if !ok {
		return nil, false, nil
	}
	ctx := context.WithoutCancel(r.Context())
	w.Header().Set("X-D5-Board-Cache", "hit")
	page, err := bc.RenderBoard(id, variant, func() (*leaderboard.Rendered, error) {
		w.Header().Set("X-D5-Board-Cache", "miss")
		p, canonical, err := render(ctx)
		if err == nil && canonical != id {
			return nil, errNotCanonical
		}
		return p, err
	})
	if errors.Is(err, errNotCanonical) {
		return nil, false, nil
	}
	return page, err == nil, err
}

// serveRendered sends a cached answer the way /static/ sends a file: with
// its ETag, 304 for a matching If-None-Match, and the gzip encoding for
// clients that accept it. Browsers may keep it but must ask again, since a
// verdict can change it at any time.
func serveRendered(w http.ResponseWriter, r *http.Request, p *leaderboard.Rendered) {
	hd := w.Header()
	hd.Set("Content-Type", p.ContentType)
	hd.Set("Cache-Control", "no-cache")
	hd.Add("Vary", "Accept-Encoding")
	body, etag := p.Body, p.ETag
	if AcceptsGzip(r) {
		body, etag = p.Gzip(), p.ETag+"-gz"
		hd.Set("Content-Encoding", "gzip")
	}
	hd.Set("ETag", `"`+etag+`"`)
	http.ServeContent(w, r, "", noModTime, bytes.NewReader(body))
}

// noModTime: cached answers are validated by ETag only.
var noModTime time.Time

// AcceptsGzip reports whether the client takes a gzip body (and did not
// refuse it with q=0); static files and cached boards both ask.
func AcceptsGzip(r *http.Request) bool {
	for _, part := range strings.Split(r.Header.Get("Accept-Encoding"), ",") {
		coding, params, _ := strings.Cut(strings.TrimSpace(part), ";")
		if strings.EqualFold(strings.TrimSpace(coding), "gzip") && strings.ReplaceAll(params, " ", "") != "q=0" {
			return true
		}
	}
	return false
}
