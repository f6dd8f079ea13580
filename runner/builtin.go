package runner

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"runtime"

	d5list "github.com/deep500/d5list"
	"github.com/deep500/d5list/workloads"
)

// Builtin runs the portal's own CPU reference workloads in process. It
// executes no competitor code: the recipe only selects hyperparameters.
type Builtin struct{}

// Execute runs every seed of the spec in order, the fresh ones last.
func (Builtin) Execute(ctx context.Context, spec d5list.JobSpec) ([]d5list.RunLog, error) {
	work, ok := workloads.Lookup(spec.Benchmark.Workload)
	if !ok {
		return nil, fmt.Errorf("benchmark %s: no builtin workload %q", spec.Benchmark.ID, spec.Benchmark.Workload)
	}
	runs := spec.Runs()
	logs := make([]d5list.RunLog, 0, len(runs))
	onLine := LinesFrom(ctx)
	for _, r := range runs {
		i, seed := r.Index, r.Seed
		var buf bytes.Buffer
		var w io.Writer = &buf
		var lines *lineWriter
		if onLine != nil {
			// Each MLLOG event goes out as live progress as it is written.
			lines = &lineWriter{w: &buf, run: i, stream: d5list.StreamMLLOG, onLine: onLine}
			w = lines
		}
		// A workload with helper processes measures what foreign work cost
		// them; the coordinating thread's own wait is mostly for its
		// helpers, a part of the workload that no correction may take off.
		foreign, helpers := 0.0, false
		runCtx := workloads.WithForeignDelay(ctx, func(share float64) { foreign, helpers = share, true })
		clock, err := timedRun(func() error { return work(runCtx, &spec.Benchmark, &spec.Recipe, seed, w) })
		if helpers && clock != nil {
			clock.WaitS = foreign * clock.WallS
		}
		if lines != nil {
			lines.flush()
		}
		if err != nil {
			return nil, fmt.Errorf("run %d (seed %d): %w", i, seed, err)
		}
		logs = append(logs, d5list.RunLog{Index: i, Seed: seed, Fresh: r.Fresh, Log: buf.Bytes(), Clock: clock})
	}
	return logs, nil
}

// timedRun runs one builtin run on a thread of its own, so that the
// thread's CPU time and run-queue wait are the run's.
func timedRun(run func() error) (*d5list.RunClock, error) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	clock := startThreadClock()
	err := run()
	return clock.stop(), err
}
