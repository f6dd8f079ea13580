package main

import (
	"context"
	"fmt"
	"io"
	"time"

	"github.com/deep500/d5list/catalog"
	"github.com/deep500/d5list/leaderboard"
	"github.com/deep500/d5list/store"
)

// adminSeedSynthetic fills a data folder of its own with made-up verified
// submissions, for the leaderboard measurements of BENCHMARKS.md. Every
// one is labelled synthetic (submitter and reason); the store refuses a
// folder that holds real submissions.
func adminSeedSynthetic(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlags("admin seed-synthetic", stderr)
	data := fs.String("data", "", "data folder to fill (a new one; not a portal's real data)")
	n := fs.Int("submissions", 100_000, "how many submissions")
	benchID := fs.String("benchmark", "l2-digits-mlp-cpu", "the catalogue benchmark they are for")
	systems := fs.Int("systems", 1000, "distinct systems they are spread over (rows of the default board)")
	seed := fs.Uint64("seed", 1, "random seed; the same seed gives the same submissions")
	if err := fs.Parse(args); err != nil {
		return err
	}
	switch {
	case *data == "":
		return fmt.Errorf("admin seed-synthetic: --data is required (a folder of its own, not a portal's real data)")
	case *n < 1 || *n > 10_000_000:
		return fmt.Errorf("admin seed-synthetic: --submissions %d: want 1 to 10000000", *n)
	case *systems < 1:
		return fmt.Errorf("admin seed-synthetic: --systems %d: want at least 1", *systems)
	}
	benches, err := catalog.Benchmarks()
	if err != nil {
		return err
	}
	db, err := store.Open(ctx, *data)
	if err != nil {
		return err
	}
	defer db.Close()
	if err := db.UpsertBenchmarks(ctx, benches); err != nil {
		return err
	}
	bench, err := db.Benchmark(ctx, *benchID)
	if err != nil {
		return fmt.Errorf("admin seed-synthetic: --benchmark: %w", err)
	}
	start := time.Now()
	// A chunk at a time, so that a million submissions never sit in
	// memory together; the boards' best rows are elected once at the end.
	if err := db.SyntheticOnly(ctx); err != nil {
		return fmt.Errorf("admin seed-synthetic: %w", err)
	}
	const chunk = 20_000
	err = db.WithoutIndexes(ctx, func() error {
		for from := 0; from < *n; from += chunk {
			subs := leaderboard.SyntheticRange(bench, from, min(from+chunk, *n), *systems, store.SyntheticSubmitter, *seed)
			if _, err := db.AppendSynthetic(ctx, subs); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("admin seed-synthetic: %w", err)
	}
	if err := db.ElectBoards(ctx, bench.ID); err != nil {
		return fmt.Errorf("admin seed-synthetic: %w", err)
	}
	fmt.Fprintf(stdout, "stored %d synthetic verified submissions to %s (%d systems) in %s; submitter %q\n",
		*n, bench.ID, min(*systems, *n), time.Since(start).Round(time.Millisecond), store.SyntheticSubmitter)
	return nil
}
