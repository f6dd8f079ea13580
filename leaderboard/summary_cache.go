package leaderboard

import (
	"time"
)

// DefaultSummaryRefresh bounds the time between two refreshes of one
// board's summary after changes: its aggregate queries pass over the
// whole board (seconds at a million entries), and verdicts may arrive
// every few seconds.
const DefaultSummaryRefresh = 30 * time.Second

// DefaultSummaryWait is how long a request waits for a summary being
// made: a small board's is made by then, so its page shows charts that
// are up to date; a board of a million entries renders its page with the
// summary it has (or none yet) rather than wait seconds.
const DefaultSummaryWait = 2 * time.Second

// refreshCostFactor: after a change a summary is made again once this many
// times its own cost has passed since the last one (within
// DefaultSummaryRefresh), so that refreshing takes at most about a
// twentieth of a core however large the board.
const refreshCostFactor = 20

type summaryKey struct {
	benchmark  string
	unverified bool
}

type summarySlot struct {
	sum   *Summary
	at    time.Time     // when sum was made
	took  time.Duration // what making it cost
	err   error         // of the last computation
	stale bool          // a change came after sum was made
	// running is closed when the computation under way ends; nil when
	// none runs.
	running chan struct{}
}

// Summary returns the board's summary (the charts' data) and when it was
// made; nil while the first one is still being made. After a change
// (Invalidate) a request starts one new computation, at most one per
// refreshCostFactor times the last one's cost (and within SummaryRefresh),
// and waits for it only where the last one took less than the wait: a
// small board's page is up to date, a large one's shows the kept summary
// at once. A finished computation drops the pages rendered before it.
func (c *Cache) Summary(benchmarkID string, unverified bool, compute func() (*Summary, error)) (*Summary, time.Time, error) {
	key := summaryKey{benchmarkID, unverified}
	c.mu.Lock()
	slot, ok := c.summaries[key]
	if !ok {
		slot = &summarySlot{stale: true}
		c.summaries[key] = slot
	}
	if slot.stale && slot.running == nil && time.Since(slot.at) >= min(c.summaryRefresh, refreshCostFactor*slot.took) {
		slot.stale, slot.running = false, make(chan struct{})
		go c.makeSummary(key, slot, compute)
	}
	running, wait := slot.running, c.summaryWait
	if slot.sum != nil && slot.took >= wait {
		wait = 0 // a large board: the kept summary now, the new one later
	}
	c.mu.Unlock()
	if running != nil && wait > 0 {
		timer := time.NewTimer(wait)
		select {
		case <-running:
		case <-timer.C:
		}
		timer.Stop()
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if slot.sum == nil && slot.err != nil && slot.running == nil {
		// The first computation failed: the next request tries again.
		err := slot.err
		delete(c.summaries, key)
		return nil, time.Time{}, err
	}
	return slot.sum, slot.at, nil
}

func (c *Cache) makeSummary(key summaryKey, slot *summarySlot, compute func() (*Summary, error)) {
	start := time.Now()
	sum, err := compute()
	c.mu.Lock()
	defer c.mu.Unlock()
	close(slot.running)
	slot.running = nil
	if err != nil {
		slot.err, slot.stale = err, true // tried again by a later request
		return
	}
	slot.sum, slot.at, slot.took, slot.err = sum, time.Now(), time.Since(start), nil
	// Pages rendered from the old summary, kept or still rendering, go.
	c.gens[key.benchmark]++
	for k, p := range c.pages {
		if k.benchmark == key.benchmark {
			c.dropPage(k, p)
		}
	}
}

// SetSummaryTimes sets the longest time between two refreshes of a
// board's summary after changes and how long a request waits for one.
func (c *Cache) SetSummaryTimes(refresh, wait time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.summaryRefresh, c.summaryWait = refresh, wait
}

// staleSummaries marks the summaries of benchmarkID ("" for all) as
// changed; c.mu is held.
func (c *Cache) staleSummaries(benchmarkID string) {
	for k, s := range c.summaries {
		if benchmarkID == "" || k.benchmark == benchmarkID {
			s.stale = true
		}
	}
}
