package portal

import (
	"context"
	"maps"
	"slices"
	"sync"

	d5list "github.com/deep500/d5list"
	"github.com/deep500/d5list/leaderboard"
)

// EditionStore is the storage of frozen editions. The Store may implement
// it; without it the list has no editions.
type EditionStore interface {
	FreezeEdition(ctx context.Context, name, by string, boards []d5list.Leaderboard, beforeCommit func(*d5list.Edition)) (*d5list.Edition, error)
	Editions(ctx context.Context) ([]d5list.EditionSummary, error)
	Edition(ctx context.Context, name string) (*d5list.Edition, error)
	// LatestEditionName is the latest edition's name, "" when none is;
	// under a snapshot (Snapshotter), the snapshot's.
	LatestEditionName(ctx context.Context) (string, error)
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
	// freezing is the edition of this process's freeze from right before
	// its commit until latest is it (nil otherwise): meanwhile memory
	// cannot tell whether the commit came, and a reader asks the store.
	freezing *d5list.Edition
	// development is each benchmark's points, oldest first, read once
	// from the stored editions (nil until then) and replaced by a longer
	// one at each freeze, never changed once kept: a snapshot holds it.
	development map[string][]leaderboard.DevelopmentPoint
	freezes     sync.Mutex // one freeze, or one reading of development, at a time
}

func (s *Service) editions() (EditionStore, error) {
	es, ok := s.store.(EditionStore)
	if !ok {
		return nil, d5list.Errorf(d5list.EUNAVAILABLE, "this portal's store keeps no editions")
	}
	return es, nil
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
	if s.list.loaded {
		latest, freezing := s.list.latest, s.list.freezing
		s.list.mu.Unlock()
		if committed, err := s.freezeCommitted(ctx, freezing); err != nil || committed {
			return freezing, err
		}
		return latest, nil
	}
	defer s.list.mu.Unlock()
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

// freezeCommitted reports whether the store holds freezing, the edition
// of a freeze of this process that the list does not hold yet (nil when
// none is under way).
func (s *Service) freezeCommitted(ctx context.Context, freezing *d5list.Edition) (bool, error) {
	if freezing == nil {
		return false, nil
	}
	es, err := s.editions()
	if err != nil {
		return false, err
	}
	name, err := es.LatestEditionName(ctx)
	return name == freezing.Name, err
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
	// list holds the new edition, and a reader in between asks the store
	// which edition is the latest (list.freezing). Until then (the
	// edition encoded and written) readers go on sharing the answers of
	// before, as they may: they began before the commit.
	changing := false
	defer func() {
		if changing {
			s.list.mu.Lock()
			s.list.freezing = nil
			s.list.mu.Unlock()
			s.cache.EndChangeAll()
		}
	}()
	ed, err := es.FreezeEdition(ctx, name, user.Name, boards, func(ed *d5list.Edition) {
		if !changing {
			s.cache.BeginChangeAll()
			s.list.mu.Lock()
			s.list.freezing = ed
			s.list.mu.Unlock()
			changing = true
		}
	})
	if err != nil {
		return nil, err
	}
	s.list.mu.Lock()
	s.list.latest, s.list.loaded, s.list.freezing = ed, true, nil
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
	dev, freezing := s.list.development, s.list.freezing
	s.list.mu.Unlock()
	if dev == nil {
		// A freeze under way holds list.freezes: this waits for it.
		return s.readDevelopment(ctx)
	}
	committed, err := s.freezeCommitted(ctx, freezing)
	if err != nil {
		return nil, err
	}
	if committed {
		return withDevelopment(dev, freezing), nil
	}
	return dev, nil
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
