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

// BenchmarkFreshRunAudit is the runner's audit of one fresh run of the
// example's task (30 epochs of 45 minibatches of 32, in stretches of 3):
// the initial state, 30 stretches recomputed, the last weights evaluated.
func BenchmarkFreshRunAudit(b *testing.B) {
	if _, err := digitsSplit(testShare); err != nil {
		b.Skip(err)
	}
	task := &Task{Kind: KindMLPTraining, Layers: []int{64, 512, 512, 10}, Epochs: 30, BatchSize: 32, LR: 0.05, Momentum: 0.9,
		trainSamples: digitsSamples - testCount(digitsSamples, testShare), freshRuns: 5}
	task.StateEvery = stateEvery(task.Epochs*task.stepsPerEpoch(), auditsPerSection(task.freshRuns))
	task.sections = []section{trainingSection(task)}
	c := task.StreamChallenge(true, false)
	st := &Stream{States: map[int][]byte{}, Arrived: task.stretches() + 1, Late: -1}
	state := stateFile(initialState(task.Layers, 1))
	for i := range task.Keeps(c) {
		st.States[i] = state
	}
	b.ReportMetric(float64(len(c["training"])), "stretches")
	for b.Loop() {
		task.CheckStream(1, st, c, func() {})
	}
}
