package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"time"

	d5list "github.com/deep500/d5list"
	"github.com/deep500/d5list/portal"
	"github.com/deep500/d5list/store"
)

// syntheticChanges writes made-up changes to one board at a steady rate
// (serve --synthetic-changes), for the load measurements of BENCHMARKS.md.
type syntheticChanges struct {
	svc   *portal.Service
	bench *d5list.Benchmark
	every time.Duration
	kinds []string
	out   io.Writer
}

// newSyntheticChanges checks that the data folder holds synthetic
// submissions only, and the kinds and benchmark asked for.
func newSyntheticChanges(ctx context.Context, db *store.DB, svc *portal.Service, cfg serveConfig) (*syntheticChanges, error) {
	real, err := db.RealSubmissions(ctx)
	if err != nil {
		return nil, err
	}
	if real > 0 {
		return nil, fmt.Errorf("serve: --synthetic-changes: %s holds %d real submissions; made-up changes go into a data folder of synthetic ones only", cfg.DataDir, real)
	}
	for _, k := range cfg.SyntheticKinds {
		if !slices.Contains(portal.SyntheticChangeKinds, k) {
			return nil, fmt.Errorf("serve: --synthetic-kinds: %q is not a kind of change; use some of %v", k, portal.SyntheticChangeKinds)
		}
	}
	bench, err := db.Benchmark(ctx, cfg.SyntheticBenchmark)
	if err != nil {
		return nil, fmt.Errorf("serve: --synthetic-benchmark: %w", err)
	}
	out := cfg.SyntheticOut
	if out == nil {
		out = io.Discard
	}
	return &syntheticChanges{svc: svc, bench: bench, every: time.Duration(float64(time.Second) / cfg.SyntheticChanges),
		kinds: cfg.SyntheticKinds, out: out}, nil
}

// run writes a change each tick, the kinds in turn, until work is done,
// and tells out of each once written (committed, and the board's caches
// told): a line "synthetic change KIND UNIXNANO", by which a load
// measurement ties the answers that follow to the change.
func (c *syntheticChanges) run(work context.Context, log *slog.Logger) {
	t := time.NewTicker(c.every)
	defer t.Stop()
	for seq := 0; ; seq++ {
		select {
		case <-work.Done():
			return
		case <-t.C:
		}
		kind := c.kinds[seq%len(c.kinds)]
		// Not cancelled mid-way: a shutdown must not leave a change half
		// written (a lease without its verdict).
		if err := c.svc.SyntheticChange(context.WithoutCancel(work), c.bench, kind, seq); err != nil {
			log.Error("synthetic change", "kind", kind, "err", err)
			continue
		}
		fmt.Fprintf(c.out, "synthetic change %s %d\n", kind, time.Now().UnixNano())
	}
}
