package leaderboard

import (
	"time"
)

// DefaultSummaryRefresh is the least time between two refreshes of one
// board's summary: its aggregate queries pass over the whole board, and
// verdicts may arrive every few seconds.
const DefaultSummaryRefresh = 30 * time.Second

type summaryKey struct {
	benchmark  string
	unverified bool
}

type summarySlot struct {
	sum        *Summary
	at         time.Time // when sum was computed
	stale      bool      // a change came after it was computed
	refreshing bool
}

// Summary returns the board's summary (the charts' data) as of its last
// refresh, and when that was. The first request for a board computes it;
// after a change (Invalidate) the next request still gets the stale one at
// once and starts one refresh in the background, at most one per
// SummaryRefresh, so that no page waits for an aggregate over a million
// rows. A finished refresh drops the pages rendered from the old one.
func (c *Cache) Summary(benchmarkID string, unverified bool, compute func() (*Summary, error)) (*Summary, time.Time, error) {
	key := summaryKey{benchmarkID, unverified}
	c.mu.Lock()
	slot, ok := c.summaries[key]
	if !ok {
		c.mu.Unlock()
		sum, err := compute()
		if err != nil {
			return nil, time.Time{}, err
		}
		now := time.Now()
		c.mu.Lock()
		if cur, ok := c.summaries[key]; !ok || cur.at.Before(now) {
			c.summaries[key] = &summarySlot{sum: sum, at: now}
		}
		c.mu.Unlock()
		return sum, now, nil
	}
	sum, at := slot.sum, slot.at
	if slot.stale && !slot.refreshing && time.Since(slot.at) >= c.summaryRefresh {
		slot.refreshing, slot.stale = true, false
		go c.refreshSummary(key, slot, compute)
	}
	c.mu.Unlock()
	return sum, at, nil
}

func (c *Cache) refreshSummary(key summaryKey, slot *summarySlot, compute func() (*Summary, error)) {
	sum, err := compute()
	c.mu.Lock()
	slot.refreshing = false
	if err != nil {
		slot.stale = true // tried again by a later request
		c.mu.Unlock()
		return
	}
	slot.sum, slot.at = sum, time.Now()
	for k, p := range c.pages {
		if k.benchmark == key.benchmark {
			c.dropPage(k, p)
		}
	}
	c.mu.Unlock()
}

// SetSummaryRefresh sets the least time between two refreshes of a
// board's summary (tests set 0).
func (c *Cache) SetSummaryRefresh(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.summaryRefresh = d
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
