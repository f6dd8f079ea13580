package handlers

import (
	"net/http"

	"github.com/deep500/d5list/leaderboard"
)

// ShowLeaderboard is GET /api/v1/leaderboards/{benchmark}: the ranked list
// as JSON, or CSV for {benchmark}.csv or ?format=csv. It takes the page's
// query parameters (division, availability, accelerator, framework,
// rows=all, status=all).
func (h *Handler) ShowLeaderboard(w http.ResponseWriter, r *http.Request) {
	id, format, err := exportFormat(r, r.PathValue("benchmark"))
	if err != nil {
		h.Error(w, r, err)
		return
	}
	opt, err := leaderboard.ParseQuery(r.URL.Query())
	if err != nil {
		h.Error(w, r, err)
		return
	}
	ls, ok := h.svc.(ListService)
	if !ok {
		board, err := h.svc.Leaderboard(r.Context(), id)
		if err != nil {
			h.Error(w, r, err)
			return
		}
		h.writeBoard(w, r, board, format, id)
		return
	}
	board, err := ls.LeaderboardWith(r.Context(), id, opt)
	if err != nil {
		h.Error(w, r, err)
		return
	}
	h.writeBoard(w, r, board, format, id)
}
