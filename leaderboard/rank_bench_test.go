package leaderboard

import (
	"math/rand/v2"
	"sort"
	"testing"
	"time"

	d5list "github.com/deep500/d5list"
)

const benchSubs = 100_000

func benchSubmissions() []d5list.Submission {
	rng := rand.New(rand.NewPCG(1, 2))
	subs := make([]d5list.Submission, benchSubs)
	for i := range subs {
		res := &d5list.Result{}
		for r := range 5 {
			res.Runs = append(res.Runs, d5list.RunMetrics{Index: r, Converged: true, TimeToTrain: 10 + 100*rng.Float64(), FinalAccuracy: 0.97})
		}
		subs[i] = d5list.Submission{ID: int64(i + 1), BenchmarkID: "l2-digits-mlp-cpu", Status: d5list.StatusVerified,
			Submitter: "lab", SystemName: "sys-" + string(rune('a'+i%26)) + time.Duration(i).String(), Claimed: res,
			CreatedAt: time.Unix(int64(i), 0)}
	}
	return subs
}

// BenchmarkRank100k ranks 100,000 verified submissions (5 runs each); its
// ns/op over BenchmarkSortFloat64s100k's is the ratio in BENCHMARKS.md.
func BenchmarkRank100k(b *testing.B) {
	subs, bench := benchSubmissions(), testBench()
	b.ResetTimer()
	for b.Loop() {
		if len(Rank(bench, subs, Options{})) != benchSubs {
			b.Fatal("entries lost")
		}
	}
}

// BenchmarkSortFloat64s100k is the floor: sorting as many bare numbers.
func BenchmarkSortFloat64s100k(b *testing.B) {
	rng := rand.New(rand.NewPCG(1, 2))
	vals := make([]float64, benchSubs)
	for i := range vals {
		vals[i] = rng.Float64()
	}
	work := make([]float64, benchSubs)
	b.ResetTimer()
	for b.Loop() {
		copy(work, vals)
		sort.Float64s(work)
	}
}

// BenchmarkScore100k is the part of ranking done once per change of the
// board: scoring and sorting 100,000 submissions.
func BenchmarkScore100k(b *testing.B) {
	subs, bench := benchSubmissions(), testBench()
	for b.Loop() {
		if Score(bench, subs).Len() != benchSubs {
			b.Fatal("entries lost")
		}
	}
}

// BenchmarkBoardFromScored100k is each board after that: the default
// view (one row per system) made from the scored list.
func BenchmarkBoardFromScored100k(b *testing.B) {
	subs, bench := benchSubmissions(), testBench()
	scored := Score(bench, subs)
	for b.Loop() {
		if len(scored.Rank(Options{})) != benchSubs {
			b.Fatal("entries lost")
		}
	}
}
