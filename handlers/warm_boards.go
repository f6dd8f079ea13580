package handlers

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
)

// WarmBoards renders the default board page and JSON export of each
// benchmark once, as their first anonymous readers would, and keeps them
// as those readers' requests would. A writer in another process is seen
// as any other commit is (Current): the warming first takes the data
// version its answers are of, and the first request after such a write
// renders the board again. A portal calls it before its port opens.
func (h *Handler) WarmBoards(ctx context.Context, benchmarkIDs []string) error {
	if keeper, ok := h.svc.(currentKeeper); ok {
		if err := keeper.Current(ctx); err != nil {
			return err
		}
	}
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
