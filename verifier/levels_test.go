package verifier

import (
	"bytes"
	"fmt"
	"math"
	"strings"
	"testing"
	"time"

	d5list "github.com/deep500/d5list"
	"github.com/deep500/d5list/bundle"
	"github.com/deep500/d5list/mllog"
)

// The Level 0 and 1 rules, against logs shaped like the builtin gemm and
// mlp-inference workloads write them.

func opBench() *d5list.Benchmark {
	return &d5list.Benchmark{
		ID: "l0-test-gemm", Level: 0, Runs: 3,
		Division: d5list.DivisionRules{Fixed: map[string]any{"op": "gemm"}, Mutable: map[string]any{"repeats": 5}},
		Quality:  d5list.QualityTarget{Metric: d5list.MetricOpRelL2Error, Target: 1e-12, Mode: "final", Direction: d5list.LowerIsBetter},
		Ranking: d5list.RankingRule{Metric: d5list.MetricOpTime, Direction: d5list.LowerIsBetter, Unit: "ms",
			Secondary: d5list.MetricOpRelL2Error, SecondaryDirection: d5list.LowerIsBetter},
		Verify: d5list.VerifyPolicy{Reproduce: []string{d5list.MetricOpRelL2Error, d5list.MetricOpMaxError},
			Timed: []string{d5list.MetricOpTime}, TimingPrecision: 0.1, SameHardware: []string{"cpu_model"}},
	}
}

func inferenceBench() *d5list.Benchmark {
	return &d5list.Benchmark{
		ID: "l1-test-mlp", Level: 1, Runs: 3,
		Division: d5list.DivisionRules{Fixed: map[string]any{"model": "mlp"}, Mutable: map[string]any{"batch_size": 1}},
		Quality:  d5list.QualityTarget{Mode: "first", Direction: d5list.HigherIsBetter},
		Ranking: d5list.RankingRule{Metric: d5list.MetricThroughput, Direction: d5list.HigherIsBetter, Unit: "samples/s",
			Secondary: d5list.MetricLatencyP50, SecondaryDirection: d5list.LowerIsBetter},
		Verify: d5list.VerifyPolicy{Timed: []string{d5list.MetricThroughput}, TimingPrecision: 0.1, SameHardware: []string{"cpu_model"}},
	}
}

// opShape is one shape's logged results.
type opShape struct {
	name              string
	ms, relL2, maxAbs float64
}

var testShapes = []opShape{
	{"1760x16x1760", 14.5, 1.5e-15, 1.7e-13},
	{"512x64x1024", 8.25, 1.2e-15, 1.1e-13},
}

// levelLog writes one run starting at startMS: for an operator benchmark
// each shape's results, for inference the throughput and latencies.
func levelLog(bench *d5list.Benchmark, seed, startMS int64, shapes []opShape, throughput float64) string {
	var buf bytes.Buffer
	now := startMS
	w := mllog.NewWriter(&buf, func() time.Time { return time.UnixMilli(now) })
	w.Start(mllog.KeyInitStart, nil, nil)
	w.Point(mllog.KeySubmissionBenchmark, bench.ID, nil)
	w.Point(mllog.KeySeed, seed, nil)
	w.End(mllog.KeyInitStop, nil, nil)
	now += 20
	w.Start(mllog.KeyRunStart, nil, nil)
	for _, s := range shapes {
		now += 100
		meta := func() map[string]any { return map[string]any{"op": "gemm", "shape": s.name} }
		w.Point(d5list.MetricOpTime, s.ms, meta())
		w.Point(d5list.MetricOpGFLOPS, 7.0, meta())
		w.Point(d5list.MetricOpRelL2Error, s.relL2, meta())
		w.Point(d5list.MetricOpMaxError, s.maxAbs, meta())
	}
	if throughput > 0 {
		now += 150
		w.Point(mllog.KeyThroughput, throughput, map[string]any{"unit": "samples/s"})
		w.Point(d5list.MetricLatencyP50, 0.0066, map[string]any{"per": "batch"})
		w.Point(d5list.MetricLatencyP99, 0.009, map[string]any{"per": "batch"})
	}
	w.End(mllog.KeyRunStop, nil, map[string]any{"status": "success"})
	return buf.String()
}

// levelBundle is a valid submission of bench; mutate[i] edits run i's log.
func levelBundle(bench *d5list.Benchmark, mutate map[int]func(string) string) *bundle.Bundle {
	b := &bundle.Bundle{
		Manifest: d5list.Manifest{Format: d5list.ManifestFormat, Benchmark: bench.ID, Division: "closed",
			Availability: "available", Submitter: "ETH", SystemName: "laptop", Framework: "go"},
		ManifestFile: "submission.json",
		Recipe:       d5list.Recipe{Fixed: bench.Division.Fixed, Mutable: map[string]any{}},
		RecipeFile:   "recipe.yaml",
	}
	start := int64(1_700_000_000_000)
	for i := range bench.Runs {
		var text string
		if bench.Level == 0 {
			text = levelLog(bench, int64(100+i), start, testShapes, 0)
		} else {
			text = levelLog(bench, int64(100+i), start, nil, 140000+float64(i)*1000)
		}
		if m := mutate[i]; m != nil {
			text = m(text)
		}
		start += 400
		b.Results = append(b.Results, bundle.ResultFile{Index: i, Name: fmt.Sprintf("results/result_%d.txt", i), Data: []byte(text)})
	}
	return b
}

func TestCheckOperatorAndInferenceLogs(t *testing.T) {
	// dropShapeKey removes shape's line for key from a log.
	dropShapeKey := func(key, shape string) func(string) string {
		return func(text string) string {
			var out []string
			for _, l := range strings.Split(text, "\n") {
				if strings.Contains(l, `"key":"`+key+`"`) && strings.Contains(l, `"shape":"`+shape+`"`) {
					continue
				}
				out = append(out, l)
			}
			return strings.Join(out, "\n")
		}
	}
	cases := []struct {
		name   string
		bench  *d5list.Benchmark
		mutate map[int]func(string) string
		want   []string
	}{
		{name: "operator: valid", bench: opBench()},
		{name: "inference: valid", bench: inferenceBench()},
		{name: "operator: a shape without its max error", bench: opBench(),
			mutate: map[int]func(string) string{1: dropShapeKey(d5list.MetricOpMaxError, "512x64x1024")},
			want:   []string{CodeOpShape}},
		{name: "operator: no max error at all", bench: opBench(),
			mutate: map[int]func(string) string{1: func(s string) string {
				return dropShapeKey(d5list.MetricOpMaxError, "512x64x1024")(dropShapeKey(d5list.MetricOpMaxError, "1760x16x1760")(s))
			}},
			want: []string{CodeMissingMetric, CodeOpShape}},
		{name: "operator: a run leaves out a shape", bench: opBench(),
			mutate: map[int]func(string) string{2: func(s string) string {
				for _, k := range []string{d5list.MetricOpTime, d5list.MetricOpGFLOPS, d5list.MetricOpRelL2Error, d5list.MetricOpMaxError} {
					s = dropShapeKey(k, "1760x16x1760")(s)
				}
				return s
			}},
			want: []string{CodeOpShapesDiffer}},
		{name: "operator: time without a shape", bench: opBench(),
			mutate: map[int]func(string) string{0: func(s string) string {
				return strings.Replace(s, `"shape":"1760x16x1760"`, `"shapes":"1760x16x1760"`, 1)
			}},
			want: []string{CodeOpShape}},
		{name: "operator: two runs above the error tolerance", bench: opBench(),
			mutate: map[int]func(string) string{
				0: func(s string) string { return strings.Replace(s, "1.5e-15", "0.001", 1) },
				1: func(s string) string { return strings.Replace(s, "1.5e-15", "0.001", 1) },
			},
			want: []string{CodeTooManyUnconverged}},
		{name: "inference: two runs aborted", bench: inferenceBench(),
			mutate: map[int]func(string) string{
				0: func(s string) string { return strings.Replace(s, `"status":"success"`, `"status":"aborted"`, 1) },
				2: func(s string) string { return strings.Replace(s, `"status":"success"`, `"status":"aborted"`, 1) },
			},
			want: []string{CodeTooManyUnconverged}},
		{name: "inference: throughput logged after run_stop", bench: inferenceBench(),
			mutate: map[int]func(string) string{2: func(s string) string {
				lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
				var moved, rest []string
				for _, l := range lines {
					if strings.Contains(l, `"key":"throughput"`) {
						moved = append(moved, l)
					} else {
						rest = append(rest, l)
					}
				}
				return strings.Join(append(rest, moved...), "\n") + "\n"
			}},
			want: []string{CodeMissingMetric}},
	}
	for _, tt := range cases {
		t.Run(tt.name, func(t *testing.T) {
			claimed, reasons := Check(levelBundle(tt.bench, tt.mutate), tt.bench)
			assertCodes(t, reasons, tt.want, true)
			for _, r := range reasons {
				if r.Run == nil || !strings.Contains(r.File, "result_") {
					t.Errorf("reason %s names no run log: %+v", r.Code, r)
				}
			}
			if len(tt.want) > 0 {
				return
			}
			if !claimed.Score.Valid {
				t.Fatalf("score %+v", claimed.Score)
			}
			for _, r := range claimed.Runs {
				if !r.Converged || len(r.Evals) != 0 {
					t.Errorf("run %d: converged %v, %d evaluations; want converged without a curve", r.Index, r.Converged, len(r.Evals))
				}
			}
			if tt.bench.Level == 0 {
				// op_time_ms is one pass over the shapes; the errors are the worst shape's.
				r := claimed.Runs[0]
				if r.Extra[d5list.MetricOpTime] != 14.5+8.25 || r.Extra[d5list.MetricOpRelL2Error] != 1.5e-15 || r.Extra[d5list.MetricOpMaxError] != 1.7e-13 {
					t.Errorf("run 0 extra %v", r.Extra)
				}
				if claimed.Score.Metric != d5list.MetricOpTime || claimed.Score.Value != 22.75 {
					t.Errorf("score %+v, want op_time_ms 22.75", claimed.Score)
				}
			} else if claimed.Score.Metric != d5list.MetricThroughput || claimed.Score.Value != 141000 {
				t.Errorf("score %+v, want the olympic mean throughput 141000", claimed.Score)
			}
		})
	}
}

// levelResult derives a result from levelBundle's logs, as Check and the
// portal's Measure do.
// dropShape removes every line of one operator shape from a log.
func dropShape(shape string) func(string) string {
	return func(text string) string {
		var out []string
		for _, l := range strings.Split(text, "\n") {
			if !strings.Contains(l, `"shape":"`+shape+`"`) {
				out = append(out, l)
			}
		}
		return strings.Join(out, "\n")
	}
}

func levelResult(t *testing.T, bench *d5list.Benchmark, mutate map[int]func(string) string) *d5list.Result {
	t.Helper()
	res := &d5list.Result{}
	for _, f := range levelBundle(bench, mutate).Results {
		events, err := mllog.Parse(bytes.NewReader(f.Data), f.Name)
		if err != nil {
			t.Fatal(err)
		}
		run, reasons := mllog.Derive(events, bench.Quality, f.Name, f.Index)
		if len(reasons) > 0 {
			t.Fatalf("%s: %v", f.Name, reasons)
		}
		res.Runs = append(res.Runs, run)
	}
	res.Score = d5list.OlympicScore(res.Runs, bench.Ranking.Metric, bench.Ranking.Direction)
	return res
}

func TestCompareOperatorAndInference(t *testing.T) {
	scale := func(key string, f float64) func(string) string {
		return func(s string) string {
			lines := strings.Split(s, "\n")
			for i, l := range lines {
				if !strings.Contains(l, `"key":"`+key+`"`) {
					continue
				}
				for _, sh := range testShapes {
					l = strings.Replace(l, fmt.Sprintf(`"value":%v,`, sh.ms), fmt.Sprintf(`"value":%v,`, sh.ms*f), 1)
				}
				for _, tp := range []float64{140000, 141000, 142000} {
					l = strings.Replace(l, fmt.Sprintf(`"value":%v,`, tp), fmt.Sprintf(`"value":%v,`, tp*f), 1)
				}
				lines[i] = l
			}
			return strings.Join(lines, "\n")
		}
	}
	all := func(m func(string) string) map[int]func(string) string {
		return map[int]func(string) string{0: m, 1: m, 2: m}
	}
	cases := []struct {
		name         string
		bench        *d5list.Benchmark
		claim        map[int]func(string) string
		measured     map[int]func(string) string
		sameHardware bool
		status       d5list.Status
		code         string
		run          int // the reason's run; -1 submission-wide
	}{
		{"operator: honest", opBench(), nil, nil, true, d5list.StatusVerified, "", 0},
		{"operator: honest re-run twice as slow, beside a busy process", opBench(), nil, all(scale(d5list.MetricOpTime, 2)), true, d5list.StatusVerified, "", 0},
		{"operator: times claimed at 0.6", opBench(), all(scale(d5list.MetricOpTime, 0.6)), nil, true, d5list.StatusDiscrepancy, CodeTimingMismatch, -1},
		{"operator: other hardware", opBench(), nil, nil, false, d5list.StatusNeedsReview, CodeTimingNotReproduced, -1},
		{"operator: an edited error", opBench(), map[int]func(string) string{1: func(s string) string { return strings.Replace(s, "1.5e-15", "1.4e-15", 1) }},
			nil, true, d5list.StatusDiscrepancy, CodeMetricMismatch, 1},
		{"operator: an edited error on other hardware", opBench(), map[int]func(string) string{2: func(s string) string { return strings.Replace(s, "1.7e-13", "1.6e-13", 1) }},
			nil, false, d5list.StatusDiscrepancy, CodeMetricMismatch, 2},
		{"operator: times claimed 10x faster", opBench(), all(scale(d5list.MetricOpTime, 0.1)), nil, true, d5list.StatusDiscrepancy, CodeTimingMismatch, -1},
		// Without the fast shape the claim is 0.64 of the re-run's time,
		// which timing alone also catches; the shapes say why.
		{"operator: every claimed run leaves out a shape", opBench(), all(dropShape("512x64x1024")), nil, true, d5list.StatusDiscrepancy, CodeOpShapesDiffer, -1},
		{"operator: the claim measures another shape", opBench(), all(func(s string) string { return strings.ReplaceAll(s, "512x64x1024", "512x64x1000") }),
			nil, false, d5list.StatusDiscrepancy, CodeOpShapesDiffer, -1},
		// The worst shape's error is untouched, so only the shape's own
		// comparison sees the edit.
		{"operator: an edited error of the better shape", opBench(), map[int]func(string) string{2: func(s string) string { return strings.Replace(s, "1.2e-15", "1.1e-15", 1) }},
			nil, true, d5list.StatusDiscrepancy, CodeMetricMismatch, 2},
		{"inference: honest", inferenceBench(), nil, nil, true, d5list.StatusVerified, "", 0},
		{"inference: honest re-run at half the rate, beside a busy process", inferenceBench(), nil, all(scale(mllog.KeyThroughput, 0.5)), true, d5list.StatusVerified, "", 0},
		{"inference: throughput claimed 1.7 times higher", inferenceBench(), all(scale(mllog.KeyThroughput, 1.7)), nil, true, d5list.StatusDiscrepancy, CodeTimingMismatch, -1},
		{"inference: a run that did not end claimed as ended", inferenceBench(), nil,
			map[int]func(string) string{1: func(s string) string { return strings.Replace(s, `"status":"success"`, `"status":"aborted"`, 1) }},
			true, d5list.StatusDiscrepancy, CodeConvergenceMismatch, 1},
		{"inference: throughput claimed 10x higher", inferenceBench(), all(scale(mllog.KeyThroughput, 10)), nil, true, d5list.StatusDiscrepancy, CodeTimingMismatch, -1},
	}
	for _, tt := range cases {
		t.Run(tt.name, func(t *testing.T) {
			claimed := levelResult(t, tt.bench, tt.claim)
			measured := levelResult(t, tt.bench, tt.measured)
			if strings.Contains(tt.name, "beside a busy process") {
				// The runner's clock saw each run wait half its time for a CPU.
				for i := range measured.Runs {
					measured.Runs[i].Clock = &d5list.RunClock{WallS: 2, CPUS: 1, WaitS: 1}
				}
			}
			status, reasons := Compare(tt.bench, claimed, measured, tt.sameHardware)
			if status != tt.status {
				t.Fatalf("status %s, want %s: %s", status, tt.status, reasonMessages(reasons))
			}
			if tt.code == "" {
				if len(reasons) != 0 {
					t.Fatalf("reasons %s", reasonMessages(reasons))
				}
				return
			}
			found := false
			for _, r := range reasons {
				if r.Code != tt.code {
					continue
				}
				found = true
				if tt.run >= 0 && (r.Run == nil || *r.Run != tt.run || !strings.Contains(r.Message, fmt.Sprintf("run %d", tt.run))) {
					t.Errorf("reason %+v does not name run %d", r, tt.run)
				}
				if tt.code == CodeConvergenceMismatch && !strings.Contains(r.Message, "did not end with run_stop status success") {
					t.Errorf("reason %q does not say the re-run did not end", r.Message)
				}
				if tt.code == CodeMetricMismatch && (r.Claimed == nil || r.Measured == nil || *r.Claimed == *r.Measured) {
					t.Errorf("reason %+v lacks the differing values", r)
				}
				if tt.code == CodeMetricMismatch && tt.bench.Level == 0 && !strings.Contains(r.Message, "shape 512x64x1024") && !strings.Contains(r.Message, "shape 1760x16x1760") {
					t.Errorf("reason %q does not name the shape", r.Message)
				}
				if tt.code == CodeOpShapesDiffer && !strings.Contains(r.Message, "leaves out [512x64x1024]") {
					t.Errorf("reason %q does not name the shape left out", r.Message)
				}
			}
			if !found {
				t.Fatalf("no %s among %s", tt.code, reasonMessages(reasons))
			}
			if n := strings.Count(reasonMessages(reasons), "against the shapes the re-run"); tt.code == CodeOpShapesDiffer && n != 1 {
				t.Errorf("%d reasons about the shapes, want one for the submission: %s", n, reasonMessages(reasons))
			}
		})
	}
}

func TestCompareReproducedMetricMissing(t *testing.T) {
	bench := opBench()
	claimed := levelResult(t, bench, nil)
	measured := levelResult(t, bench, nil)
	delete(measured.Runs[0].Extra, d5list.MetricOpMaxError)
	for _, sh := range measured.Runs[0].Shapes {
		delete(sh.Metrics, d5list.MetricOpMaxError)
	}
	status, reasons := Compare(bench, claimed, measured, true)
	if status != d5list.StatusDiscrepancy || len(reasons) != 1 || reasons[0].Code != CodeMetricMissing || *reasons[0].Run != 0 {
		t.Fatalf("%s %s", status, reasonMessages(reasons))
	}
	if math.IsNaN(claimed.Score.Value) {
		t.Fatal("score NaN")
	}
}

// Integers a run logs (byte counts, prediction checksums) are reproduced
// exactly; only values float formatting may round get a relative slack.
func TestReproduceSlack(t *testing.T) {
	for _, tc := range []struct {
		claimed, measured float64
		equal             bool
	}{
		{3_735_928_559, 3_735_928_559, true},
		{3_735_928_559, 3_735_928_560, false}, // a checksum off by one
		{1.5e-15, 1.5e-15 * (1 + 1e-12), true},
		{1.5e-15, 1.4e-15, false},
		{1_000_000.5, 1_000_000.5 + 1e-4, true},
	} {
		if got := math.Abs(tc.claimed-tc.measured) <= reproduceSlack(tc.claimed, tc.measured); got != tc.equal {
			t.Errorf("%v against %v: equal %v, want %v", tc.claimed, tc.measured, got, tc.equal)
		}
	}
}

// Runnable holds a bundle to what its re-run will do: the workload's
// reading of the recipe, and for operators the shapes that reading plans.
func TestRunnable(t *testing.T) {
	bench := opBench()
	bench.Workload = "gemm"
	b := levelBundle(bench, nil)
	claimed := levelResult(t, bench, nil)
	planned := []string{testShapes[0].name, testShapes[1].name}
	reader := func(shapes []string, err error) RecipeReader {
		return func(*d5list.Benchmark, *d5list.Recipe) (d5list.RecipePlan, error) {
			return d5list.RecipePlan{Shapes: shapes}, err
		}
	}
	for _, c := range []struct {
		name string
		read RecipeReader
		code string
		file string
		run  int
		says string
	}{
		{name: "no reader", read: nil},
		{name: "the recipe's own shapes", read: reader(planned, nil)},
		{name: "refused by the workload", read: reader(nil, d5list.Errorf(d5list.EINVALID, "recipe: mutable.repeats: must be a positive integer, got -3")),
			code: CodeRecipeNotRunnable, file: "recipe.yaml", run: -1, says: "the gemm workload that re-runs l0-test-gemm would refuse this recipe: recipe: mutable.repeats"},
		{name: "a shape the logs do not have", read: reader(append(planned, "64x64x64"), nil),
			code: CodeOpShapesDiffer, file: "results/result_0.txt", run: 0, says: "has [1760x16x1760, 512x64x1024, 64x64x64]"},
		{name: "the same shapes in another order", read: reader([]string{planned[1], planned[0]}, nil),
			code: CodeOpShapesDiffer, file: "results/result_0.txt", run: 0, says: "run 0 measures shapes [1760x16x1760, 512x64x1024]"},
	} {
		t.Run(c.name, func(t *testing.T) {
			reasons := Runnable(b, bench, claimed, c.read)
			if c.code == "" {
				if len(reasons) != 0 {
					t.Fatalf("reasons %s", reasonMessages(reasons))
				}
				return
			}
			if len(reasons) != 1 {
				t.Fatalf("%d reasons, want one %s: %s", len(reasons), c.code, reasonMessages(reasons))
			}
			r := reasons[0]
			if r.Code != c.code || r.File != c.file || !strings.Contains(r.Message, c.says) || (c.run >= 0) != (r.Run != nil) || (r.Run != nil && *r.Run != c.run) {
				t.Fatalf("reason %+v, want %s in %s (run %d) saying %q", r, c.code, c.file, c.run, c.says)
			}
		})
	}
}
