package handlers

import (
	"context"
	"runtime"
	"runtime/debug"
	"sync"
	"sync/atomic"

	"golang.org/x/sync/semaphore"
)

// budget admits costly work by what each piece may hold at most (bytes of
// memory, or a count of same-sized pieces), so that many requests at once
// cost the portal a bounded amount whatever they are. Work waits, first
// come first served, for its share.
//
// What a piece held is garbage once it ends, and the collector would let
// garbage grow to as much again as what is live before it collects: each
// piece's garbage is collected before its share is given back, so that the
// piece let in next reuses that memory rather than adding to it. When the
// last holder leaves, the memory is also handed back to the system: Go
// returns freed heap only slowly, so that after a burst the portal
// otherwise stays at its peak for minutes.
type budget struct {
	size int64
	sem  *semaphore.Weighted
	mu   sync.Mutex
	held int
	// handingBack says a hand-back is under way.
	handingBack atomic.Bool
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
			b.collect(false)
			b.sem.Release(n)
			b.mu.Lock()
			b.held--
			idle := b.held == 0
			b.mu.Unlock()
			if idle && b.handingBack.CompareAndSwap(false, true) {
				// Returning every free page takes a while on a large
				// heap; the request that ended the burst does not wait.
				go func() {
					defer b.handingBack.Store(false)
					b.collect(true)
				}()
			}
		})
	}, nil
}
