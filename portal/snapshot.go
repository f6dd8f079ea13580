package portal

import (
	"context"

	d5list "github.com/deep500/d5list"
	"github.com/deep500/d5list/leaderboard"
)

// Snapshotter is a store that answers any number of reads from one
// committed state (store.DB.Snapshot).
type Snapshotter interface {
	Snapshot(ctx context.Context, fn func(ctx context.Context) error) error
}

// pinnedListKey is the context key of the editions a ReadSnapshot holds.
type pinnedListKey struct{}

// pinnedList is what of the editions the boards show, as of one moment.
type pinnedList struct {
	latest      *d5list.Edition
	development map[string][]leaderboard.DevelopmentPoint
}

// ReadSnapshot runs fn with a context under which what the service reads
// about the list is of one moment, so that an answer made of several
// reads (a board page: its rows, its charts, its entries' curves, its
// edition link and rank changes) never mixes the state before a change
// with the state after it: every store read is of one committed state
// where the store keeps snapshots, and the latest edition and the
// development through the editions are that state's. fn must only read
// (see store.DB.Snapshot). The ranking cache's boards are not read under
// it: a store that keeps snapshots keeps the boards' index, which the
// answers read instead.
func (s *Service) ReadSnapshot(ctx context.Context, fn func(ctx context.Context) error) error {
	if _, ok := ctx.Value(pinnedListKey{}).(*pinnedList); ok {
		return fn(ctx)
	}
	// Both are read from the store once, then kept in memory.
	if _, err := s.LatestEdition(ctx); err != nil {
		return err
	}
	if _, err := s.development(ctx); err != nil {
		return err
	}
	s.list.mu.Lock()
	pinned := &pinnedList{latest: s.list.latest, development: s.list.development}
	s.list.mu.Unlock()
	ctx = context.WithValue(ctx, pinnedListKey{}, pinned)
	sn, ok := s.store.(Snapshotter)
	if !ok {
		return fn(ctx)
	}
	return sn.Snapshot(ctx, func(ctx context.Context) error {
		if err := s.pinSnapshotEditions(ctx, pinned); err != nil {
			return err
		}
		return fn(ctx)
	})
}

// pinSnapshotEditions makes pinned the editions of the snapshot that ctx
// reads, asking it for its latest edition's name as its first read, which
// fixes its moment. Those kept in memory, taken before, are almost always
// its own. They are not where an edition was committed in between and the
// memory does not hold it yet: between a freeze's commit and its update
// of the list, or after another process's freeze, until Current sees it.
// Then they are read from the snapshot itself, which only such a moment
// costs.
func (s *Service) pinSnapshotEditions(ctx context.Context, pinned *pinnedList) error {
	es, ok := s.store.(EditionStore)
	if !ok {
		return nil
	}
	name, err := es.LatestEditionName(ctx)
	if err != nil || name == editionName(pinned.latest) {
		return err
	}
	var latest *d5list.Edition
	if name != "" {
		if latest, err = es.Edition(ctx, name); err != nil {
			return err
		}
	}
	dev, err := es.EditionDevelopment(ctx)
	if err != nil {
		return err
	}
	pinned.latest, pinned.development = latest, dev
	return nil
}

// editionName is e's name, "" for no edition.
func editionName(e *d5list.Edition) string {
	if e == nil {
		return ""
	}
	return e.Name
}
