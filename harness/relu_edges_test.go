package harness

import (
	"testing"
)

// A float32 run may take the other side of a ReLU whose pre-activation
// lies within rounding of zero; where that unit's share of the gradient
// is large, the honest stretch ends past the tolerance from the plain
// recomputation. The audit recomputes such a stretch with its weightiest
// units on the edge turned and passes it; a stretch whose work was not
// done still fails.
func TestAStretchOnTheReLUEdgePasses(t *testing.T) {
	if _, _, err := loadDigits(); err != nil {
		t.Skip(err)
	}
	data, err := digitsSplit(testShare)
	if err != nil {
		t.Fatal(err)
	}
	// A small network and minibatch, so that one unit of one sample is a
	// large share of a step; a state every step.
	task := trainingTestTask(t, []any{int64(4)}, 8, 1, 1)
	const seed = 3
	noPace := func() {}
	s0 := initialState(task.Layers, seed)
	s1 := parseState(task.Layers, stateFile(trainSteps(task, data, s0, seed, 1, 0, 1, noPace)))
	// Stretch 2 is the epoch's second step: put hidden unit 0 of its
	// first sample on the edge, its pre-activation zero.
	sample := epochOrder(seed, 1, data.nTrain)[task.BatchSize]
	in := task.Layers[0]
	x := data.xTrain[sample*in : (sample+1)*in]
	var pre float64
	for i, v := range x {
		pre += v * s1.w[0][i]
	}
	s1.b[0][0] = -pre
	s1 = parseState(task.Layers, stateFile(s1))
	onEdge := reluGates{flip: map[gateKey]bool{{step: 0, layer: 1, j: 0}: true}}
	otherSide := parseState(task.Layers, stateFile(trainStepsGated(task, data, s1, seed, 1, 1, 2, noPace, &onEdge)))
	plain, _ := stateDistance(otherSide, trainSteps(task, data, s1, seed, 1, 1, 2, noPace), s1)
	if !(plain > stretchTolerance) {
		t.Fatalf("the other side of the edge is %.3g of the step from the plain recomputation: the test needs more than the tolerance %.3g", plain, stretchTolerance)
	}
	audit := func(end mlpState) (failures int, rel float64) {
		st := &Stream{States: map[int][]byte{0: stateFile(s0), 1: stateFile(s1), 2: stateFile(end)}, Arrived: task.stretches() + 1, Late: -1}
		a := task.CheckStream(seed, st, Challenge{"training": {2}}, noPace)
		return len(a.Failures), a.Sections[0].MaxRelError
	}
	if n, rel := audit(otherSide); n != 0 || !(rel < 1e-5) {
		t.Fatalf("the stretch on the other side of the edge (%.3g of its step from the plain recomputation): %d failures, error %.3g; want it passed, within float32's rounding", plain, n, rel)
	}
	// The step not taken at all, and taken at a smaller learning rate,
	// fail, the edge turned or not.
	short := *task
	short.LR *= 0.8
	for name, end := range map[string]mlpState{
		"the step skipped":    s1,
		"a fifth of lr short": parseState(task.Layers, stateFile(trainStepsGated(&short, data, s1, seed, 1, 1, 2, noPace, &onEdge))),
	} {
		if n, rel := audit(end); n == 0 {
			t.Errorf("%s passed the audit (error %.3g)", name, rel)
		}
	}
	t.Logf("tolerance %.3g: the other side of the edge %.3g of its step from the plain recomputation, passed", stretchTolerance, plain)
}
