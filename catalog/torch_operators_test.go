package catalog

import (
	"reflect"
	"slices"
	"testing"

	d5list "github.com/deep500/d5list"
)

// The PyTorch Level 0 entries time PyTorch's own operator at the shapes of
// the builtin Go benchmark beside them, with its error rules; they run the
// competitor's code on a runner with PyTorch and are ranked by the
// runner's clock, not by a number the code logs (issue 14).
func TestTorchOperatorEntriesMirrorTheBuiltinOnes(t *testing.T) {
	bs, err := Benchmarks()
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct{ torch, builtin, op string }{
		{"l0-gemm-torch-cpu", "l0-gemm-cpu", "gemm"},
		{"l0-conv2d-torch-cpu", "l0-conv2d-cpu", "conv2d"},
	} {
		t.Run(tt.torch, func(t *testing.T) {
			b, err := Lookup(bs, tt.torch)
			if err != nil {
				t.Fatal(err)
			}
			ref, err := Lookup(bs, tt.builtin)
			if err != nil {
				t.Fatal(err)
			}
			if b.Level != 0 || b.Workload != "" || b.Division.Fixed["op"] != tt.op || b.Division.Fixed["dtype"] != "float64" {
				t.Errorf("defined as %+v", b)
			}
			if !reflect.DeepEqual(b.Division.Fixed["shapes"], ref.Division.Fixed["shapes"]) {
				t.Errorf("shapes %v, want those of %s: %v", b.Division.Fixed["shapes"], tt.builtin, ref.Division.Fixed["shapes"])
			}
			if r, ok := b.Division.Fixed["repeats"].(int64); !ok || r < 1 {
				t.Errorf("fixed.repeats is %v (%T), want a positive int64: the timed work is the same for everyone", b.Division.Fixed["repeats"], b.Division.Fixed["repeats"])
			}
			if b.Quality != ref.Quality {
				t.Errorf("quality %+v, want %s's %+v", b.Quality, tt.builtin, ref.Quality)
			}
			if b.Ranking.Metric != d5list.MetricTimeToTrain || b.Ranking.Direction != d5list.LowerIsBetter {
				t.Errorf("ranked by %+v, want the runner's clock, lower", b.Ranking)
			}
			if b.Requires["framework.torch"] == "" || !slices.Equal(b.Verify.Reproduce, ref.Verify.Reproduce) ||
				b.Verify.AccuracyTolerance != 0 || len(b.Verify.SameHardware) == 0 || b.Verify.TimingPrecision <= 0 {
				t.Errorf("requires %v, verify %+v", b.Requires, b.Verify)
			}
		})
	}
}
