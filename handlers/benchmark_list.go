package handlers

import (
	"net/http"

	d5list "github.com/deep500/d5list"
)

type benchmarksJSON struct {
	Benchmarks []d5list.Benchmark `json:"benchmarks"`
}

// ListBenchmarks is GET /api/v1/benchmarks: the catalogue.
func (h *Handler) ListBenchmarks(w http.ResponseWriter, r *http.Request) {
	benchmarks, err := h.svc.Benchmarks(r.Context())
	if err != nil {
		h.Error(w, r, err)
		return
	}
	if benchmarks == nil {
		benchmarks = []d5list.Benchmark{}
	}
	h.writeJSON(w, r, http.StatusOK, benchmarksJSON{Benchmarks: benchmarks})
}
