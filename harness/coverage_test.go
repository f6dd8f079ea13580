package harness

import (
	"encoding/binary"
	"math"
	"strings"
	"testing"

	d5list "github.com/deep500/d5list"
	"github.com/deep500/d5list/workloads"
)

// honestRun computes every call of an operator task's sections in Go, as
// an honest run would (with the runner's own reference), and returns what
// it would commit to and reveal for challenge.
func honestRun(t *testing.T, task *Task, seed int64, corrupt func(section, call int, out []float64)) (map[string]string, map[string][]byte) {
	t.Helper()
	committed, revealed := map[string]string{}, map[string][]byte{}
	for k, s := range task.sections {
		digests := make([]byte, 8*s.calls)
		for i := range s.calls {
			out := referenceOutput(t, task, k, seed, i, digests)
			if corrupt != nil {
				corrupt(k, i, out)
			}
			b := make([]byte, 8*len(out))
			for j, v := range out {
				binary.LittleEndian.PutUint64(b[8*j:], math.Float64bits(v))
			}
			binary.BigEndian.PutUint64(digests[8*i:], s.digest(b))
			revealed[OutputFile(k, i)] = b
		}
		revealed[DigestsFile(k)] = digests
		committed[s.name] = commitment(digests)
	}
	return committed, revealed
}

// referenceOutput is call i of section k by the runner's reference, its
// input chained from the digests before it.
func referenceOutput(t *testing.T, task *Task, k int, seed int64, i int, digests []byte) []float64 {
	t.Helper()
	s := task.sections[k]
	switch task.Kind {
	case "gemm":
		var m, n, kk int
		shape := task.Shapes[k]
		m, n, kk = shape["m"], shape["n"], shape["k"]
		a := signed(Uniform(StreamKey(seed, s.name, "A"), m*kk))
		b := signed(Uniform(StreamKey(seed, s.name, "B"), kk*n))
		d := Uniform(chainKey(seed, s.name, i, digests), kk)
		for row := range kk {
			for col := range n {
				b[row*n+col] *= 0.5 + d[row]
			}
		}
		out := make([]float64, m*n)
		workloads.GEMMReference(a, b, out, m, n, kk)
		return out
	case "conv2d":
		sh := task.Shapes[k]
		cs := workloads.Conv2DShape{N: sh["n"], C: sh["c"], H: sh["h"], W: sh["w"], K: sh["k"], R: sh["r"], S: sh["s"], Pad: sh["pad"], Stride: sh["stride"]}
		in := signed(Uniform(StreamKey(seed, s.name, "x"), cs.N*cs.C*cs.H*cs.W))
		filt := signed(Uniform(StreamKey(seed, s.name, "w"), cs.K*cs.C*cs.R*cs.S))
		for j, u := range Uniform(chainKey(seed, s.name, i, digests), len(filt)) {
			filt[j] *= 0.5 + u
		}
		p, q := cs.OutSize()
		out := make([]float64, cs.N*cs.K*p*q)
		workloads.Conv2DReference(cs, in, filt, out)
		return out
	}
	t.Fatalf("no reference for %s", task.Kind)
	return nil
}

func everyCall(task *Task) Challenge {
	c := Challenge{}
	for _, s := range task.sections {
		for i := range s.calls {
			c[s.name] = append(c[s.name], i)
		}
	}
	return c
}

// Past the calls it recomputes whole, the runner checks an operator's
// outputs by a random projection: an honest output passes it, and an
// output off by more than the tolerance, in one value or in all, fails it
// as a full check would.
func TestProjectedChecksJudgeAsFullOnesDo(t *testing.T) {
	for _, kind := range []string{"gemm", "conv2d"} {
		task := smallTask(t, kind)
		t.Run(kind+" honest", func(t *testing.T) {
			committed, revealed := honestRun(t, task, 5, nil)
			a := task.Check(5, committed, everyCall(task), Revealed(revealed))
			if len(a.Failures) != 0 {
				t.Fatalf("an honest run failed: %+v", a.Failures)
			}
			for _, s := range a.Sections {
				if len(s.Checked) != s.Calls {
					t.Fatalf("section %+v: want every call checked", s)
				}
			}
		})
		for _, c := range []struct {
			name string
			bad  func(out []float64)
		}{
			{"one value off by a millionth", func(out []float64) { out[len(out)/2] *= 1 + 1e-6 }},
			{"garbage", func(out []float64) {
				for j := range out {
					out[j] = float64(j%7) - 3
				}
			}},
			{"two values swapped", func(out []float64) { out[0], out[1] = out[1], out[0] }},
		} {
			t.Run(kind+" "+c.name, func(t *testing.T) {
				// Call 5 of 7: the first two checked calls are recomputed
				// whole, so 5 is checked by projection.
				committed, revealed := honestRun(t, task, 6, func(k, i int, out []float64) {
					if k == 0 && i == 5 {
						c.bad(out)
					}
				})
				a := task.Check(6, committed, everyCall(task), Revealed(revealed))
				if len(a.Failures) != 1 || a.Failures[0].Code != d5list.AuditMismatch || !strings.Contains(a.Failures[0].Message, "call 5:") {
					t.Fatalf("failures %+v, want one mismatch at call 5", a.Failures)
				}
			})
		}
	}
}

// A NaN or an infinity in what a run committed to is a failure of its own,
// never a call in doubt, in an operator's output and in a training state.
func TestNonFiniteValuesFailTheAudit(t *testing.T) {
	task := smallTask(t, "gemm")
	for _, v := range []float64{math.NaN(), math.Inf(1), math.Inf(-1)} {
		committed, revealed := honestRun(t, task, 8, func(k, i int, out []float64) {
			if k == 1 && i == 3 {
				out[2] = v
			}
		})
		a := task.Check(8, committed, everyCall(task), Revealed(revealed))
		if len(a.Failures) != 1 || a.Failures[0].Code != d5list.AuditNonFinite || !strings.Contains(a.Failures[0].Message, "call 3: value 2") {
			t.Fatalf("%v in an output: failures %+v, want one non-finite failure at call 3, value 2", v, a.Failures)
		}
	}

	train := trainingTestTask(t, []any{int64(8)}, 64, 2, 3)
	for _, v := range []float64{math.NaN(), math.Inf(1)} {
		st := goTrainingRun(t, train, 9, func(states [][]byte) {
			// The last momentum value of the last state: a buffer no
			// forward pass reads.
			last := states[len(states)-1]
			binary.LittleEndian.PutUint32(last[len(last)-4:], math.Float32bits(float32(v)))
		})
		a := train.CheckStream(9, st, Challenge{"training": {}}, func() {})
		if len(a.Failures) != 1 || a.Failures[0].Code != d5list.AuditNonFinite {
			t.Fatalf("%v in a momentum buffer: failures %+v, want one non-finite failure", v, a.Failures)
		}
	}
}

// The audit's size follows its stated coverage: a job whose fresh runs
// skip 5 % of a section's calls passes with probability at most 1 in
// 1,000, and the drawn challenges bear the figure out. A run is caught
// where a call it skipped is drawn; the test skips a share f of the calls
// of each fresh run, draws the runner's own challenges, and counts the
// runs that escape, against the exact chance of drawing none of them.
func TestEscapeProbabilityAgreesWithTheDraws(t *testing.T) {
	for _, fresh := range []int{5, 2} {
		k := auditsPerSection(fresh)
		if bound := math.Exp(-float64(k*fresh) * CoverageSkipShare); bound > CoverageEscapeTarget {
			t.Fatalf("%d fresh runs: %d checks a section, escape bound %.3g over the target", fresh, k, bound)
		}
	}
	bench := &d5list.Benchmark{ID: "coverage-test", Runs: 5, Verify: d5list.VerifyPolicy{Harness: KindOperator},
		Division: d5list.DivisionRules{Fixed: map[string]any{"op": "gemm", "repeats": 300,
			"shapes": []any{map[string]any{"m": 4, "n": 4, "k": 4}}}}}
	task, err := For(bench, &d5list.Recipe{})
	if err != nil {
		t.Fatal(err)
	}
	s := task.sections[0]
	committed := map[string]string{s.name: ""}
	for _, f := range []float64{0.01, 0.05, 0.10} {
		skipped := int(math.Round(f * float64(s.calls)))
		const trials = 4000
		escaped := 0
		for range trials {
			caught := false
			for _, i := range task.Challenge(committed, true, false)[s.name] {
				caught = caught || i < skipped // which calls were skipped does not matter to a draw the run cannot know
			}
			if !caught {
				escaped++
			}
		}
		// The exact chance a fresh run escapes: no skipped call among k
		// distinct draws.
		k := auditsPerSection(task.freshRuns)
		exact := 1.0
		for j := range k {
			exact *= float64(s.calls-skipped-j) / float64(s.calls-j)
		}
		got := float64(escaped) / trials
		sd := math.Sqrt(exact * (1 - exact) / trials)
		if math.Abs(got-exact) > 5*sd+1e-3 {
			t.Errorf("f = %.2f: %d of %d runs escaped (%.4f); the draws should give %.4f", f, escaped, trials, got, exact)
		}
		// The stated figure bounds the job: every fresh run escaping.
		if job, stated := math.Pow(exact, float64(task.freshRuns)), task.EscapeProbability(float64(skipped)/float64(s.calls)); job > stated*(1+1e-9) {
			t.Errorf("f = %.2f: a job escapes with %.3g, over the stated %.3g", f, job, stated)
		}
		t.Logf("f = %.2f: a fresh run escapes %.4f (drawn) against %.4f (exact); a job of %d fresh runs %.2g, stated %.2g",
			f, got, exact, task.freshRuns, math.Pow(exact, float64(task.freshRuns)), task.EscapeProbability(f))
	}
	if p := task.EscapeProbability(CoverageSkipShare); p > CoverageEscapeTarget {
		t.Fatalf("stated escape at 5 %%: %.3g, over the target %.3g", p, CoverageEscapeTarget)
	}
}

// The same holds for a training run's stretches of steps: the example's
// task (30 epochs of 45 minibatches, in stretches of 3), whose fresh runs
// skip a share f of their steps, in as few stretches as they fit in (the
// cheat's best), escape the runner's own draws as often as the exact
// chance says, and the stated figure bounds the job.
func TestTrainingEscapeProbabilityAgreesWithTheDraws(t *testing.T) {
	bench := &d5list.Benchmark{ID: "coverage-test", Runs: 5, Verify: d5list.VerifyPolicy{Harness: KindMLPTraining},
		Division: d5list.DivisionRules{
			Fixed:   map[string]any{"dataset": "uci-digits", "model_kwargs": map[string]any{"hidden": []any{int64(512), int64(512)}}, "epochs": int64(30)},
			Mutable: map[string]any{"batch_size": int64(32), "optimizer": "sgd-momentum", "optimizer_args": map[string]any{"lr": 0.05, "momentum": 0.9}}}}
	task, err := For(bench, &d5list.Recipe{})
	if err != nil {
		t.Fatal(err)
	}
	g := task.stretches()
	if task.StateEvery != 3 || g != 450 {
		t.Fatalf("stretches of %d steps, %d in all; the example's task has 450 of 3", task.StateEvery, g)
	}
	stretchDrawsAgree(t, g, task.freshRuns, func() []int { return task.StreamChallenge(true, false)["training"] }, task.EscapeProbability)
	if p := task.EscapeProbability(CoverageSkipShare); p > CoverageEscapeTarget {
		t.Fatalf("stated escape at 5 %%: %.3g, over the target %.3g", p, CoverageEscapeTarget)
	}
}

// A benchmark without the harness but with a step audit draws its stretches
// as the harness's training does (DrawStretches), and states StretchEscape:
// for the imported example, 300 stretches and 2 fresh runs.
func TestStretchEscapeAgreesWithTheDraws(t *testing.T) {
	const g, fresh = 300, 2
	stretchDrawsAgree(t, g, fresh, func() []int { return DrawStretches(g, fresh, true, false) },
		func(f float64) float64 { return StretchEscape(g, fresh, f) })
	if p := StretchEscape(g, fresh, CoverageSkipShare); p > CoverageEscapeTarget {
		t.Fatalf("stated escape at 5 %%: %.3g, over the target %.3g", p, CoverageEscapeTarget)
	}
}

// stretchDrawsAgree draws a fresh run's stretches 4,000 times against a run
// of g stretches that skips a share f of its steps, together in its middle
// (they touch the fewest stretches there, a share f, never the first or
// last, always checked), and checks that the share of runs that escape is
// the exact chance, and that a job of fresh such runs escapes with no more
// than the stated probability.
func stretchDrawsAgree(t *testing.T, g, fresh int, draw func() []int, stated func(float64) float64) {
	t.Helper()
	k := auditsPerSection(fresh)
	for _, f := range []float64{0.01, 0.05, 0.10} {
		bad := int(math.Ceil(f * float64(g)))
		first := g/2 - bad/2
		const trials = 4000
		escaped := 0
		for range trials {
			caught := false
			for _, i := range draw() {
				caught = caught || i >= first && i < first+bad
			}
			if !caught {
				escaped++
			}
		}
		exact := 1.0 // k distinct draws among the g-2 stretches besides the first and last, none bad
		for j := range min(k, g-2) {
			exact *= float64(g-2-bad-j) / float64(g-2-j)
		}
		got := float64(escaped) / trials
		sd := math.Sqrt(exact * (1 - exact) / trials)
		if math.Abs(got-exact) > 5*sd+1e-3 {
			t.Errorf("f = %.2f: %d of %d runs escaped (%.4f); the draws should give %.4f", f, escaped, trials, got, exact)
		}
		if job := math.Pow(exact, float64(fresh)); job > stated(f)*(1+1e-9) {
			t.Errorf("f = %.2f: a job escapes with %.3g, over the stated %.3g", f, job, stated(f))
		}
		t.Logf("f = %.2f: a fresh run escapes %.4f (drawn) against %.4f (exact); a job of %d fresh runs %.2g, stated %.2g",
			f, got, exact, fresh, math.Pow(exact, float64(fresh)), stated(f))
	}
}

// A full audit (an account's upload after a failed audit) checks every
// call of a section, or MaxFullChecks distinct ones of a longer section.
func TestFullAuditChecksEveryCallOrTheBound(t *testing.T) {
	for _, calls := range []int{9, MaxFullChecks, 100_000} {
		task := &Task{sections: []section{{name: "s", calls: calls}}, freshRuns: 5}
		picked := task.Challenge(map[string]string{"s": ""}, false, true)["s"]
		seen := map[int]bool{}
		for _, i := range picked {
			if i < 0 || i >= calls || seen[i] {
				t.Fatalf("%d calls: picked %d twice or out of range", calls, i)
			}
			seen[i] = true
		}
		if want := min(calls, MaxFullChecks); len(picked) != want {
			t.Fatalf("%d calls: a full audit picked %d, want %d", calls, len(picked), want)
		}
	}
}
