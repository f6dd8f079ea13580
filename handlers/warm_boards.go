package handlers

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
)

// WarmBoards renders the default board page of each benchmark into the
// service's board cache, as its first anonymous visitor would: until the
// board next changes that visitor gets it kept, and after a change its
// rendering finds the service's and the store's state read once already.
// A portal calls it before its port opens.
func (h *Handler) WarmBoards(ctx context.Context, benchmarkIDs []string) error {
	for _, id := range benchmarkIDs {
		r, err := http.NewRequestWithContext(ctx, http.MethodGet, "/benchmarks/"+url.PathEscape(id), nil)
		if err != nil {
			return err
		}
		r.Header.Set("Accept-Encoding", "gzip")
		r.SetPathValue("id", id)
		w := &discardedAnswer{header: http.Header{}, code: http.StatusOK}
		h.BenchmarkPage(w, r)
		if w.code != http.StatusOK {
			return fmt.Errorf("rendering the board of %q before serving: status %d", id, w.code)
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
