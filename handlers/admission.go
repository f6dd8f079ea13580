package handlers

import (
	"context"
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
// When the last holder leaves, the memory the work held is handed back to
// the system: Go keeps freed heap for reuse and returns it only slowly, so
// that after a burst the portal otherwise stays at its peak for minutes.
type budget struct {
	size  int64
	sem   *semaphore.Weighted
	mu    sync.Mutex
	held  int
	freer atomic.Bool // a hand-back is under way
	// giveBack returns freed memory to the system; tests count calls.
	giveBack func()
}

func newBudget(size int64) *budget {
	return &budget{size: size, sem: semaphore.NewWeighted(size), giveBack: debug.FreeOSMemory}
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
			b.held--
			idle := b.held == 0
			b.mu.Unlock()
			if idle && b.freer.CompareAndSwap(false, true) {
				// A forced collection takes a while on a large heap; the
				// request that ended the burst does not wait for it.
				go func() {
					defer b.freer.Store(false)
					b.giveBack()
				}()
			}
		})
	}, nil
}
