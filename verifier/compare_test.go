package verifier

import (
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"

	d5list "github.com/deep500/d5list"
	"github.com/deep500/d5list/mllog"
)

func compareBench(accTol, precision float64) *d5list.Benchmark {
	return &d5list.Benchmark{
		ID:      "cmp-test",
		Runs:    5,
		Quality: d5list.QualityTarget{Metric: "eval_accuracy", Target: 0.9, Mode: "first", Direction: d5list.HigherIsBetter},
		Ranking: d5list.RankingRule{Metric: d5list.MetricTimeToTrain, Direction: d5list.LowerIsBetter},
		Verify:  d5list.VerifyPolicy{AccuracyTolerance: accTol, TimingPrecision: precision},
	}
}

// derived fills the fields mllog.Derive computes from a run's curve, so a
// test that edits a curve gets a self-consistent run as a real log gives.
func derivedRun(r d5list.RunMetrics, q d5list.QualityTarget) d5list.RunMetrics {
	r.EpochsToTarget, r.TTA, r.Converged = -1, 0, false
	r.BestAccuracy = math.Inf(-1)
	for _, e := range r.Evals {
		r.BestAccuracy = math.Max(r.BestAccuracy, e.Accuracy)
		if r.EpochsToTarget < 0 && q.Reached(e.Accuracy) {
			r.EpochsToTarget, r.TTA = e.Epoch, e.Seconds
		}
	}
	if n := len(r.Evals); n > 0 {
		r.FinalAccuracy = r.Evals[n-1].Accuracy
		r.TimeToTrain = r.Evals[n-1].Seconds + 0.5
	}
	r.Converged = r.Status == "success" && r.EpochsToTarget >= 0
	return r
}

// baseResult: five runs, evaluated each epoch, reaching 0.9 at epoch 4;
// epochs take 10 s plus a little per run so the runs are not identical.
func baseResult(q d5list.QualityTarget) *d5list.Result {
	res := &d5list.Result{}
	for i := 0; i < 5; i++ {
		r := d5list.RunMetrics{Index: i, File: fmt.Sprintf("result_%d.txt", i), Seed: int64(100 + i), Status: "success"}
		for e, acc := range []float64{0.5, 0.7, 0.85, 0.91 + float64(i)/1000} {
			r.Evals = append(r.Evals, d5list.EvalPoint{Epoch: float64(e + 1), Seconds: float64(e+1) * (10 + float64(i)/10), Accuracy: acc})
		}
		res.Runs = append(res.Runs, derivedRun(r, q))
	}
	return res
}

func cloneResult(r *d5list.Result) *d5list.Result {
	c := &d5list.Result{Score: r.Score}
	for _, run := range r.Runs {
		run.Evals = slices.Clone(run.Evals)
		c.Runs = append(c.Runs, run)
	}
	return c
}

// scaleTimes multiplies a run's timestamps; withStop also scales run_stop.
func scaleTimes(r *d5list.RunMetrics, f float64, withStop bool) {
	for k := range r.Evals {
		r.Evals[k].Seconds *= f
	}
	r.TTA *= f
	if withStop {
		r.TimeToTrain *= f
	}
}

// busy is a re-run on a runner whose other work kept it waiting for a CPU:
// its times grow by f and its clock says it waited for the difference.
func busy(r *d5list.RunMetrics, f float64) {
	scaleTimes(r, f, true)
	r.Clock = &d5list.RunClock{WallS: r.TimeToTrain, CPUS: r.TimeToTrain / f, WaitS: r.TimeToTrain * (1 - 1/f),
		CompetitorLog: r.Clock != nil && r.Clock.CompetitorLog}
}

type compareFinding struct {
	code  string
	run   int // -1: submission-wide
	epoch float64
}

func compareFindings(rs []d5list.Reason) []compareFinding {
	var out []compareFinding
	for _, r := range rs {
		f := compareFinding{code: r.Code, run: -1, epoch: -1}
		if r.Run != nil {
			f.run = *r.Run
		}
		if r.Epoch != nil {
			f.epoch = *r.Epoch
		}
		out = append(out, f)
	}
	return out
}

func TestCompare(t *testing.T) {
	q := compareBench(0, 0).Quality
	type edit func(claimed, measured *d5list.Result)
	cases := []struct {
		name         string
		accTol       float64
		timeTol      float64
		sameHardware bool
		edit         edit
		want         d5list.Status
		wantFindings []compareFinding
		// wantWords must appear in the message of the first reason.
		wantWords string
	}{
		{
			name: "identical", timeTol: 0.2, sameHardware: true,
			edit: func(c, m *d5list.Result) {},
			want: d5list.StatusVerified,
		},
		{
			name: "one early epoch raised", timeTol: 0.2, sameHardware: true,
			edit: func(c, m *d5list.Result) {
				c.Runs[2].Evals[0].Accuracy = 0.55
				c.Runs[2] = derivedRun(c.Runs[2], q)
			},
			want:         d5list.StatusDiscrepancy,
			wantFindings: []compareFinding{{CodeAccuracyMismatch, 2, 1}},
			wantWords:    "run 2, epoch 1: the log claims test accuracy 0.55 but the re-run measured 0.5",
		},
		{
			name: "raised epoch reaches the target sooner", timeTol: 0.2, sameHardware: true,
			edit: func(c, m *d5list.Result) {
				c.Runs[2].Evals[2].Accuracy = 0.9312
				c.Runs[2] = derivedRun(c.Runs[2], q)
			},
			want: d5list.StatusDiscrepancy,
			wantFindings: []compareFinding{
				{CodeEpochsToTarget, 2, -1},
				{CodeAccuracyMismatch, 2, 3},
			},
			wantWords: "run 2: the log reaches test accuracy 0.9 at epoch 3 but the re-run at epoch 4",
		},
		{
			name: "a difference below the float epsilon is equal", sameHardware: true, timeTol: 0.2,
			edit: func(c, m *d5list.Result) { c.Runs[1].Evals[1].Accuracy += 1e-12 },
			want: d5list.StatusVerified,
		},
		{
			name: "seed changed", timeTol: 0.2, sameHardware: true,
			edit: func(c, m *d5list.Result) { m.Runs[3].Seed = 999 },
			want: d5list.StatusDiscrepancy, wantFindings: []compareFinding{{CodeSeedMismatch, 3, -1}},
			wantWords: "run 3: the log claims seed 103 but the re-run used seed 999",
		},
		{
			name: "re-run missing a run", timeTol: 0.2, sameHardware: true,
			edit: func(c, m *d5list.Result) { m.Runs = m.Runs[:4] },
			want: d5list.StatusDiscrepancy, wantFindings: []compareFinding{{CodeRunMissing, 4, -1}},
		},
		{
			name: "re-run has a run the claim lacks", timeTol: 0.2, sameHardware: true,
			edit: func(c, m *d5list.Result) { c.Runs = append(c.Runs[:1], c.Runs[2:]...) },
			want: d5list.StatusDiscrepancy, wantFindings: []compareFinding{{CodeRunExtra, 1, -1}},
		},
		{
			name: "claim duplicates a run", timeTol: 0.2, sameHardware: true,
			edit: func(c, m *d5list.Result) { c.Runs[4] = c.Runs[3] },
			want: d5list.StatusDiscrepancy, wantFindings: []compareFinding{{CodeRunDuplicate, 3, -1}, {CodeRunExtra, 4, -1}},
		},
		{
			name: "no runner with the hardware", timeTol: 0.2, sameHardware: false,
			edit: func(c, m *d5list.Result) {},
			want: d5list.StatusNeedsReview, wantFindings: []compareFinding{{CodeTimingNotReproduced, -1, -1}},
			wantWords: timingNotReproducedWords,
		},
		{
			name: "no runner with the hardware, timing unjudged", timeTol: 0.2, sameHardware: false,
			edit: func(c, m *d5list.Result) {
				for i := range c.Runs {
					scaleTimes(&c.Runs[i], 0.1, true)
				}
			},
			want: d5list.StatusNeedsReview, wantFindings: []compareFinding{{CodeTimingNotReproduced, -1, -1}},
		},
		{
			name: "no runner with the hardware, accuracy differs", timeTol: 0.2, sameHardware: false,
			edit: func(c, m *d5list.Result) { m.Runs[0].Evals[1].Accuracy = 0.6 },
			want: d5list.StatusDiscrepancy, wantFindings: []compareFinding{{CodeAccuracyMismatch, 0, 2}},
		},
		{
			name: "claim has an evaluation the re-run lacks", timeTol: 0.2, sameHardware: true,
			edit: func(c, m *d5list.Result) {
				m.Runs[1].Evals = append(m.Runs[1].Evals[:1], m.Runs[1].Evals[2:]...)
			},
			want: d5list.StatusDiscrepancy, wantFindings: []compareFinding{{CodeEpochMissing, 1, 2}},
		},
		{
			name: "re-run did not converge", timeTol: 0.2, sameHardware: true,
			edit: func(c, m *d5list.Result) {
				m.Runs[4].Evals[3].Accuracy = 0.88
				m.Runs[4] = derivedRun(m.Runs[4], q)
			},
			want: d5list.StatusDiscrepancy,
			wantFindings: []compareFinding{
				{CodeConvergenceMismatch, 4, -1}, {CodeEpochsToTarget, 4, -1}, {CodeAccuracyMismatch, 4, 4},
			},
		},
		{
			name: "GPU tolerance: noise within 0.01", accTol: 0.01, timeTol: 0.2, sameHardware: true,
			edit: func(c, m *d5list.Result) {
				for i := range m.Runs {
					for k := range m.Runs[i].Evals {
						m.Runs[i].Evals[k].Accuracy += 0.009 * float64(1-2*((i+k)%2))
					}
					m.Runs[i] = derivedRun(m.Runs[i], q)
				}
			},
			want: d5list.StatusVerified,
		},
		{
			name: "GPU tolerance: one epoch 0.02 off", accTol: 0.01, timeTol: 0.2, sameHardware: true,
			edit: func(c, m *d5list.Result) { m.Runs[2].Evals[1].Accuracy -= 0.02 },
			want: d5list.StatusDiscrepancy, wantFindings: []compareFinding{{CodeAccuracyMismatch, 2, 2}},
			wantWords: "(tolerance 0.01)",
		},
		{
			name: "GPU tolerance: re-run converges one epoch later", accTol: 0.01, timeTol: 0.2, sameHardware: true,
			edit: func(c, m *d5list.Result) {
				c.Runs[0].Evals[3].Accuracy = 0.905
				c.Runs[0] = derivedRun(c.Runs[0], q)
				r := &m.Runs[0]
				r.Evals[3].Accuracy = 0.898
				r.Evals = append(r.Evals, d5list.EvalPoint{Epoch: 5, Seconds: 50, Accuracy: 0.906})
				*r = derivedRun(*r, q)
			},
			want: d5list.StatusVerified,
		},
		{
			name: "GPU tolerance: re-run converges much later", accTol: 0.01, timeTol: 0.2, sameHardware: true,
			edit: func(c, m *d5list.Result) {
				r := &m.Runs[0]
				r.Evals[3].Accuracy = 0.88
				r.Evals = append(r.Evals, d5list.EvalPoint{Epoch: 5, Seconds: 50, Accuracy: 0.905})
				*r = derivedRun(*r, q)
			},
			want:         d5list.StatusDiscrepancy,
			wantFindings: []compareFinding{{CodeAccuracyMismatch, 0, 4}, {CodeEpochsToTarget, 0, 4}},
		},
		{
			name: "GPU tolerance: re-run just misses the target", accTol: 0.01, timeTol: 0.2, sameHardware: true,
			edit: func(c, m *d5list.Result) {
				c.Runs[0].Evals[3].Accuracy = 0.905
				c.Runs[0] = derivedRun(c.Runs[0], q)
				r := &m.Runs[0]
				r.Evals[3].Accuracy = 0.898
				r.Evals = append(r.Evals, d5list.EvalPoint{Epoch: 5, Seconds: 50, Accuracy: 0.899})
				r.Status = "aborted"
				*r = derivedRun(*r, q)
			},
			want:         d5list.StatusNeedsReview,
			wantFindings: []compareFinding{{CodeConvergenceBorder, 0, -1}},
		},
		{
			name: "GPU tolerance: re-run converges sooner", accTol: 0.01, timeTol: 0.2, sameHardware: true,
			edit: func(c, m *d5list.Result) {
				c.Runs[1].Evals[2].Accuracy = 0.895
				c.Runs[1] = derivedRun(c.Runs[1], q)
				r := &m.Runs[1]
				r.Evals[2].Accuracy = 0.9
				r.Evals = r.Evals[:3]
				*r = derivedRun(*r, q)
			},
			want: d5list.StatusVerified,
		},
		{
			name: "claimed evaluation after run_stop", timeTol: 0.2, sameHardware: false,
			edit:         func(c, m *d5list.Result) { c.Runs[2].TimeToTrain = 25 },
			want:         d5list.StatusDiscrepancy,
			wantFindings: []compareFinding{{CodeEvalAfterStop, 2, 3}, {CodeEvalAfterStop, 2, 4}},
		},
		{
			name: "claimed evaluation times out of order", timeTol: 0.2, sameHardware: false,
			edit:         func(c, m *d5list.Result) { c.Runs[0].Evals[2].Seconds = 5 },
			want:         d5list.StatusDiscrepancy,
			wantFindings: []compareFinding{{CodeEvalTimeOrder, 0, 3}},
		},
		{
			name: "claimed converged without reaching the target", timeTol: 0.2, sameHardware: false,
			edit: func(c, m *d5list.Result) {
				for _, r := range []*d5list.Result{c, m} {
					r.Runs[1].Evals[3].Accuracy = 0.8
					r.Runs[1] = derivedRun(r.Runs[1], q)
				}
				c.Runs[1].Converged, c.Runs[1].EpochsToTarget = true, -1
			},
			want:         d5list.StatusDiscrepancy,
			wantFindings: []compareFinding{{CodeClaimTargetNotMet, 1, -1}, {CodeConvergenceMismatch, 1, -1}},
		},
		{
			name: "summary-only runs compare final accuracy", timeTol: 0.2, sameHardware: false,
			edit: func(c, m *d5list.Result) {
				c.Runs[0].Evals, m.Runs[0].Evals = nil, nil
				c.Runs[0].FinalAccuracy = 0.95
			},
			want: d5list.StatusDiscrepancy, wantFindings: []compareFinding{{CodeFinalAccuracy, 0, -1}},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			bench := compareBench(tc.accTol, tc.timeTol)
			claimed := baseResult(bench.Quality)
			measured := cloneResult(claimed)
			tc.edit(claimed, measured)
			status, reasons := Compare(bench, claimed, measured, tc.sameHardware)
			got := compareFindings(reasons)
			if status != tc.want || !slices.Equal(got, tc.wantFindings) {
				t.Fatalf("status %s, findings %v\nwant %s, %v\nmessages:\n%s", status, got, tc.want, tc.wantFindings, reasonMessages(reasons))
			}
			if tc.wantWords != "" && !strings.Contains(reasons[0].Message, tc.wantWords) {
				t.Errorf("message %q lacks %q", reasons[0].Message, tc.wantWords)
			}
			for _, r := range reasons {
				if r.Message == "" || strings.Contains(r.Message, "%!") {
					t.Errorf("bad message for %s: %q", r.Code, r.Message)
				}
			}
			// Map iteration must not leak into the verdict.
			for range 5 {
				s2, r2 := Compare(bench, claimed, measured, tc.sameHardware)
				if s2 != status || fmt.Sprint(compareFindings(r2)) != fmt.Sprint(got) || reasonMessages(r2) != reasonMessages(reasons) {
					t.Fatalf("not deterministic: %v then %v", got, compareFindings(r2))
				}
			}
		})
	}
}

func reasonMessages(rs []d5list.Reason) string {
	var b strings.Builder
	for _, r := range rs {
		fmt.Fprintf(&b, "  %s: %s\n", r.Code, r.Message)
	}
	return b.String()
}

func TestCompareAccuracyReasonFields(t *testing.T) {
	bench := compareBench(0, 0.2)
	claimed := baseResult(bench.Quality)
	measured := cloneResult(claimed)
	claimed.Runs[2].Evals[1].Accuracy = 0.75
	_, reasons := Compare(bench, claimed, measured, true)
	if len(reasons) != 1 {
		t.Fatalf("reasons: %s", reasonMessages(reasons))
	}
	r := reasons[0]
	if *r.Run != 2 || *r.Epoch != 2 || *r.Claimed != 0.75 || *r.Measured != 0.7 || r.File != "result_2.txt" {
		t.Errorf("reason fields: run %d epoch %v claimed %v measured %v file %q", *r.Run, *r.Epoch, *r.Claimed, *r.Measured, r.File)
	}
}

// Accuracies that do not reproduce are followed by what differed between
// where the claim ran and the re-run (issue 14); matching environments,
// or a verified re-run, add nothing.
func TestCompareNamesEnvironmentDifferences(t *testing.T) {
	bench := compareBench(0, 0.2)
	// What the runner can take (recipe images, a data set) is not what a
	// run computed with: a claim's machine never records it.
	rerun := map[string]string{"cpu_model": "AMD EPYC", "framework.torch": "1.13.1", "runs": "entrypoint",
		d5list.LabelImages: "yes", d5list.LabelDatasetPrefix + "cifar10": "yes"}
	for _, tt := range []struct {
		name     string
		claimEnv map[string]string
		mismatch bool
		want     string // in the note; "" means no note
	}{
		{"another torch", map[string]string{"cpu_model": "AMD EPYC", "framework.torch": "2.3.0", "runs": "entrypoint"}, true,
			"the claim's framework.torch=2.3.0; the re-run's framework.torch=1.13.1"},
		{"no record", nil, true, "the claim does not say what its runs ran with"},
		{"the same environment", map[string]string{"cpu_model": "AMD EPYC", "framework.torch": "1.13.1", "runs": "entrypoint"}, true, ""},
		{"verified", map[string]string{"framework.torch": "2.3.0"}, false, ""},
	} {
		t.Run(tt.name, func(t *testing.T) {
			claimed := baseResult(bench.Quality)
			claimed.Runner = tt.claimEnv
			measured := cloneResult(claimed)
			measured.Runner = rerun
			if tt.mismatch {
				claimed.Runs[2].Evals[1].Accuracy = 0.75
			}
			_, reasons := Compare(bench, claimed, measured, true)
			var note string
			for _, r := range reasons {
				if r.Code == CodeEnvironmentDiffers {
					note = r.Message
				}
			}
			if (tt.want == "") != (note == "") || !strings.Contains(note, tt.want) {
				t.Fatalf("note %q, want %q; reasons %s", note, tt.want, reasonMessages(reasons))
			}
		})
	}
}

// Where the runner recorded what the job's sandbox ran with, the note
// names those versions, not the labels the runner advertises for its own
// python3 (an image brings its own torch and BLAS).
func TestCompareNamesRecordedVersions(t *testing.T) {
	bench := compareBench(0, 0.2)
	claimed := baseResult(bench.Quality)
	claimed.Runner = map[string]string{"cpu_model": "AMD EPYC", "framework.torch": "1.13.1", "framework.blas": "openblas 0.3.21 SkylakeX pthreads"}
	measured := cloneResult(claimed)
	measured.Runner = map[string]string{"cpu_model": "AMD EPYC", "framework.torch": "1.13.1", "framework.sklearn": "1.2.1"}
	for i := range measured.Runs {
		measured.Runs[i].Clock = &d5list.RunClock{Environment: map[string]string{"framework.torch": "1.13.1",
			"framework.blas": "openblas 0.3.21 Haswell pthreads", "env.D5_SEED": "1"}}
	}
	claimed.Runs[2].Evals[1].Accuracy = 0.75
	_, reasons := Compare(bench, claimed, measured, true)
	var note string
	for _, r := range reasons {
		if r.Code == CodeEnvironmentDiffers {
			note = r.Message
		}
	}
	want := "the claim's framework.blas=openblas 0.3.21 SkylakeX pthreads; the re-run's framework.blas=openblas 0.3.21 Haswell pthreads"
	if note != "what differs between where the claim ran and the re-run: "+want {
		t.Fatalf("note %q, want %q (the runner's own framework labels and the variables set aside)", note, want)
	}
}

func TestCompareNilResults(t *testing.T) {
	bench := compareBench(0, 0.2)
	res := baseResult(bench.Quality)
	for _, tc := range []struct {
		claimed, measured *d5list.Result
		code              string
	}{{nil, res, CodeNoClaim}, {res, nil, CodeNoMeasurement}} {
		status, reasons := Compare(bench, tc.claimed, tc.measured, true)
		if status != d5list.StatusNeedsReview || len(reasons) != 1 || reasons[0].Code != tc.code {
			t.Errorf("%s: status %s reasons %v", tc.code, status, compareFindings(reasons))
		}
	}
}

func TestReasonOrder(t *testing.T) {
	rs := []d5list.Reason{
		{Code: "b", Run: cmpIntPtr(1), Epoch: cmpFloatPtr(2)},
		{Code: "a", Run: cmpIntPtr(1), Epoch: cmpFloatPtr(2)},
		{Code: "z"},
		{Code: "c", Run: cmpIntPtr(0)},
		{Code: "a", Run: cmpIntPtr(1)},
		{Code: "a", Run: cmpIntPtr(1), Epoch: cmpFloatPtr(1)},
	}
	sortCompareReasons(rs)
	var got []string
	for _, r := range rs {
		got = append(got, fmt.Sprint(compareFindings([]d5list.Reason{r})))
	}
	want := []string{"[{z -1 -1}]", "[{c 0 -1}]", "[{a 1 -1}]", "[{a 1 1}]", "[{a 1 2}]", "[{b 1 2}]"}
	if !slices.Equal(got, want) {
		t.Errorf("order %v, want %v", got, want)
	}
}

// Real MLPerf v4.0 ResNet logs (ASUSTeK, 8×H100): a faithful re-run passes,
// a re-run on a busy runner whose clock measured its waits passes, and logs
// whose timestamps were compressed to 0.6 are caught.
func TestCompareRealMLPerfLogs(t *testing.T) {
	dir := "../../shared/peer-data/mlperf/v4.0-asustek-resnet"
	files, _ := filepath.Glob(filepath.Join(dir, "result_*.txt"))
	if len(files) == 0 {
		t.Skip("shared/peer-data not beside the repository")
	}
	sort.Strings(files)
	bench := compareBench(0.01, 0.1)
	bench.Quality.Target = 0.759
	claimed := &d5list.Result{}
	for i, f := range files {
		fh, err := os.Open(f)
		if err != nil {
			t.Fatal(err)
		}
		events, err := mllog.Parse(fh, filepath.Base(f))
		fh.Close()
		if err != nil {
			t.Fatal(err)
		}
		run, _ := mllog.Derive(events, bench.Quality, filepath.Base(f), i)
		claimed.Runs = append(claimed.Runs, run)
	}
	if len(claimed.Runs[0].Evals) < 5 || claimed.Runs[0].TimeToTrain <= 0 {
		t.Fatalf("derived too little from %s: %+v", files[0], claimed.Runs[0])
	}
	status, reasons := Compare(bench, claimed, cloneResult(claimed), true)
	if status != d5list.StatusVerified {
		t.Fatalf("faithful re-run: %s\n%s", status, reasonMessages(reasons))
	}
	loaded := cloneResult(claimed)
	for i := range loaded.Runs {
		busy(&loaded.Runs[i], 1.7)
	}
	if status, reasons := Compare(bench, claimed, loaded, true); status != d5list.StatusVerified {
		t.Fatalf("busy runner: %s\n%s", status, reasonMessages(reasons))
	}
	forged := cloneResult(claimed)
	for i := range forged.Runs {
		scaleTimes(&forged.Runs[i], 0.6, true)
	}
	status, reasons = Compare(bench, forged, claimed, true)
	if status != d5list.StatusDiscrepancy || reasons[0].Code != CodeTimingMismatch {
		t.Fatalf("timestamps compressed to 0.6: %s\n%s", status, reasonMessages(reasons))
	}
}

// Values in reasons print exactly and readably: decimals, with an exponent
// only for magnitudes below 1e-4.
func TestCmpNum(t *testing.T) {
	for v, want := range map[float64]string{
		0: "0", 0.945: "0.945", 1234567.5: "1234567.5", 1.5e-15: "1.5e-15", -2e-5: "-2e-05",
		8.526512829121202e-14: "8.526512829121202e-14", 0.0001: "0.0001",
	} {
		if got := cmpNum(v); got != want {
			t.Errorf("cmpNum(%v) = %q, want %q", v, got, want)
		}
	}
}

// A data-parallel benchmark's re-run of the competitor's code must show the
// workers its benchmark fixes computing in every run, fresh seeds' too, as
// the runner counts them; fewer go to an organiser, and a count the
// executor did not take says nothing.
func TestCompareCountsTheWorkersSeen(t *testing.T) {
	bench := compareBench(0, 0)
	bench.Division.Fixed = map[string]any{"workers": int64(2)}
	for _, tt := range []struct {
		name   string
		seen   *int
		review bool
	}{
		{"both workers", ptr(2), false},
		{"three processes", ptr(3), false},
		{"one", ptr(1), true},
		{"not counted", nil, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			claimed := baseResult(bench.Quality)
			measured := cloneResult(claimed)
			for i := range measured.Runs {
				measured.Runs[i].Clock = &d5list.RunClock{CompetitorLog: true, Processes: tt.seen}
			}
			// A run with a seed the portal drew is counted as the others.
			fresh := measured.Runs[0]
			fresh.Index, fresh.Fresh, fresh.Seed, fresh.GivenSeed = len(measured.Runs), true, 987654, 987654
			measured.Runs = append(measured.Runs, fresh)
			status, reasons := Compare(bench, claimed, measured, false)
			flagged := 0
			for _, r := range reasons {
				if r.Code == CodeWorkersNotSeen {
					flagged++
				}
			}
			if tt.review != (flagged == len(measured.Runs)) || (!tt.review && flagged > 0) || (tt.review && status != d5list.StatusNeedsReview) {
				t.Fatalf("%s: %s with %d %s reasons; reasons %s", tt.name, status, flagged, CodeWorkersNotSeen, reasonMessages(reasons))
			}
		})
	}
}

func ptr(n int) *int { return &n }

// A benchmark ranked by throughput that names no timed metric still holds
// the claimed throughput against the re-run: three times the re-run's
// speed is a discrepancy, the re-run's own is not.
func TestCompareHoldsTheRankedSpeedByDefault(t *testing.T) {
	bench := compareBench(0, 0.15)
	bench.Ranking = d5list.RankingRule{Metric: d5list.MetricThroughput, Direction: d5list.HigherIsBetter}
	for _, tt := range []struct {
		factor float64
		want   d5list.Status
	}{{1, d5list.StatusVerified}, {3, d5list.StatusDiscrepancy}} {
		measured := baseResult(bench.Quality)
		for i := range measured.Runs {
			measured.Runs[i].Throughput = 1000 + float64(i)
		}
		claimed := cloneResult(measured)
		for i := range claimed.Runs {
			claimed.Runs[i].Throughput *= tt.factor
		}
		claimed.Score = d5list.OlympicScore(claimed.Runs, bench.Ranking.Metric, bench.Ranking.Direction)
		measured.Score = d5list.OlympicScore(measured.Runs, bench.Ranking.Metric, bench.Ranking.Direction)
		if status, reasons := Compare(bench, claimed, measured, true); status != tt.want {
			t.Errorf("claimed %v times the re-run's throughput: %s, want %s; reasons %s", tt.factor, status, tt.want, reasonMessages(reasons))
		}
	}
}
