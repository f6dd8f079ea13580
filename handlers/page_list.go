package handlers

import (
	"net/http"
	"strconv"

	d5list "github.com/deep500/d5list"
	"github.com/deep500/d5list/templates"
)

// ListPage is GET /list?level=N&category=C: the live list's navigation,
// level → category → benchmark, each with its leader and ranked count.
func (h *Handler) ListPage(w http.ResponseWriter, r *http.Request) {
	level := -1
	if s := r.URL.Query().Get("level"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n < 0 || n > 3 {
			h.Error(w, r, d5list.Errorf(d5list.EINVALID, "query parameter level=%q: use 0, 1, 2 or 3", s))
			return
		}
		level = n
	}
	benchmarks, err := h.svc.Benchmarks(r.Context())
	if err != nil {
		h.Error(w, r, err)
		return
	}
	latest := ""
	if ls, ok := h.svc.(ListService); ok {
		e, err := ls.LatestEdition(r.Context())
		if err != nil {
			h.Error(w, r, err)
			return
		}
		if e != nil {
			latest = e.Name
		}
	}
	category := r.URL.Query().Get("category")
	nav := templates.Navigation(benchmarks, level, category)
	// The page promises each benchmark's current ranking: its line shows
	// the leader and the ranked count, as the home page's overview does,
	// for the benchmarks shown only.
	var shown []d5list.Benchmark
	for _, l := range nav {
		for _, c := range l.Categories {
			shown = append(shown, c.Benchmarks...)
		}
	}
	overview, err := h.overview(r.Context(), shown)
	if err != nil {
		h.Error(w, r, err)
		return
	}
	h.render(w, r, http.StatusOK, templates.ListNavPage(nav, level, category, latest, overview))
}
