package handlers

import (
	"bytes"
	"context"
	"net/http"

	"github.com/deep500/d5list/leaderboard"
	"github.com/deep500/d5list/templates"
)

// BenchmarkPage is GET /benchmarks/{id}: the rules and the ranked list,
// filtered as the query says (see leaderboard.ParseQuery), one page of
// rows at a time (leaderboard.ParsePage: a malformed page or size is a
// 400, a page past the last a 404), with charts of the whole board.
//
// Visitors without a session all get the same bytes, kept in the board
// cache. A session's page carries its name and CSRF token in the header,
// so it is rendered for that session alone and never kept.
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
	pg, err := leaderboard.ParsePage(r.URL.Query())
	if err != nil {
		h.Error(w, r, err)
		return
	}
	id := r.PathValue("id")
	if templates.ViewerFrom(r.Context()) == nil {
		page, cached, err := h.cachedBoard(w, r, id, "html?"+opt.PageVariant(pg), func(ctx context.Context) (*leaderboard.Rendered, string, error) {
			v, canonical, err := h.benchmarkView(ctx, ls, id, opt, pg)
			if err != nil {
				return nil, "", err
			}
			var buf bytes.Buffer
			if err := templates.BoardPage(v).Render(ctx, &buf); err != nil {
				return nil, "", err
			}
			return leaderboard.NewRendered("text/html; charset=utf-8", buf.Bytes()), canonical, nil
		})
		if err != nil {
			h.Error(w, r, err)
			return
		}
		if cached {
			// A session's page differs (its name, its CSRF token):
			// shared caches must not hand this one to a session.
			w.Header().Add("Vary", "Cookie")
			serveRendered(w, r, page)
			return
		}
	}
	v, _, err := h.benchmarkView(r.Context(), ls, id, opt, pg)
	if err != nil {
		h.Error(w, r, err)
		return
	}
	h.render(w, r, http.StatusOK, templates.BoardPage(v))
}

// benchmarkView assembles one page of the live board, and says under
// which id the board is filed. A page past the last fails before the
// charts are made, so such links cost one lookup of the ranked board.
func (h *Handler) benchmarkView(ctx context.Context, ls ListService, id string, opt leaderboard.Options, pg leaderboard.Page) (templates.BoardView, string, error) {
	if il, ok := h.svc.(IndexedList); ok {
		v, err := h.indexedBoardView(ctx, ls, il, id, opt, pg)
		if err != nil {
			return v, "", err
		}
		return v, v.Board.Benchmark.ID, nil
	}
	board, err := ls.LeaderboardWith(ctx, id, opt)
	if err != nil {
		return templates.BoardView{}, "", err
	}
	if err := pg.Check(len(board.Entries)); err != nil {
		return templates.BoardView{}, "", err
	}
	v, err := h.boardView(ctx, ls, board, opt, pg, "/benchmarks/"+board.Benchmark.ID, "")
	return v, board.Benchmark.ID, err
}
