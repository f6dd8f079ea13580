package handlers

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
)

// WarmBoards renders the default board page and JSON export of each
// benchmark once, as their first anonymous readers would, and keeps
// neither: a writer outside this process (d5list admin, a script on the
// data folder) tells the board cache nothing, so an answer kept from
// before it would stay. What the rendering leaves is what the first
// reader's own then finds: the service's lists read, the store's
// statements prepared, its pages and entries read and decoded. A portal
// calls it before its port opens.
func (h *Handler) WarmBoards(ctx context.Context, benchmarkIDs []string) error {
	for _, id := range benchmarkIDs {
		for _, a := range []struct {
			path, param string
			serve       http.HandlerFunc
		}{
			{"/benchmarks/" + url.PathEscape(id), "id", h.BenchmarkPage},
			{"/api/v1/leaderboards/" + url.PathEscape(id), "benchmark", h.ShowLeaderboard},
		} {
			r, err := http.NewRequestWithContext(ctx, http.MethodGet, a.path, nil)
			if err != nil {
				return err
			}
			r.Header.Set("Accept-Encoding", "gzip")
			r.SetPathValue(a.param, id)
			w := &discardedAnswer{header: http.Header{}, code: http.StatusOK}
			a.serve(w, r)
			if w.code != http.StatusOK {
				return fmt.Errorf("rendering %s before serving: status %d", a.path, w.code)
			}
		}
		if bi, ok := h.svc.(boardInvalidator); ok {
			bi.InvalidateBoards(id)
		}
	}
	return nil
}

// boardInvalidator is a service whose kept board answers can be dropped
// (portal.Service).
type boardInvalidator interface{ InvalidateBoards(benchmarkID string) }

// discardedAnswer is a ResponseWriter that keeps the status only.
type discardedAnswer struct {
	header http.Header
	code   int
}

func (a *discardedAnswer) Header() http.Header         { return a.header }
func (a *discardedAnswer) Write(p []byte) (int, error) { return len(p), nil }
func (a *discardedAnswer) WriteHeader(code int)        { a.code = code }
