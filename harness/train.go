package harness

import (
	"encoding/binary"
	"math"

	"gonum.org/v1/gonum/blas"
	"gonum.org/v1/gonum/blas/blas64"

	d5list "github.com/deep500/d5list"
)

// KindMLPTraining is the harness of a training benchmark whose epochs the
// runner audits (Levels 2 and 3: d5harness.Training).
const KindMLPTraining = "mlp-training"

// stretchTolerance is how far a run's state at the end of an audited
// stretch of steps may be from the runner's float64 recomputation of that
// stretch from the run's state at its start, relative to how far the
// stretch moved the state. A stretch is a few steps (Task.StateEvery), so
// float32 and float64 have no room to drift apart: honest stretches of the
// example's network stay under 1e-4 of their step (TestStretchMargins)
// but where a ReLU unit lies on the edge of zero (relu_edges.go, which
// recomputes those), while a stretch that left out one of its minibatches,
// or trained one on part of its batch, is off by a large share of its
// step. Nothing is in doubt: over the tolerance fails.
const stretchTolerance = 1e-2

// testShare is the digits split's test share (d5harness.digits_split).
const testShare = 0.2

func trainingTask(bench *d5list.Benchmark, r *d5list.Recipe) (*Task, error) {
	dataset, _ := bench.Division.Fixed["dataset"].(string)
	if dataset != "uci-digits" {
		return nil, d5list.Errorf(d5list.EINVALID, "benchmark %s: the training harness knows the uci-digits data set, not %q", bench.ID, dataset)
	}
	layers, err := mlpLayers(bench, dataset)
	if err != nil {
		return nil, err
	}
	epochs, ok := wholeNumber(bench.Division.Fixed["epochs"])
	if !ok || epochs < 1 || epochs > 10000 {
		return nil, d5list.Errorf(d5list.EINVALID, "benchmark %s: the training harness needs fixed epochs from 1 to 10000", bench.ID)
	}
	workers := 1
	if w, ok := bench.FixedWorkers(); ok {
		workers = w
	}
	mutable := func(key string) any {
		if v, ok := r.Mutable[key]; ok {
			return v
		}
		return bench.Division.Mutable[key]
	}
	batch, ok := wholeNumber(mutable("batch_size"))
	if !ok || batch < 1 || batch*workers > 1<<16 {
		return nil, d5list.Errorf(d5list.EINVALID, "recipe: mutable batch_size must be a whole number from 1 to %d per worker, not %v", (1<<16)/workers, mutable("batch_size"))
	}
	if opt, _ := mutable("optimizer").(string); opt != "sgd-momentum" {
		return nil, d5list.Errorf(d5list.EINVALID, "recipe: the training harness audits optimizer sgd-momentum (torch.optim.SGD with momentum), not %v", mutable("optimizer"))
	}
	args, _ := mutable("optimizer_args").(map[string]any)
	lr, okLR := number(args["lr"])
	momentum, okM := number(args["momentum"])
	if !okLR || !okM || !(lr > 0) || momentum < 0 || momentum >= 1 {
		return nil, d5list.Errorf(d5list.EINVALID, "recipe: optimizer_args must set lr (over 0) and momentum (from 0 to under 1), not %v", mutable("optimizer_args"))
	}
	t := &Task{Kind: KindMLPTraining, Layers: layers, Epochs: epochs, BatchSize: batch * workers, LR: lr, Momentum: momentum,
		Target: bench.Quality.Target}
	t.trainSamples = digitsSamples - testCount(digitsSamples, testShare)
	t.StateEvery = stateEvery(t.Epochs*t.stepsPerEpoch(), auditsPerSection(bench.FreshRunCount()))
	t.sections = []section{trainingSection(t)}
	return t, nil
}

// mlpLayers are a benchmark's network widths: the data set's inputs, the
// fixed model_kwargs.hidden, the data set's classes.
func mlpLayers(bench *d5list.Benchmark, dataset string) ([]int, error) {
	io, ok := inputsAndClasses[dataset]
	if !ok {
		return nil, d5list.Errorf(d5list.EINVALID, "benchmark %s: the harness knows no data set %q", bench.ID, dataset)
	}
	kwargs, _ := bench.Division.Fixed["model_kwargs"].(map[string]any)
	hidden, _ := kwargs["hidden"].([]any)
	layers := []int{io[0]}
	for _, h := range hidden {
		n, ok := wholeNumber(h)
		if !ok || n < 1 || n > 1<<14 {
			return nil, d5list.Errorf(d5list.EINVALID, "benchmark %s: model_kwargs.hidden must list layer widths from 1 to 16384, not %v", bench.ID, h)
		}
		layers = append(layers, n)
	}
	return append(layers, io[1]), nil
}

// mlpState is a training run's state after an epoch, as it commits to it:
// per layer the weights (out x in) and biases, then their momentum
// buffers, float32 values held as float64.
type mlpState struct {
	w, b, mw, mb [][]float64
}

func stateBytes(layers []int) int {
	n := 0
	for i := range len(layers) - 1 {
		n += layers[i]*layers[i+1] + layers[i+1]
	}
	return 2 * n * 4
}

// parseState reads a revealed state (little-endian float32s, in the order
// d5harness.Training.commit writes them).
func parseState(layers []int, b []byte) mlpState {
	s, _ := parseFiniteState(layers, b)
	return s
}

// parseFiniteState is parseState, and the index of the state's first value
// that is a NaN or an infinity (-1: none), found as it converts them.
func parseFiniteState(layers []int, b []byte) (mlpState, int) {
	bad, at := -1, 0
	take := func(n int) []float64 {
		out := make([]float64, n)
		for i := range out {
			v := float64(math.Float32frombits(binary.LittleEndian.Uint32(b[(at+i)*4:])))
			if bad < 0 && (math.IsNaN(v) || math.IsInf(v, 0)) {
				bad = at + i
			}
			out[i] = v
		}
		at += n
		return out
	}
	var s mlpState
	for i := range len(layers) - 1 {
		s.w, s.b = append(s.w, take(layers[i]*layers[i+1])), append(s.b, take(layers[i+1]))
	}
	for i := range len(layers) - 1 {
		s.mw, s.mb = append(s.mw, take(layers[i]*layers[i+1])), append(s.mb, take(layers[i+1]))
	}
	return s, bad
}

// initialState is d5harness.Training.initial_params: uniform weights
// within ±1/sqrt(fan_in) from the seed, rounded to float32, and zero
// momentum.
func initialState(layers []int, seed int64) mlpState {
	var s mlpState
	for i := range len(layers) - 1 {
		in, out := layers[i], layers[i+1]
		bound := 1 / math.Sqrt(float64(in))
		w := Uniform(StreamKey(seed, "training", i, "weight"), in*out)
		b := Uniform(StreamKey(seed, "training", i, "bias"), out)
		for j := range w {
			w[j] = float64(float32((w[j]*2 - 1) * bound))
		}
		for j := range b {
			b[j] = float64(float32((b[j]*2 - 1) * bound))
		}
		s.w, s.b = append(s.w, w), append(s.b, b)
		s.mw, s.mb = append(s.mw, make([]float64, in*out)), append(s.mb, make([]float64, out))
	}
	return s
}

// trainingSection is a training run's states, as it hands them to the
// runner while it trains: state 0 the initial one, then the state at the
// end of each stretch of StateEvery steps of each epoch (an epoch's last
// stretch may be shorter). Checking a stretch recomputes its steps from
// the state before it; the last state's test accuracy is the runner's
// measure of the run's quality.
func trainingSection(t *Task) section {
	return section{name: "training", calls: t.stretches() + 1, outSize: fixedSize(stateBytes(t.Layers)), elem: 4,
		final: func(out []byte) (float64, bool) {
			data, err := digitsSplit(testShare)
			if err != nil {
				return 0, false
			}
			return testAccuracy(t, data, parseState(t.Layers, out)), true
		}}
}

// digitsSamples is the UCI digits' size (scikit-learn's load_digits).
const digitsSamples = 1797

// stepsPerEpoch is how many minibatches an epoch of the task has.
func (t *Task) stepsPerEpoch() int {
	return (t.trainSamples + t.BatchSize - 1) / t.BatchSize
}

// stretchesPerEpoch is how many stretches of StateEvery steps an epoch has.
func (t *Task) stretchesPerEpoch() int {
	return (t.stepsPerEpoch() + t.StateEvery - 1) / t.StateEvery
}

// stretches is how many stretches a run has: the states it hands over
// after its initial one.
func (t *Task) stretches() int {
	return t.Epochs * t.stretchesPerEpoch()
}

// stretch is where stretch g (1 to stretches()) lies: its epoch and its
// steps [from, to) in that epoch's order.
func (t *Task) stretch(g int) (epoch, from, to int) {
	per := t.stretchesPerEpoch()
	epoch, k := (g-1)/per+1, (g-1)%per
	from = k * t.StateEvery
	return epoch, from, min(from+t.StateEvery, t.stepsPerEpoch())
}

// stateEvery is how many steps a stretch has, for a run of steps steps
// of which the runner recomputes audits stretches: as few as keep that
// recomputation within auditStepShare of the run's steps. Shorter
// stretches make the run hand over more states; longer ones make each
// audited stretch cost more.
func stateEvery(steps, audits int) int {
	return max(1, int(float64(steps)*auditStepShare)/max(audits, 1))
}

// auditStepShare is the share of a fresh run's steps the runner
// recomputes: a float64 step on the runner's CPU costs about four of the
// run's float32 ones (BenchmarkTrainEpoch against the example), so the
// steps are about a quarter of the run's own CPU, and reading the kept
// states a little more (BenchmarkFreshRunAudit). A smaller share makes
// stretches shorter and the run hand over more states: at 1/24 (stretches
// of 2) the example's runs took a fifth longer, at 1/16 a tenth
// (BENCHMARKS.md).
const auditStepShare = 1.0 / 16

// stateDistance is how far got is from want, relative to how far want
// moved from before (an initial state must equal its remade one: moved
// by nothing, any distance is too far).
func stateDistance(got, want, before mlpState) (rel, abs float64) {
	var diff, step float64
	// Part by part: a training state is millions of values, and one flat
	// copy of each of the three cost more than the sums.
	for _, parts := range [][3][][]float64{{got.w, want.w, before.w}, {got.b, want.b, before.b}, {got.mw, want.mw, before.mw}, {got.mb, want.mb, before.mb}} {
		for l := range parts[1] {
			g, w, b := parts[0][l], parts[1][l], parts[2][l]
			for j := range w {
				d := g[j] - w[j]
				diff += d * d
				abs = math.Max(abs, math.Abs(d))
				s := w[j] - b[j]
				step += s * s
			}
		}
	}
	if step == 0 {
		if diff == 0 {
			return 0, 0
		}
		return math.Inf(1), abs
	}
	return math.Sqrt(diff / step), abs
}

// epochOrder is d5harness.Training.batches's order of epoch's samples.
func epochOrder(seed int64, epoch, n int) []int {
	return sortedOrder(Uniform(StreamKey(seed, "training", "epoch", epoch), n))
}

// trainEpoch is the runner's float64 recomputation of one epoch of the
// task's training from state s (trainSteps of all its steps).
func trainEpoch(t *Task, d *dataset, s mlpState, seed int64, epoch int, pace func()) mlpState {
	return trainSteps(t, d, s, seed, epoch, 0, (d.nTrain+t.BatchSize-1)/t.BatchSize, pace)
}

// trainSteps is the runner's float64 recomputation of steps [from, to) of
// an epoch of the task's training from state s: minibatches in the
// harness's order, the batch's mean cross-entropy, and torch.optim.SGD's
// momentum step (buf = momentum buf + grad; w -= lr buf). pace is called
// before each minibatch.
func trainSteps(t *Task, d *dataset, s mlpState, seed int64, epoch, from, to int, pace func()) mlpState {
	return trainStepsGated(t, d, s, seed, epoch, from, to, pace, nil)
}

// trainStepsGated is trainSteps with g's ReLU units on the edge: it
// records them, or turns the gradient's gate of those g names the other
// way (see reluGates).
func trainStepsGated(t *Task, d *dataset, s mlpState, seed int64, epoch, from, to int, pace func(), g *reluGates) mlpState {
	layers := t.Layers
	nl := len(layers) - 1
	s = mlpState{w: cloneAll(s.w), b: cloneAll(s.b), mw: cloneAll(s.mw), mb: cloneAll(s.mb)}
	order := epochOrder(seed, epoch, d.nTrain)
	for step, start := 0, from*t.BatchSize; start < min(to*t.BatchSize, d.nTrain); step, start = step+1, start+t.BatchSize {
		pace()
		idx := order[start:min(start+t.BatchSize, d.nTrain)]
		bs := len(idx)
		// Forward: h[0] the inputs, h[l+1] layer l's output (ReLU but the last).
		h := make([][]float64, nl+1)
		h[0] = make([]float64, bs*layers[0])
		for r, i := range idx {
			copy(h[0][r*layers[0]:], d.xTrain[i*layers[0]:(i+1)*layers[0]])
		}
		for l := range nl {
			h[l+1] = dense(h[l], s.w[l], s.b[l], bs, layers[l], layers[l+1], l < nl-1)
			if g != nil && g.record && l < nl-1 {
				g.findEdges(step, l+1, h[l], s.w[l], s.b[l], bs, layers[l], layers[l+1])
			}
		}
		// The mean cross-entropy's gradient at the logits.
		dz := make([]float64, bs*layers[nl])
		for r := range bs {
			z := h[nl][r*layers[nl] : (r+1)*layers[nl]]
			m := math.Inf(-1)
			for _, v := range z {
				m = math.Max(m, v)
			}
			var sum float64
			for _, v := range z {
				sum += math.Exp(v - m)
			}
			for c, v := range z {
				p := math.Exp(v-m) / sum
				if c == d.yTrain[idx[r]] {
					p--
				}
				dz[r*layers[nl]+c] = p / float64(bs)
			}
		}
		// Backward, layer by layer, and the step.
		for l := nl - 1; l >= 0; l-- {
			in, out := layers[l], layers[l+1]
			gw, gb := make([]float64, in*out), make([]float64, out)
			var dh []float64
			if l > 0 {
				dh = make([]float64, bs*in)
			}
			x, w := h[l], s.w[l]
			// gw = dzᵀ x, dh = dz w.
			gemm(blas.Trans, blas.NoTrans, out, in, bs, dz, out, x, in, gw, in)
			for r := range bs {
				for o, g := range dz[r*out : (r+1)*out] {
					gb[o] += g
				}
			}
			if dh != nil {
				gemm(blas.NoTrans, blas.NoTrans, bs, in, out, dz, out, w, in, dh, in)
				if g != nil && g.record {
					g.weigh(step, l, dh, h[l-1], in)
				}
				for j, v := range h[l] {
					if (v <= 0) != g.flipped(step, l, j) { // ReLU's gradient: h[l] is a ReLU output
						dh[j] = 0
					}
				}
			}
			momentumStep(s.w[l], s.mw[l], gw, t.LR, t.Momentum)
			momentumStep(s.b[l], s.mb[l], gb, t.LR, t.Momentum)
			dz = dh
		}
	}
	return s
}

// dense is a fully connected layer over a batch: x (bs x in) times w (out x
// in) transposed, plus b, with ReLU where relu.
func dense(x, w, b []float64, bs, in, out int, relu bool) []float64 {
	y := make([]float64, bs*out)
	gemm(blas.NoTrans, blas.Trans, bs, out, in, x, in, w, in, y, out)
	for r := range bs {
		row := y[r*out : (r+1)*out]
		for o := range row {
			v := row[o] + b[o]
			if relu && v < 0 {
				v = 0
			}
			row[o] = v
		}
	}
	return y
}

// gemm is c = op(a) op(b), a and b row-major with leading dimensions lda
// and ldb, op(a) m x k and op(b) k x n, on one CPU: c in tiles of
// gemmTileRows x gemmTileCols, each one Dgemm call that gonum computes in
// serial (it splits a product of four of its 64 x 64 blocks or more over
// every CPU). The runner audits while a run starts up beside it, and
// leaves that run a CPU of its own.
func gemm(ta, tb blas.Transpose, m, n, k int, a []float64, lda int, b []float64, ldb int, c []float64, ldc int) {
	impl := blas64.Implementation()
	for i := 0; i < m; i += gemmTileRows {
		ai := i // where row i of op(a) starts
		if ta == blas.NoTrans {
			ai *= lda
		}
		for j := 0; j < n; j += gemmTileCols {
			bj := j // where column j of op(b) starts
			if tb != blas.NoTrans {
				bj *= ldb
			}
			impl.Dgemm(ta, tb, min(gemmTileRows, m-i), min(gemmTileCols, n-j), k, 1, a[ai:], lda, b[bj:], ldb, 0, c[i*ldc+j:], ldc)
		}
	}
}

const gemmTileRows, gemmTileCols = 64, 192

// momentumStep is torch.optim.SGD's step with momentum, no dampening,
// weight decay or Nesterov: buf = momentum buf + grad; p -= lr buf.
func momentumStep(p, buf, grad []float64, lr, momentum float64) {
	for j, g := range grad {
		buf[j] = momentum*buf[j] + g
		p[j] -= lr * buf[j]
	}
}

func cloneAll(v [][]float64) [][]float64 {
	out := make([][]float64, len(v))
	for i, x := range v {
		out[i] = append([]float64(nil), x...)
	}
	return out
}

// testAccuracy is the share of the test split the state's weights classify
// right: the runner's own measure of a training run's quality.
func testAccuracy(t *Task, d *dataset, s mlpState) float64 {
	nl := len(t.Layers) - 1
	h := d.xTest
	for l := range nl {
		h = dense(h, s.w[l], s.b[l], d.nTest, t.Layers[l], t.Layers[l+1], l < nl-1)
	}
	right := 0
	classes := t.Layers[nl]
	for r := range d.nTest {
		z := h[r*classes : (r+1)*classes]
		best := 0
		for c := range z {
			if z[c] > z[best] {
				best = c
			}
		}
		if best == d.yTest[r] {
			right++
		}
	}
	return float64(right) / float64(d.nTest)
}

// number reads a recipe value that must be a finite number.
func number(v any) (float64, bool) {
	switch n := v.(type) {
	case int:
		return float64(n), true
	case int64:
		return float64(n), true
	case float64:
		return n, !math.IsNaN(n) && !math.IsInf(n, 0)
	}
	return 0, false
}
