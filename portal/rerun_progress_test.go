package portal

import (
	"fmt"
	"testing"
	"time"

	d5list "github.com/deep500/d5list"
)

// mllogLine is one MLLOG line of run as a runner streams it, arriving at at.
func mllogLine(attempt, run int, at time.Time, key string, value any, meta string) d5list.LogLine {
	text := fmt.Sprintf(`:::MLLOG {"namespace": "", "time_ms": %d, "event_type": "POINT_IN_TIME", "key": %q, "value": %v, "metadata": {%s}}`,
		at.UnixMilli(), key, value, meta)
	return d5list.LogLine{JobID: 1, Attempt: attempt, Run: run, Stream: d5list.StreamMLLOG, Text: text, Time: at}
}

// A re-run's progress is read from its latest attempt's MLLOG lines: the
// runs done, the running one's epoch and accuracy, and the time left from
// the finished runs' times, or from the claim's before any has finished.
func TestRerunProgress(t *testing.T) {
	// Five claimed runs, and two with fresh seeds after them.
	bench := &d5list.Benchmark{Runs: 5, Quality: d5list.QualityTarget{Metric: "eval_accuracy"}, Verify: d5list.VerifyPolicy{FreshRuns: 2}}
	claimed := &d5list.Result{}
	for range 5 {
		claimed.Runs = append(claimed.Runs, d5list.RunMetrics{TimeToTrain: 8,
			Evals: []d5list.EvalPoint{{Epoch: 10, Accuracy: 0.9}, {Epoch: 22, Accuracy: 0.95}, {Epoch: 21, Accuracy: 0.94}}})
	}
	t0 := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	at := func(s float64) time.Time { return t0.Add(time.Duration(s * float64(time.Second))) }
	lines := []d5list.LogLine{
		// The first attempt's lease expired; its lines are not this one's.
		mllogLine(1, 0, at(-60), "run_start", "null", ""),
		mllogLine(1, 0, at(-50), "run_stop", "null", `"status": "success"`),
	}
	for run, start := range []float64{0, 11} {
		lines = append(lines, mllogLine(2, run, at(start), "run_start", "null", ""),
			mllogLine(2, run, at(start+5), "eval_accuracy", 0.95, `"epoch_num": 22`),
			mllogLine(2, run, at(start+10), "run_stop", "null", `"status": "success"`))
	}
	lines = append(lines,
		d5list.LogLine{JobID: 1, Attempt: 2, Run: 2, Stream: d5list.StreamStdout, Text: "loading data", Time: at(21)},
		mllogLine(2, 2, at(22), "run_start", "null", ""),
		mllogLine(2, 2, at(27), "eval_accuracy", 0.91, `"epoch_num": 11`))

	p := rerunProgress(bench, claimed, lines, at(28))
	if p.Current != 3 || len(p.Runs) != 7 || p.EstimatedFrom != d5list.EstimateFromRuns {
		t.Fatalf("progress %+v, want run 3 of 7 estimated from the finished runs", p)
	}
	states := ""
	for _, r := range p.Runs {
		states += r.State[:1]
	}
	if states != "ddrwwww" {
		t.Errorf("runs' states %q, want done, done, running, then waiting", states)
	}
	run := p.Runs[2]
	if run.Epoch == nil || *run.Epoch != 11 || run.Value == nil || *run.Value != 0.91 || run.Seconds != 6 || run.Fraction != 0.5 {
		t.Errorf("running run %+v, want epoch 11 of the claim's 22, accuracy 0.91, 6 s in, half way", run)
	}
	// 6 s more for the running run (its 11 epochs took 6 s), 10 s for each
	// run still waiting (the finished runs' median).
	if p.SecondsLeft != 46 {
		t.Errorf("time left %v s, want 46", p.SecondsLeft)
	}

	// Before a run has finished, the claim's times are all there is: a
	// fresh seed's run is expected to take the claimed runs' median.
	early := rerunProgress(bench, claimed, lines[:3], at(5))
	if early.Current != 1 || early.EstimatedFrom != d5list.EstimateFromClaim || early.SecondsLeft != 3+6*8 {
		t.Errorf("early progress %+v, want run 1, 51 s left as claimed", early)
	}
	// The store keeps a job's latest lines: a run none of whose lines is
	// left is done where a later run has lines, its time unknown.
	if p := rerunProgress(bench, claimed, lines[6:], at(28)); p.Runs[0].State != d5list.RunDone || p.Runs[0].Seconds != 0 || p.Current != 3 {
		t.Errorf("progress from the latest lines only %+v, want run 1 done, run 3 running", p)
	}
	// Without a claimed time nor a finished run, the time left is unknown.
	if p := rerunProgress(bench, nil, lines[:3], at(5)); p.SecondsLeft != -1 || p.Runs[0].Fraction != 0 {
		t.Errorf("progress without a claim %+v, want an unknown time left", p)
	}
}
