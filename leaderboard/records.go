package leaderboard

import (
	"cmp"
	"slices"

	d5list "github.com/deep500/d5list"
)

// MaxRecords bounds the records a board's summary keeps, the latest: a
// step line of 500 points is still read at a glance.
const MaxRecords = 500

// Records are the entries (of one view of bench's board, in any order)
// that each ranked better than every entry submitted before them: the
// state of the art over time, oldest first, at most MaxRecords of them,
// the latest kept. An entry that only equals the record sets none.
func Records(bench *d5list.Benchmark, entries []d5list.Entry) []d5list.Entry {
	dir := direction(bench.Ranking.Metric, bench.Ranking.Direction)
	byTime := slices.Clone(entries)
	slices.SortStableFunc(byTime, func(a, b d5list.Entry) int {
		return cmp.Or(a.CreatedAt.Compare(b.CreatedAt), cmp.Compare(a.SubmissionID, b.SubmissionID))
	})
	var out []d5list.Entry
	for _, e := range byTime {
		if len(out) == 0 || dir.Better(e.Value, out[len(out)-1].Value) {
			out = append(out, e)
		}
	}
	return out[max(0, len(out)-MaxRecords):]
}
