package handlers

import (
	"context"
	"net/http"
	"sort"

	d5list "github.com/deep500/d5list"

	"github.com/deep500/d5list/templates"
)

// HomePage is GET /: the live list, led by each benchmark's leader and the
// newest ranked results, then the benchmarks by Deep500 level; the latest
// frozen edition is one link away, and says it is one.
func (h *Handler) HomePage(w http.ResponseWriter, r *http.Request) {
	var latest *d5list.Edition
	if ls, ok := h.svc.(ListService); ok {
		var err error
		if latest, err = ls.LatestEdition(r.Context()); err != nil {
			h.Error(w, r, err)
			return
		}
	}
	benchmarks, err := h.svc.Benchmarks(r.Context())
	if err != nil {
		h.Error(w, r, err)
		return
	}
	overview, err := h.overview(r.Context(), benchmarks)
	if err != nil {
		h.Error(w, r, err)
		return
	}
	h.render(w, r, http.StatusOK, templates.Home(benchmarks, overview, latest))
}

// latestShown is how many of the newest ranked results the home page lists.
const latestShown = 8

// overviewer answers a benchmark's line of the overview without ranking
// its board (the portal, from the index).
type overviewer interface {
	Overview(ctx context.Context, benchmarkID string, n int) (leader *d5list.Entry, ranked int, latest []d5list.Entry, err error)
}

// overview gathers each benchmark's leader and ranked count and the newest
// ranked results, from the boards the portal caches anyway. A board not in
// the cache is computed here as on its own page: cheap before the first
// edition, when this page shows; issue 15's indexed boards make it cheap
// at any size.
func (h *Handler) overview(ctx context.Context, benchmarks []d5list.Benchmark) (templates.Overview, error) {
	o := templates.Overview{Boards: map[string]templates.BoardSummary{}}
	if ov, ok := h.svc.(overviewer); ok {
		for _, b := range benchmarks {
			leader, ranked, latest, err := ov.Overview(ctx, b.ID, latestShown)
			if err != nil {
				return o, err
			}
			o.Boards[b.ID] = templates.BoardSummary{Leader: leader, Ranked: ranked}
			for _, e := range latest {
				o.Latest = append(o.Latest, templates.LatestResult{Benchmark: b, Entry: e})
			}
		}
		sort.SliceStable(o.Latest, func(i, j int) bool { return o.Latest[i].Entry.CreatedAt.After(o.Latest[j].Entry.CreatedAt) })
		o.Latest = o.Latest[:min(latestShown, len(o.Latest))]
		return o, nil
	}
	for _, b := range benchmarks {
		board, err := h.svc.Leaderboard(ctx, b.ID)
		if d5list.ErrorCode(err) == d5list.ENOTFOUND {
			continue // a benchmark with no board yet
		} else if err != nil {
			return o, err
		}
		sum := templates.BoardSummary{Ranked: len(board.Entries)}
		if len(board.Entries) > 0 {
			sum.Leader = &board.Entries[0]
		}
		o.Boards[b.ID] = sum
		for _, e := range board.Entries {
			o.Latest = append(o.Latest, templates.LatestResult{Benchmark: board.Benchmark, Entry: e})
		}
	}
	sort.SliceStable(o.Latest, func(i, j int) bool { return o.Latest[i].Entry.CreatedAt.After(o.Latest[j].Entry.CreatedAt) })
	if len(o.Latest) > latestShown {
		o.Latest = o.Latest[:latestShown]
	}
	return o, nil
}
