package handlers

import (
	"bytes"
	"context"
	"net/http"
	"net/url"
	"sync"

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
	opt, pg, variant, err := boardQuery(r)
	if err != nil {
		h.Error(w, r, err)
		return
	}
	id := r.PathValue("id")
	if templates.ViewerFrom(r.Context()) == nil {
		page, cached, err := h.cachedBoard(w, r, id, variant, func(ctx context.Context, buf *bytes.Buffer) (*leaderboard.Rendered, string, error) {
			v, canonical, err := h.benchmarkView(ctx, ls, id, opt, pg)
			if err != nil {
				return nil, "", err
			}
			if err := templates.BoardPage(v).Render(ctx, buf); err != nil {
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
			w.Header()["Vary"] = hdrVaryCookie
			serveRendered(w, r, page)
			return
		}
	}
	var v templates.BoardView
	err = h.readSnapshot(r.Context(), func(ctx context.Context) (err error) {
		v, _, err = h.benchmarkView(ctx, ls, id, opt, pg)
		return err
	})
	if err != nil {
		h.Error(w, r, err)
		return
	}
	h.render(w, r, http.StatusOK, templates.BoardPage(v))
}

// boardQuery reads a board page's query once: its options, its page and
// the board cache's variant of the page. Most requests have no query
// (the board as linked), and that one is read once for all.
func boardQuery(r *http.Request) (leaderboard.Options, leaderboard.Page, string, error) {
	if r.URL.RawQuery == "" {
		q := plainBoardQuery()
		return q.opt, q.pg, q.variant, q.err
	}
	q := parseBoardQuery(r.URL.Query())
	return q.opt, q.pg, q.variant, q.err
}

type parsedBoardQuery struct {
	opt     leaderboard.Options
	pg      leaderboard.Page
	variant string
	err     error
}

func parseBoardQuery(q url.Values) parsedBoardQuery {
	opt, err := leaderboard.ParseQuery(q)
	if err != nil {
		return parsedBoardQuery{err: err}
	}
	pg, err := leaderboard.ParsePage(q)
	if err != nil {
		return parsedBoardQuery{err: err}
	}
	return parsedBoardQuery{opt: opt, pg: pg, variant: "html?" + opt.PageVariant(pg)}
}

// plainBoardQuery is the reading of an empty query, made once.
var plainBoardQuery = sync.OnceValue(func() parsedBoardQuery { return parseBoardQuery(url.Values{}) })

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
