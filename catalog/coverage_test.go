package catalog

import (
	"testing"
)

// Every benchmark of the catalogue states its audit's coverage: the
// operator, inference and training harnesses meet 1 in 1,000 at 5 %
// skipped (a training run's minibatch steps), a benchmark
// without a harness states that nothing is checked, and the portal's own
// workloads state nothing.
func TestCatalogueStatesEachAuditsCoverage(t *testing.T) {
	bs, err := Benchmarks()
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]func(p float64) bool{
		"l0-gemm-torch-cpu":                 func(p float64) bool { return p > 0 && p <= 1e-3 },
		"l0-conv2d-torch-cpu":               func(p float64) bool { return p > 0 && p <= 1e-3 },
		"l1-digits-mlp-inference-torch-cpu": func(p float64) bool { return p > 0 && p <= 1e-3 },
		"l2-digits-mlp-torch-cpu":           func(p float64) bool { return p > 0 && p <= 1e-3 },
		"l3-digits-mlp-torch-ddp-cpu":       func(p float64) bool { return p > 0 && p <= 1e-3 },
		"l2-cifar10-resnet44-gpu":           func(p float64) bool { return p == 1 },
		"l2-digits-mlp-cpu":                 func(p float64) bool { return p == 0 },
	}
	for id, ok := range want {
		b, err := Lookup(bs, id)
		if err != nil {
			t.Fatal(err)
		}
		if !ok(b.Verify.AuditEscape) {
			t.Errorf("%s: stated escape %.3g", id, b.Verify.AuditEscape)
		}
	}
}
