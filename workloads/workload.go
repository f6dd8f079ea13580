package workloads

import (
	"context"
	"io"
	"sort"

	d5list "github.com/deep500/d5list"
	"github.com/deep500/d5list/mllog"
)

// Workload runs one seed of benchmark b with recipe r and writes that run's
// MLLOG to out.
type Workload func(ctx context.Context, b *d5list.Benchmark, r *d5list.Recipe, seed int64, out io.Writer) error

var registry = map[string]Workload{
	"digits-mlp":    digitsMLP,
	"digits-mlp-dp": digitsMLPDataParallel,
	"gemm":          gemmWorkload,
	"conv2d":        conv2DWorkload,
	"mlp-inference": mlpInferenceWorkload,
}

// Lookup returns the workload a benchmark's Workload field names.
func Lookup(name string) (Workload, bool) {
	w, ok := registry[name]
	return w, ok
}

// Names lists the registered workloads.
func Names() []string {
	names := make([]string, 0, len(registry))
	for n := range registry {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

func digitsMLP(ctx context.Context, b *d5list.Benchmark, r *d5list.Recipe, seed int64, out io.Writer) error {
	cfg, err := MLPConfigFromRecipe(b, r)
	if err != nil {
		return err
	}
	_, err = TrainMLP(ctx, cfg, seed, mllog.NewWriter(out, nil))
	return err
}
