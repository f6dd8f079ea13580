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

// registry holds each builtin workload with its reading of a recipe, which
// the workload itself makes first, so that an upload can be refused for a
// recipe its re-run would refuse.
var registry = map[string]struct {
	run  Workload
	plan func(b *d5list.Benchmark, r *d5list.Recipe) (d5list.RecipePlan, error)
}{
	"digits-mlp":    {digitsMLP, readsRecipe(MLPConfigFromRecipe)},
	"digits-mlp-dp": {digitsMLPDataParallel, readsRecipe(DPConfigFromRecipe)},
	"gemm":          {gemmWorkload, opRecipe(gemmPlan)},
	"conv2d":        {conv2DWorkload, opRecipe(conv2DPlan)},
	"mlp-inference": {mlpInferenceWorkload, readsRecipe(InferenceConfigFromRecipe)},
}

// readsRecipe keeps only the error of a workload's reading of its recipe.
func readsRecipe[T any](read func(*d5list.Benchmark, *d5list.Recipe) (T, error)) func(*d5list.Benchmark, *d5list.Recipe) (d5list.RecipePlan, error) {
	return func(b *d5list.Benchmark, r *d5list.Recipe) (d5list.RecipePlan, error) {
		_, err := read(b, r)
		return d5list.RecipePlan{}, err
	}
}

// opRecipe keeps the shapes an operator workload will measure.
func opRecipe(read func(*d5list.Benchmark, *d5list.Recipe) (opPlan, error)) func(*d5list.Benchmark, *d5list.Recipe) (d5list.RecipePlan, error) {
	return func(b *d5list.Benchmark, r *d5list.Recipe) (d5list.RecipePlan, error) {
		p, err := read(b, r)
		return d5list.RecipePlan{Shapes: p.shapes}, err
	}
}

// Lookup returns the workload a benchmark's Workload field names.
func Lookup(name string) (Workload, bool) {
	w, ok := registry[name]
	return w.run, ok
}

// PlanRecipe reads a recipe the way the builtin workload of bench would
// before running it: what the run will measure, or the error it would stop
// with (an EINVALID naming the recipe field). A benchmark without a
// builtin workload (the bundle brings its code) has an empty plan.
func PlanRecipe(bench *d5list.Benchmark, r *d5list.Recipe) (d5list.RecipePlan, error) {
	w, ok := registry[bench.Workload]
	if !ok {
		return d5list.RecipePlan{}, nil
	}
	return w.plan(bench, r)
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
