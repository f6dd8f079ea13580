package workloads

import (
	"fmt"
	"math"
	"sort"
	"strings"

	d5list "github.com/deep500/d5list"
)

// Defaults of l2-digits-mlp-cpu, used when neither the recipe nor the
// benchmark's division rules give a value.
const (
	DefaultHidden       = 64
	DefaultMaxEpochs    = 80
	DefaultBatchSize    = 32
	DefaultOptimizer    = optimizerMomentum
	DefaultLearningRate = 0.002
	DefaultMomentum     = 0.9
	DefaultTarget       = 0.945
)

// recipeReader resolves keys the way a closed-division re-run sees them: the
// recipe's mutable then fixed value, then the benchmark's own defaults.
type recipeReader struct {
	b *d5list.Benchmark
	r *d5list.Recipe
}

// get returns the value of key and the path of the field it came from.
func (rr recipeReader) get(key string) (any, string, bool) {
	if rr.r != nil {
		if v, ok := rr.r.Mutable[key]; ok {
			return v, "recipe: mutable." + key, true
		}
		if v, ok := rr.r.Fixed[key]; ok {
			return v, "recipe: fixed." + key, true
		}
	}
	if rr.b != nil {
		if v, ok := rr.b.Division.Mutable[key]; ok {
			return v, "benchmark " + rr.b.ID + ": division.mutable." + key, true
		}
		if v, ok := rr.b.Division.Fixed[key]; ok {
			return v, "benchmark " + rr.b.ID + ": division.fixed." + key, true
		}
	}
	return nil, "recipe: " + key, false
}

func invalid(field, format string, args ...any) error {
	return d5list.Errorf(d5list.EINVALID, "%s: %s", field, fmt.Sprintf(format, args...))
}

// asFloat accepts every numeric kind a YAML or JSON decoder produces.
func asFloat(v any) (float64, bool) {
	switch n := v.(type) {
	case float64:
		return n, true
	case float32:
		return float64(n), true
	case int:
		return float64(n), true
	case int64:
		return float64(n), true
	case int32:
		return float64(n), true
	case uint64:
		return float64(n), true
	case uint32:
		return float64(n), true
	case uint:
		return float64(n), true
	}
	return 0, false
}

func asPositiveInt(v any, field string) (int, error) {
	f, ok := asFloat(v)
	if !ok || f != math.Trunc(f) || f < 1 || f > 1<<31 {
		return 0, invalid(field, "must be a positive integer, got %s", show(v))
	}
	return int(f), nil
}

func show(v any) string {
	if s, ok := v.(string); ok {
		return fmt.Sprintf("%q", s)
	}
	return fmt.Sprintf("%v", v)
}

func (rr recipeReader) intKey(key string, def int) (int, error) {
	v, field, ok := rr.get(key)
	if !ok {
		return def, nil
	}
	return asPositiveInt(v, field)
}

// choice checks a string key against the allowed values.
func (rr recipeReader) choice(key, def string, allowed ...string) (string, error) {
	v, field, ok := rr.get(key)
	if !ok {
		return def, nil
	}
	s, isString := v.(string)
	for _, a := range allowed {
		if isString && s == a {
			return s, nil
		}
	}
	return "", invalid(field, "must be one of %s, got %s", strings.Join(allowed, ", "), show(v))
}

type sourced struct {
	value any
	field string
}

// object resolves a mapping key sub-key by sub-key: the benchmark's default
// mapping first, overridden by the recipe's, so a recipe that sets only
// optimizer_args.lr keeps the benchmark's momentum. Each sub-key must be one
// of allowed.
func (rr recipeReader) object(key string, allowed ...string) (map[string]sourced, error) {
	out := map[string]sourced{}
	layers := []recipeReader{{b: rr.b}, {r: rr.r}}
	for _, layer := range layers {
		v, field, ok := layer.get(key)
		if !ok || v == nil {
			continue
		}
		m, isMap := v.(map[string]any)
		if !isMap {
			return nil, invalid(field, "must be a mapping, got %s", show(v))
		}
		keys := make([]string, 0, len(m))
		for k := range m {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			if !contains(allowed, k) {
				return nil, invalid(field+"."+k, "unknown key (allowed: %s)", strings.Join(allowed, ", "))
			}
			out[k] = sourced{m[k], field + "." + k}
		}
	}
	return out, nil
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// MLPConfigFromRecipe reads the l2-digits-mlp-cpu recipe keys (fixed:
// dataset, model, model_kwargs.hidden, epochs; mutable: batch_size,
// executor, optimizer, optimizer_args.lr and .momentum, train_sampler).
// A key missing from the recipe takes the benchmark's division default, then
// the package default. The target is b.Quality.Target. Errors are
// *d5list.Error (EINVALID) whose message names the field, for example
// `recipe: mutable.batch_size: must be a positive integer, got "x"`.
func MLPConfigFromRecipe(b *d5list.Benchmark, r *d5list.Recipe) (MLPConfig, error) {
	rr := recipeReader{b: b, r: r}
	cfg := MLPConfig{Target: DefaultTarget, Momentum: DefaultMomentum, LearningRate: DefaultLearningRate}
	if b != nil {
		cfg.Benchmark = b.ID
		if b.Quality.Target != 0 {
			cfg.Target = b.Quality.Target
		}
	}
	if cfg.Benchmark == "" {
		cfg.Benchmark = benchmarkDigitsMLP
	}
	var err error
	if _, err = rr.choice("dataset", "synthetic-digits", "synthetic-digits"); err != nil {
		return MLPConfig{}, err
	}
	if _, err = rr.choice("model", "mlp", "mlp"); err != nil {
		return MLPConfig{}, err
	}
	if _, err = rr.choice("executor", "builtin", "builtin"); err != nil {
		return MLPConfig{}, err
	}
	if _, err = rr.choice("train_sampler", "shuffle", "shuffle"); err != nil {
		return MLPConfig{}, err
	}
	if cfg.MaxEpochs, err = rr.intKey("epochs", DefaultMaxEpochs); err != nil {
		return MLPConfig{}, err
	}
	if cfg.BatchSize, err = rr.intKey("batch_size", DefaultBatchSize); err != nil {
		return MLPConfig{}, err
	}
	if cfg.Optimizer, err = rr.choice("optimizer", DefaultOptimizer, optimizerMomentum, optimizerSGD); err != nil {
		return MLPConfig{}, err
	}

	cfg.Hidden = DefaultHidden
	kwargs, err := rr.object("model_kwargs", "hidden")
	if err != nil {
		return MLPConfig{}, err
	}
	if h, ok := kwargs["hidden"]; ok {
		if cfg.Hidden, err = asPositiveInt(h.value, h.field); err != nil {
			return MLPConfig{}, err
		}
	}

	args, err := rr.object("optimizer_args", "lr", "momentum")
	if err != nil {
		return MLPConfig{}, err
	}
	if lr, ok := args["lr"]; ok {
		f, isNum := asFloat(lr.value)
		if !isNum || !(f > 0) || math.IsInf(f, 0) {
			return MLPConfig{}, invalid(lr.field, "must be a positive number, got %s", show(lr.value))
		}
		cfg.LearningRate = f
	}
	if mom, ok := args["momentum"]; ok {
		f, isNum := asFloat(mom.value)
		if !isNum || !(f >= 0 && f < 1) {
			return MLPConfig{}, invalid(mom.field, "must be a number in [0, 1), got %s", show(mom.value))
		}
		cfg.Momentum = f
	}
	if !(cfg.Target > 0 && cfg.Target <= 1) {
		return MLPConfig{}, invalid("benchmark "+cfg.Benchmark+": quality.target", "must be an accuracy in (0, 1], got %v", cfg.Target)
	}
	return cfg, nil
}
