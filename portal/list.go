package portal

import (
	"context"
	"slices"
	"sort"
	"strconv"
	"strings"

	d5list "github.com/deep500/d5list"
	"github.com/deep500/d5list/leaderboard"
)

func costPerHour(s string) float64 {
	// bundle.System checked the value already; an unparsable one is
	// treated as undeclared.
	f, err := strconv.ParseFloat(strings.TrimSpace(s), 64)
	if err != nil || f < 0 {
		return 0
	}
	return f
}

// LeaderboardWith ranks a benchmark's submissions as opt selects, served
// from the ranking cache, with the rank changes since the latest edition.
func (s *Service) LeaderboardWith(ctx context.Context, benchmarkID string, opt leaderboard.Options) (*d5list.Leaderboard, error) {
	board, err := s.rank(ctx, benchmarkID, opt)
	if err != nil {
		return nil, err
	}
	latest, err := s.LatestEdition(ctx)
	if err != nil {
		return nil, err
	}
	if latest != nil {
		leaderboard.MarkChanges(board.Entries, boardOf(latest, benchmarkID))
	}
	return board, nil
}

func (s *Service) rank(ctx context.Context, benchmarkID string, opt leaderboard.Options) (*d5list.Leaderboard, error) {
	bench, err := s.store.Benchmark(ctx, benchmarkID)
	if err != nil {
		return nil, err
	}
	entries, err := s.cache.Get(benchmarkID, opt, func() ([]d5list.Entry, error) {
		scored, err := s.scored(ctx, bench)
		if err != nil {
			return nil, err
		}
		return scored.Rank(opt), nil
	})
	if err != nil {
		return nil, err
	}
	if entries == nil {
		entries = []d5list.Entry{}
	}
	return &d5list.Leaderboard{Benchmark: *bench, Entries: entries}, nil
}

// scored reads and scores a benchmark's submissions once for all its
// boards: a page needs two (its own and the unfiltered one for the filter
// choices), and each filter a visitor picks is another.
func (s *Service) scored(ctx context.Context, bench *d5list.Benchmark) (*leaderboard.Scored, error) {
	return s.cache.Scored(bench.ID, func() (*leaderboard.Scored, error) {
		subs, err := s.store.Submissions(ctx, d5list.SubmissionFilter{BenchmarkID: bench.ID})
		if err != nil {
			return nil, err
		}
		return leaderboard.Score(bench, subs), nil
	})
}

// VerifiedFeed lists up to limit verified, unflagged submissions, the most
// recently verified first, for the Atom feed.
func (s *Service) VerifiedFeed(ctx context.Context, limit int) ([]d5list.Submission, error) {
	if rv, ok := s.store.(interface {
		RecentlyVerified(ctx context.Context, limit int) ([]d5list.Submission, error)
	}); ok {
		return rv.RecentlyVerified(ctx, limit)
	}
	subs, err := s.store.Submissions(ctx, d5list.SubmissionFilter{Statuses: []d5list.Status{d5list.StatusVerified}})
	if err != nil {
		return nil, err
	}
	out := subs[:0]
	for _, sub := range subs {
		if sub.Flag == "" {
			out = append(out, sub)
		}
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].UpdatedAt.After(out[j].UpdatedAt) })
	if limit > 0 && len(out) > limit {
		out = out[:limit]
	}
	return out, nil
}

// RenderBoard serves a finished answer about benchmarkID's board (its
// page, JSON or CSV) from the ranking cache, rendering it where none is
// kept or current; the first request after a change of the benchmark's
// boards renders it again. See leaderboard.Cache.Render for what variant
// must name and render may use.
func (s *Service) RenderBoard(benchmarkID, variant string, render func(sizeHint int) (*leaderboard.Rendered, error)) (*leaderboard.Rendered, leaderboard.Freshness, error) {
	return s.cache.Render(benchmarkID, variant, render)
}

// BoardMoment and BoardPart share the parts every view of a board shows,
// made once after each change (leaderboard.Moment).
func (s *Service) BoardMoment(benchmarkID string) leaderboard.Moment {
	return s.cache.Moment(benchmarkID)
}

func (s *Service) BoardPart(m leaderboard.Moment, name string, build func() (any, error)) (any, error) {
	return s.cache.Part(m, name, build)
}

// MaxEntityEntries bounds the entries an organisation's or a system's page
// lists: the newest, which is what its readers come for.
const MaxEntityEntries = 500

// EntriesOf lists the entries of an organisation (submitter), or of one of
// its systems when system is not empty, newest first, as viewer may see
// them: hidden verdicts only for their competitor and the organisers.
func (s *Service) EntriesOf(ctx context.Context, viewer *d5list.User, submitter, system string) ([]d5list.Submission, error) {
	submitter, system = d5list.CleanOrganisation(submitter), strings.TrimSpace(system)
	if submitter == "" {
		return nil, d5list.Errorf(d5list.ENOTFOUND, "no organisation named")
	}
	subs, err := s.store.Submissions(ctx, d5list.SubmissionFilter{Submitter: submitter, SystemName: system, Limit: MaxEntityEntries})
	if err != nil {
		return nil, err
	}
	out := subs[:0]
	for _, sub := range subs {
		if sub.MayView(viewer) {
			out = append(out, sub)
		}
	}
	if len(out) == 0 {
		what := "organisation " + quote(submitter)
		if system != "" {
			what = "system " + quote(system) + " of " + what
		}
		return nil, d5list.Errorf(d5list.ENOTFOUND, "%s has no entries on this list", what)
	}
	return out, nil
}

// SystemIndex is a store that finds one system on the boards and in the
// frozen editions without reading them whole (store.DB).
type SystemIndex interface {
	SystemOnBoard(ctx context.Context, benchID, systemKey string) (*d5list.Entry, int, error)
	SystemInEditions(ctx context.Context, systemKey string) ([]leaderboard.Place, error)
}

// Places are the places of one system (an organisation's system name) on
// the boards: on each benchmark's live default board that lists it, then
// in each frozen edition, the latest first. A store without the index
// gives none.
func (s *Service) Places(ctx context.Context, submitter, system string) ([]leaderboard.Place, error) {
	ix, ok := s.store.(SystemIndex)
	if !ok {
		return nil, nil
	}
	key := leaderboard.SystemKey(submitter, system)
	benches, err := s.store.Benchmarks(ctx)
	if err != nil {
		return nil, err
	}
	var out []leaderboard.Place
	for _, b := range benches {
		e, n, err := ix.SystemOnBoard(ctx, b.ID, key)
		if err != nil {
			return nil, err
		}
		if e != nil {
			out = append(out, leaderboard.Place{BenchmarkID: b.ID, Entry: *e, Of: n})
		}
	}
	editions, err := ix.SystemInEditions(ctx, key)
	if err != nil {
		return nil, err
	}
	return append(out, editions...), nil
}

// SearchIndex is a store that searches the names on every board from an
// index of them (store.DB).
type SearchIndex interface {
	Search(ctx context.Context, text string, perBoard int) ([]leaderboard.Found, bool, error)
}

// Search finds text in the organisation, system, framework and
// accelerator names of every benchmark's default list, and gives per
// board its first perBoard matching entries, ranked (SearchIndex.Search).
func (s *Service) Search(ctx context.Context, text string, perBoard int) ([]leaderboard.Found, bool, error) {
	if len(text) > leaderboard.MaxSearchBytes {
		return nil, false, d5list.Errorf(d5list.EINVALID, "the search is longer than %d characters", leaderboard.MaxSearchBytes)
	}
	ix, ok := s.store.(SearchIndex)
	if !ok {
		return nil, false, d5list.Errorf(d5list.EUNAVAILABLE, "this portal's store keeps no search index")
	}
	return ix.Search(ctx, text, perBoard)
}

// BoardIndex is a store that keeps the boards indexed on write
// (store.DB): a page costs about its rows, not the benchmark's.
type BoardIndex interface {
	BoardPage(ctx context.Context, benchID string, opt leaderboard.Options, offset, limit int) ([]d5list.Entry, int, error)
	EachBoardEntry(ctx context.Context, benchID string, opt leaderboard.Options, fn func(*d5list.Entry) error) error
	BoardSummary(ctx context.Context, benchID string, includeUnverified bool) (*leaderboard.Summary, error)
	LatestOnBoard(ctx context.Context, benchID string, n int) ([]d5list.Entry, error)
	RankOf(ctx context.Context, benchID string, id int64, bestOnly bool) (*d5list.Entry, error)
}

// EntryOf is submission id's entry on the default board listing every
// entry, with its rank, and that board's length; nil when it is not
// listed.
func (s *Service) EntryOf(ctx context.Context, benchmarkID string, id int64) (*d5list.Entry, int, error) {
	opt := leaderboard.Options{AllPerSystem: true}
	if ix, ok := s.store.(BoardIndex); ok {
		e, err := ix.RankOf(ctx, benchmarkID, id, false)
		if err != nil {
			return nil, 0, err
		}
		_, n, err := ix.BoardPage(ctx, benchmarkID, opt, 0, 1)
		return e, n, err
	}
	board, err := s.LeaderboardWith(ctx, benchmarkID, opt)
	if err != nil {
		return nil, 0, err
	}
	for i := range board.Entries {
		if board.Entries[i].SubmissionID == id {
			return &board.Entries[i], len(board.Entries), nil
		}
	}
	return nil, len(board.Entries), nil
}

// Overview is a benchmark's line on the home page: its leader, how many
// entries its default board ranks, and its newest n entries (their ranks
// are 0 where the index would have to count them).
func (s *Service) Overview(ctx context.Context, benchmarkID string, n int) (leader *d5list.Entry, ranked int, latest []d5list.Entry, err error) {
	ix, ok := s.store.(BoardIndex)
	if !ok {
		board, err := s.Leaderboard(ctx, benchmarkID)
		if err != nil {
			return nil, 0, nil, err
		}
		if len(board.Entries) > 0 {
			leader = &board.Entries[0]
		}
		latest = slices.Clone(board.Entries)
		slices.SortStableFunc(latest, func(a, b d5list.Entry) int { return b.CreatedAt.Compare(a.CreatedAt) })
		return leader, len(board.Entries), latest[:min(n, len(latest))], nil
	}
	top, ranked, err := ix.BoardPage(ctx, benchmarkID, leaderboard.Options{}, 0, 1)
	if err != nil {
		return nil, 0, nil, err
	}
	if len(top) > 0 {
		leader = &top[0]
	}
	latest, err = ix.LatestOnBoard(ctx, benchmarkID, n)
	return leader, ranked, latest, err
}

// BoardPage is one page of a board as opt selects it: its entries,
// ranked, with their rank changes since the latest edition, and the
// board's row count. A page past the last is ENOTFOUND. With an indexed
// store it reads the page's rows only; otherwise it slices the cached
// board.
func (s *Service) BoardPage(ctx context.Context, benchmarkID string, opt leaderboard.Options, pg leaderboard.Page) (*d5list.Leaderboard, int, error) {
	bench, err := s.store.Benchmark(ctx, benchmarkID)
	if err != nil {
		return nil, 0, err
	}
	var entries []d5list.Entry
	var total int
	if ix, ok := s.store.(BoardIndex); ok {
		if entries, total, err = ix.BoardPage(ctx, bench.ID, opt, pg.Offset(), pg.Limit()); err != nil {
			return nil, 0, err
		}
	} else {
		board, err := s.rank(ctx, bench.ID, opt)
		if err != nil {
			return nil, 0, err
		}
		total = len(board.Entries)
		lo, hi := pg.Bounds(total)
		entries = board.Entries[lo:hi]
	}
	if err := pg.Check(total); err != nil {
		return nil, 0, err
	}
	latest, err := s.LatestEdition(ctx)
	if err != nil {
		return nil, 0, err
	}
	if latest != nil {
		leaderboard.MarkChanges(entries, boardOf(latest, bench.ID))
	}
	return &d5list.Leaderboard{Benchmark: *bench, Entries: entries}, total, nil
}

// BoardSummary is what a board's charts and filter choices show (each
// system's best entry; unverified picks the board that lists unverified
// ones): read from the sums the store keeps with every write where it
// keeps the index, so always up to date and never a pass over the board.
func (s *Service) BoardSummary(ctx context.Context, benchmarkID string, unverified bool) (*leaderboard.Summary, error) {
	bench, err := s.store.Benchmark(ctx, benchmarkID)
	if err != nil {
		return nil, err
	}
	if ix, ok := s.store.(BoardIndex); ok {
		return ix.BoardSummary(ctx, bench.ID, unverified)
	}
	// Without the index the boards are ranked in memory anyway: the
	// summary is made from the cached board.
	board, err := s.rank(ctx, bench.ID, leaderboard.Options{IncludeUnverified: unverified})
	if err != nil {
		return nil, err
	}
	sum := leaderboard.SummaryOf(board)
	all, err := s.rank(ctx, bench.ID, leaderboard.Options{IncludeUnverified: true, AllPerSystem: true})
	if err != nil {
		return nil, err
	}
	names := leaderboard.SummaryOf(all)
	sum.AcceleratorNames, sum.FrameworkNames = names.AcceleratorNames, names.FrameworkNames
	// The records are every entry's, not each system's best.
	every, err := s.rank(ctx, bench.ID, leaderboard.Options{IncludeUnverified: unverified, AllPerSystem: true})
	if err != nil {
		return nil, err
	}
	sum.Records = leaderboard.Records(&every.Benchmark, every.Entries)
	return sum, nil
}

// EachEntry streams a whole board as opt selects it, for the exports: from
// the index one row at a time where the store keeps one.
func (s *Service) EachEntry(ctx context.Context, benchmarkID string, opt leaderboard.Options, fn func(*d5list.Entry) error) (*d5list.Benchmark, error) {
	bench, err := s.store.Benchmark(ctx, benchmarkID)
	if err != nil {
		return nil, err
	}
	latest, err := s.LatestEdition(ctx)
	if err != nil {
		return nil, err
	}
	if latest != nil {
		mark, next := leaderboard.ChangeMarker(boardOf(latest, bench.ID)), fn
		fn = func(e *d5list.Entry) error { mark(e); return next(e) }
	}
	if ix, ok := s.store.(BoardIndex); ok {
		return bench, ix.EachBoardEntry(ctx, bench.ID, opt, fn)
	}
	board, err := s.rank(ctx, bench.ID, opt)
	if err != nil {
		return nil, err
	}
	for i := range board.Entries {
		if err := fn(&board.Entries[i]); err != nil {
			return bench, err
		}
	}
	return bench, nil
}
