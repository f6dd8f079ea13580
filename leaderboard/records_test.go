package leaderboard

import (
	"fmt"
	"testing"
	"time"

	d5list "github.com/deep500/d5list"
)

// A record is an entry better than every entry submitted before it, in
// the direction the benchmark ranks; equalling the record sets none, and
// the order of the given entries does not matter.
func TestRecords(t *testing.T) {
	at := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	entries := func(values ...float64) []d5list.Entry {
		var out []d5list.Entry
		for i, v := range values {
			// Given newest first: Records orders them by time itself.
			out = append([]d5list.Entry{{SubmissionID: int64(i + 1), Value: v, CreatedAt: at.Add(time.Duration(i) * time.Hour)}}, out...)
		}
		return out
	}
	ids := func(es []d5list.Entry) string {
		var out []int64
		for _, e := range es {
			out = append(out, e.SubmissionID)
		}
		return fmt.Sprint(out)
	}
	lower := &d5list.Benchmark{Ranking: d5list.RankingRule{Metric: d5list.MetricTimeToTrain, Direction: d5list.LowerIsBetter}}
	higher := &d5list.Benchmark{Ranking: d5list.RankingRule{Metric: d5list.MetricThroughput, Direction: d5list.HigherIsBetter}}
	for _, tc := range []struct {
		bench  *d5list.Benchmark
		values []float64
		want   string
	}{
		{lower, []float64{20, 25, 18, 18, 30, 12}, "[1 3 6]"},
		{higher, []float64{20, 25, 18, 25, 30, 12}, "[1 2 5]"},
		{lower, nil, "[]"},
	} {
		if got := ids(Records(tc.bench, entries(tc.values...))); got != tc.want {
			t.Errorf("%v (%s): records %s, want %s", tc.values, tc.bench.Ranking.Direction, got, tc.want)
		}
	}
	var falling []float64
	for i := range MaxRecords + 3 {
		falling = append(falling, float64(10000-i))
	}
	got := Records(lower, entries(falling...))
	if len(got) != MaxRecords || got[0].SubmissionID != 4 || got[len(got)-1].SubmissionID != MaxRecords+3 {
		t.Errorf("%d records from %d to %d, want the latest %d", len(got), got[0].SubmissionID, got[len(got)-1].SubmissionID, MaxRecords)
	}
}
