package workloads

import (
	"bytes"
	"context"
	"errors"
	"io"
	"slices"
	"strings"
	"testing"

	d5list "github.com/deep500/d5list"
	"github.com/deep500/d5list/mllog"
)

func TestReferenceKernelsOnHandComputedCases(t *testing.T) {
	a := []float64{1, 2, 3, 4, 5, 6}    // 2x3
	b := []float64{7, 8, 9, 10, 11, 12} // 3x2
	want := []float64{58, 64, 139, 154}
	for name, gemm := range map[string]func(a, b, c []float64, m, n, k int){"reference": GEMMReference, "blocked": gemmBlocked} {
		c := make([]float64, 4)
		gemm(a, b, c, 2, 2, 3)
		if !slices.Equal(c, want) {
			t.Errorf("%s gemm = %v, want %v", name, c, want)
		}
	}

	// One 3x3 channel, one 2x2 filter, padding 1, stride 2: outputs at the
	// padded corners (0,0), (0,2), (2,0), (2,2).
	s := Conv2DShape{N: 1, C: 1, H: 3, W: 3, K: 1, R: 2, S: 2, Pad: 1, Stride: 2}
	in := []float64{1, 2, 3, 4, 5, 6, 7, 8, 9}
	filt := []float64{1, 10, 100, 1000}
	wantConv := []float64{1000 * 1, 100*2 + 1000*3, 10*4 + 1000*7, 1*5 + 10*6 + 100*8 + 1000*9}
	ref := make([]float64, 4)
	Conv2DReference(s, in, filt, ref)
	got := make([]float64, 4)
	conv2DIm2col(s, in, filt, got, make([]float64, 4*4))
	if !slices.Equal(ref, wantConv) || !slices.Equal(got, wantConv) {
		t.Errorf("conv2d reference %v, im2col %v, want %v", ref, got, wantConv)
	}
}

func TestCompareOutputs(t *testing.T) {
	want := []float64{3, 4}
	if rel, maxAbs := CompareOutputs([]float64{3, 4}, want); rel != 0 || maxAbs != 0 {
		t.Errorf("identical outputs: %v, %v", rel, maxAbs)
	}
	if rel, maxAbs := CompareOutputs([]float64{3, 4.5}, want); rel != 0.1 || maxAbs != 0.5 {
		t.Errorf("one output off by 0.5 of norm 5: rel %v max %v, want 0.1 and 0.5", rel, maxAbs)
	}
}

func TestQuantile(t *testing.T) {
	xs := []float64{5, 1, 4, 2, 3}
	for _, tt := range []struct{ q, want float64 }{{0.5, 3}, {0, 1}, {1, 5}, {0.25, 2}, {0.99, 4.96}} {
		if got := quantile(xs, tt.q); got < tt.want-1e-12 || got > tt.want+1e-12 {
			t.Errorf("quantile(%v) = %v, want %v", tt.q, got, tt.want)
		}
	}
	if !slices.Equal(xs, []float64{5, 1, 4, 2, 3}) {
		t.Error("quantile reordered its input")
	}
}

// pointsBetweenRun returns the POINT_IN_TIME events between run_start and
// run_stop, and the run_stop status.
func pointsBetweenRun(t *testing.T, log []byte) ([]logEvent, string) {
	t.Helper()
	events := parseLog(t, log)
	var points []logEvent
	inRun, starts := false, 0
	status := ""
	for _, e := range events {
		switch {
		case e.Key == mllog.KeyRunStart:
			inRun = true
			starts++
		case e.Key == mllog.KeyRunStop:
			inRun = false
			status, _ = e.Metadata[keyStatus].(string)
		case inRun && e.EventType == mllog.PointInTime:
			points = append(points, e)
		}
	}
	if starts != 1 || status == "" {
		t.Fatalf("%d run_start events, run_stop status %q", starts, status)
	}
	return points, status
}

func TestOperatorWorkloads(t *testing.T) {
	tests := []struct {
		workload string
		fixed    map[string]any
		shapes   []string
	}{
		{"gemm", map[string]any{"op": "gemm", "shapes": []any{
			map[string]any{"m": 7, "n": 5, "k": 33}, map[string]any{"m": int64(16), "n": 1.0, "k": 4}}}, []string{"7x5x33", "16x1x4"}},
		{"conv2d", map[string]any{"op": "conv2d", "shapes": []any{
			map[string]any{"n": 2, "c": 3, "h": 9, "w": 7, "k": 4, "r": 3, "s": 3, "pad": 1, "stride": 2},
			map[string]any{"n": 1, "c": 2, "h": 5, "w": 5, "k": 3, "r": 5, "s": 1, "pad": 0}}},
			[]string{"N2_C3_H9_W7_K4_R3_S3_pad1_stride2", "N1_C2_H5_W5_K3_R5_S1_pad0_stride1"}},
	}
	for _, tt := range tests {
		t.Run(tt.workload, func(t *testing.T) {
			work, ok := Lookup(tt.workload)
			if !ok {
				t.Fatalf("%s not registered", tt.workload)
			}
			var out bytes.Buffer
			r := &d5list.Recipe{Fixed: tt.fixed, Mutable: map[string]any{"repeats": 3}}
			if err := work(context.Background(), &d5list.Benchmark{ID: "l0-test"}, r, 11, &out); err != nil {
				t.Fatal(err)
			}
			points, status := pointsBetweenRun(t, out.Bytes())
			if status != statusSuccess {
				t.Errorf("status %q", status)
			}
			seen := map[string]map[string]float64{}
			for _, p := range points {
				shape, _ := p.Metadata["shape"].(string)
				if seen[shape] == nil {
					seen[shape] = map[string]float64{}
				}
				seen[shape][p.Key] = p.Value.(float64)
			}
			for _, shape := range tt.shapes {
				m := seen[shape]
				if !(m[KeyOpTime] > 0) || !(m[KeyOpGFLOPS] > 0) {
					t.Errorf("%s: time %v ms, %v GFLOP/s", shape, m[KeyOpTime], m[KeyOpGFLOPS])
				}
				if _, ok := m[KeyOpRelL2Error]; !ok || m[KeyOpRelL2Error] > DefaultOpTolerance || m[KeyOpMaxError] > 1e-12 {
					t.Errorf("%s: errors %v / %v", shape, m[KeyOpRelL2Error], m[KeyOpMaxError])
				}
			}
			if len(seen) != len(tt.shapes) {
				t.Errorf("logged shapes %v, want %v", seen, tt.shapes)
			}
		})
	}
}

func TestOperatorWorkloadConfigErrors(t *testing.T) {
	tests := []struct {
		workload string
		fixed    map[string]any
		mutable  map[string]any
		want     string
	}{
		{"gemm", map[string]any{"shapes": []any{map[string]any{"m": "x", "n": 1, "k": 1}}}, nil, `recipe: fixed.shapes[0].m: must be a positive integer, got "x"`},
		{"gemm", map[string]any{"shapes": []any{map[string]any{"m": 2, "n": 1}}}, nil, `recipe: fixed.shapes[0].k: missing`},
		{"gemm", map[string]any{"shapes": []any{map[string]any{"m": 2, "n": 1, "k": 1, "batch": 2}}}, nil, `recipe: fixed.shapes[0].batch: unknown key`},
		{"gemm", map[string]any{"shapes": "big"}, nil, `recipe: fixed.shapes: must be a non-empty list`},
		{"gemm", map[string]any{"shapes": []any{map[string]any{"m": 1 << 20, "n": 1 << 10, "k": 1 << 10}}}, nil, `recipe: fixed.shapes[0]: an operand exceeds`},
		{"gemm", map[string]any{"op": "conv2d"}, nil, `recipe: fixed.op: must be one of gemm`},
		{"gemm", nil, map[string]any{"repeats": 0}, `recipe: mutable.repeats: must be a positive integer, got 0`},
		{"gemm", nil, map[string]any{"tolerance": "tiny"}, `recipe: mutable.tolerance: must be a non-negative number, got "tiny"`},
		{"conv2d", map[string]any{"shapes": []any{map[string]any{"n": 1, "c": 1, "h": 2, "w": 2, "k": 1, "r": 5, "s": 1}}}, nil, `recipe: fixed.shapes[0]: the filter is larger than the padded input`},
		{"conv2d", map[string]any{"shapes": []any{map[string]any{"n": 1, "c": 1, "h": 2, "w": 2, "k": 1, "r": 1, "s": 1, "stride": 0}}}, nil, `recipe: fixed.shapes[0].stride: must be a positive integer, got 0`},
		{"mlp-inference", nil, map[string]any{"samples": -5}, `recipe: mutable.samples: must be a positive integer, got -5`},
		{"mlp-inference", map[string]any{"model_kwargs": map[string]any{"hidden": 1.5}}, nil, `recipe: fixed.model_kwargs.hidden: must be a positive integer, got 1.5`},
	}
	for _, tt := range tests {
		t.Run(tt.want, func(t *testing.T) {
			work, _ := Lookup(tt.workload)
			var out bytes.Buffer
			err := work(context.Background(), &d5list.Benchmark{ID: "x"}, &d5list.Recipe{Fixed: tt.fixed, Mutable: tt.mutable}, 1, &out)
			if d5list.ErrorCode(err) != d5list.EINVALID || !strings.Contains(d5list.ErrorMessage(err), tt.want) {
				t.Errorf("error %v, want EINVALID containing %q", err, tt.want)
			}
			if out.Len() != 0 {
				t.Errorf("a rejected recipe logged %q", out.String())
			}
		})
	}
}

func TestMLPInference(t *testing.T) {
	var out bytes.Buffer
	sum, err := RunMLPInference(context.Background(), InferenceConfig{Benchmark: "l1-test", Hidden: 32, BatchSize: 8, Samples: 203}, 1, mllog.NewWriter(&out, nil))
	if err != nil {
		t.Fatal(err)
	}
	if sum.Batches != 26 || !(sum.Throughput > 0) || !(sum.LatencyP50MS > 0) || sum.LatencyP50MS > sum.LatencyP99MS {
		t.Errorf("summary %+v: want 26 batches, positive throughput, p50 <= p99", sum)
	}
	points, status := pointsBetweenRun(t, out.Bytes())
	logged := map[string]float64{}
	for _, p := range points {
		logged[p.Key] = p.Value.(float64)
	}
	if status != statusSuccess || logged[mllog.KeyThroughput] != sum.Throughput ||
		logged[KeyLatencyP50] != sum.LatencyP50MS || logged[KeyLatencyP99] != sum.LatencyP99MS ||
		logged[d5list.MetricPredictionChecksum] != float64(sum.Checksum) {
		t.Errorf("status %q, logged %v, summary %+v", status, logged, sum)
	}

	// The checksum depends on the predictions only: the same seed in other
	// batches gives it again, another seed (other weights) does not.
	checksum := func(seed int64, batch int) uint32 {
		s, err := RunMLPInference(context.Background(), InferenceConfig{Benchmark: "l1-test", Hidden: 32, BatchSize: batch, Samples: 203}, seed, mllog.NewWriter(io.Discard, nil))
		if err != nil {
			t.Fatal(err)
		}
		return s.Checksum
	}
	if a, b := checksum(1, 1), checksum(1, 64); a != sum.Checksum || b != sum.Checksum {
		t.Errorf("seed 1 checksums %d (batch 8), %d (batch 1), %d (batch 64): want one value", sum.Checksum, a, b)
	}
	if checksum(2, 8) == sum.Checksum {
		t.Error("seeds 1 and 2 give the same prediction checksum")
	}

	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := RunMLPInference(ctx, InferenceConfig{Hidden: 8, BatchSize: 1, Samples: 10}, 1, mllog.NewWriter(&bytes.Buffer{}, nil)); !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled run returned %v", err)
	}
}

func TestMLPInferenceWorkloadReadsRecipe(t *testing.T) {
	work, ok := Lookup("mlp-inference")
	if !ok {
		t.Fatal("mlp-inference not registered")
	}
	var out bytes.Buffer
	r := &d5list.Recipe{Fixed: map[string]any{"model_kwargs": map[string]any{"hidden": 24}}, Mutable: map[string]any{"batch_size": 4, "samples": int64(40)}}
	if err := work(context.Background(), &d5list.Benchmark{ID: "l1-x"}, r, 2, &out); err != nil {
		t.Fatal(err)
	}
	got := map[string]any{}
	for _, e := range parseLog(t, out.Bytes()) {
		got[e.Key] = e.Value
	}
	if got[mllog.KeyGlobalBatchSize] != 4.0 || got[keyModelHidden] != 24.0 || got[mllog.KeyEvalSamples] != 40.0 || got[mllog.KeySubmissionBenchmark] != "l1-x" {
		t.Errorf("logged %v", got)
	}
}
