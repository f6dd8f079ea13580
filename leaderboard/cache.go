package leaderboard

import (
	"errors"
	"slices"
	"sync"

	d5list "github.com/deep500/d5list"
)

// Cache holds computed boards keyed by benchmark and options, and the
// answers rendered from them (pages, JSON, CSV; see Render). It is safe
// for concurrent use. A board computed while an Invalidate for its
// benchmark (or an InvalidateAll) happened is returned to its caller but
// not kept, so a verdict that changes during a computation is never hidden
// behind a stale board. Rendered answers are kept across changes, marked
// stale, and rendered again in the background.
type Cache struct {
	// mu is read-locked for a hit, the one path a cached page takes, so
	// that concurrent hits do not queue on each other; everything that
	// changes the maps takes it whole.
	mu      sync.RWMutex
	boards  map[cacheKey][]d5list.Entry
	gens    map[string]uint64 // per benchmark, bumped by Invalidate
	allGen  uint64            // bumped by InvalidateAll
	flights map[cacheKey]*flight[[]d5list.Entry]

	// Scored submissions per benchmark, dropped with the boards, and
	// rendered answers (render_cache.go), made stale with them.
	scored        map[string]*Scored
	scoredFlights map[string]*flight[*Scored]
	pages         map[pageKey]*keptPage
	pageFlights   map[pageKey]*flight[keptPage]
	pageBytes     int64 // sum of the cached answers' sizes
	maxBytes      int64 // pageBytes stays at or under this
	// The stale answers waiting to be rendered again, and whether a
	// goroutine is rendering them (render_cache.go).
	rebuilds   []rebuild
	rebuilding bool
}

type cacheKey struct {
	benchmark string
	opt       Options
}

// flight lets concurrent requests for one missing value share a single
// computation instead of each querying the store or rendering.
type flight[V any] struct {
	done  chan struct{}
	value V
	err   error
}

var errComputePanicked = errors.New("leaderboard: computing the board panicked")

// NewCache returns an empty cache.
func NewCache() *Cache {
	return &Cache{
		boards:  map[cacheKey][]d5list.Entry{},
		gens:    map[string]uint64{},
		flights: map[cacheKey]*flight[[]d5list.Entry]{},

		scored:        map[string]*Scored{},
		scoredFlights: map[string]*flight[*Scored]{},
		pages:         map[pageKey]*keptPage{},
		pageFlights:   map[pageKey]*flight[keptPage]{},
		maxBytes:      DefaultMaxRenderedBytes,
	}
}

// Get returns the cached board for benchmarkID and opt, or computes it with
// compute, caches it and returns it. Errors are returned and not cached.
// The caller gets its own copy of the entries.
func (c *Cache) Get(benchmarkID string, opt Options, compute func() ([]d5list.Entry, error)) ([]d5list.Entry, error) {
	key := cacheKey{benchmarkID, opt.normalized()}
	if key.opt.Search != "" {
		// Searches are as many as visitors can type: each is one pass over
		// the cached scored board, and is not kept.
		return compute()
	}
	entries, err := load(c, benchmarkID, key, c.boards, c.flights,
		func(e []d5list.Entry) { c.boards[key] = e }, compute)
	return slices.Clone(entries), err
}

// load is the one lookup path of boards, scored submissions and rendered
// answers: a hit in kept is returned; concurrent misses of one key share
// one compute; an error, or a value computed while its benchmark (or
// everything) was invalidated, is returned but not kept. keep stores a
// value, with c.mu held.
func load[K comparable, V any](c *Cache, benchmarkID string, key K, kept map[K]V, flights map[K]*flight[V],
	keep func(V), compute func() (V, error)) (V, error) {
	c.mu.RLock()
	v, ok := kept[key]
	c.mu.RUnlock()
	if ok {
		return v, nil
	}
	c.mu.Lock()
	// Kept by another request between the two locks.
	if v, ok := kept[key]; ok {
		c.mu.Unlock()
		return v, nil
	}
	if f, ok := flights[key]; ok {
		c.mu.Unlock()
		<-f.done
		return f.value, f.err
	}
	f := &flight[V]{done: make(chan struct{})}
	flights[key] = f
	gen, allGen := c.gens[benchmarkID], c.allGen
	c.mu.Unlock()

	defer func() {
		c.mu.Lock()
		delete(flights, key)
		if f.err == nil && c.gens[benchmarkID] == gen && c.allGen == allGen {
			keep(f.value)
		}
		c.mu.Unlock()
		close(f.done)
	}()
	// If compute panics the deferred release still runs; the waiters must
	// then see a failure, not an empty value, and nothing is kept.
	f.err = errComputePanicked
	f.value, f.err = compute()
	return f.value, f.err
}

// Invalidate drops every cached board of one benchmark, and makes every
// answer rendered from one stale.
func (c *Cache) Invalidate(benchmarkID string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.gens[benchmarkID]++
	delete(c.scored, benchmarkID)
	for k := range c.boards {
		if k.benchmark == benchmarkID {
			delete(c.boards, k)
		}
	}
}

// InvalidateAll drops every cached board, and makes every rendered answer
// stale.
func (c *Cache) InvalidateAll() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.allGen++
	clear(c.boards)
	clear(c.scored)
}

// Len is the number of cached boards.
func (c *Cache) Len() int {
	c.mu.RLock()
	defer c.mu.RUnlock()
	return len(c.boards)
}
