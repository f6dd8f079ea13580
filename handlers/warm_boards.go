package handlers

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
)

// WarmBoards renders the default board page and JSON export of each
// benchmark into the service's board cache, as their first anonymous
// readers would: until the board next changes those readers get them
// kept, and after a change their rendering finds the service's and the
// store's state read once already. (The CSV's bytes depend on the host
// asked, which no request has told yet.) A portal calls it before its
// port opens.
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
	}
	return nil
}

// discardedAnswer is a ResponseWriter that keeps the status only.
type discardedAnswer struct {
	header http.Header
	code   int
}

func (a *discardedAnswer) Header() http.Header         { return a.header }
func (a *discardedAnswer) Write(p []byte) (int, error) { return len(p), nil }
func (a *discardedAnswer) WriteHeader(code int)        { a.code = code }
