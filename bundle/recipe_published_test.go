package bundle

import (
	"os"
	"path/filepath"
	"reflect"
	"testing"

	d5list "github.com/deep500/d5list"
)

// deep500Recipes holds the recipes Deep500 publishes, as published.
const deep500Recipes = "../../shared/peer-data/deep500-recipes/"

// TestPublishedDeep500Recipes reads both recipes Deep500 ships, with the
// parts a fixture would leave out: a helper function between FIXED and
// MUTABLE, an import between sections, an annotated parameter, nested
// calls with keyword arguments, a list of events, and the main guard.
// Every value is what Deep500's own run_recipe would receive.
func TestPublishedDeep500Recipes(t *testing.T) {
	sym := func(name string) d5list.Symbol { return d5list.Symbol{Name: name} }
	call := func(name string, args []any, kwargs map[string]any) d5list.Symbol {
		return d5list.Symbol{Name: name, Call: true, Args: args, Kwargs: kwargs}
	}
	schedule := func(epochs ...int64) d5list.Symbol {
		lrs := []float64{1e-1, 1e-2, 1e-3, 1e-4}
		var lr []any
		for i, e := range epochs {
			lr = append(lr, []any{e, lrs[i]})
		}
		return call("d5.training_events.EpochHPSchedule", nil, map[string]any{"lr": lr})
	}
	mutable := func(batch int64, epochs ...int64) map[string]any {
		return map[string]any{
			"batch_size":       batch,
			"executor":         sym("d5fw.from_model"),
			"executor_kwargs":  map[string]any{"device": call("d5.GPUDevice", nil, nil)},
			"optimizer":        sym("d5fw.MomentumOptimizer"),
			"optimizer_args":   []any{0.1, 0.9},
			"optimizer_kwargs": map[string]any{"gradient_modifier": sym("weight_decay")},
			"events":           []any{schedule(epochs...), call("d5.training_events.TerminalBarEvent", nil, nil)},
		}
	}
	cifar := mutable(64, 0, 81, 122, 164)
	cifar["train_sampler"] = sym("d5.ShuffleSampler")
	cifar["train_sampler_kwargs"] = map[string]any{"transformations": []any{
		call("d5ref.Crop", []any{[]any{int64(32), int64(32)}}, map[string]any{"random_crop": true, "padding": []any{int64(4), int64(4)}}),
		call("d5ref.RandomFlip", nil, nil),
		call("d5ref.Cutout", []any{int64(1), int64(16)}, nil),
	}}
	tests := []struct {
		file       string
		fixed      map[string]any
		mutable    map[string]any
		acceptable float64
	}{
		{"cifar10_resnet44.py",
			map[string]any{"model": "resnet", "model_kwargs": map[string]any{"depth": int64(44)}, "dataset": "cifar10", "epochs": int64(90)},
			cifar, 93.0},
		{"imagenet_resnet50.py",
			map[string]any{"model": "resnet", "model_kwargs": map[string]any{"depth": int64(50)}, "dataset": "imagenet",
				"dataset_kwargs": map[string]any{"batch_size": int64(128)}, "epochs": int64(90)},
			mutable(128, 0, 30, 60, 80), 75.0},
	}
	for _, tc := range tests {
		t.Run(tc.file, func(t *testing.T) {
			data, err := os.ReadFile(filepath.Join(deep500Recipes, tc.file))
			if err != nil {
				t.Skipf("the published recipes are not beside the repository: %v", err)
			}
			r, err := ParseRecipe("recipe.py", data)
			if err != nil {
				t.Fatalf("refused: %v %+v", err, d5list.ErrorReasons(err))
			}
			if !reflect.DeepEqual(r.Fixed, tc.fixed) {
				t.Errorf("FIXED\n got %#v\nwant %#v", r.Fixed, tc.fixed)
			}
			for k, want := range tc.mutable {
				if !reflect.DeepEqual(r.Mutable[k], want) {
					t.Errorf("MUTABLE[%q]\n got %#v\nwant %#v", k, r.Mutable[k], want)
				}
			}
			if len(r.Mutable) != len(tc.mutable) {
				t.Errorf("MUTABLE has %d keys, want %d: %v", len(r.Mutable), len(tc.mutable), r.Mutable)
			}
			want := d5list.MetricSpec{Name: "test_accuracy", Acceptable: &tc.acceptable, Direction: d5list.HigherIsBetter,
				Args: map[string]any{"max_acc": true}}
			if len(r.Metrics) != 1 || !reflect.DeepEqual(r.Metrics[0], want) {
				t.Errorf("METRICS %+v, want [%+v]", r.Metrics, want)
			}
			if r.Entrypoint != "" {
				t.Errorf("entrypoint %q, want none", r.Entrypoint)
			}
		})
	}
}

// What a published recipe may also hold, each skipped as Python would
// leave it to Deep500: annotated assignments (any annotation, or one
// without a value before the assignment), imports anywhere, classes,
// decorators, other names, loops that leave the sections alone, and a main
// guard with an else.
func TestParseRecipeSkipsWhatIsNotASection(t *testing.T) {
	src := `"""Doc."""
from __future__ import annotations
import typing
import deep500 as d5

BATCH: int = 64
LRS = [0.1 * k for k in range(3)]

@staticmethod
def modifier(name: str, param, grad) -> None:
    FIXED_COPY = dict(FIXED)
    return grad

class Sampler(d5.ShuffleSampler):
    pass

FIXED: dict = {'model': 'resnet', 'epochs': 90}
for k in FIXED:
    print(k, FIXED[k])

import deep500.frameworks.pytorch as d5fw
MUTABLE: typing.Dict[str, typing.Any] = {'batch_size': 64, 'optimizer': d5fw.GradientDescent, 'sampler': Sampler}
METRICS: list[tuple]
METRICS = [(d5.TestAccuracy(max_acc=True), 93.0), (d5.WallclockTime(), None)]

if __name__ == '__main__':
    d5.run_recipe(FIXED, MUTABLE, METRICS) or exit(1)
else:
    print('imported')
`
	r, err := ParseRecipe("recipe.py", []byte(src))
	if err != nil {
		t.Fatalf("refused: %v %+v", err, d5list.ErrorReasons(err))
	}
	if want := map[string]any{"model": "resnet", "epochs": int64(90)}; !reflect.DeepEqual(r.Fixed, want) {
		t.Errorf("FIXED %#v", r.Fixed)
	}
	if want := map[string]any{"batch_size": int64(64), "optimizer": d5list.Symbol{Name: "d5fw.GradientDescent"}, "sampler": d5list.Symbol{Name: "Sampler"}}; !reflect.DeepEqual(r.Mutable, want) {
		t.Errorf("MUTABLE %#v", r.Mutable)
	}
	if len(r.Metrics) != 2 || r.Metrics[0].Name != "test_accuracy" || r.Metrics[1].Name != "wallclock_time" {
		t.Errorf("METRICS %+v", r.Metrics)
	}
}
