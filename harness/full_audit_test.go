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
// reference computes it, each state rounded to float32 as a run hands it
// over; forge may change the states first. It returns every state, as the
// runner would read them all.
func goTrainingRun(t *testing.T, task *Task, seed int64, forge func(states [][]byte)) *Stream {
	t.Helper()
	data, err := digitsSplit(testShare)
	if err != nil {
		t.Fatal(err)
	}
	s := initialState(task.Layers, seed)
	states := [][]byte{stateFile(s)}
	for g := 1; g <= task.stretches(); g++ {
		epoch, from, to := task.stretch(g)
		s = parseState(task.Layers, stateFile(trainSteps(task, data, s, seed, epoch, from, to, func() {})))
		states = append(states, stateFile(s))
	}
	if forge != nil {
		forge(states)
	}
	st := &Stream{States: map[int][]byte{}, Arrived: len(states), Late: -1}
	for i, b := range states {
		st.States[i] = b
	}
	return st
}

// A full audit (JobSpec.FullAudit) recomputes every stretch of a training
// run (MaxFullStretches at most), whatever the seed: one stretch left
// untrained fails it every time, where the sampled audit of a fresh seed
// draws some of the stretches and can miss it.
func TestFullAuditChecksEveryStretch(t *testing.T) {
	task := trainingTestTask(t, []any{int64(16)}, 256, 3, 2) // 6 steps an epoch: 3 stretches
	const seed = 41
	every := []int{1, 2, 3, 4, 5, 6, 7, 8, 9}
	full := task.StreamChallenge(false, true)
	if !slices.Equal(full["training"], every) {
		t.Fatalf("full challenge %v, want every stretch %v", full, every)
	}
	if claimed := task.StreamChallenge(false, false); !slices.Equal(claimed["training"], []int{1, 9}) {
		t.Fatalf("a claimed seed's run is drawn %v; it is checked at its first and last stretch", claimed)
	}
	task.freshRuns = 5
	if sampled := task.StreamChallenge(true, false); len(sampled["training"]) != 9 {
		t.Fatalf("a fresh seed's challenge %v: a run of 9 stretches has every one drawn at 28 a run", sampled)
	}
	task.freshRuns = 100 // two stretches drawn a run besides the first and last, for the sampled audit below
	honest := goTrainingRun(t, task, seed, nil)
	a := task.CheckStream(seed, honest, full, func() {})
	if len(a.Failures) != 0 {
		t.Fatalf("an honest run failed its full audit: %+v", a.Failures)
	}
	if got := a.Sections[0].Checked; !slices.Equal(got, append([]int{0}, every...)) {
		t.Fatalf("full audit checked %v, want the initial state and every stretch", got)
	}

	// Stretch 5 not trained: its state is stretch 4's.
	skipped := goTrainingRun(t, task, seed, func(states [][]byte) { states[5] = states[4] })
	missed := 0
	for range 20 {
		if a := task.CheckStream(seed, skipped, task.StreamChallenge(false, true), func() {}); len(a.Failures) == 0 {
			t.Fatalf("a run with stretch 5 untrained passed a full audit: %+v", a.Sections[0])
		}
		if s := task.CheckStream(seed, skipped, task.StreamChallenge(true, false), func() {}); len(s.Failures) == 0 {
			missed++
		}
	}
	if missed == 0 {
		t.Fatalf("the sampled audit of four stretches a run never missed the untrained stretch in 20 draws")
	}
	t.Logf("the sampled audit of four stretches a run missed the untrained stretch %d times in 20", missed)
}
