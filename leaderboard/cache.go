package leaderboard

import (
	"errors"
	"runtime"
	"slices"
	"sync"

	d5list "github.com/deep500/d5list"
)

// Cache holds computed boards keyed by benchmark and options, and the
// answers rendered from them (pages, JSON, CSV; see Render). It is safe
// for concurrent use. A board computed while an Invalidate for its
// benchmark (or an InvalidateAll) happened is returned to its caller but
// not kept, so a verdict that changes during a computation is never hidden
// behind a stale board. Nothing kept from before a change is answered to
// a request that starts after it: a write brackets its commit with
// BeginChange and EndChange, and while one is open nothing of its board
// is kept or answered from the cache.
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
	parts         map[partKey]keptPart // parts.go
	pageBytes     int64                // sum of the cached answers' sizes
	maxBytes      int64                // pageBytes stays at or under this
	// pending counts, per benchmark, the writes between BeginChange and
	// EndChange: what they change may be committed, so nothing of their
	// board is current until they end.
	pending map[string]int
	// allPending counts the writes between BeginChangeAll and
	// EndChangeAll, which may change every board.
	allPending int
	// renders holds a place for each rendering under way (Render): as
	// many as there are CPUs, so that a burst of changes, each making
	// the next readers render again, queues them instead of thrashing.
	renders chan struct{}
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
	// The generations the computation began at: a request that starts
	// after a later change does not wait for it, as it may show the
	// board before that change.
	gen, allGen uint64
}

var errComputePanicked = errors.New("leaderboard: computing the board panicked")

// NewCache returns an empty cache.
func NewCache() *Cache {
	return &Cache{
		boards:  map[cacheKey][]d5list.Entry{},
		gens:    map[string]uint64{},
		pending: map[string]int{},
		flights: map[cacheKey]*flight[[]d5list.Entry]{},

		scored:        map[string]*Scored{},
		scoredFlights: map[string]*flight[*Scored]{},
		pages:         map[pageKey]*keptPage{},
		pageFlights:   map[pageKey]*flight[keptPage]{},
		parts:         map[partKey]keptPart{},
		maxBytes:      DefaultMaxRenderedBytes,
		renders:       make(chan struct{}, runtime.GOMAXPROCS(0)),
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
	if f, ok := flights[key]; ok && c.current(benchmarkID, f.gen, f.allGen) {
		c.mu.Unlock()
		<-f.done
		return f.value, f.err
	}
	f := &flight[V]{done: make(chan struct{}), gen: c.gens[benchmarkID], allGen: c.allGen}
	flights[key] = f
	c.mu.Unlock()

	defer func() {
		c.mu.Lock()
		if flights[key] == f {
			delete(flights, key)
		}
		if f.err == nil && c.current(benchmarkID, f.gen, f.allGen) {
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

// current reports whether what was computed at generations gen and allGen
// still shows benchmarkID's board: no change since, and none open; c.mu
// is held.
func (c *Cache) current(benchmarkID string, gen, allGen uint64) bool {
	return gen == c.gens[benchmarkID] && allGen == c.allGen && c.pending[benchmarkID] == 0 && c.allPending == 0
}

// BeginChange tells the cache that a write changing benchmarkID's board is
// about to commit. From now until its EndChange nothing of that board is
// answered from the cache or kept: a request that starts after the commit
// but before EndChange reads the store as the commit left it.
func (c *Cache) BeginChange(benchmarkID string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.pending[benchmarkID]++
	c.invalidate(benchmarkID)
}

// EndChange closes a BeginChange, once the write committed or failed.
func (c *Cache) EndChange(benchmarkID string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.pending[benchmarkID]--; c.pending[benchmarkID] <= 0 {
		delete(c.pending, benchmarkID)
	}
	c.invalidate(benchmarkID)
}

// Invalidate drops every cached board of one benchmark, and every answer
// rendered from one.
func (c *Cache) Invalidate(benchmarkID string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.invalidate(benchmarkID)
}

func (c *Cache) invalidate(benchmarkID string) {
	c.gens[benchmarkID]++
	delete(c.scored, benchmarkID)
	for k := range c.boards {
		if k.benchmark == benchmarkID {
			delete(c.boards, k)
		}
	}
}

// BeginChangeAll is BeginChange for a write that may change every board
// (an edition frozen, an organisation confirmed, a job that does not say
// its benchmark given up or cancelled).
func (c *Cache) BeginChangeAll() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.allPending++
	c.invalidateAll()
}

// EndChangeAll closes a BeginChangeAll.
func (c *Cache) EndChangeAll() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.allPending = max(c.allPending-1, 0)
	c.invalidateAll()
}

// InvalidateAll drops every cached board and every rendered answer.
func (c *Cache) InvalidateAll() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.invalidateAll()
}

func (c *Cache) invalidateAll() {
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
