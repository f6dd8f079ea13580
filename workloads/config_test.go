package workloads

import (
	"strings"
	"testing"

	d5list "github.com/deep500/d5list"
)

func digitsBenchmark() *d5list.Benchmark {
	return &d5list.Benchmark{
		ID: "l2-digits-mlp-cpu",
		Division: d5list.DivisionRules{
			Fixed:   map[string]any{"dataset": "synthetic-digits", "model": "mlp", "model_kwargs": map[string]any{"hidden": 48}, "epochs": 30},
			Mutable: map[string]any{"batch_size": 16, "executor": "builtin", "optimizer": "momentum", "optimizer_args": map[string]any{"lr": 0.004, "momentum": 0.8}, "train_sampler": "shuffle"},
		},
		Quality: d5list.QualityTarget{Metric: "eval_accuracy", Target: 0.93},
	}
}

func TestMLPConfigFromRecipeReadsEveryKey(t *testing.T) {
	tests := []struct {
		name   string
		recipe d5list.Recipe
		want   MLPConfig
	}{
		{"benchmark defaults when the recipe is empty", d5list.Recipe{},
			MLPConfig{Benchmark: "l2-digits-mlp-cpu", Hidden: 48, MaxEpochs: 30, BatchSize: 16, Optimizer: "momentum", LearningRate: 0.004, Momentum: 0.8, Target: 0.93}},
		{"ints from a YAML decoder", d5list.Recipe{
			Fixed:   map[string]any{"model_kwargs": map[string]any{"hidden": 64}, "epochs": 80},
			Mutable: map[string]any{"batch_size": 32, "optimizer": "sgd", "optimizer_args": map[string]any{"lr": 1, "momentum": 0}}},
			MLPConfig{Benchmark: "l2-digits-mlp-cpu", Hidden: 64, MaxEpochs: 80, BatchSize: 32, Optimizer: "sgd", LearningRate: 1, Momentum: 0, Target: 0.93}},
		{"int64 and float64 from a JSON decoder", d5list.Recipe{
			Fixed:   map[string]any{"model_kwargs": map[string]any{"hidden": int64(20)}, "epochs": 12.0},
			Mutable: map[string]any{"batch_size": int64(128), "optimizer_args": map[string]any{"lr": 0.05}}},
			MLPConfig{Benchmark: "l2-digits-mlp-cpu", Hidden: 20, MaxEpochs: 12, BatchSize: 128, Optimizer: "momentum", LearningRate: 0.05, Momentum: 0.8, Target: 0.93}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := MLPConfigFromRecipe(digitsBenchmark(), &tt.recipe)
			if err != nil {
				t.Fatal(err)
			}
			if got != tt.want {
				t.Errorf("got %+v\nwant %+v", got, tt.want)
			}
		})
	}
}

func TestMLPConfigFromRecipeWithoutBenchmarkDefaults(t *testing.T) {
	got, err := MLPConfigFromRecipe(&d5list.Benchmark{ID: "x"}, &d5list.Recipe{})
	if err != nil {
		t.Fatal(err)
	}
	want := MLPConfig{Benchmark: "x", Hidden: DefaultHidden, MaxEpochs: DefaultMaxEpochs, BatchSize: DefaultBatchSize,
		Optimizer: DefaultOptimizer, LearningRate: DefaultLearningRate, Momentum: DefaultMomentum, Target: DefaultTarget}
	if got != want {
		t.Errorf("got %+v, want %+v", got, want)
	}
}

func TestMLPConfigFromRecipeNamesTheBadField(t *testing.T) {
	tests := []struct {
		name    string
		fixed   map[string]any
		mutable map[string]any
		want    string
	}{
		{"batch size not a number", nil, map[string]any{"batch_size": "x"}, `recipe: mutable.batch_size: must be a positive integer, got "x"`},
		{"batch size zero", nil, map[string]any{"batch_size": 0}, `recipe: mutable.batch_size: must be a positive integer, got 0`},
		{"batch size fractional", nil, map[string]any{"batch_size": 2.5}, `recipe: mutable.batch_size: must be a positive integer, got 2.5`},
		{"negative epochs", map[string]any{"epochs": int64(-1)}, nil, `recipe: fixed.epochs: must be a positive integer, got -1`},
		{"hidden not a number", map[string]any{"model_kwargs": map[string]any{"hidden": "big"}}, nil, `recipe: fixed.model_kwargs.hidden: must be a positive integer, got "big"`},
		{"model kwargs not a map", map[string]any{"model_kwargs": 3}, nil, `recipe: fixed.model_kwargs: must be a mapping, got 3`},
		{"unknown model kwarg", map[string]any{"model_kwargs": map[string]any{"depth": 2}}, nil, `recipe: fixed.model_kwargs.depth: unknown key`},
		{"other data set", map[string]any{"dataset": "mnist"}, nil, `recipe: fixed.dataset: must be one of synthetic-digits, got "mnist"`},
		{"other model", map[string]any{"model": "resnet"}, nil, `recipe: fixed.model: must be one of mlp, got "resnet"`},
		{"other executor", nil, map[string]any{"executor": "process"}, `recipe: mutable.executor: must be one of builtin, got "process"`},
		{"other sampler", nil, map[string]any{"train_sampler": "sequential"}, `recipe: mutable.train_sampler: must be one of shuffle, got "sequential"`},
		{"unknown optimizer", nil, map[string]any{"optimizer": "adam"}, `recipe: mutable.optimizer: must be one of momentum, sgd, got "adam"`},
		{"negative learning rate", nil, map[string]any{"optimizer_args": map[string]any{"lr": -0.1}}, `recipe: mutable.optimizer_args.lr: must be a positive number, got -0.1`},
		{"learning rate as text", nil, map[string]any{"optimizer_args": map[string]any{"lr": "fast"}}, `recipe: mutable.optimizer_args.lr: must be a positive number, got "fast"`},
		{"momentum of one", nil, map[string]any{"optimizer_args": map[string]any{"momentum": 1}}, `recipe: mutable.optimizer_args.momentum: must be a number in [0, 1), got 1`},
		{"unknown optimizer arg", nil, map[string]any{"optimizer_args": map[string]any{"beta": 0.9}}, `recipe: mutable.optimizer_args.beta: unknown key`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := MLPConfigFromRecipe(digitsBenchmark(), &d5list.Recipe{Fixed: tt.fixed, Mutable: tt.mutable})
			if err == nil {
				t.Fatal("no error")
			}
			if d5list.ErrorCode(err) != d5list.EINVALID || !strings.Contains(d5list.ErrorMessage(err), tt.want) {
				t.Errorf("error %v (code %s), want EINVALID containing %q", err, d5list.ErrorCode(err), tt.want)
			}
		})
	}
}

func TestMLPConfigFromRecipeChecksBenchmarkDefaultsAndTarget(t *testing.T) {
	b := digitsBenchmark()
	b.Division.Mutable["batch_size"] = "many"
	_, err := MLPConfigFromRecipe(b, &d5list.Recipe{})
	if err == nil || !strings.Contains(err.Error(), "benchmark l2-digits-mlp-cpu: division.mutable.batch_size") {
		t.Errorf("err %v, want one naming the benchmark's default", err)
	}
	b = digitsBenchmark()
	b.Quality.Target = 97
	if _, err := MLPConfigFromRecipe(b, &d5list.Recipe{}); err == nil || !strings.Contains(err.Error(), "quality.target") {
		t.Errorf("err %v, want one naming quality.target", err)
	}
}
