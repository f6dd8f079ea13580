package leaderboard

import (
	"errors"
	"sync/atomic"
	"testing"
	"time"
)

// A small board's summary is made again after each change before the page
// is rendered; a large one's (whose making takes longer than a request
// waits) is served as kept while the new one is made behind it; a first
// summary slower than the wait leaves the page without one; a failed one
// is tried again.
func TestSummaryCache(t *testing.T) {
	c := NewCache()
	c.SetSummaryTimes(time.Hour, time.Second)
	var calls atomic.Int64
	quick := func() (*Summary, error) { return &Summary{Total: int(calls.Add(1))}, nil }
	if sum, at, err := c.Summary("small", false, quick); err != nil || sum == nil || sum.Total != 1 || at.IsZero() {
		t.Fatalf("first: %+v %v %v, want the first computation", sum, at, err)
	}
	if sum, _, _ := c.Summary("small", false, quick); sum.Total != 1 || calls.Load() != 1 {
		t.Fatalf("a kept summary was made again: %d calls", calls.Load())
	}
	c.Invalidate("small")
	time.Sleep(10 * time.Millisecond) // twenty times its cost, a few microseconds
	if sum, _, _ := c.Summary("small", false, quick); sum.Total != 2 {
		t.Fatalf("a small board after a change: summary %d, want the new one (2)", sum.Total)
	}

	c.SetSummaryTimes(0, 20*time.Millisecond)
	var made atomic.Int64
	slow := func() (*Summary, error) {
		time.Sleep(60 * time.Millisecond)
		return &Summary{Total: int(made.Add(1))}, nil
	}
	if sum, _, _ := c.Summary("large", false, slow); sum != nil {
		t.Fatalf("a large board's first summary came within the wait: %+v", sum)
	}
	waitFor := func(want int) {
		t.Helper()
		for deadline := time.Now().Add(5 * time.Second); ; {
			if sum, _, _ := c.Summary("large", false, slow); sum != nil && sum.Total == want {
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("summary %d never arrived", want)
			}
			time.Sleep(5 * time.Millisecond)
		}
	}
	waitFor(1)
	c.Invalidate("large")
	start := time.Now()
	if sum, _, _ := c.Summary("large", false, slow); sum.Total != 1 || time.Since(start) > 40*time.Millisecond {
		t.Fatalf("a large board after a change: summary %d after %s, want the kept one (1) at once", sum.Total, time.Since(start))
	}
	waitFor(2)

	c.SetSummaryTimes(0, time.Second)
	boom := errors.New("boom")
	if _, _, err := c.Summary("bad", false, func() (*Summary, error) { return nil, boom }); !errors.Is(err, boom) {
		t.Fatalf("a failed first summary: %v, want its error", err)
	}
	if sum, _, err := c.Summary("bad", false, quick); err != nil || sum == nil {
		t.Fatalf("after a failure: %+v %v, want a new computation", sum, err)
	}
}
