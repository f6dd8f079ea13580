package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	d5list "github.com/deep500/d5list"
	"github.com/deep500/d5list/catalog"
	"github.com/deep500/d5list/portal"
	"github.com/deep500/d5list/runner"
	"github.com/deep500/d5list/verifier"
)

// TestTimingStudy measures the timing verdict for BENCHMARKS.md (issue 12):
// for each catalogue benchmark it makes honest claims with the builtin
// runner, as `d5list run` does, and re-runs each with the same seeds,
// once on a quiet machine and once beside a busy loop that keeps a core
// spinning. It counts the honest claims the verifier flags, then speeds
// every claimed time up by 5 % steps and reports the smallest uniform
// speed-up caught in every trial. The claims are made quiet, as a
// competitor on their own machine would; only the re-runs are loaded.
//
// It takes minutes, so it runs only when asked:
//
//	D5LIST_TIMING_STUDY=30 go test ./cmd/d5list -run TestTimingStudy -v -timeout 60m
//
// (the value is the number of trials per benchmark and condition;
// D5LIST_TIMING_STUDY_BENCH=id,id limits the benchmarks).
func TestTimingStudy(t *testing.T) {
	trials, _ := strconv.Atoi(os.Getenv("D5LIST_TIMING_STUDY"))
	if trials <= 0 {
		t.Skip("timing study: set D5LIST_TIMING_STUDY=<trials> to run it (minutes)")
	}
	benches, err := catalog.Benchmarks()
	if err != nil {
		t.Fatal(err)
	}
	only := os.Getenv("D5LIST_TIMING_STUDY_BENCH")
	ctx := context.Background()
	for i := range benches {
		bench := &benches[i]
		if only != "" && !strings.Contains(","+only+",", ","+bench.ID+",") {
			continue
		}
		t.Run(bench.ID, func(t *testing.T) {
			start := time.Now()
			claims := make([]*d5list.Result, trials)
			seeds := make([][]int64, trials)
			for k := range trials {
				seeds[k] = make([]int64, bench.Runs)
				for r := range seeds[k] {
					seeds[k][r] = int64(1_000_003*k + 7919*r + 11)
				}
				claims[k] = studyRun(ctx, t, bench, seeds[k])
				for r := range claims[k].Runs {
					claims[k].Runs[r].Clock = nil // a bundle carries no runner clock
				}
			}
			for _, loaded := range []bool{false, true} {
				condition := "quiet"
				if loaded {
					condition = "busy loop on the other core"
				}
				var stop func()
				if loaded {
					stop = busyLoop(t)
				}
				measured := make([]*d5list.Result, trials)
				var waited float64
				for k := range trials {
					measured[k] = studyRun(ctx, t, bench, seeds[k])
					for _, r := range measured[k].Runs {
						waited = max(waited, 1-r.Clock.Availability())
					}
				}
				if stop != nil {
					stop()
				}
				for _, precision := range studyPrecisions(t, bench) {
					judged := *bench
					judged.Verify.TimingPrecision = precision
					bench := &judged
					flagged := 0
					var flags []string
					for k := range trials {
						status, reasons := verifier.Compare(bench, claims[k], measured[k], true)
						if status != d5list.StatusVerified {
							flagged++
							flags = append(flags, fmt.Sprintf("%s %s", status, reasons[0].Code))
						}
					}
					caughtAt := 0.0
					var rates []string
					for _, f := range []float64{0.95, 0.90, 0.85, 0.80, 0.75, 0.70, 0.65, 0.60, 0.50} {
						caught := 0
						for k := range trials {
							status, _ := verifier.Compare(bench, speedUp(claims[k], f), measured[k], true)
							if status == d5list.StatusDiscrepancy {
								caught++
							}
						}
						rates = append(rates, fmt.Sprintf("%.0f%%:%d/%d", (1-f)*100, caught, trials))
						if caught == trials && caughtAt == 0 {
							caughtAt = 1 - f
						}
					}
					t.Logf("STUDY %s | precision %.0f %% | %s | trials %d | honest flagged %d %v | smallest uniform speed-up caught in every trial %.0f %% | caught per speed-up %s | largest wait share %.1f %%",
						bench.ID, precision*100, condition, trials, flagged, flags, caughtAt*100, strings.Join(rates, " "), waited*100)
				}
			}
			t.Logf("%s: %s", bench.ID, time.Since(start).Round(time.Second))
		})
	}
}

// studyPrecisions are the catalogue's timing precision for bench and any
// others D5LIST_TIMING_STUDY_PRECISIONS lists (comma-separated fractions),
// each judged on the same claims and re-runs.
func studyPrecisions(t *testing.T, bench *d5list.Benchmark) []float64 {
	ps := []float64{bench.Verify.Precision()}
	for _, f := range strings.FieldsFunc(os.Getenv("D5LIST_TIMING_STUDY_PRECISIONS"), func(r rune) bool { return r == ',' }) {
		p, err := strconv.ParseFloat(strings.TrimSpace(f), 64)
		if err != nil || !(p > 0 && p < 1) {
			t.Fatalf("D5LIST_TIMING_STUDY_PRECISIONS: %q is not a fraction between 0 and 1", f)
		}
		if !slices.Contains(ps, p) {
			ps = append(ps, p)
		}
	}
	return ps
}

// studyRun runs the seeds with the builtin runner, as a re-run does, and
// derives the result the portal would.
func studyRun(ctx context.Context, t *testing.T, bench *d5list.Benchmark, seeds []int64) *d5list.Result {
	t.Helper()
	// The recipe `d5list init` writes: the division's values as they are.
	recipe := d5list.Recipe{Fixed: bench.Division.Fixed, Mutable: bench.Division.Mutable}
	logs, err := runner.Builtin{}.Execute(ctx, d5list.JobSpec{Benchmark: *bench, Recipe: recipe, Seeds: seeds})
	if err != nil {
		t.Fatal(err)
	}
	res, err := portal.Measure(bench, logs)
	if err != nil {
		t.Fatal(err)
	}
	return res
}

// speedUp is a claim whose every timestamp was multiplied by f about its
// run_start: times shrink by f, rates grow by 1/f.
func speedUp(res *d5list.Result, f float64) *d5list.Result {
	out := &d5list.Result{Score: res.Score}
	for _, r := range res.Runs {
		r.TimeToTrain *= f
		r.TTA *= f
		r.Evals = append([]d5list.EvalPoint(nil), r.Evals...)
		for i := range r.Evals {
			r.Evals[i].Seconds *= f
		}
		if r.Throughput > 0 {
			r.Throughput /= f
		}
		extra := map[string]float64{}
		for k, v := range r.Extra {
			switch k {
			case d5list.MetricOpTime, d5list.MetricLatencyP50, d5list.MetricLatencyP99:
				v *= f
			case d5list.MetricOpGFLOPS:
				v /= f
			}
			extra[k] = v
		}
		r.Extra = extra
		var shapes []d5list.ShapeMetrics
		for _, s := range r.Shapes {
			m := map[string]float64{}
			for k, v := range s.Metrics {
				if k == d5list.MetricOpTime {
					v *= f
				}
				m[k] = v
			}
			shapes = append(shapes, d5list.ShapeMetrics{Shape: s.Shape, Metrics: m})
		}
		r.Shapes = shapes
		out.Runs = append(out.Runs, r)
	}
	return out
}

// busyLoop keeps one core spinning until the returned function is called.
func busyLoop(t *testing.T) func() {
	t.Helper()
	cmd := exec.Command("sh", "-c", "while :; do :; done")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	return func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	}
}
