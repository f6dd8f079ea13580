package harness

import (
	"encoding/binary"
	"math"
	"slices"
	"testing"
)

// stateFile is s as a run reveals it (parseState's order, float32s).
func stateFile(s mlpState) []byte {
	var b []byte
	put := func(v []float64) {
		for _, x := range v {
			b = binary.LittleEndian.AppendUint32(b, math.Float32bits(float32(x)))
		}
	}
	for i := range s.w {
		put(s.w[i])
		put(s.b[i])
	}
	for i := range s.mw {
		put(s.mw[i])
		put(s.mb[i])
	}
	return b
}

// goTrainingRun is a training run of task from seed as the runner's own
// reference computes it, each state rounded to float32 as a run commits
// it; forge may change the states before they are committed. It returns
// the commitments and the files the run reveals for every call.
func goTrainingRun(t *testing.T, task *Task, seed int64, forge func(states [][]byte)) (map[string]string, map[string][]byte) {
	t.Helper()
	data, err := digitsSplit(testShare)
	if err != nil {
		t.Fatal(err)
	}
	s := initialState(task.Layers, seed)
	states := [][]byte{stateFile(s)}
	for e := 1; e <= task.Epochs; e++ {
		s = parseState(task.Layers, stateFile(trainEpoch(task, data, s, seed, e, func() {})))
		states = append(states, stateFile(s))
	}
	if forge != nil {
		forge(states)
	}
	files := map[string][]byte{}
	var digests []byte
	for i, st := range states {
		digests = binary.BigEndian.AppendUint64(digests, shaDigest(st))
		files[OutputFile(0, i)] = st
	}
	files[DigestsFile(0)] = digests
	return map[string]string{"training": commitment(digests)}, files
}

// A full audit (JobSpec.FullAudit) challenges every call of every section,
// whatever the seed, and checks every epoch of a training run: one epoch
// left untrained fails it every time, where the sampled audit of a fresh
// seed checks two epochs at most and often misses it.
func TestFullAuditChecksEveryEpoch(t *testing.T) {
	task := trainingTestTask(t, []any{int64(16)}, 64, 6)
	const seed = 41
	committed, honest := goTrainingRun(t, task, seed, nil)
	every := []int{0, 1, 2, 3, 4, 5, 6}

	full := task.Challenge(committed, false, true)
	if !slices.Equal(full["training"], every) {
		t.Fatalf("full challenge %v, want every state %v", full, every)
	}
	if sampled := task.Challenge(committed, true, false); len(sampled["training"]) >= len(every) {
		t.Fatalf("a fresh seed's sampled challenge %v asks for every state; the test needs one that does not", sampled)
	}

	a := task.Check(seed, committed, full, Revealed(honest))
	if len(a.Failures) != 0 {
		t.Fatalf("an honest run failed its full audit: %+v", a.Failures)
	}
	if got := a.Sections[0].Checked; !slices.Equal(got, every) {
		t.Fatalf("full audit checked %v, want every state %v", got, every)
	}

	// Epoch 4 not trained: its state is epoch 3's.
	committed, skipped := goTrainingRun(t, task, seed, func(states [][]byte) { states[4] = states[3] })
	missed := 0
	for range 10 {
		a := task.Check(seed, committed, task.Challenge(committed, false, true), Revealed(skipped))
		if !slices.Equal(a.Sections[0].Checked, every) {
			t.Fatalf("full audit checked %v, want every state", a.Sections[0].Checked)
		}
		if len(a.Failures) == 0 {
			t.Fatalf("a run with epoch 4 untrained passed a full audit: %+v", a.Sections[0])
		}
		if s := task.Check(seed, committed, task.Challenge(committed, true, false), Revealed(skipped)); len(s.Failures) == 0 {
			missed++
		}
	}
	t.Logf("the sampled audit of a fresh seed missed the untrained epoch %d times in 10", missed)
}
