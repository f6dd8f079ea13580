package harness

import (
	"crypto/rand"
	"encoding/binary"
	"encoding/json"
	"math"
	"sync"

	"gonum.org/v1/gonum/blas"
	"gonum.org/v1/gonum/blas/blas64"

	d5list "github.com/deep500/d5list"
	"github.com/deep500/d5list/workloads"
)

// Harness kinds (Benchmark.Verify.Harness).
const (
	KindOperator     = "operator"
	KindMLPInference = "mlp-inference"
)

// Task is the work a harness benchmark gives every run, as the runner
// hands it over in $D5_TASK: the benchmark's, never the bundle's, and no
// secret (the seed comes through the gate).
type Task struct {
	Kind      string           `json:"kind"` // gemm, conv2d or mlp-inference
	Shapes    []map[string]int `json:"shapes,omitempty"`
	Calls     int              `json:"calls,omitempty"` // timed calls per shape, after one warm-up
	Layers    []int            `json:"layers,omitempty"`
	Samples   int              `json:"samples,omitempty"`
	BatchSize int              `json:"batch_size,omitempty"` // a training task's is the global batch
	Epochs    int              `json:"epochs,omitempty"`
	LR        float64          `json:"lr,omitempty"`
	Momentum  float64          `json:"momentum,omitempty"`
	Target    float64          `json:"target,omitempty"` // the quality a training run's status is judged by
	// StateEvery is how many steps of a training epoch pass between two
	// states the run hands the runner (and the last step of each epoch).
	StateEvery int `json:"state_every,omitempty"`

	sections []section
	// trainSamples is a training task's training split's size.
	trainSamples int
	// freshRuns is how many runs of a job rank, the runs whose calls the
	// audit samples (Benchmark.FreshRunCount); the run is not told.
	freshRuns int
}

// section is one committed stream of calls, as the audit checks it.
type section struct {
	name    string
	calls   int             // committed calls (a shape's warm-up included)
	outSize func(i int) int // the bytes of call i's output
	digest  func(out []byte) uint64
	// elem is the bytes of one value of an output: 8 (float64) or 4
	// (float32). Every revealed value must be finite.
	elem int
	// check recomputes call i (its input made from the digests of the
	// calls before it, or from the revealed output of another call) with
	// the runner's reference, and returns the revealed output's error
	// against it; ok is false where it is out of the benchmark's
	// tolerance.
	check func(seed int64, i int, digests, out []byte, revealed func(j int) ([]byte, bool)) (rel, abs float64, ok bool)
	// project, where set, checks call i as check does but by a random
	// projection of the output (Freivalds): the runner's product with a
	// vector instead of its whole product. Past fullChecks, it replaces
	// check; rel is the projection's relative error.
	project func(seed int64, i int, digests, out []byte) (rel float64, ok bool)
	// final, where set, is the runner's measure of the quality of the
	// last call's revealed output (a training run's test accuracy).
	final func(out []byte) (float64, bool)
}

// callCheck is one checked call: its output's error against the runner's
// reference, and whether the section's rule let it pass.
type callCheck struct {
	call     int
	rel, abs float64
	ok       bool
	// projected: checked by a random projection (section.project), whose
	// error is not the output's own.
	projected bool
}

// JSON is the task as $D5_TASK carries it.
func (t *Task) JSON() string {
	b, err := json.Marshal(t)
	if err != nil {
		panic(err) // plain fields only
	}
	return string(b)
}

// maxCalls bounds the calls of a section: its digests are what the run
// reveals and the runner reads in full (8 MiB at most).
const maxCalls = 1 << 20

// For returns the harness task of bench as recipe r sets it, or nil for a
// benchmark whose competitor's code times itself.
func For(bench *d5list.Benchmark, r *d5list.Recipe) (*Task, error) {
	var t *Task
	var err error
	switch bench.Verify.Harness {
	case "":
		return nil, nil
	case KindOperator:
		t, err = operatorTask(bench, r)
	case KindMLPInference:
		t, err = inferenceTask(bench, r)
	case KindMLPTraining:
		t, err = trainingTask(bench, r)
	default:
		return nil, d5list.Errorf(d5list.EINVALID, "benchmark %s: verify.harness %q is not one the runner has (%s, %s, %s)",
			bench.ID, bench.Verify.Harness, KindOperator, KindMLPInference, KindMLPTraining)
	}
	if err != nil {
		return nil, err
	}
	t.freshRuns = bench.FreshRunCount()
	for _, s := range t.sections {
		if s.calls > maxCalls {
			return nil, d5list.Errorf(d5list.EINVALID, "benchmark %s: %s makes %d calls, more than the harness's %d", bench.ID, s.name, s.calls, maxCalls)
		}
	}
	return t, nil
}

func operatorTask(bench *d5list.Benchmark, r *d5list.Recipe) (*Task, error) {
	op, _ := bench.Division.Fixed["op"].(string)
	switch op {
	case "gemm":
		ot, err := workloads.GEMMTask(bench, r)
		if err != nil {
			return nil, err
		}
		t := &Task{Kind: op, Calls: ot.Repeats}
		for _, s := range ot.Shapes {
			t.Shapes = append(t.Shapes, map[string]int{"m": s.M, "n": s.N, "k": s.K})
			t.sections = append(t.sections, gemmSection(s, ot.Repeats+1, ot.Tolerance))
		}
		return t, nil
	case "conv2d":
		ot, err := workloads.Conv2DTask(bench, r)
		if err != nil {
			return nil, err
		}
		t := &Task{Kind: op, Calls: ot.Repeats}
		for _, s := range ot.Shapes {
			t.Shapes = append(t.Shapes, map[string]int{"n": s.N, "c": s.C, "h": s.H, "w": s.W, "k": s.K, "r": s.R, "s": s.S, "pad": s.Pad, "stride": s.Stride})
			t.sections = append(t.sections, conv2DSection(s, ot.Repeats+1, ot.Tolerance))
		}
		return t, nil
	}
	return nil, d5list.Errorf(d5list.EINVALID, "benchmark %s: the operator harness runs fixed op gemm or conv2d, not %q", bench.ID, op)
}

// gemmSection is one GEMM shape: C = A diag(d) B with A and B from the
// seed and d, B's row scales, fresh from the chain at every call.
func gemmSection(s workloads.GEMMShape, calls int, tolerance float64) section {
	name := "gemm:" + s.String()
	// A and B come from the seed alone: made once for all the checks of
	// a run (the audits of a job's runs go one after another).
	var mu sync.Mutex
	var baseSeed int64
	var baseA, baseB []float64
	base := func(seed int64) (a, b []float64) {
		mu.Lock()
		defer mu.Unlock()
		if baseA == nil || baseSeed != seed {
			baseSeed = seed
			baseA = signed(Uniform(StreamKey(seed, name, "A"), s.M*s.K))
			baseB = signed(Uniform(StreamKey(seed, name, "B"), s.K*s.N))
		}
		return baseA, baseB
	}
	// scales are the factors of B's rows at call i.
	scales := func(seed int64, i int, digests []byte) []float64 {
		d := Uniform(chainKey(seed, name, i, digests), s.K)
		for row := range d {
			d[row] += 0.5
		}
		return d
	}
	return section{name: name, calls: calls, outSize: fixedSize(s.M * s.N * 8), digest: fold, elem: 8,
		check: func(seed int64, i int, digests, out []byte, _ func(int) ([]byte, bool)) (float64, float64, bool) {
			a, b0 := base(seed)
			b := make([]float64, len(b0))
			for row, scale := range scales(seed, i, digests) {
				for col := range s.N {
					b[row*s.N+col] = b0[row*s.N+col] * scale
				}
			}
			// gonum's product in serial tiles (train.go's gemm): pure Go,
			// another way than the run's BLAS, and ten times the naive
			// loop's pace at these shapes.
			ref := make([]float64, s.M*s.N)
			gemm(blas.NoTrans, blas.NoTrans, s.M, s.N, s.K, a, s.K, b, s.N, ref, s.N)
			rel, abs := workloads.CompareOutputs(float64s(out), ref)
			return rel, abs, rel <= tolerance
		},
		// C r against A (diag(d) (B r)), for r drawn now: M·K + K·N + M·N
		// products instead of M·N·K.
		project: func(seed int64, i int, digests, out []byte) (float64, bool) {
			a, b := base(seed)
			d := scales(seed, i, digests)
			c := float64s(out)
			rel := 0.0
			for range projections {
				r := projection(s.N)
				br, ref, got := make([]float64, s.K), make([]float64, s.M), make([]float64, s.M)
				gemv(s.K, s.N, b, r, br)
				for row := range br {
					br[row] *= d[row]
				}
				gemv(s.M, s.K, a, br, ref)
				gemv(s.M, s.N, c, r, got)
				e, _ := workloads.CompareOutputs(got, ref)
				rel = math.Max(rel, e)
			}
			return rel, rel <= tolerance
		}}
}

// conv2DSection is one convolution shape: the input and the filters from
// the seed, every filter weight scaled afresh from the chain at every call.
func conv2DSection(s workloads.Conv2DShape, calls int, tolerance float64) section {
	name := "conv2d:" + s.String()
	p, q := s.OutSize()
	operands := func(seed int64, i int, digests []byte) (in, filt []float64) {
		in = signed(Uniform(StreamKey(seed, name, "x"), s.N*s.C*s.H*s.W))
		filt = signed(Uniform(StreamKey(seed, name, "w"), s.K*s.C*s.R*s.S))
		for j, u := range Uniform(chainKey(seed, name, i, digests), len(filt)) {
			filt[j] *= 0.5 + u
		}
		return in, filt
	}
	return section{name: name, calls: calls, outSize: fixedSize(s.N * s.K * p * q * 8), digest: fold, elem: 8,
		check: func(seed int64, i int, digests, out []byte, _ func(int) ([]byte, bool)) (float64, float64, bool) {
			in, filt := operands(seed, i, digests)
			ref := make([]float64, s.N*s.K*p*q)
			workloads.Conv2DReference(s, in, filt, ref)
			rel, abs := workloads.CompareOutputs(float64s(out), ref)
			return rel, abs, rel <= tolerance
		},
		// The output channels summed with weights z drawn now, against the
		// input convolved with the one filter Σ z_k w_k: a convolution of
		// one output channel instead of K.
		project: func(seed int64, i int, digests, out []byte) (float64, bool) {
			in, filt := operands(seed, i, digests)
			y := float64s(out)
			one := s
			one.K = 1
			crs, pq := s.C*s.R*s.S, p*q
			rel := 0.0
			for range projections {
				z := projection(s.K)
				combined := make([]float64, crs)
				for k, zk := range z {
					for j := range crs {
						combined[j] += zk * filt[k*crs+j]
					}
				}
				ref := make([]float64, s.N*pq)
				workloads.Conv2DReference(one, in, combined, ref)
				got := make([]float64, s.N*pq)
				for img := range s.N {
					for k, zk := range z {
						row := y[(img*s.K+k)*pq : (img*s.K+k+1)*pq]
						for j, v := range row {
							got[img*pq+j] += zk * v
						}
					}
				}
				e, _ := workloads.CompareOutputs(got, ref)
				rel = math.Max(rel, e)
			}
			return rel, rel <= tolerance
		}}
}

// inputsAndClasses are the data sets an inference task knows: their
// inputs per sample and their classes.
var inputsAndClasses = map[string][2]int{"uci-digits": {64, 10}}

// inferenceTolerance is how far a run's float32 logits may be from the
// runner's float64 forward pass of the same float32 weights and inputs,
// relative to the batch's largest logit: float32 rounding through three
// layers of a few hundred sums is about 1e-5 of it.
const inferenceTolerance = 1e-3

func inferenceTask(bench *d5list.Benchmark, r *d5list.Recipe) (*Task, error) {
	dataset, _ := bench.Division.Fixed["dataset"].(string)
	layers, err := mlpLayers(bench, dataset)
	if err != nil {
		return nil, err
	}
	samples, ok := bench.FixedSamples()
	if !ok || samples > 1e8 || samples != math.Trunc(samples) {
		return nil, d5list.Errorf(d5list.EINVALID, "benchmark %s: the inference harness needs a fixed whole number of samples, at most 1e8", bench.ID)
	}
	bv, ok := r.Mutable["batch_size"]
	if !ok {
		bv = bench.Division.Mutable["batch_size"]
	}
	batch, ok := wholeNumber(bv)
	if !ok || batch < 1 || float64(batch) > samples {
		return nil, d5list.Errorf(d5list.EINVALID, "recipe: mutable batch_size must be a whole number from 1 to the benchmark's %v samples, not %v", samples, bv)
	}
	t := &Task{Kind: KindMLPInference, Layers: layers, Samples: int(samples), BatchSize: batch}
	t.sections = []section{inferenceSection(layers, int(samples), batch)}
	return t, nil
}

// inferenceSection is the batches of an inference run: each batch's
// inputs fresh from the chain, the network fixed (MLPWeights).
func inferenceSection(layers []int, samples, batch int) section {
	const name = "mlp-inference"
	batches := (samples + batch - 1) / batch
	classes := layers[len(layers)-1]
	return section{name: name, calls: batches, digest: shaDigest, elem: 4,
		outSize: func(i int) int { return min(batch, samples-i*batch) * classes * 4 },
		check: func(seed int64, i int, digests, out []byte, _ func(int) ([]byte, bool)) (float64, float64, bool) {
			count := min(batch, samples-i*batch)
			x := Uniform(chainKey(seed, name, i, digests), count*layers[0])
			for j, v := range x {
				x[j] = float64(float32(v))
			}
			ref := mlpForward(MLPWeights(layers), x, count)
			got := float32s(out)
			var abs, scale float64
			for j, w := range ref {
				abs = math.Max(abs, math.Abs(float64(got[j])-w))
				scale = math.Max(scale, math.Abs(w))
			}
			rel := abs / math.Max(scale, 1e-30)
			return rel, abs, rel <= inferenceTolerance
		}}
}

func fixedSize(n int) func(int) int { return func(int) int { return n } }

// gemv is y = a x, a row-major m x n: gonum's, on one CPU.
func gemv(m, n int, a, x, y []float64) {
	blas64.Implementation().Dgemv(blas.NoTrans, m, n, 1, a, n, x, 1, 0, y, 1)
}

// projections is how many random vectors a projected check draws: an
// output off by E passes one only where E r is within the tolerance, which
// a vector of independent uniform signs and magnitudes makes unlikely for
// any E the tolerance does not already allow, and two make it the square.
const projections = 2

// projection is a vector of n values uniform in [-1, 1), from the
// operating system's random source: drawn after the run revealed its
// output, so that no output can be fitted to it.
func projection(n int) []float64 {
	var key [8]byte
	if _, err := rand.Read(key[:]); err != nil {
		panic(err) // the OS's random source does not fail
	}
	return signed(Uniform(binary.LittleEndian.Uint64(key[:]), n))
}

// wholeNumber reads a recipe value that must be a whole number.
func wholeNumber(v any) (int, bool) {
	switch n := v.(type) {
	case int:
		return n, true
	case int64:
		return int(n), true
	case float64:
		if n == math.Trunc(n) && math.Abs(n) < 1<<31 {
			return int(n), true
		}
	}
	return 0, false
}
