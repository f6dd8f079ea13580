package handlers

import (
	"bytes"
	"context"
	"errors"
	"net/http"

	d5list "github.com/deep500/d5list"
	"github.com/deep500/d5list/leaderboard"
)

// ShowLeaderboard is GET /api/v1/leaderboards/{benchmark}: the ranked list
// as JSON, or CSV for {benchmark}.csv or ?format=csv. It takes the page's
// query parameters (division, availability, accelerator, framework,
// rows=all, status=all). The encoded answer is kept in the board cache, so
// a hit costs what a static file costs.
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
	// The CSV's links are absolute, so its bytes depend on the host asked.
	base := baseURL(r)
	variant := format + "?" + opt.Variant()
	if format == "csv" {
		variant += " " + base
	}
	if il, ok := h.svc.(IndexedList); ok {
		h.indexedExport(w, r, il, id, opt, format, variant, base)
		return
	}
	page, cached, err := h.cachedBoard(w, r, id, variant, func(ctx context.Context, buf *bytes.Buffer) (*leaderboard.Rendered, string, error) {
		board, err := ls.LeaderboardWith(ctx, id, opt)
		if err != nil {
			return nil, "", err
		}
		if len(board.Entries) > StreamedExportEntries {
			return nil, "", errStreamExport
		}
		p, err := encodeBoard(buf, board, format, base)
		return p, board.Benchmark.ID, err
	})
	if err != nil && !errors.Is(err, errStreamExport) {
		h.Error(w, r, err)
		return
	}
	if !cached {
		board, err := ls.LeaderboardWith(r.Context(), id, opt)
		if err != nil {
			h.Error(w, r, err)
			return
		}
		h.writeBoard(w, r, board, format, id)
		return
	}
	if format == "csv" {
		w.Header().Set("Content-Disposition", `attachment; filename="`+id+`.csv"`)
	}
	serveRendered(w, r, page)
}

// indexedExport answers an export from the index: a board of up to
// StreamedExportEntries rows is encoded once and kept; a longer one is
// streamed from the index as it is written, one entry in memory at a time.
func (h *Handler) indexedExport(w http.ResponseWriter, r *http.Request, il IndexedList, id string, opt leaderboard.Options, format, variant, base string) {
	each := func(ctx context.Context) leaderboard.Entries {
		return func(fn func(*d5list.Entry) error) error {
			_, err := il.EachEntry(ctx, id, opt, fn)
			return err
		}
	}
	page, cached, err := h.cachedBoard(w, r, id, variant, func(ctx context.Context, buf *bytes.Buffer) (*leaderboard.Rendered, string, error) {
		head, total, err := il.BoardPage(ctx, id, opt, leaderboard.Page{Number: 1, Per: 1})
		if err != nil {
			return nil, "", err
		}
		if total > StreamedExportEntries {
			return nil, "", errStreamExport
		}
		contentType := "application/json; charset=utf-8"
		if format == "csv" {
			contentType = "text/csv; charset=utf-8"
			err = leaderboard.WriteCSVFrom(buf, &head.Benchmark, each(ctx), base)
		} else {
			err = leaderboard.WriteJSONFrom(buf, &head.Benchmark, each(ctx))
		}
		if err != nil {
			return nil, "", err
		}
		return leaderboard.NewRendered(contentType, buf.Bytes()), head.Benchmark.ID, nil
	})
	if err != nil && !errors.Is(err, errStreamExport) {
		h.Error(w, r, err)
		return
	}
	if !cached {
		bench, err := h.svc.Benchmark(r.Context(), id)
		if err != nil {
			h.Error(w, r, err)
			return
		}
		h.writeBoardFrom(w, r, bench, each(r.Context()), format, bench.ID)
		return
	}
	if format == "csv" {
		w.Header().Set("Content-Disposition", `attachment; filename="`+id+`.csv"`)
	}
	serveRendered(w, r, page)
}

// StreamedExportEntries: an export of a board longer than this is written
// to the client as it is encoded instead of being built in memory for the
// board cache. At about 415 bytes an entry in JSON it would be over 16 MiB,
// a quarter of the cache's bound, which the cache does not keep anyway; the
// "all entries, include unverified" export of 100,000 submissions is about
// 40 MB, and encoding it whole for every request (and gzipping it) held
// that much per request. A variable so that tests need not store 40,000
// submissions.
var StreamedExportEntries = 40_000

// errStreamExport: the board is too long to be kept; stream it.
var errStreamExport = errors.New("handlers: export streamed, not cached")

// encodeBoard is writeBoard's answer as bytes, written into buf, for the
// board cache.
func encodeBoard(buf *bytes.Buffer, board *d5list.Leaderboard, format, base string) (*leaderboard.Rendered, error) {
	if board.Entries == nil {
		board.Entries = []d5list.Entry{}
	}
	if format == "csv" {
		if err := leaderboard.WriteCSV(buf, board, base); err != nil {
			return nil, err
		}
		return leaderboard.NewRendered("text/csv; charset=utf-8", buf.Bytes()), nil
	}
	if err := leaderboard.WriteJSON(buf, board); err != nil {
		return nil, err
	}
	return leaderboard.NewRendered("application/json; charset=utf-8", buf.Bytes()), nil
}
