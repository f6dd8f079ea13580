package workloads

import (
	"context"
	"io"
	"time"

	d5list "github.com/deep500/d5list"
	"github.com/deep500/d5list/mllog"
)

// Defaults of the mlp-inference workload.
const (
	DefaultInferenceBatch   = 1
	DefaultInferenceSamples = 20000
)

// InferenceConfig is one inference run: Samples predictions of a Hidden-unit
// MLP on the synthetic digits test images, BatchSize at a time.
type InferenceConfig struct {
	Benchmark string
	Hidden    int
	BatchSize int
	Samples   int
}

// InferenceSummary reports what the run logged.
type InferenceSummary struct {
	Throughput   float64 // samples per second over the timed loop
	LatencyP50MS float64 // per batch
	LatencyP99MS float64
	Batches      int
	// Checksum is FNV-1a over the predicted classes, in order.
	Checksum uint32
}

// RunMLPInference times forward passes of a seeded MLP (the weights do not
// change the arithmetic, so no training is needed) and logs throughput and
// per-batch latency quantiles as POINT_IN_TIME events between run_start and
// run_stop. It checks ctx between batches.
func RunMLPInference(ctx context.Context, cfg InferenceConfig, seed int64, w *mllog.Writer) (InferenceSummary, error) {
	if cfg.Hidden <= 0 || cfg.BatchSize <= 0 || cfg.Samples <= 0 {
		return InferenceSummary{}, d5list.Errorf(d5list.EINVALID, "mlp-inference: hidden, batch size and samples must be positive, got %+v", cfg)
	}
	w.Start(mllog.KeyInitStart, nil, nil)
	w.Point(mllog.KeySubmissionBenchmark, cfg.Benchmark, nil)
	w.Point(mllog.KeySeed, seed, nil)
	w.Point(mllog.KeyGlobalBatchSize, cfg.BatchSize, nil)
	w.Point(keyModelHidden, cfg.Hidden, nil)
	w.Point(mllog.KeyEvalSamples, cfg.Samples, nil)
	ds := Digits(DefaultDigits)
	model := newMLP(ds.Dim, cfg.Hidden, newRNG(uint64(seed), 1))
	predictions := make([]int, cfg.BatchSize)
	w.End(mllog.KeyInitStop, nil, nil)

	w.Start(mllog.KeyRunStart, nil, nil)
	latencies := make([]float64, 0, cfg.Samples/cfg.BatchSize+1)
	next := 0
	checksum := uint32(2166136261)
	start := time.Now()
	for done := 0; done < cfg.Samples; {
		if err := ctx.Err(); err != nil {
			return InferenceSummary{}, err
		}
		n := min(cfg.BatchSize, cfg.Samples-done)
		t0 := time.Now()
		for i := range n {
			predictions[i] = model.forward(ds.TestX[next])
			next = (next + 1) % len(ds.TestX)
		}
		latencies = append(latencies, float64(time.Since(t0).Nanoseconds())/1e6)
		// Outside the timed batch: the hash is the verifier's, not the
		// workload's.
		for _, p := range predictions[:n] {
			checksum = (checksum ^ uint32(p)) * 16777619
		}
		done += n
	}
	elapsed := time.Since(start).Seconds()
	sum := InferenceSummary{
		Throughput:   float64(cfg.Samples) / elapsed,
		LatencyP50MS: quantile(latencies, 0.50),
		LatencyP99MS: quantile(latencies, 0.99),
		Batches:      len(latencies),
		Checksum:     checksum,
	}
	w.Point(mllog.KeyThroughput, sum.Throughput, map[string]any{"unit": "samples/s"})
	w.Point(KeyLatencyP50, sum.LatencyP50MS, map[string]any{"per": "batch"})
	w.Point(KeyLatencyP99, sum.LatencyP99MS, map[string]any{"per": "batch"})
	w.Point(d5list.MetricPredictionChecksum, sum.Checksum, nil)
	w.End(mllog.KeyRunStop, nil, map[string]any{keyStatus: statusSuccess})
	return sum, w.Err()
}

// InferenceConfigFromRecipe reads fixed `dataset: synthetic-digits`,
// `model: mlp`, `model_kwargs: {hidden}` and mutable `batch_size`,
// `samples`, `executor: builtin`.
func InferenceConfigFromRecipe(b *d5list.Benchmark, r *d5list.Recipe) (InferenceConfig, error) {
	rr := recipeReader{b: b, r: r}
	cfg := InferenceConfig{Benchmark: benchmarkID(b, "l1-digits-mlp-inference-cpu"), Hidden: DefaultHidden}
	var err error
	for _, kv := range [][2]string{{"dataset", "synthetic-digits"}, {"model", "mlp"}, {"executor", "builtin"}} {
		if _, err = rr.choice(kv[0], kv[1], kv[1]); err != nil {
			return InferenceConfig{}, err
		}
	}
	kwargs, err := rr.object("model_kwargs", "hidden")
	if err != nil {
		return InferenceConfig{}, err
	}
	if h, ok := kwargs["hidden"]; ok {
		if cfg.Hidden, err = asPositiveInt(h.value, h.field); err != nil {
			return InferenceConfig{}, err
		}
	}
	if cfg.BatchSize, err = rr.intKey("batch_size", DefaultInferenceBatch); err != nil {
		return InferenceConfig{}, err
	}
	if cfg.Samples, err = rr.intKey("samples", DefaultInferenceSamples); err != nil {
		return InferenceConfig{}, err
	}
	if cfg.Hidden*DefaultDigits.Size*DefaultDigits.Size > maxOpElements {
		_, field, _ := rr.get("model_kwargs")
		return InferenceConfig{}, invalid(field+".hidden", "the model exceeds %d weights", maxOpElements)
	}
	if cfg.BatchSize > maxOpElements {
		_, field, _ := rr.get("batch_size")
		return InferenceConfig{}, invalid(field, "must be at most %d", maxOpElements)
	}
	return cfg, nil
}

func mlpInferenceWorkload(ctx context.Context, b *d5list.Benchmark, r *d5list.Recipe, seed int64, out io.Writer) error {
	cfg, err := InferenceConfigFromRecipe(b, r)
	if err != nil {
		return err
	}
	_, err = RunMLPInference(ctx, cfg, seed, mllog.NewWriter(out, nil))
	return err
}
