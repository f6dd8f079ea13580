package workloads

import (
	"context"
	"fmt"
	"math"
	"time"

	"github.com/deep500/d5list/mllog"
)

// MLLOG keys this package writes beyond those mllog defines.
const (
	keyOptName         = "opt_name"
	keyOptBaseLR       = "opt_base_learning_rate"
	keyOptMomentum     = "opt_momentum"
	keyModelHidden     = "model_hidden"
	keyMaxEpochs       = "max_epochs"
	keyTargetAccuracy  = "target_accuracy"
	keyEpochNum        = "epoch_num"
	keyStatus          = "status"
	statusSuccess      = "success"
	statusAborted      = "aborted"
	optimizerSGD       = "sgd"
	optimizerMomentum  = "momentum"
	numClasses         = 10
	benchmarkDigitsMLP = "l2-digits-mlp-cpu"
)

// MLPConfig is one training run's hyperparameters.
type MLPConfig struct {
	Benchmark    string // written as submission_benchmark
	Hidden       int    // hidden units
	MaxEpochs    int    // the run aborts after this many epochs below target
	BatchSize    int
	Optimizer    string  // "sgd" or "momentum"
	LearningRate float64 // base learning rate
	Momentum     float64 // used by "momentum" only
	Target       float64 // test accuracy that ends the run
}

// Validate reports the first out-of-range field.
func (c MLPConfig) Validate() error {
	switch {
	case c.Hidden <= 0:
		return fmt.Errorf("mlp: hidden must be positive, got %d", c.Hidden)
	case c.MaxEpochs <= 0:
		return fmt.Errorf("mlp: max epochs must be positive, got %d", c.MaxEpochs)
	case c.BatchSize <= 0:
		return fmt.Errorf("mlp: batch size must be positive, got %d", c.BatchSize)
	case c.Optimizer != optimizerSGD && c.Optimizer != optimizerMomentum:
		return fmt.Errorf("mlp: optimizer must be %q or %q, got %q", optimizerMomentum, optimizerSGD, c.Optimizer)
	case !(c.LearningRate > 0) || math.IsInf(c.LearningRate, 0):
		return fmt.Errorf("mlp: learning rate must be positive and finite, got %v", c.LearningRate)
	case !(c.Momentum >= 0 && c.Momentum < 1):
		return fmt.Errorf("mlp: momentum must be in [0, 1), got %v", c.Momentum)
	}
	return nil
}

// Summary is what a finished run reports besides its MLLOG.
type Summary struct {
	Status     string    // "success" or "aborted"
	Accuracies []float64 // test accuracy after each epoch, epoch 1 first
	Epochs     int       // epochs trained
	// TrainSamples counts the samples trained on (epochs x training set).
	TrainSamples int
	Seconds      float64 // run_start to run_stop
	Throughput   float64 // TrainSamples / Seconds
}

// Reached reports whether the run stopped at the target.
func (s Summary) Reached() bool { return s.Status == statusSuccess }

// mlp is input -> hidden (ReLU) -> logits, with flat row-major weights.
type mlp struct {
	in, hidden    int
	w1, b1        []float64 // hidden x in, hidden
	w2, b2        []float64 // classes x hidden, classes
	gw1, gb1      []float64 // gradient sums of one minibatch
	gw2, gb2      []float64
	vw1, vb1      []float64 // momentum buffers
	vw2, vb2      []float64
	h, dh, logits []float64 // per-sample scratch
	probs         []float64
}

func newMLP(in, hidden int, r *rng) *mlp {
	m := &mlp{in: in, hidden: hidden}
	alloc := func(n int) []float64 { return make([]float64, n) }
	m.w1, m.b1, m.w2, m.b2 = alloc(hidden*in), alloc(hidden), alloc(numClasses*hidden), alloc(numClasses)
	m.gw1, m.gb1, m.gw2, m.gb2 = alloc(hidden*in), alloc(hidden), alloc(numClasses*hidden), alloc(numClasses)
	m.vw1, m.vb1, m.vw2, m.vb2 = alloc(hidden*in), alloc(hidden), alloc(numClasses*hidden), alloc(numClasses)
	m.h, m.dh, m.logits, m.probs = alloc(hidden), alloc(hidden), alloc(numClasses), alloc(numClasses)
	// He-uniform for the ReLU layer, Glorot-uniform for the logits; biases 0.
	l1 := math.Sqrt(6 / float64(in))
	for i := range m.w1 {
		m.w1[i] = r.uniform(-l1, l1)
	}
	l2 := math.Sqrt(6 / float64(hidden+numClasses))
	for i := range m.w2 {
		m.w2[i] = r.uniform(-l2, l2)
	}
	return m
}

// forward fills m.h and m.logits for x and returns the predicted class.
func (m *mlp) forward(x []float64) int {
	for j := range m.hidden {
		row := m.w1[j*m.in : (j+1)*m.in]
		s := m.b1[j]
		for i, xi := range x {
			s += float64(row[i] * xi)
		}
		m.h[j] = math.Max(s, 0)
	}
	best := 0
	for k := range numClasses {
		row := m.w2[k*m.hidden : (k+1)*m.hidden]
		s := m.b2[k]
		for j, hj := range m.h {
			s += float64(row[j] * hj)
		}
		m.logits[k] = s
		if s > m.logits[best] {
			best = k
		}
	}
	return best
}

// accumulate adds the cross-entropy gradient of one sample (after forward)
// to the gradient sums and returns its loss.
func (m *mlp) accumulate(x []float64, label int) float64 {
	maxLogit := m.logits[0]
	for _, l := range m.logits[1:] {
		maxLogit = math.Max(maxLogit, l)
	}
	var z float64
	for k, l := range m.logits {
		m.probs[k] = detExp(l - maxLogit)
		z += m.probs[k]
	}
	loss := 0.0
	if p := m.probs[label] / z; p > 0 {
		loss = -math.Log(p) // reported only; never feeds back into training
	}
	clear(m.dh)
	for k := range numClasses {
		d := m.probs[k] / z // dL/dlogit_k = p_k - [k == label]
		if k == label {
			d--
		}
		m.gb2[k] += d
		row := m.w2[k*m.hidden : (k+1)*m.hidden]
		grow := m.gw2[k*m.hidden : (k+1)*m.hidden]
		for j, hj := range m.h {
			grow[j] += float64(d * hj)
			m.dh[j] += float64(d * row[j])
		}
	}
	for j, dj := range m.dh {
		if m.h[j] <= 0 || dj == 0 { // ReLU gate: no gradient through inactive units
			continue
		}
		m.gb1[j] += dj
		grow := m.gw1[j*m.in : (j+1)*m.in]
		for i, xi := range x {
			grow[i] += float64(dj * xi)
		}
	}
	return loss
}

// step applies one optimizer update with the mean gradient of n samples and
// clears the gradient sums.
func (m *mlp) step(cfg MLPConfig, n int) {
	scale := 1 / float64(n)
	update := func(w, g, v []float64) {
		for i := range w {
			gi := float64(g[i] * scale)
			if cfg.Optimizer == optimizerMomentum {
				// PyTorch's form: v <- mu v + g, w <- w - lr v.
				v[i] = float64(cfg.Momentum*v[i]) + gi
				gi = v[i]
			}
			w[i] -= float64(cfg.LearningRate * gi)
			g[i] = 0
		}
	}
	update(m.w1, m.gw1, m.vw1)
	update(m.b1, m.gb1, m.vb1)
	update(m.w2, m.gw2, m.vw2)
	update(m.b2, m.gb2, m.vb2)
}

func (m *mlp) accuracy(xs [][]float64, labels []int) float64 {
	correct := 0
	for i, x := range xs {
		if m.forward(x) == labels[i] {
			correct++
		}
	}
	return float64(correct) / float64(len(xs))
}

// trainEpoch runs one epoch of minibatch updates in the order of perm. The
// last minibatch may be smaller. It checks ctx between minibatches.
func (m *mlp) trainEpoch(ctx context.Context, cfg MLPConfig, ds *Dataset, perm []int) error {
	for start := 0; start < len(perm); start += cfg.BatchSize {
		if err := ctx.Err(); err != nil {
			return err
		}
		end := min(start+cfg.BatchSize, len(perm))
		for _, idx := range perm[start:end] {
			m.forward(ds.TrainX[idx])
			m.accumulate(ds.TrainX[idx], ds.TrainLabels[idx])
		}
		m.step(cfg, end-start)
	}
	return nil
}

// TrainMLP trains on the synthetic digits until the test accuracy reaches
// cfg.Target or cfg.MaxEpochs have passed, logging MLLOG to w. The seed
// selects the weight initialisation and the minibatch order; the data set
// is the same for every seed. If ctx is cancelled, TrainMLP stops between
// minibatches and returns ctx.Err() without writing run_stop, so the log is
// visibly incomplete.
func TrainMLP(ctx context.Context, cfg MLPConfig, seed int64, w *mllog.Writer) (Summary, error) {
	return trainMLP(ctx, cfg, DefaultDigits, seed, w)
}

func trainMLP(ctx context.Context, cfg MLPConfig, data DigitsConfig, seed int64, w *mllog.Writer) (Summary, error) {
	if err := cfg.Validate(); err != nil {
		return Summary{}, err
	}
	w.Start(mllog.KeyInitStart, nil, nil)
	w.Point(mllog.KeySubmissionBenchmark, cfg.Benchmark, nil)
	w.Point(mllog.KeySeed, seed, nil)
	w.Point(mllog.KeyGlobalBatchSize, cfg.BatchSize, nil)
	logHyperparameters(w, cfg)

	ds := Digits(data) // generated on first use: off the clock, as in MLPerf
	w.Point(mllog.KeyTrainSamples, len(ds.TrainX), nil)
	w.Point(mllog.KeyEvalSamples, len(ds.TestX), nil)
	// Separate streams so that changing the model size does not change the
	// minibatch order of a seed.
	model := newMLP(ds.Dim, cfg.Hidden, newRNG(uint64(seed), 1))
	shuffler := newRNG(uint64(seed), 2)
	perm := make([]int, len(ds.TrainX))
	for i := range perm {
		perm[i] = i
	}
	w.End(mllog.KeyInitStop, nil, nil)
	if err := ctx.Err(); err != nil {
		return Summary{}, err
	}

	w.Start(mllog.KeyRunStart, nil, nil)
	start := time.Now()
	sum := Summary{Status: statusAborted}
	for epoch := 1; epoch <= cfg.MaxEpochs; epoch++ {
		meta := map[string]any{keyEpochNum: epoch}
		w.Start(mllog.KeyEpochStart, nil, meta)
		shuffler.shuffle(perm)
		if err := model.trainEpoch(ctx, cfg, ds, perm); err != nil {
			return sum, err
		}
		w.End(mllog.KeyEpochStop, nil, meta)
		sum.Epochs = epoch
		sum.TrainSamples += len(perm)

		if evaluate(w, model, ds, meta, cfg.Target, &sum) {
			break
		}
	}
	sum.Seconds = time.Since(start).Seconds()
	if sum.Seconds > 0 {
		sum.Throughput = float64(sum.TrainSamples) / sum.Seconds
	}
	w.Point(mllog.KeyThroughput, sum.Throughput, map[string]any{"unit": "samples/s"})
	w.End(mllog.KeyRunStop, nil, map[string]any{keyStatus: sum.Status, keyEpochNum: sum.Epochs})
	return sum, w.Err()
}

// evaluate logs one epoch's evaluation on the held-out split into sum and
// reports whether the run has reached its target.
func evaluate(w *mllog.Writer, model *mlp, ds *Dataset, meta map[string]any, target float64, sum *Summary) bool {
	w.Start(mllog.KeyEvalStart, nil, meta)
	acc := model.accuracy(ds.TestX, ds.TestLabs)
	w.Point(mllog.KeyEvalAccuracy, acc, meta)
	w.End(mllog.KeyEvalStop, nil, meta)
	sum.Accuracies = append(sum.Accuracies, acc)
	if acc >= target {
		sum.Status = statusSuccess
		return true
	}
	return false
}

// logHyperparameters logs the optimizer and model settings of a training
// run, the same keys for one process and for data-parallel workers.
func logHyperparameters(w *mllog.Writer, cfg MLPConfig) {
	w.Point(keyOptName, cfg.Optimizer, nil)
	w.Point(keyOptBaseLR, cfg.LearningRate, nil)
	if cfg.Optimizer == optimizerMomentum {
		w.Point(keyOptMomentum, cfg.Momentum, nil)
	}
	w.Point(keyModelHidden, cfg.Hidden, nil)
	w.Point(keyMaxEpochs, cfg.MaxEpochs, nil)
	w.Point(keyTargetAccuracy, cfg.Target, nil)
}
