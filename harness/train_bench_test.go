package harness

import "testing"

// BenchmarkTrainEpoch is one audited epoch of the digits MLP of
// l2-digits-mlp-torch-cpu (64-512-512-10, batches of 32): what the runner
// spends per epoch it recomputes.
func BenchmarkTrainEpoch(b *testing.B) {
	d, err := digitsSplit(testShare)
	if err != nil {
		b.Skip(err)
	}
	task := &Task{Layers: []int{64, 512, 512, 10}, Epochs: 30, BatchSize: 32, LR: 0.05, Momentum: 0.9}
	s := initialState(task.Layers, 1)
	for b.Loop() {
		trainEpoch(task, d, s, 1, 1, func() {})
	}
}
