package leaderboard

import (
	"errors"
	"sync"
	"sync/atomic"
	"testing"

	d5list "github.com/deep500/d5list"
)

func board(ids ...int64) []d5list.Entry {
	var es []d5list.Entry
	for i, id := range ids {
		es = append(es, d5list.Entry{Rank: i + 1, SubmissionID: id})
	}
	return es
}

func TestCacheHitsMissesAndInvalidation(t *testing.T) {
	c := NewCache()
	calls := map[string]int{}
	get := func(bench string, opt Options, ids ...int64) []d5list.Entry {
		t.Helper()
		es, err := c.Get(bench, opt, func() ([]d5list.Entry, error) {
			calls[bench]++
			return board(ids...), nil
		})
		if err != nil {
			t.Fatal(err)
		}
		return es
	}
	get("a", Options{}, 1, 2)
	if es := get("a", Options{}, 9); es[0].SubmissionID != 1 || calls["a"] != 1 {
		t.Fatalf("second Get recomputed (calls %d) or returned %v", calls["a"], es)
	}
	// Options that select the same board share it.
	get("a", Options{Division: "Closed "}, 3)
	get("a", Options{Division: "closed"}, 4)
	if calls["a"] != 2 {
		t.Errorf("normalised options not shared: %d computations", calls["a"])
	}
	get("b", Options{}, 5)
	if c.Len() != 3 {
		t.Fatalf("Len %d, want 3", c.Len())
	}
	// A caller editing its copy leaves the cache alone.
	es := get("a", Options{})
	es[0].SubmissionID = 42
	if again := get("a", Options{}); again[0].SubmissionID != 1 {
		t.Errorf("cached board changed through a returned slice: %v", again)
	}

	c.Invalidate("a")
	if c.Len() != 1 {
		t.Fatalf("after Invalidate(a) Len %d, want 1 (b's board)", c.Len())
	}
	if es := get("a", Options{}, 7); es[0].SubmissionID != 7 || calls["a"] != 3 {
		t.Errorf("after Invalidate: %v, %d computations", es, calls["a"])
	}
	get("b", Options{}, 8)
	if calls["b"] != 1 {
		t.Errorf("Invalidate(a) dropped b's board")
	}
	c.InvalidateAll()
	if c.Len() != 0 {
		t.Fatalf("after InvalidateAll Len %d", c.Len())
	}
	get("b", Options{}, 8)
	if calls["b"] != 2 {
		t.Errorf("InvalidateAll kept b's board")
	}
}

func TestCacheDoesNotKeepErrors(t *testing.T) {
	c := NewCache()
	boom := errors.New("store down")
	if _, err := c.Get("a", Options{}, func() ([]d5list.Entry, error) { return nil, boom }); !errors.Is(err, boom) {
		t.Fatalf("err %v", err)
	}
	es, err := c.Get("a", Options{}, func() ([]d5list.Entry, error) { return board(1), nil })
	if err != nil || len(es) != 1 {
		t.Fatalf("after an error: %v %v", es, err)
	}
}

// A verdict that changes while a board is being computed must not leave the
// board computed from the old data in the cache.
func TestCacheInvalidateDuringCompute(t *testing.T) {
	for _, all := range []bool{false, true} {
		c := NewCache()
		started, release := make(chan struct{}), make(chan struct{})
		done := make(chan []d5list.Entry)
		go func() {
			es, _ := c.Get("a", Options{}, func() ([]d5list.Entry, error) {
				close(started)
				<-release
				return board(1), nil
			})
			done <- es
		}()
		<-started
		if all {
			c.InvalidateAll()
		} else {
			c.Invalidate("a")
		}
		close(release)
		if es := <-done; len(es) != 1 {
			t.Fatalf("the computing caller still gets its board, got %v", es)
		}
		if c.Len() != 0 {
			t.Errorf("all=%v: stale board kept", all)
		}
		es, _ := c.Get("a", Options{}, func() ([]d5list.Entry, error) { return board(2), nil })
		if es[0].SubmissionID != 2 {
			t.Errorf("all=%v: got the stale board %v", all, es)
		}
	}
}

func TestCacheConcurrentGetsComputeOnce(t *testing.T) {
	c := NewCache()
	var computations atomic.Int32
	release := make(chan struct{})
	compute := func() ([]d5list.Entry, error) {
		computations.Add(1)
		<-release
		return board(1, 2, 3), nil
	}
	const callers = 16
	var wg sync.WaitGroup
	results := make([][]d5list.Entry, callers)
	first := make(chan struct{})
	wg.Add(1)
	go func() {
		defer wg.Done()
		close(first)
		results[0], _ = c.Get("a", Options{}, compute)
	}()
	<-first
	for i := 1; i < callers; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			results[i], _ = c.Get("a", Options{}, compute)
		}()
	}
	// Concurrent invalidations of another benchmark must not interfere.
	for range 100 {
		c.Invalidate("b")
	}
	close(release)
	wg.Wait()
	// Registering the flight and caching its board happen under one lock,
	// so every caller either joined the one flight or hit the cache.
	if n := computations.Load(); n != 1 {
		t.Fatalf("computations %d, want 1", n)
	}
	for i, r := range results {
		if len(r) != 3 || r[2].SubmissionID != 3 {
			t.Errorf("caller %d got %v", i, r)
		}
	}
	before := computations.Load()
	c.Get("a", Options{}, compute)
	if computations.Load() != before {
		t.Error("a cached board was recomputed")
	}
}

func TestCachePanickingComputeReleasesWaiters(t *testing.T) {
	c := NewCache()
	func() {
		defer func() { _ = recover() }()
		c.Get("a", Options{}, func() ([]d5list.Entry, error) { panic("bug") })
	}()
	if c.Len() != 0 {
		t.Fatal("a panicking computation was cached")
	}
	es, err := c.Get("a", Options{}, func() ([]d5list.Entry, error) { return board(1), nil })
	if err != nil || len(es) != 1 {
		t.Fatalf("after a panic: %v %v", es, err)
	}
}
