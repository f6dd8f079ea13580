package portal

import (
	"bytes"
	"context"
	"fmt"
	"math"
	"strings"
	"testing"

	d5list "github.com/deep500/d5list"
	"github.com/deep500/d5list/catalog"
	"github.com/deep500/d5list/workloads"
)

func digits(t *testing.T) *d5list.Benchmark {
	t.Helper()
	bs, err := catalog.Benchmarks()
	if err != nil {
		t.Fatal(err)
	}
	b, err := catalog.Lookup(bs, "l2-digits-mlp-cpu")
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestSameHardware(t *testing.T) {
	b := digits(t)
	sub := &d5list.Submission{HostCPU: "AMD EPYC"}
	tests := []struct {
		name   string
		labels []string
		runner map[string]string
		want   bool
	}{
		{"matching CPU", []string{"cpu_model"}, map[string]string{"cpu_model": "AMD EPYC"}, true},
		{"other CPU", []string{"cpu_model"}, map[string]string{"cpu_model": "Intel Xeon"}, false},
		{"runner without the label", []string{"cpu_model"}, map[string]string{}, false},
		{"undeclared accelerator never matches", []string{"accelerator_model"}, map[string]string{"accelerator_model": ""}, false},
		{"no hardware rule", nil, map[string]string{}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			bench := *b
			bench.Verify.SameHardware = tt.labels
			if got := bench.RemeasuredOn(sub, tt.runner); got != tt.want {
				t.Fatalf("SameHardware = %v, want %v", got, tt.want)
			}
		})
	}
}

func TestMeasure(t *testing.T) {
	b := digits(t)
	work, ok := workloads.Lookup(b.Workload)
	if !ok {
		t.Fatal("no digits workload")
	}
	recipe := d5list.Recipe{Fixed: b.Division.Fixed, Mutable: b.Division.Mutable}
	var log bytes.Buffer
	if err := work(context.Background(), b, &recipe, 7, &log); err != nil {
		t.Fatal(err)
	}
	res, err := Measure(b, []d5list.RunLog{{Index: 0, Seed: 7, Log: log.Bytes()}})
	if err != nil {
		t.Fatal(err)
	}
	r := res.Runs[0]
	if r.Seed != 7 || !r.Converged || r.EpochsToTarget < 1 || r.FinalAccuracy < b.Quality.Target || len(r.Evals) == 0 {
		t.Fatalf("measured run %+v", r)
	}
	if !res.Score.Valid || res.Score.Value != r.TimeToTrain {
		t.Fatalf("score %+v for one run of %v s", res.Score, r.TimeToTrain)
	}

	bad := []struct {
		name string
		logs []d5list.RunLog
		code string
	}{
		{"no logs", nil, d5list.EINVALID},
		{"out of order", []d5list.RunLog{{Index: 1, Log: log.Bytes()}}, d5list.EINVALID},
		{"unparsable", []d5list.RunLog{{Index: 0, Log: []byte(":::MLLOG {broken\n")}}, d5list.EINVALID},
	}
	for _, tt := range bad {
		t.Run(tt.name, func(t *testing.T) {
			if _, err := Measure(b, tt.logs); d5list.ErrorCode(err) != tt.code {
				t.Fatalf("Measure error %v, want code %s", err, tt.code)
			}
		})
	}
}

// A re-run whose log the competitor's code wrote is measured on the
// runner's clock: its window, from taking its seed at the gate to its
// run_stop line arriving, whatever the log says (a log claiming 0.01 s of
// a 5 s window measures 5 s, its evaluations stretched with it; one
// claiming a second of a 0.2 s window, a replay, is shrunk to it); a run
// that breached its window is held to its whole wall time; the builtin
// workloads' logs are the runner's own and keep theirs.
func TestMeasureOnTheRunnersClock(t *testing.T) {
	b := digits(t)
	logOf := func(ms int) []byte {
		return []byte(strings.Join([]string{
			`:::MLLOG {"time_ms": 1000, "key": "seed", "value": 7}`,
			`:::MLLOG {"time_ms": 1000, "key": "run_start", "value": null}`,
			fmt.Sprintf(`:::MLLOG {"time_ms": %d, "key": "eval_accuracy", "value": 0.99, "metadata": {"epoch_num": 1}}`, 1000+ms/2),
			fmt.Sprintf(`:::MLLOG {"time_ms": %d, "key": "run_stop", "value": null, "metadata": {"status": "success"}}`, 1000+ms),
		}, "\n"))
	}
	log := logOf(10)
	breach := []d5list.Reason{{Code: d5list.BreachWindowRepeated, Message: "2 run_start and 2 run_stop lines arrived"}}
	cases := []struct {
		name  string
		clock *d5list.RunClock
		want  float64
		logMS int // the run's length as logged; 0 means 10 ms
	}{
		{"a window of 5 s", &d5list.RunClock{CompetitorLog: true, LogS: 5, WallS: 6}, 5, 0},
		{"a window a little longer than logged", &d5list.RunClock{CompetitorLog: true, LogS: 1.004, WallS: 2}, 1.004, 1000},
		// A replay of the claim's logs: lines written faster than they say.
		{"a window shorter than logged", &d5list.RunClock{CompetitorLog: true, LogS: 0.2, WallS: 1}, 0.2, 1000},
		{"a breached window", &d5list.RunClock{CompetitorLog: true, WallS: 6, Breaches: breach}, 6, 0},
		{"a breached window with a window time", &d5list.RunClock{CompetitorLog: true, LogS: 0.05, WallS: 6, Breaches: breach}, 6, 0},
		{"the runner's own workload", &d5list.RunClock{WallS: 6}, 0.01, 0},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			l := log
			if c.logMS > 0 {
				l = logOf(c.logMS)
			}
			res, err := Measure(b, []d5list.RunLog{{Index: 0, Seed: 7, Log: l, Clock: c.clock}})
			if err != nil {
				t.Fatal(err)
			}
			r := res.Runs[0]
			if math.Abs(r.TimeToTrain-c.want) > 1e-9 {
				t.Fatalf("time to train %v, want %v", r.TimeToTrain, c.want)
			}
			if len(r.Evals) != 1 || math.Abs(r.Evals[0].Seconds/r.TimeToTrain-0.5) > 1e-9 {
				t.Errorf("evaluation at %v of %v s, want halfway as logged", r.Evals, r.TimeToTrain)
			}
		})
	}
	for name, clock := range map[string]*d5list.RunClock{
		"an infinite window":        {CompetitorLog: true, LogS: math.Inf(1)},
		"a breach of no known kind": {CompetitorLog: true, Breaches: []d5list.Reason{{Code: "made_up", Message: "x"}}},
		"a breach of many words":    {CompetitorLog: true, Breaches: []d5list.Reason{{Code: d5list.BreachWindowMissing, Message: strings.Repeat("x", 301)}}},
	} {
		if _, err := Measure(b, []d5list.RunLog{{Index: 0, Log: log, Clock: clock}}); d5list.ErrorCode(err) != d5list.EINVALID {
			t.Errorf("%s: %v, want %s", name, err, d5list.EINVALID)
		}
	}
}

// An inference benchmark ranked by throughput over a fixed number of
// samples ranks a re-run of the competitor's code by those samples over
// the runner's time: a log that claims a thousand times the throughput
// its own run_start and run_stop allow measures what they allow.
func TestMeasureThroughputOnTheRunnersClock(t *testing.T) {
	b := &d5list.Benchmark{ID: "l1", Level: 1, Ranking: d5list.RankingRule{Metric: d5list.MetricThroughput, Direction: d5list.HigherIsBetter},
		Division: d5list.DivisionRules{Fixed: map[string]any{"samples": 100000}}}
	log := []byte(strings.Join([]string{
		`:::MLLOG {"time_ms": 1000, "key": "run_start", "value": null}`,
		`:::MLLOG {"time_ms": 2990, "key": "throughput", "value": 50000000.0}`,
		`:::MLLOG {"time_ms": 3000, "key": "run_stop", "value": null, "metadata": {"status": "success"}}`,
	}, "\n"))
	for _, c := range []struct {
		name  string
		clock *d5list.RunClock
		want  float64
	}{
		{"competitor's log, lines seen 2 s apart", &d5list.RunClock{CompetitorLog: true, LogS: 2, WallS: 3}, 50000},
		{"competitor's log, lines seen 4 s apart", &d5list.RunClock{CompetitorLog: true, LogS: 4, WallS: 5}, 25000},
		{"the runner's own workload keeps its logged throughput", &d5list.RunClock{WallS: 3}, 50000000},
	} {
		t.Run(c.name, func(t *testing.T) {
			res, err := Measure(b, []d5list.RunLog{{Index: 0, Seed: 1, Log: log, Clock: c.clock}})
			if err != nil {
				t.Fatal(err)
			}
			if got := res.Runs[0].Throughput; math.Abs(got-c.want) > 1e-6*c.want {
				t.Fatalf("throughput %v, want %v", got, c.want)
			}
		})
	}
}

// A report must hold the runs its lease asked for: the claimed seeds in
// order, then the lease's fresh ones, each marked as such. A runner older
// than fresh seeds, or one that swapped a fresh run for a claimed seed's,
// is refused before any verdict.
func TestReportHoldsTheLeasedRuns(t *testing.T) {
	claimed, fresh := []int64{1, 2}, []int64{71, 72}
	run := func(i int, seed int64, isFresh bool) d5list.RunLog {
		return d5list.RunLog{Index: i, Seed: seed, Fresh: isFresh}
	}
	cases := []struct {
		name string
		logs []d5list.RunLog
		ok   bool
	}{
		{"as leased", []d5list.RunLog{run(0, 1, false), run(1, 2, false), run(2, 71, true), run(3, 72, true)}, true},
		{"no fresh runs", []d5list.RunLog{run(0, 1, false), run(1, 2, false)}, false},
		{"a fresh seed of its own", []d5list.RunLog{run(0, 1, false), run(1, 2, false), run(2, 71, true), run(3, 99, true)}, false},
		{"a claimed seed passed off as fresh", []d5list.RunLog{run(0, 1, false), run(1, 2, false), run(2, 1, true), run(3, 72, true)}, false},
		{"a fresh run not marked", []d5list.RunLog{run(0, 1, false), run(1, 2, false), run(2, 71, false), run(3, 72, true)}, false},
	}
	for _, c := range cases {
		err := reportsTheLeasedRuns(claimed, fresh, c.logs)
		if (err == nil) != c.ok {
			t.Errorf("%s: %v, want ok %t", c.name, err, c.ok)
		}
		if err != nil && d5list.ErrorCode(err) != d5list.EINVALID {
			t.Errorf("%s: code %s, want %s", c.name, d5list.ErrorCode(err), d5list.EINVALID)
		}
	}
}
