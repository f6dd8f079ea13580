package handlers

import "net/http"

// BenchmarksPage is GET /benchmarks (and /benchmarks/): the benchmarks
// are listed on the live list's navigation, level by level, so a reader
// who trims a board's address to /benchmarks is sent there rather than to
// a 404. The query (a level, a category) goes along.
func (h *Handler) BenchmarksPage(w http.ResponseWriter, r *http.Request) {
	target := "/list"
	if r.URL.RawQuery != "" {
		target += "?" + r.URL.RawQuery
	}
	http.Redirect(w, r, target, http.StatusMovedPermanently)
}
