package leaderboard

import (
	"math"
	"sort"

	d5list "github.com/deep500/d5list"
)

// MarkChanges sets each entry's PrevRank from prev, the same board in the
// previous edition, and marks entries whose system was not listed there as
// New. Systems are matched as one row per system matches them (submitter
// and system name, ignoring case), so a system that improved with a new
// submission keeps its history.
func MarkChanges(cur, prev []d5list.Entry) {
	mark := ChangeMarker(prev)
	for i := range cur {
		mark(&cur[i])
	}
}

// ChangeMarker is MarkChanges for one entry at a time, for a board read
// as a stream.
func ChangeMarker(prev []d5list.Entry) func(*d5list.Entry) {
	before := make(map[string]int, len(prev))
	for _, e := range prev {
		k := SystemKey(e.Submitter, e.SystemName)
		if _, ok := before[k]; !ok {
			before[k] = e.Rank
		}
	}
	return func(e *d5list.Entry) {
		e.PrevRank = before[SystemKey(e.Submitter, e.SystemName)]
		e.New = e.PrevRank == 0
	}
}

// DevelopmentPoint is one edition's summary of a board, as in Top500's
// performance development chart: the best entry, the 10th and the median.
// Has10th and HasMedian are false when the board had too few entries.
type DevelopmentPoint struct {
	Edition string  `json:"edition"`
	Entries int     `json:"entries"`
	Best    float64 `json:"best"`
	Tenth   float64 `json:"tenth"`
	Median  float64 `json:"median"`
	Has10th bool    `json:"has_10th"`
}

// Development summarises one benchmark's board across editions, oldest
// first. Boards without entries are skipped: they have nothing to plot.
func Development(names []string, boards [][]d5list.Entry) []DevelopmentPoint {
	out := []DevelopmentPoint{}
	for i, b := range boards {
		if len(b) == 0 {
			continue
		}
		vals := make([]float64, len(b))
		for j, e := range b {
			vals[j] = e.Value
		}
		// The entries are in rank order, so the median of the values is
		// the median entry's value whichever way the metric points.
		sorted := append([]float64(nil), vals...)
		sort.Float64s(sorted)
		p := DevelopmentPoint{Edition: names[i], Entries: len(b), Best: vals[0], Median: median(sorted)}
		if len(vals) >= 10 {
			p.Tenth, p.Has10th = vals[9], true
		}
		out = append(out, p)
	}
	return out
}

func median(sorted []float64) float64 {
	n := len(sorted)
	if n == 0 {
		return math.NaN()
	}
	if n%2 == 1 {
		return sorted[n/2]
	}
	return (sorted[n/2-1] + sorted[n/2]) / 2
}
