package handlers

import (
	"net/http"

	"github.com/deep500/d5list/templates"
)

// HomePage is GET /: the latest frozen edition, the list's default public
// view; before the first edition, the benchmarks by Deep500 level.
func (h *Handler) HomePage(w http.ResponseWriter, r *http.Request) {
	if ls, ok := h.svc.(ListService); ok {
		latest, err := ls.LatestEdition(r.Context())
		if err != nil {
			h.Error(w, r, err)
			return
		}
		if latest != nil {
			h.render(w, r, http.StatusOK, templates.EditionPage(latest, true))
			return
		}
	}
	benchmarks, err := h.svc.Benchmarks(r.Context())
	if err != nil {
		h.Error(w, r, err)
		return
	}
	h.render(w, r, http.StatusOK, templates.Home(benchmarks))
}
