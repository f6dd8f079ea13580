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
// JSON, CSV), out of date whenever the board changes (a verdict, a review,
// a rescore, a new submission, an edition frozen), when the first request
// after the change renders it again (leaderboard.Cache.Render). A service
// without it has every request rendered.
type BoardCache interface {
	RenderBoard(benchmarkID, variant string, render func(sizeHint int) (*leaderboard.Rendered, error)) (*leaderboard.Rendered, leaderboard.Freshness, error)
}

// errNotCanonical: the board found under an id is filed under another one,
// so an answer kept under the requested id would miss its invalidations.
var errNotCanonical = errors.New("handlers: benchmark id is not the board's own")

// BoardParts is a service that keeps the parts every view of a board
// shares (its charts and filter choices), made by the first rendering
// after a change and shared with the others of the same moment
// (leaderboard.Moment; portal.Service). A service without it has every
// view make its own.
type BoardParts interface {
	BoardMoment(benchmarkID string) leaderboard.Moment
	BoardPart(m leaderboard.Moment, name string, build func() (any, error)) (any, error)
}

// momentKey is the context key of the moment a cached rendering began at.
type momentKey struct{}

// ReadSnapshots is a service that can make an answer of several reads as
// of one moment (portal.Service.ReadSnapshot). A service without it reads
// each as of its own.
type ReadSnapshots interface {
	ReadSnapshot(ctx context.Context, fn func(ctx context.Context) error) error
}

// readSnapshot runs fn under the service's snapshot where it has one.
func (h *Handler) readSnapshot(ctx context.Context, fn func(ctx context.Context) error) error {
	if rs, ok := h.svc.(ReadSnapshots); ok {
		return rs.ReadSnapshot(ctx, fn)
	}
	return fn(ctx)
}

// cachedBoard returns the cached answer, or false when the service keeps
// none or this one may not be kept; the caller then renders as usual.
// render runs without the request's cancellation, as requests that began
// meanwhile share its answer: it must use nothing of the request but
// ctx's values. It reads under one snapshot (readSnapshot), so that a
// kept answer, served to every reader until the board changes, is all of
// one moment. render writes the answer's body into buf, sized for the
// answer kept from before the change.
//
// The answer says in X-D5-Board-Cache whether it was kept and current
// (hit) or rendered for this request or one that began after the board's
// last change (miss), and in X-D5-Board-Rendered when its rendering
// began, for operators and for the load measurements of BENCHMARKS.md.
func (h *Handler) cachedBoard(w http.ResponseWriter, r *http.Request, id, variant string, render func(ctx context.Context, buf *bytes.Buffer) (*leaderboard.Rendered, string, error)) (*leaderboard.Rendered, bool, error) {
	bc, ok := h.svc.(BoardCache)
	if !ok {
		return nil, false, nil
	}
	ctx := context.WithoutCancel(r.Context())
	page, fresh, err := bc.RenderBoard(id, variant, func(sizeHint int) (p *leaderboard.Rendered, err error) {
		var canonical string
		ctx := ctx
		if bp, ok := h.svc.(BoardParts); ok {
			// Before anything is read, the edition pinned included.
			ctx = context.WithValue(ctx, momentKey{}, bp.BoardMoment(id))
		}
		err = h.readSnapshot(ctx, func(ctx context.Context) (err error) {
			// A little over the kept answer's length, so that one more
			// row does not double the buffer.
			buf := bytes.NewBuffer(make([]byte, 0, sizeHint+sizeHint/16))
			p, canonical, err = render(ctx, buf)
			return err
		})
		if err == nil && canonical != id {
			return nil, errNotCanonical
		}
		return p, err
	})
	if errors.Is(err, errNotCanonical) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, err
	}
	hd := w.Header()
	hd["X-D5-Board-Cache"] = hdrCache[fresh]
	hd["X-D5-Board-Rendered"] = page.RenderedAt()
	return page, true, nil
}

// Header values of cached answers, made once and shared: assigned into
// the header map under their canonical keys, a hit builds no header value
// of its own. Each slice's capacity is its length, so that an Add to one
// answer's header copies rather than writes into the shared array.
var (
	hdrCache        = map[leaderboard.Freshness][]string{leaderboard.Hit: {"hit"}, leaderboard.Miss: {"miss"}}
	hdrNoCache      = []string{"no-cache"}
	hdrVaryEncoding = []string{"Accept-Encoding"}
	hdrVaryCookie   = []string{"Cookie"}
	hdrGzipEncoding = []string{"gzip"}
)

// serveRendered sends a cached answer the way /static/ sends a file: with
// its ETag, 304 for a matching If-None-Match, and the gzip encoding for
// clients that accept it. Browsers may keep it but must ask again, since a
// verdict can change it at any time.
func serveRendered(w http.ResponseWriter, r *http.Request, p *leaderboard.Rendered) {
	hd := w.Header()
	gz := AcceptsGzip(r)
	contentType, etag := p.Header(gz)
	hd["Content-Type"] = contentType
	hd["Cache-Control"] = hdrNoCache
	if vary := hd["Vary"]; len(vary) == 0 {
		hd["Vary"] = hdrVaryEncoding
	} else {
		hd["Vary"] = append(vary, "Accept-Encoding")
	}
	body := p.Body
	if gz {
		body = p.Gzip()
		hd["Content-Encoding"] = hdrGzipEncoding
	}
	hd["Etag"] = etag
	http.ServeContent(w, r, "", noModTime, bytes.NewReader(body))
}

// noModTime: cached answers are validated by ETag only.
var noModTime time.Time

// AcceptsGzip reports whether the client takes a gzip body (and did not
// refuse it with q=0); static files and cached boards both ask. It reads
// the header in place: it runs on every cached answer.
func AcceptsGzip(r *http.Request) bool {
	for _, v := range r.Header["Accept-Encoding"] {
		for v != "" {
			var part string
			part, v, _ = strings.Cut(v, ",")
			coding, params, _ := strings.Cut(part, ";")
			if strings.EqualFold(strings.TrimSpace(coding), "gzip") && !refused(params) {
				return true
			}
		}
	}
	return false
}

// refused reports whether an Accept-Encoding entry's parameters give it
// a weight of 0 (q=0, q=0.0, ...), spaces allowed.
func refused(params string) bool {
	if params == "" {
		return false
	}
	q, ok := strings.CutPrefix(strings.ReplaceAll(strings.TrimSpace(params), " ", ""), "q=0")
	if !ok {
		return false
	}
	q, _ = strings.CutPrefix(q, ".")
	return strings.Trim(q, "0") == ""
}
