package main

import (
	"context"
	"fmt"
	"io"
	"time"

	d5list "github.com/deep500/d5list"
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
	// The boards' best rows are elected once, at the end.
	if err := db.SyntheticOnly(ctx); err != nil {
		return fmt.Errorf("admin seed-synthetic: %w", err)
	}
	var loaded time.Duration
	err = db.WithoutIndexes(ctx, func() error {
		defer func() { loaded = time.Since(start) }()
		return seedChunks(ctx, db, bench, *n, *systems, *seed, 20_000)
	})
	if err != nil {
		return fmt.Errorf("admin seed-synthetic: %w", err)
	}
	indexed := time.Since(start)
	if err := db.ElectBoards(ctx, bench.ID); err != nil {
		return fmt.Errorf("admin seed-synthetic: %w", err)
	}
	took := time.Since(start)
	ms := func(d time.Duration) time.Duration { return d.Round(time.Millisecond) }
	fmt.Fprintf(stdout, "stored %d synthetic verified submissions to %s (%d systems) in %s (loading %s, indexing %s, electing the boards' best rows %s); submitter %q\n",
		*n, bench.ID, min(*systems, *n), ms(took), ms(loaded), ms(indexed-loaded), ms(took-indexed), store.SyntheticSubmitter)
	return nil
}

// seedChunks stores n synthetic submissions a chunk at a time, so that a
// million never sit in memory together, generating and encoding the next
// chunk while the writer stores this one, which would otherwise wait for
// each chunk's encoding.
func seedChunks(ctx context.Context, db *store.DB, bench *d5list.Benchmark, n, systems int, seed uint64, chunk int) error {
	first, err := db.NextSubmissionID(ctx)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	type encoded struct {
		batch *store.SyntheticBatch
		err   error
	}
	// One chunk encoded ahead: more would only hold memory, the writer
	// being the slower side.
	batches := make(chan encoded, 1)
	go func() {
		defer close(batches)
		for from := 0; from < n; from += chunk {
			subs := leaderboard.SyntheticRange(bench, from, min(from+chunk, n), systems, store.SyntheticSubmitter, seed)
			b, err := db.EncodeSynthetic(ctx, subs, first+int64(from))
			select {
			case batches <- encoded{b, err}:
			case <-ctx.Done():
				return
			}
			if err != nil {
				return
			}
		}
	}()
	for e := range batches {
		if e.err != nil {
			return e.err
		}
		if err := db.StoreSynthetic(ctx, e.batch); err != nil {
			return err
		}
	}
	return ctx.Err()
}
