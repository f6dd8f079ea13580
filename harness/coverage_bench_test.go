package harness

import (
	"encoding/binary"
	"math"
	"testing"

	d5list "github.com/deep500/d5list"
)

// BenchmarkOperatorCheck is the runner's CPU for one checked call of each
// shape of the catalogue's PyTorch operator benchmarks: recomputed whole
// (the first two a section) and by projection (the rest). A fresh run's
// audit is 2 whole and 26 projected checks a shape:
//
//	go test ./harness -run '^$' -bench OperatorCheck -benchtime 20x
func BenchmarkOperatorCheck(b *testing.B) {
	// The shapes of l0-gemm-torch-cpu and l0-conv2d-torch-cpu
	// (catalog/benchmarks.yaml; the catalogue imports this package).
	fixed := []map[string]any{
		{"op": "gemm", "repeats": 300, "shapes": []any{map[string]any{"m": 1760, "n": 16, "k": 1760}, map[string]any{"m": 512, "n": 64, "k": 1024}}},
		{"op": "conv2d", "repeats": 1000, "shapes": []any{
			map[string]any{"n": 8, "c": 16, "h": 28, "w": 28, "k": 32, "r": 3, "s": 3, "pad": 1, "stride": 1},
			map[string]any{"n": 8, "c": 32, "h": 14, "w": 14, "k": 64, "r": 3, "s": 3, "pad": 1, "stride": 2}}},
	}
	for _, f := range fixed {
		task, err := For(&d5list.Benchmark{ID: "bench", Runs: 5, Verify: d5list.VerifyPolicy{Harness: KindOperator},
			Division: d5list.DivisionRules{Fixed: f}}, &d5list.Recipe{})
		if err != nil {
			b.Fatal(err)
		}
		for _, s := range task.sections {
			const seed, call = 3, 1
			digests := make([]byte, 8*s.calls)
			out := make([]byte, s.outSize(call))
			// An output of the right size: what it holds does not change
			// the work of either check.
			for j := 0; j+8 <= len(out); j += 8 {
				binary.LittleEndian.PutUint64(out[j:], math.Float64bits(float64(j%97)/97))
			}
			b.Run(s.name+"/whole", func(b *testing.B) {
				for range b.N {
					s.check(seed, call, digests, out, nil)
				}
			})
			b.Run(s.name+"/projected", func(b *testing.B) {
				for range b.N {
					s.project(seed, call, digests, out)
				}
			})
		}
	}
}
