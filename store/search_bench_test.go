package store

import (
	"context"
	"os"
	"testing"

	d5list "github.com/deep500/d5list"
	"github.com/deep500/d5list/leaderboard"
)

// BenchmarkSearch searches a board of synthetic submissions over 1,000
// systems (100,000 seeded here, or the data folder of `d5list admin
// seed-synthetic` that D5LIST_BENCH_DATA names): one system's name, a
// part of ten systems' names, an accelerator, and the submitter of
// every system. Each text is searched across the list (Search, the first
// 10 entries of each board) and, as the baseline BENCHMARKS.md divides
// by, with the board's own search (BoardPage with Options.Search, a
// window over each system's best row).
func BenchmarkSearch(b *testing.B) {
	ctx := context.Background()
	dir := os.Getenv("D5LIST_BENCH_DATA")
	seed := dir == ""
	if seed {
		dir = b.TempDir()
	}
	db, err := Open(ctx, dir)
	if err != nil {
		b.Fatal(err)
	}
	defer db.Close()
	benchID := "l2-digits-mlp-cpu"
	if seed {
		bench := testBenchmark(benchID, nil)
		if err := db.UpsertBenchmarks(ctx, []d5list.Benchmark{bench}); err != nil {
			b.Fatal(err)
		}
		if err := db.InsertSynthetic(ctx, leaderboard.Synthetic(&bench, 100_000, 1000, SyntheticSubmitter, 1)); err != nil {
			b.Fatal(err)
		}
	}
	for _, text := range []string{"synthetic-system-00042", "system-0004", "nvidia h100", "seed-synthetic"} {
		b.Run("list/"+text, func(b *testing.B) {
			for b.Loop() {
				if found, _, err := db.Search(ctx, text, 10); err != nil || len(found) == 0 {
					b.Fatalf("%+v %v", found, err)
				}
			}
		})
		b.Run("board/"+text, func(b *testing.B) {
			for b.Loop() {
				if entries, _, err := db.BoardPage(ctx, benchID, leaderboard.Options{Search: text}, 0, 10); err != nil || len(entries) == 0 {
					b.Fatalf("%d entries: %v", len(entries), err)
				}
			}
		})
	}
}
