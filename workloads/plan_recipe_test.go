package workloads_test

import (
	"maps"
	"strings"
	"testing"

	d5list "github.com/deep500/d5list"
	"github.com/deep500/d5list/catalog"
	"github.com/deep500/d5list/mllog"
	"github.com/deep500/d5list/workloads"
)

// CheckRecipe reads a recipe as the builtin workload's run would: every
// catalogue starter recipe passes, and a value the run would stop on fails
// naming its field, without running anything.
func TestPlanRecipe(t *testing.T) {
	benches, err := catalog.Benchmarks()
	if err != nil {
		t.Fatal(err)
	}
	byID := map[string]*d5list.Benchmark{}
	for i := range benches {
		b := &benches[i]
		byID[b.ID] = b
		if _, ok := workloads.Lookup(b.Workload); !ok {
			continue
		}
		plan, err := workloads.PlanRecipe(b, &d5list.Recipe{Fixed: b.Division.Fixed, Mutable: b.Division.Mutable})
		if err != nil {
			t.Errorf("%s: the starter recipe is refused: %v", b.ID, err)
		}
		if (b.Level == 0) != (len(plan.Shapes) > 0) {
			t.Errorf("%s (level %d): planned shapes %v", b.ID, b.Level, plan.Shapes)
		}
	}
	for _, c := range []struct {
		bench, key string
		value      any
		field      string
	}{
		{"l2-digits-mlp-cpu", "batch_size", 0, "mutable.batch_size"},
		{"l2-digits-mlp-cpu", "optimizer", "adamw-9000", "mutable.optimizer"},
		{"l0-gemm-cpu", "repeats", -3, "mutable.repeats"},
		{"l0-conv2d-cpu", "repeats", "five", "mutable.repeats"},
		{"l1-mlp-inference-cpu", "batch_size", -1, "mutable.batch_size"},
		{"l3-digits-mlp-dp-cpu", "batch_size", 0, "mutable.batch_size"},
	} {
		b := byID[c.bench]
		if b == nil {
			t.Fatalf("no %s in the catalogue", c.bench)
		}
		mutable := maps.Clone(b.Division.Mutable)
		mutable[c.key] = c.value
		_, err := workloads.PlanRecipe(b, &d5list.Recipe{Fixed: b.Division.Fixed, Mutable: mutable})
		if d5list.ErrorCode(err) != d5list.EINVALID || !strings.Contains(err.Error(), c.field) {
			t.Errorf("%s with %s = %v: %v, want an EINVALID naming %s", c.bench, c.key, c.value, err, c.field)
		}
	}
	// A benchmark whose code comes with the bundle has no builtin reading.
	if plan, err := workloads.PlanRecipe(&d5list.Benchmark{ID: "gpu", Workload: ""}, &d5list.Recipe{Mutable: map[string]any{"repeats": -3}}); err != nil || len(plan.Shapes) != 0 {
		t.Errorf("a benchmark without a builtin workload: %+v, %v", plan, err)
	}
	// The planned shapes are the ones a run logs, in its order.
	gemm := byID["l0-gemm-cpu"]
	plan, err := workloads.PlanRecipe(gemm, &d5list.Recipe{Fixed: gemm.Division.Fixed, Mutable: gemm.Division.Mutable})
	if err != nil {
		t.Fatal(err)
	}
	var log strings.Builder
	work, _ := workloads.Lookup(gemm.Workload)
	if err := work(t.Context(), gemm, &d5list.Recipe{Fixed: gemm.Division.Fixed, Mutable: map[string]any{"repeats": 1}}, 1, &log); err != nil {
		t.Fatal(err)
	}
	events, err := mllog.Parse(strings.NewReader(log.String()), "run")
	if err != nil {
		t.Fatal(err)
	}
	var logged []string
	for _, e := range events {
		if e.Key == d5list.MetricOpTime {
			logged = append(logged, e.Meta("shape").(string))
		}
	}
	if strings.Join(logged, " ") != strings.Join(plan.Shapes, " ") {
		t.Errorf("planned shapes %v, logged %v", plan.Shapes, logged)
	}
}
