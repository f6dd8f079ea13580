package handlers

import (
	"net/http"

	"github.com/deep500/d5list/leaderboard"
	"github.com/deep500/d5list/templates"
)

// BenchmarkPage is GET /benchmarks/{id}: the rules and the ranked list,
// filtered as the query says (see leaderboard.ParseQuery), with charts.
func (h *Handler) BenchmarkPage(w http.ResponseWriter, r *http.Request) {
	ls, ok := h.svc.(ListService)
	if !ok {
		board, err := h.svc.Leaderboard(r.Context(), r.PathValue("id"))
		if err != nil {
			h.Error(w, r, err)
			return
		}
		h.render(w, r, http.StatusOK, templates.BenchmarkPage(board))
		return
	}
	opt, err := leaderboard.ParseQuery(r.URL.Query())
	if err != nil {
		h.Error(w, r, err)
		return
	}
	board, err := ls.LeaderboardWith(r.Context(), r.PathValue("id"), opt)
	if err != nil {
		h.Error(w, r, err)
		return
	}
	v, err := h.boardView(r.Context(), ls, board, opt, "/benchmarks/"+board.Benchmark.ID, "")
	if err != nil {
		h.Error(w, r, err)
		return
	}
	h.render(w, r, http.StatusOK, templates.BoardPage(v))
}
