package workloads

import (
	"context"
	"fmt"
	"io"
	"math"
	"sort"
	"strings"
	"time"

	d5list "github.com/deep500/d5list"
	"github.com/deep500/d5list/mllog"
)

// MLLOG keys of the Level 0 (operator) and Level 1 (inference) workloads:
// the metric names the catalogue ranks and the verifier derives.
const (
	KeyOpTime       = d5list.MetricOpTime
	KeyOpGFLOPS     = d5list.MetricOpGFLOPS
	KeyOpRelL2Error = d5list.MetricOpRelL2Error
	KeyOpMaxError   = d5list.MetricOpMaxError
	KeyLatencyP50   = d5list.MetricLatencyP50
	KeyLatencyP99   = d5list.MetricLatencyP99
)

// Defaults of the operator workloads.
const (
	DefaultOpRepeats   = 5
	DefaultOpTolerance = 1e-12
)

// GEMMShape is C[M x N] = A[M x K] B[K x N].
type GEMMShape struct{ M, N, K int }

func (s GEMMShape) String() string { return fmt.Sprintf("%dx%dx%d", s.M, s.N, s.K) }

// Conv2DShape follows DeepBench's naming: an N x C x H x W input, K filters
// of C x R x S, zero padding Pad and stride Stride in both directions.
type Conv2DShape struct{ N, C, H, W, K, R, S, Pad, Stride int }

func (s Conv2DShape) String() string {
	return fmt.Sprintf("N%d_C%d_H%d_W%d_K%d_R%d_S%d_pad%d_stride%d", s.N, s.C, s.H, s.W, s.K, s.R, s.S, s.Pad, s.Stride)
}

// OutSize is the output's height and width.
func (s Conv2DShape) OutSize() (int, int) {
	return (s.H+2*s.Pad-s.R)/s.Stride + 1, (s.W+2*s.Pad-s.S)/s.Stride + 1
}

// DeepBench-like small shapes: a recurrent-layer GEMM (DeepBench's
// 1760 x 16 x 1760), a fully connected layer, and two 3x3 convolutions of a
// small CNN.
var (
	DefaultGEMMShapes   = []GEMMShape{{M: 1760, N: 16, K: 1760}, {M: 512, N: 64, K: 1024}}
	DefaultConv2DShapes = []Conv2DShape{
		{N: 8, C: 16, H: 28, W: 28, K: 32, R: 3, S: 3, Pad: 1, Stride: 1},
		{N: 8, C: 32, H: 14, W: 14, K: 64, R: 3, S: 3, Pad: 1, Stride: 2},
	}
)

// gemmBlocked computes C = A B with i-k-j loops, which stream rows of B and
// C through the cache instead of walking B by columns, and unrolls k by four
// so each C element is loaded and stored a quarter as often. The unrolling
// sums in a different order from the reference, which is what the error
// metrics then measure.
func gemmBlocked(a, b, c []float64, m, n, k int) {
	clear(c)
	for i := range m {
		crow := c[i*n : (i+1)*n]
		arow := a[i*k : (i+1)*k]
		p := 0
		for ; p+4 <= k; p += 4 {
			a0, a1, a2, a3 := arow[p], arow[p+1], arow[p+2], arow[p+3]
			b0, b1, b2, b3 := b[p*n:(p+1)*n], b[(p+1)*n:(p+2)*n], b[(p+2)*n:(p+3)*n], b[(p+3)*n:(p+4)*n]
			for j := range crow {
				crow[j] += (float64(a0*b0[j]) + float64(a1*b1[j])) + (float64(a2*b2[j]) + float64(a3*b3[j]))
			}
		}
		for ; p < k; p++ {
			aip := arow[p]
			brow := b[p*n : (p+1)*n]
			for j, bpj := range brow {
				crow[j] += float64(aip * bpj)
			}
		}
	}
}

// GEMMReference is the textbook triple loop, one dot product per output:
// the reference every GEMM, the portal's own and an audited competitor's,
// is held to.
func GEMMReference(a, b, c []float64, m, n, k int) {
	for i := range m {
		for j := range n {
			var s float64
			for p := range k {
				s += float64(a[i*k+p] * b[p*n+j])
			}
			c[i*n+j] = s
		}
	}
}

// conv2DIm2col lowers the convolution to one GEMM per image: the filter
// matrix (K x CRS) times the patch matrix (CRS x PQ).
func conv2DIm2col(s Conv2DShape, in, filt, out, cols []float64) {
	p, q := s.OutSize()
	crs := s.C * s.R * s.S
	for img := range s.N {
		x := in[img*s.C*s.H*s.W:]
		for c := range s.C {
			for r := range s.R {
				for t := range s.S {
					row := cols[((c*s.R+r)*s.S+t)*p*q:]
					for oy := range p {
						iy := oy*s.Stride - s.Pad + r
						for ox := range q {
							ix := ox*s.Stride - s.Pad + t
							v := 0.0
							if iy >= 0 && iy < s.H && ix >= 0 && ix < s.W {
								v = x[(c*s.H+iy)*s.W+ix]
							}
							row[oy*q+ox] = v
						}
					}
				}
			}
		}
		gemmBlocked(filt, cols[:crs*p*q], out[img*s.K*p*q:(img+1)*s.K*p*q], s.K, p*q, crs)
	}
}

// Conv2DReference is the direct seven-loop convolution (NCHW input, KCRS
// filters): the reference every convolution is held to.
func Conv2DReference(s Conv2DShape, in, filt, out []float64) {
	p, q := s.OutSize()
	for img := range s.N {
		for k := range s.K {
			for oy := range p {
				for ox := range q {
					var sum float64
					for c := range s.C {
						for r := range s.R {
							iy := oy*s.Stride - s.Pad + r
							if iy < 0 || iy >= s.H {
								continue
							}
							for t := range s.S {
								ix := ox*s.Stride - s.Pad + t
								if ix < 0 || ix >= s.W {
									continue
								}
								sum += float64(in[((img*s.C+c)*s.H+iy)*s.W+ix] * filt[((k*s.C+c)*s.R+r)*s.S+t])
							}
						}
					}
					out[((img*s.K+k)*p+oy)*q+ox] = sum
				}
			}
		}
	}
}

// CompareOutputs returns the relative L2 error ||got-want|| / ||want|| and
// the largest absolute difference.
func CompareOutputs(got, want []float64) (relL2, maxAbs float64) {
	var diff2, norm2 float64
	for i, w := range want {
		d := got[i] - w
		diff2 += float64(d * d)
		norm2 += float64(w * w)
		maxAbs = math.Max(maxAbs, math.Abs(d))
	}
	if norm2 == 0 {
		return math.Sqrt(diff2), maxAbs
	}
	return math.Sqrt(diff2 / norm2), maxAbs
}

func randomFill(r *rng, n int) []float64 {
	v := make([]float64, n)
	for i := range v {
		v[i] = r.uniform(-1, 1)
	}
	return v
}

// medianMS runs fn once to warm caches, then repeats times, and returns the
// median wall time in milliseconds. It checks ctx between reruns.
func medianMS(ctx context.Context, repeats int, fn func()) (float64, error) {
	fn()
	times := make([]float64, repeats)
	for i := range times {
		if err := ctx.Err(); err != nil {
			return 0, err
		}
		start := time.Now()
		fn()
		times[i] = float64(time.Since(start).Nanoseconds()) / 1e6
	}
	return quantile(times, 0.5), nil
}

// quantile returns the q-quantile of xs by linear interpolation between
// order statistics (sorting a copy).
func quantile(xs []float64, q float64) float64 {
	s := append([]float64(nil), xs...)
	sort.Float64s(s)
	pos := q * float64(len(s)-1)
	lo := int(math.Floor(pos))
	if lo+1 >= len(s) {
		return s[len(s)-1]
	}
	return s[lo] + (pos-float64(lo))*(s[lo+1]-s[lo])
}

// opCase is one shape of an operator workload: run times the optimised
// kernel, check compares it with the reference.
type opCase struct {
	name  string
	flops float64
	run   func()
	check func() (relL2, maxAbs float64)
}

// runOps writes one operator run: for every case its median time, GFLOP/s
// and errors against the reference, between run_start and run_stop. The
// status is "aborted" when some error exceeds tolerance.
func runOps(ctx context.Context, benchmark, op string, seed int64, repeats int, tolerance float64, cases func(r *rng) []opCase, out io.Writer) error {
	w := mllog.NewWriter(out, nil)
	w.Start(mllog.KeyInitStart, nil, nil)
	w.Point(mllog.KeySubmissionBenchmark, benchmark, nil)
	w.Point(mllog.KeySeed, seed, nil)
	all := cases(newRNG(uint64(seed), 3))
	w.End(mllog.KeyInitStop, nil, nil)
	w.Start(mllog.KeyRunStart, nil, nil)
	status := statusSuccess
	for _, c := range all {
		meta := func() map[string]any { return map[string]any{"op": op, "shape": c.name} }
		ms, err := medianMS(ctx, repeats, c.run)
		if err != nil {
			return err
		}
		relL2, maxAbs := c.check()
		if !(relL2 <= tolerance) {
			status = statusAborted
		}
		w.Point(KeyOpTime, ms, meta())
		w.Point(KeyOpGFLOPS, c.flops/ms/1e6, meta())
		w.Point(KeyOpRelL2Error, relL2, meta())
		w.Point(KeyOpMaxError, maxAbs, meta())
	}
	w.End(mllog.KeyRunStop, nil, map[string]any{keyStatus: status})
	return w.Err()
}

func gemmCases(shapes []GEMMShape) func(r *rng) []opCase {
	return func(r *rng) []opCase {
		cases := make([]opCase, 0, len(shapes))
		for _, s := range shapes {
			a, b := randomFill(r, s.M*s.K), randomFill(r, s.K*s.N)
			c, ref := make([]float64, s.M*s.N), make([]float64, s.M*s.N)
			cases = append(cases, opCase{
				name:  s.String(),
				flops: 2 * float64(s.M) * float64(s.N) * float64(s.K),
				run:   func() { gemmBlocked(a, b, c, s.M, s.N, s.K) },
				check: func() (float64, float64) {
					GEMMReference(a, b, ref, s.M, s.N, s.K)
					return CompareOutputs(c, ref)
				},
			})
		}
		return cases
	}
}

func conv2DCases(shapes []Conv2DShape) func(r *rng) []opCase {
	return func(r *rng) []opCase {
		cases := make([]opCase, 0, len(shapes))
		for _, s := range shapes {
			p, q := s.OutSize()
			in, filt := randomFill(r, s.N*s.C*s.H*s.W), randomFill(r, s.K*s.C*s.R*s.S)
			out, ref := make([]float64, s.N*s.K*p*q), make([]float64, s.N*s.K*p*q)
			cols := make([]float64, s.C*s.R*s.S*p*q)
			cases = append(cases, opCase{
				name:  s.String(),
				flops: 2 * float64(s.N*s.K*p*q) * float64(s.C*s.R*s.S),
				run:   func() { conv2DIm2col(s, in, filt, out, cols) },
				check: func() (float64, float64) {
					Conv2DReference(s, in, filt, ref)
					return CompareOutputs(out, ref)
				},
			})
		}
		return cases
	}
}

// opSettings reads the keys every operator workload shares: mutable
// `repeats` (timed reruns, median reported) and `tolerance` (largest
// acceptable relative L2 error).
func opSettings(rr recipeReader) (repeats int, tolerance float64, err error) {
	if repeats, err = rr.intKey("repeats", DefaultOpRepeats); err != nil {
		return 0, 0, err
	}
	tolerance = DefaultOpTolerance
	if v, field, ok := rr.get("tolerance"); ok {
		f, isNum := asFloat(v)
		if !isNum || !(f >= 0) || math.IsInf(f, 0) {
			return 0, 0, invalid(field, "must be a non-negative number, got %s", show(v))
		}
		tolerance = f
	}
	return repeats, tolerance, nil
}

// shapeList reads `shapes`: a list of mappings whose keys are exactly the
// dimension names (extra keys fill with defaults: for convolutions pad 0
// and stride 1).
func (rr recipeReader) shapeList(required []string, optional map[string]int) ([]map[string]int, bool, error) {
	v, field, ok := rr.get("shapes")
	if !ok {
		return nil, false, nil
	}
	list, isList := v.([]any)
	if !isList || len(list) == 0 {
		return nil, false, invalid(field, "must be a non-empty list of shapes, got %s", show(v))
	}
	shapes := make([]map[string]int, len(list))
	for i, item := range list {
		itemField := fmt.Sprintf("%s[%d]", field, i)
		m, isMap := item.(map[string]any)
		if !isMap {
			return nil, false, invalid(itemField, "must be a mapping with keys %s, got %s", strings.Join(required, ", "), show(item))
		}
		shape := map[string]int{}
		for k, d := range optional {
			shape[k] = d
		}
		for _, k := range required {
			if _, ok := m[k]; !ok {
				return nil, false, invalid(itemField+"."+k, "missing")
			}
		}
		keys := make([]string, 0, len(m))
		for k := range m {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			_, opt := optional[k]
			if !contains(required, k) && !opt {
				return nil, false, invalid(itemField+"."+k, "unknown key")
			}
			n, err := asPositiveInt(m[k], itemField+"."+k)
			if k == "pad" && err != nil {
				if f, isNum := asFloat(m[k]); isNum && f == 0 {
					n, err = 0, nil
				}
			}
			if err != nil {
				return nil, false, err
			}
			shape[k] = n
		}
		shapes[i] = shape
	}
	return shapes, true, nil
}

// maxOpElements bounds one operand so a recipe cannot make a runner
// allocate without limit (2^24 float64 = 128 MiB).
const maxOpElements = 1 << 24

// opPlan is an operator workload's reading of its recipe: everything a run
// needs but the seed.
type opPlan struct {
	repeats   int
	tolerance float64
	cases     func(r *rng) []opCase
	shapes    []string // the cases' names, in order
}

func shapeNames[S fmt.Stringer](shapes []S) []string {
	names := make([]string, len(shapes))
	for i, s := range shapes {
		names[i] = s.String()
	}
	return names
}

func gemmWorkload(ctx context.Context, b *d5list.Benchmark, r *d5list.Recipe, seed int64, out io.Writer) error {
	p, err := gemmPlan(b, r)
	if err != nil {
		return err
	}
	return runOps(ctx, benchmarkID(b, "l0-gemm-cpu"), "gemm", seed, p.repeats, p.tolerance, p.cases, out)
}

func gemmPlan(b *d5list.Benchmark, r *d5list.Recipe) (opPlan, error) {
	t, err := GEMMTask(b, r)
	if err != nil {
		return opPlan{}, err
	}
	return opPlan{repeats: t.Repeats, tolerance: t.Tolerance, cases: gemmCases(t.Shapes), shapes: shapeNames(t.Shapes)}, nil
}

// OpTask is what an operator benchmark asks of a run, read from its recipe:
// the shapes, the timed calls per shape and the error tolerance.
type OpTask[S fmt.Stringer] struct {
	Shapes    []S
	Repeats   int
	Tolerance float64
}

// GEMMTask reads a GEMM benchmark's task (fixed op: gemm, shapes of m, n
// and k, repeats), as the builtin workload runs it and a harness audits it.
func GEMMTask(b *d5list.Benchmark, r *d5list.Recipe) (OpTask[GEMMShape], error) {
	rr := recipeReader{b: b, r: r}
	if _, err := rr.choice("op", "gemm", "gemm"); err != nil {
		return OpTask[GEMMShape]{}, err
	}
	repeats, tolerance, err := opSettings(rr)
	if err != nil {
		return OpTask[GEMMShape]{}, err
	}
	shapes := DefaultGEMMShapes
	if list, ok, err := rr.shapeList([]string{"m", "n", "k"}, nil); err != nil {
		return OpTask[GEMMShape]{}, err
	} else if ok {
		shapes = make([]GEMMShape, len(list))
		for i, s := range list {
			shapes[i] = GEMMShape{M: s["m"], N: s["n"], K: s["k"]}
			if s["m"]*s["k"] > maxOpElements || s["k"]*s["n"] > maxOpElements || s["m"]*s["n"] > maxOpElements {
				_, field, _ := rr.get("shapes")
				return OpTask[GEMMShape]{}, invalid(fmt.Sprintf("%s[%d]", field, i), "an operand exceeds %d elements", maxOpElements)
			}
		}
	}
	return OpTask[GEMMShape]{Shapes: shapes, Repeats: repeats, Tolerance: tolerance}, nil
}

func conv2DWorkload(ctx context.Context, b *d5list.Benchmark, r *d5list.Recipe, seed int64, out io.Writer) error {
	p, err := conv2DPlan(b, r)
	if err != nil {
		return err
	}
	return runOps(ctx, benchmarkID(b, "l0-conv2d-cpu"), "conv2d", seed, p.repeats, p.tolerance, p.cases, out)
}

func conv2DPlan(b *d5list.Benchmark, r *d5list.Recipe) (opPlan, error) {
	t, err := Conv2DTask(b, r)
	if err != nil {
		return opPlan{}, err
	}
	return opPlan{repeats: t.Repeats, tolerance: t.Tolerance, cases: conv2DCases(t.Shapes), shapes: shapeNames(t.Shapes)}, nil
}

// Conv2DTask reads a convolution benchmark's task (fixed op: conv2d,
// shapes, repeats), as the builtin workload runs it and a harness audits it.
func Conv2DTask(b *d5list.Benchmark, r *d5list.Recipe) (OpTask[Conv2DShape], error) {
	rr := recipeReader{b: b, r: r}
	if _, err := rr.choice("op", "conv2d", "conv2d"); err != nil {
		return OpTask[Conv2DShape]{}, err
	}
	repeats, tolerance, err := opSettings(rr)
	if err != nil {
		return OpTask[Conv2DShape]{}, err
	}
	shapes := DefaultConv2DShapes
	list, ok, err := rr.shapeList([]string{"n", "c", "h", "w", "k", "r", "s"}, map[string]int{"pad": 0, "stride": 1})
	if err != nil {
		return OpTask[Conv2DShape]{}, err
	}
	if ok {
		_, field, _ := rr.get("shapes")
		shapes = make([]Conv2DShape, len(list))
		for i, m := range list {
			s := Conv2DShape{N: m["n"], C: m["c"], H: m["h"], W: m["w"], K: m["k"], R: m["r"], S: m["s"], Pad: m["pad"], Stride: m["stride"]}
			p, q := s.OutSize()
			if s.H+2*s.Pad < s.R || s.W+2*s.Pad < s.S || p < 1 || q < 1 {
				return OpTask[Conv2DShape]{}, invalid(fmt.Sprintf("%s[%d]", field, i), "the filter is larger than the padded input")
			}
			if s.N*s.C*s.H*s.W > maxOpElements || s.C*s.R*s.S*p*q > maxOpElements || s.N*s.K*p*q > maxOpElements {
				return OpTask[Conv2DShape]{}, invalid(fmt.Sprintf("%s[%d]", field, i), "a tensor exceeds %d elements", maxOpElements)
			}
			shapes[i] = s
		}
	}
	return OpTask[Conv2DShape]{Shapes: shapes, Repeats: repeats, Tolerance: tolerance}, nil
}

func benchmarkID(b *d5list.Benchmark, fallback string) string {
	if b != nil && b.ID != "" {
		return b.ID
	}
	return fallback
}
