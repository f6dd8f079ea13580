package handlers

import (
	"context"
	"net/http"
	"strings"

	d5list "github.com/deep500/d5list"
	"github.com/deep500/d5list/leaderboard"
	"github.com/deep500/d5list/templates"
)

// SearchService finds a text across every benchmark's list.
type SearchService interface {
	Search(ctx context.Context, text string, perBoard int) ([]leaderboard.Found, bool, error)
}

// SearchPerBoard is how many entries the search page shows of each
// benchmark; each group links its board searched for the same text, which
// lists them all.
const SearchPerBoard = 10

// SearchPage is GET /search?q=TEXT: the organisations, systems,
// frameworks and accelerators holding TEXT on every benchmark's list,
// grouped by benchmark; without q, the search box alone.
func (h *Handler) SearchPage(w http.ResponseWriter, r *http.Request) {
	ss, ok := h.svc.(SearchService)
	if !ok {
		h.Error(w, r, d5list.Errorf(d5list.EUNAVAILABLE, "this portal has no search"))
		return
	}
	text := strings.TrimSpace(r.URL.Query().Get(leaderboard.ParamSearch))
	var found []leaderboard.Found
	var cut bool
	if text != "" {
		var err error
		if found, cut, err = ss.Search(r.Context(), text, SearchPerBoard); err != nil {
			h.Error(w, r, err)
			return
		}
	}
	benches, err := h.svc.Benchmarks(r.Context())
	if err != nil {
		h.Error(w, r, err)
		return
	}
	h.render(w, r, http.StatusOK, templates.SearchPage(templates.NewSearchView(text, found, cut, benches)))
}
