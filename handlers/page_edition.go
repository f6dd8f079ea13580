package handlers

import (
	"net/http"

	"github.com/deep500/d5list/leaderboard"
	"github.com/deep500/d5list/templates"
)

// EditionsPage is GET /editions.
func (h *Handler) EditionsPage(w http.ResponseWriter, r *http.Request) {
	ls, err := h.list()
	if err != nil {
		h.Error(w, r, err)
		return
	}
	list, err := ls.Editions(r.Context())
	if err != nil {
		h.Error(w, r, err)
		return
	}
	h.render(w, r, http.StatusOK, templates.EditionsPage(list))
}

// EditionPage is GET /editions/{name}.
func (h *Handler) EditionPage(w http.ResponseWriter, r *http.Request) {
	ls, err := h.list()
	if err != nil {
		h.Error(w, r, err)
		return
	}
	ed, err := ls.Edition(r.Context(), r.PathValue("name"))
	if err != nil {
		h.Error(w, r, err)
		return
	}
	h.render(w, r, http.StatusOK, templates.EditionPage(ed))
}

// EditionBoardPage is GET /editions/{name}/benchmarks/{id}: one board as
// the edition froze it, paged as the live board is.
func (h *Handler) EditionBoardPage(w http.ResponseWriter, r *http.Request) {
	ls, err := h.list()
	if err != nil {
		h.Error(w, r, err)
		return
	}
	pg, err := leaderboard.ParsePage(r.URL.Query())
	if err != nil {
		h.Error(w, r, err)
		return
	}
	name := r.PathValue("name")
	board, err := ls.EditionBoard(r.Context(), name, r.PathValue("id"))
	if err != nil {
		h.Error(w, r, err)
		return
	}
	if err := pg.Check(len(board.Entries)); err != nil {
		h.Error(w, r, err)
		return
	}
	v, err := h.boardView(r.Context(), ls, board, leaderboard.Options{}, pg, "/editions/"+name+"/benchmarks/"+board.Benchmark.ID, name)
	if err != nil {
		h.Error(w, r, err)
		return
	}
	h.render(w, r, http.StatusOK, templates.BoardPage(v))
}
