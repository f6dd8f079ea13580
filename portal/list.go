package portal

import (
	"context"
	"maps"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"

	d5list "github.com/deep500/d5list"
	"github.com/deep500/d5list/leaderboard"
)

// EditionStore is the storage of frozen editions. The Store may implement
// it; without it the list has no editions.
type EditionStore interface {
	FreezeEdition(ctx context.Context, name, by string, boards []d5list.Leaderboard, beforeCommit func()) (*d5list.Edition, error)
	Editions(ctx context.Context) ([]d5list.EditionSummary, error)
	Edition(ctx context.Context, name string) (*d5list.Edition, error)
	// EditionDevelopment is each benchmark's development chart through
	// the editions, oldest first, without decoding their boards.
	EditionDevelopment(ctx context.Context) (map[string][]leaderboard.DevelopmentPoint, error)
}

// listState keeps in memory what of the editions every live board shows:
// the latest edition, which every live board is compared with, and each
// benchmark's development through the editions. Editions never change
// once frozen, so both change only when one is frozen.
type listState struct {
	mu     sync.Mutex
	loaded bool
	latest *d5list.Edition // nil when none is frozen
	// development is each benchmark's points, oldest first, read once
	// from the stored editions (nil until then) and replaced by a longer
	// one at each freeze, never changed once kept: a snapshot holds it.
	development map[string][]leaderboard.DevelopmentPoint
	freezes     sync.Mutex // one freeze, or one reading of development, at a time
}

func costPerHour(s string) float64 {
	// bundle.System checked the value already; an unparsable one is
	// treated as undeclared.
	f, err := strconv.ParseFloat(strings.TrimSpace(s), 64)
	if err != nil || f < 0 {
		return 0
	}
	return f
}

func (s *Service) editions() (EditionStore, error) {
	es, ok := s.store.(EditionStore)
	if !ok {
		return nil, d5list.Errorf(d5list.EUNAVAILABLE, "this portal's store keeps no editions")
	}
	return es, nil
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

func boardOf(e *d5list.Edition, benchmarkID string) []d5list.Entry {
	for _, b := range e.Boards {
		if b.Benchmark.ID == benchmarkID {
			return b.Entries
		}
	}
	return nil
}

// LatestEdition is the most recently frozen edition, or nil.
func (s *Service) LatestEdition(ctx context.Context) (*d5list.Edition, error) {
	if pinned, ok := ctx.Value(pinnedListKey{}).(*pinnedList); ok {
		return pinned.latest, nil
	}
	s.list.mu.Lock()
	defer s.list.mu.Unlock()
	if s.list.loaded {
		return s.list.latest, nil
	}
	es, ok := s.store.(EditionStore)
	if !ok {
		s.list.loaded = true
		return nil, nil
	}
	list, err := es.Editions(ctx)
	if err != nil {
		return nil, err
	}
	if len(list) > 0 {
		e, err := es.Edition(ctx, list[0].Name)
		if err != nil {
			return nil, err
		}
		s.list.latest = e
	}
	s.list.loaded = true
	return s.list.latest, nil
}

// FreezeEdition snapshots every benchmark's public board (verified
// entries, one row per system) as the edition name, with rank changes
// against the edition before it. Only organisers may freeze.
func (s *Service) FreezeEdition(ctx context.Context, user *d5list.User, name string) (*d5list.Edition, error) {
	if user == nil || !user.Role.AtLeast(d5list.RoleOrganiser) {
		return nil, d5list.Errorf(d5list.EFORBIDDEN, "only organisers may freeze an edition")
	}
	es, err := s.editions()
	if err != nil {
		return nil, err
	}
	s.list.freezes.Lock()
	defer s.list.freezes.Unlock()
	prev, err := s.LatestEdition(ctx)
	if err != nil {
		return nil, err
	}
	benches, err := s.store.Benchmarks(ctx)
	if err != nil {
		return nil, err
	}
	boards := make([]d5list.Leaderboard, 0, len(benches))
	for _, b := range benches {
		board, err := s.defaultBoard(ctx, &b)
		if err != nil {
			return nil, err
		}
		if prev != nil {
			leaderboard.MarkChanges(board.Entries, boardOf(prev, b.ID))
		}
		boards = append(boards, *board)
	}
	// Every live board's rank changes and edition link are against the
	// latest edition, and every page charts the editions: nothing is kept
	// or answered from the cache from right before the commit until the
	// list holds the new edition. Until then (the edition encoded and
	// written) readers go on sharing the answers of before, as they may:
	// they began before the commit.
	changing := false
	defer func() {
		if changing {
			s.cache.EndChangeAll()
		}
	}()
	ed, err := es.FreezeEdition(ctx, name, user.Name, boards, func() {
		if !changing {
			s.cache.BeginChangeAll()
			changing = true
		}
	})
	if err != nil {
		return nil, err
	}
	s.list.mu.Lock()
	s.list.latest, s.list.loaded = ed, true
	if s.list.development != nil {
		s.list.development = withDevelopment(s.list.development, ed)
	}
	s.list.mu.Unlock()
	s.log.Info("edition frozen", "name", name, "by", user.Name, "boards", len(boards))
	return ed, nil
}

// defaultBoard is a benchmark's whole default board: from the index where
// the store keeps one (each system's best entry, never the benchmark's
// submissions), else ranked in memory.
func (s *Service) defaultBoard(ctx context.Context, b *d5list.Benchmark) (*d5list.Leaderboard, error) {
	ix, ok := s.store.(BoardIndex)
	if !ok {
		return s.rank(ctx, b.ID, leaderboard.Options{})
	}
	board := &d5list.Leaderboard{Benchmark: *b, Entries: []d5list.Entry{}}
	err := ix.EachBoardEntry(ctx, b.ID, leaderboard.Options{}, func(e *d5list.Entry) error {
		board.Entries = append(board.Entries, *e)
		return nil
	})
	return board, err
}

// Editions lists the frozen editions, the latest first.
func (s *Service) Editions(ctx context.Context) ([]d5list.EditionSummary, error) {
	es, ok := s.store.(EditionStore)
	if !ok {
		return []d5list.EditionSummary{}, nil
	}
	return es.Editions(ctx)
}

// Edition returns one frozen edition.
func (s *Service) Edition(ctx context.Context, name string) (*d5list.Edition, error) {
	es, err := s.editions()
	if err != nil {
		return nil, err
	}
	return es.Edition(ctx, name)
}

// EditionBoard returns one benchmark's board as an edition froze it.
func (s *Service) EditionBoard(ctx context.Context, name, benchmarkID string) (*d5list.Leaderboard, error) {
	e, err := s.Edition(ctx, name)
	if err != nil {
		return nil, err
	}
	for i := range e.Boards {
		if e.Boards[i].Benchmark.ID == benchmarkID {
			return &e.Boards[i], nil
		}
	}
	return nil, d5list.Errorf(d5list.ENOTFOUND, "edition %q has no board for benchmark %q", name, benchmarkID)
}

// Development summarises a benchmark's board in every edition, oldest
// first (best, 10th and median entry). Every board page charts it: the
// editions are read once, and each freeze adds its points.
func (s *Service) Development(ctx context.Context, benchmarkID string) ([]leaderboard.DevelopmentPoint, error) {
	if pinned, ok := ctx.Value(pinnedListKey{}).(*pinnedList); ok {
		return slices.Clone(pinned.development[benchmarkID]), nil
	}
	dev, err := s.development(ctx)
	if err != nil {
		return nil, err
	}
	return slices.Clone(dev[benchmarkID]), nil
}

// development is every benchmark's development, read from the editions
// the first time.
func (s *Service) development(ctx context.Context) (map[string][]leaderboard.DevelopmentPoint, error) {
	s.list.mu.Lock()
	dev := s.list.development
	s.list.mu.Unlock()
	if dev != nil {
		return dev, nil
	}
	return s.readDevelopment(ctx)
}

// readDevelopment reads each benchmark's development through the
// editions, as each freeze kept it, and keeps it. A freeze waits for it
// (list.freezes), so that no edition is missed or counted twice.
func (s *Service) readDevelopment(ctx context.Context) (map[string][]leaderboard.DevelopmentPoint, error) {
	s.list.freezes.Lock()
	defer s.list.freezes.Unlock()
	s.list.mu.Lock()
	dev := s.list.development
	s.list.mu.Unlock()
	if dev != nil {
		return dev, nil // read while this one waited
	}
	dev = map[string][]leaderboard.DevelopmentPoint{}
	if es, ok := s.store.(EditionStore); ok {
		var err error
		if dev, err = es.EditionDevelopment(ctx); err != nil {
			return nil, err
		}
	}
	s.list.mu.Lock()
	s.list.development = dev
	s.list.mu.Unlock()
	return dev, nil
}

// withDevelopment is dev with edition e's point added to the development
// of each of its benchmarks; dev itself is left as it was.
func withDevelopment(dev map[string][]leaderboard.DevelopmentPoint, e *d5list.Edition) map[string][]leaderboard.DevelopmentPoint {
	out := maps.Clone(dev)
	for _, b := range e.Boards {
		out[b.Benchmark.ID] = append(slices.Clip(dev[b.Benchmark.ID]), leaderboard.Development([]string{e.Name}, [][]d5list.Entry{b.Entries})...)
	}
	return out
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
