package handlers

import (
	"context"
	"runtime"
	"runtime/debug"
	"sync"

	"golang.org/x/sync/semaphore"
)

// budget admits costly work by what each piece may hold at most (bytes of
// memory, or a count of same-sized pieces), so that many requests at once
// cost the portal a bounded amount whatever they are. Work waits, first
// come first served, for its share.
//
// What a piece held is garbage once it ends, and the collector would let
// garbage grow to as much again as what is live before it collects: each
// end starts a collection, so that the next piece reuses the memory. When
// the last holder leaves, the memory is also handed back to the system:
// Go returns freed heap only slowly, so that after a burst the portal
// otherwise stays at its peak for minutes.
type budget struct {
	size int64
	sem  *semaphore.Weighted
	mu   sync.Mutex
	held int
	// collecting says a collection is under way, and handBack that one
	// must hand the memory back once it ends.
	collecting, handBack bool
	// collect collects the garbage, and with idle also hands the freed
	// memory back to the system; tests count calls.
	collect func(idle bool)
}

func newBudget(size int64) *budget {
	return &budget{size: size, sem: semaphore.NewWeighted(size), collect: collect}
}

func collect(idle bool) {
	if idle {
		debug.FreeOSMemory()
	} else {
		runtime.GC()
	}
}

// hold waits until n of the budget is free (all of it, for n beyond the
// budget) or ctx ends, and returns the function that gives it back.
func (b *budget) hold(ctx context.Context, n int64) (release func(), err error) {
	n = min(max(n, 1), b.size)
	if err := b.sem.Acquire(ctx, n); err != nil {
		return nil, err
	}
	b.mu.Lock()
	b.held++
	b.mu.Unlock()
	var once sync.Once
	return func() {
		once.Do(func() {
			b.sem.Release(n)
			b.mu.Lock()
			defer b.mu.Unlock()
			b.held--
			b.handBack = b.handBack || b.held == 0
			if !b.collecting {
				b.collecting = true
				// A forced collection takes a while on a large heap; the
				// request that ended the work does not wait for it.
				go b.collectGarbage()
			}
		})
	}, nil
}

// collectGarbage collects until no hand-back is owed.
func (b *budget) collectGarbage() {
	b.mu.Lock()
	defer b.mu.Unlock()
	for first := true; first || b.handBack; first = false {
		idle := b.handBack
		b.handBack = false
		b.mu.Unlock()
		b.collect(idle)
		b.mu.Lock()
	}
	b.collecting = false
}
