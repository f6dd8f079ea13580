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
// development through the editions are those of when fn began. The
// editions are taken first: a freeze stores the boards as they were, so
// the rows read after are never older than the edition they are compared
// with. fn must only read (see store.DB.Snapshot). The ranking cache's
// boards are not read under it: a store that keeps snapshots keeps the
// boards' index, which the answers read instead.
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
	if sn, ok := s.store.(Snapshotter); ok {
		return sn.Snapshot(ctx, fn)
	}
	return fn(ctx)
}
