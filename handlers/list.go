package handlers

import (
	"compress/gzip"
	"context"
	"io"
	"net/http"
	"strings"

	d5list "github.com/deep500/d5list"
	"github.com/deep500/d5list/leaderboard"
	"github.com/deep500/d5list/templates"
)

// ListService is the public list side of the service: filtered boards,
// editions, the feed. A Service without it serves the plain boards.
type ListService interface {
	LeaderboardWith(ctx context.Context, benchmarkID string, opt leaderboard.Options) (*d5list.Leaderboard, error)
	LatestEdition(ctx context.Context) (*d5list.Edition, error)
	FreezeEdition(ctx context.Context, user *d5list.User, name string) (*d5list.Edition, error)
	Editions(ctx context.Context) ([]d5list.EditionSummary, error)
	Edition(ctx context.Context, name string) (*d5list.Edition, error)
	EditionBoard(ctx context.Context, name, benchmarkID string) (*d5list.Leaderboard, error)
	Development(ctx context.Context, benchmarkID string) ([]leaderboard.DevelopmentPoint, error)
	VerifiedFeed(ctx context.Context, limit int) ([]d5list.Submission, error)
}

func (h *Handler) list() (ListService, error) {
	if ls, ok := h.svc.(ListService); ok {
		return ls, nil
	}
	return nil, d5list.Errorf(d5list.EUNAVAILABLE, "this portal serves no list views")
}

// exportFormat splits "ID.csv" or "ID.json" into the id and the format;
// ?format= gives the format of a bare id. JSON is the default.
func exportFormat(r *http.Request, id string) (string, string, error) {
	format := r.URL.Query().Get("format")
	for _, ext := range []string{"csv", "json"} {
		if base, ok := strings.CutSuffix(id, "."+ext); ok {
			id, format = base, ext
		}
	}
	switch format {
	case "", "json":
		return id, "json", nil
	case "csv":
		return id, "csv", nil
	}
	return "", "", d5list.Errorf(d5list.EINVALID, "query parameter format=%q: use \"csv\" or \"json\"", format)
}

// baseURL is the scheme and host the request came to, for links that must
// be absolute (the feed, the exports).
func baseURL(r *http.Request) string {
	scheme := "http"
	if r.TLS != nil || r.Header.Get("X-Forwarded-Proto") == "https" {
		scheme = "https"
	}
	return scheme + "://" + r.Host
}

// writeBoard sends a board as JSON or CSV.
func (h *Handler) writeBoard(w http.ResponseWriter, r *http.Request, board *d5list.Leaderboard, format, filename string) {
	h.writeBoardFrom(w, r, &board.Benchmark, func(fn func(*d5list.Entry) error) error {
		for i := range board.Entries {
			if err := fn(&board.Entries[i]); err != nil {
				return err
			}
		}
		return nil
	}, format, filename)
}

// writeBoardFrom sends the board of bench whose entries each gives, one at
// a time, as JSON or CSV.
func (h *Handler) writeBoardFrom(w http.ResponseWriter, r *http.Request, bench *d5list.Benchmark, each leaderboard.Entries, format, filename string) {
	hd := w.Header()
	hd.Set("Cache-Control", "no-store")
	hd.Add("Vary", "Accept-Encoding")
	if format == "csv" {
		hd.Set("Content-Type", "text/csv; charset=utf-8")
		hd.Set("Content-Disposition", `attachment; filename="`+filename+`.csv"`)
	} else {
		hd.Set("Content-Type", "application/json; charset=utf-8")
	}
	// These answers are not cached, and the long ones run to tens of MB:
	// they are compressed as they are written, at the fastest level, which
	// shrinks JSON and CSV about tenfold for little CPU.
	var out io.Writer = w
	if AcceptsGzip(r) {
		hd.Set("Content-Encoding", "gzip")
		zw, _ := gzip.NewWriterLevel(w, gzip.BestSpeed) // a valid level never errs
		defer func() {
			if err := zw.Close(); err != nil {
				h.log.DebugContext(r.Context(), "finishing a gzip export", "err", err)
			}
		}()
		out = zw
	}
	var err error
	if format == "csv" {
		err = leaderboard.WriteCSVFrom(out, bench, each, baseURL(r))
	} else {
		err = leaderboard.WriteJSONFrom(out, bench, each)
	}
	if err != nil {
		h.log.ErrorContext(r.Context(), "writing a board export", "format", format, "err", err)
	}
}

// curves fetches the accuracy curves of a board's ten best entries, each
// from the runs the board ranks it by (the portal's re-run where it
// measured the entry), so that a curve ends where the entry's ranked time
// does: an entry whose logs claim a time its re-run did not reach would
// otherwise look faster than the board says it is.
func (h *Handler) curves(ctx context.Context, bench *d5list.Benchmark, entries []d5list.Entry) []templates.Curve {
	var out []templates.Curve
	for _, e := range entries {
		if len(out) == 10 {
			break
		}
		sub, err := h.svc.Submission(ctx, e.SubmissionID)
		if err != nil {
			h.log.WarnContext(ctx, "reading a curve", "submission", e.SubmissionID, "err", err)
			continue
		}
		if sub.Claimed == nil {
			continue
		}
		runs, _ := leaderboard.RankedRuns(bench, sub)
		run := templates.MedianRun(&d5list.Result{Runs: runs})
		if run == nil {
			continue
		}
		c := templates.Curve{Entry: e}
		for _, ev := range run.Evals {
			c.Points = append(c.Points, [2]float64{ev.Seconds, ev.Accuracy})
		}
		out = append(out, c)
	}
	return out
}

// boardView assembles a board's page.
func (h *Handler) boardView(ctx context.Context, ls ListService, board *d5list.Leaderboard, opt leaderboard.Options, pg leaderboard.Page, path, edition string) (templates.BoardView, error) {
	v := templates.BoardView{Board: board, Options: opt, Page: pg, Path: path, Edition: edition}
	dev, err := ls.Development(ctx, board.Benchmark.ID)
	if err != nil {
		return v, err
	}
	if edition == "" {
		all, err := ls.LeaderboardWith(ctx, board.Benchmark.ID, leaderboard.Options{AllPerSystem: true, IncludeUnverified: true})
		if err != nil {
			return v, err
		}
		v.Accelerators = templates.Distinct(all.Entries, func(e d5list.Entry) string { return e.Accelerator })
		v.Frameworks = templates.Distinct(all.Entries, func(e d5list.Entry) string { return e.Framework })
		if latest, err := ls.LatestEdition(ctx); err != nil {
			return v, err
		} else if latest != nil {
			v.Latest = latest.Name
		}
	}
	v.Charts = templates.BoardCharts(&board.Benchmark, leaderboard.SummaryOf(board), h.curves(ctx, &board.Benchmark, board.Entries), dev)
	return v, nil
}

// IndexedList is the list answered from the store's index (the portal
// with store.DB): a page of a board costs about its rows, and the charts
// come from the sums the store keeps with each write.
type IndexedList interface {
	BoardPage(ctx context.Context, benchmarkID string, opt leaderboard.Options, pg leaderboard.Page) (*d5list.Leaderboard, int, error)
	BoardSummary(ctx context.Context, benchmarkID string, unverified bool) (*leaderboard.Summary, error)
	EachEntry(ctx context.Context, benchmarkID string, opt leaderboard.Options, fn func(*d5list.Entry) error) (*d5list.Benchmark, error)
}

// indexedBoardView assembles one page of the live board from the index:
// the page's rows, and the charts and filter choices from the board's
// summary.
func (h *Handler) indexedBoardView(ctx context.Context, ls ListService, il IndexedList, id string, opt leaderboard.Options, pg leaderboard.Page) (templates.BoardView, error) {
	board, total, err := il.BoardPage(ctx, id, opt, pg)
	if err != nil {
		return templates.BoardView{}, err
	}
	v := templates.BoardView{Board: board, Options: opt, Page: pg, Path: "/benchmarks/" + board.Benchmark.ID, Sliced: true, Total: total}
	// After the page's rows: the first read fixed the snapshot, which a
	// kept part must be of.
	sh, err := h.sharedBoardParts(ctx, ls, il, &board.Benchmark, opt.IncludeUnverified)
	if err != nil {
		return v, err
	}
	v.Latest, v.Accelerators, v.Frameworks, v.Charts, v.ChartsHTML = sh.latest, sh.accelerators, sh.frameworks, sh.charts, sh.chartsHTML
	return v, nil
}

// boardShared is what every view of a board shows besides its rows: the
// same whatever its filters, order or page, for the board with or
// without the unverified entries.
type boardShared struct {
	latest                   string
	accelerators, frameworks []string
	charts                   []templates.ListChart
	chartsHTML               string
}

// sharedBoardParts are the board's shared parts as of the rendering's
// moment: kept by the first view rendered after the board's last change,
// made and kept here otherwise. After each change, the views rendered one
// after the other each made them, a third of a view's cost.
func (h *Handler) sharedBoardParts(ctx context.Context, ls ListService, il IndexedList, bench *d5list.Benchmark, unverified bool) (*boardShared, error) {
	bp, ok := h.svc.(BoardParts)
	m, rendering := ctx.Value(momentKey{}).(leaderboard.Moment)
	if !ok || !rendering {
		return h.makeBoardShared(ctx, ls, il, bench, unverified, false)
	}
	name := "board-shared"
	if unverified {
		name += "+unverified"
	}
	sh, err := bp.BoardPart(m, name, func() (any, error) { return h.makeBoardShared(ctx, ls, il, bench, unverified, true) })
	if err != nil {
		return nil, err
	}
	return sh.(*boardShared), nil
}

// makeBoardShared reads and makes the board's shared parts; rendered, with
// the charts' HTML made once for every view that shows them.
func (h *Handler) makeBoardShared(ctx context.Context, ls ListService, il IndexedList, bench *d5list.Benchmark, unverified, rendered bool) (*boardShared, error) {
	sum, err := il.BoardSummary(ctx, bench.ID, unverified)
	if err != nil {
		return nil, err
	}
	dev, err := ls.Development(ctx, bench.ID)
	if err != nil {
		return nil, err
	}
	sh := &boardShared{accelerators: sum.AcceleratorNames, frameworks: sum.FrameworkNames}
	if latest, err := ls.LatestEdition(ctx); err != nil {
		return nil, err
	} else if latest != nil {
		sh.latest = latest.Name
	}
	sh.charts = templates.BoardCharts(bench, sum, h.curves(ctx, bench, sum.Top), dev)
	if rendered {
		if sh.chartsHTML, err = templates.RenderChartFigures(ctx, sh.charts); err != nil {
			return nil, err
		}
	}
	return sh, nil
}
