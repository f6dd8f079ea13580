package runner

import (
	"bytes"
	"context"
	"fmt"

	d5list "github.com/deep500/d5list"
	"github.com/deep500/d5list/workloads"
)

// Builtin runs the portal's own CPU reference workloads in process. It
// executes no competitor code: the recipe only selects hyperparameters.
type Builtin struct{}

// Execute runs every seed of the spec in order.
func (Builtin) Execute(ctx context.Context, spec d5list.JobSpec) ([]d5list.RunLog, error) {
	work, ok := workloads.Lookup(spec.Benchmark.Workload)
	if !ok {
		return nil, fmt.Errorf("benchmark %s: no builtin workload %q", spec.Benchmark.ID, spec.Benchmark.Workload)
	}
	logs := make([]d5list.RunLog, 0, len(spec.Seeds))
	for i, seed := range spec.Seeds {
		var buf bytes.Buffer
		if err := work(ctx, &spec.Benchmark, &spec.Recipe, seed, &buf); err != nil {
			return nil, fmt.Errorf("run %d (seed %d): %w", i, seed, err)
		}
		logs = append(logs, d5list.RunLog{Index: i, Seed: seed, Log: buf.Bytes()})
	}
	return logs, nil
}
