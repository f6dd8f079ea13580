package templates

import (
	"bytes"
	"context"
	"encoding/json"
	"math"
	"strings"
	"testing"

	d5list "github.com/deep500/d5list"
	"github.com/deep500/d5list/verifier"
)

func TestFormatValue(t *testing.T) {
	tests := []struct {
		v    float64
		unit string
		want string
	}{
		{12.5, "s", "12.5 s"},
		{1234.56, "s", "1235 s"},
		{0.97512, "", "0.975"},
		{0.97512, "fraction", "0.9751"},
		{0.5, "fraction", "0.5000"},
		{0, "s", "0 s"},
		{1.5688878137201688e-15, "", "1.57e-15"},
		{1.5688878137201688e-15, "fraction", "1.57e-15"},
		{0.0066, "ms", "0.00660 ms"},
		{0.00066, "ms", "0.000660 ms"},
		{math.Inf(1), "s", "—"},
		{math.NaN(), "s", "—"},
	}
	for _, tt := range tests {
		if got := FormatValue(tt.v, tt.unit); got != tt.want {
			t.Errorf("FormatValue(%v, %q) = %q, want %q", tt.v, tt.unit, got, tt.want)
		}
	}
}

func TestLevelsKeepsEveryLevel(t *testing.T) {
	got := Levels([]d5list.Benchmark{{ID: "a", Level: 2}, {ID: "b", Level: 0}, {ID: "c", Level: 2}, {ID: "bad", Level: 7}})
	if len(got) != 4 {
		t.Fatalf("%d levels", len(got))
	}
	ids := func(l Level) string {
		var s []string
		for _, b := range l.Benchmarks {
			s = append(s, b.ID)
		}
		return strings.Join(s, ",")
	}
	for i, want := range []string{"b", "", "a,c", ""} {
		if got[i].Number != i || ids(got[i]) != want {
			t.Errorf("level %d: L%d holds %q, want %q", i, got[i].Number, ids(got[i]), want)
		}
	}
}

func TestRunPairsLinesUpByIndex(t *testing.T) {
	claimed := &d5list.Result{Runs: []d5list.RunMetrics{{Index: 1, Seed: 11}, {Index: 0, Seed: 10}, {Index: 2, Seed: 12}}}
	measured := &d5list.Result{Runs: []d5list.RunMetrics{{Index: 0, Seed: 10, TimeToTrain: 5}, {Index: 2, Seed: 12, TimeToTrain: 7}}}
	pairs := RunPairs(claimed, measured)
	if len(pairs) != 3 {
		t.Fatalf("%d pairs", len(pairs))
	}
	for i, p := range pairs {
		if p.Index != i || p.Seed != int64(10+i) || p.Claimed == nil || p.Claimed.Index != i {
			t.Errorf("pair %d: %+v", i, p)
		}
	}
	if pairs[1].Measured != nil || pairs[0].Measured.TimeToTrain != 5 || pairs[2].Measured.TimeToTrain != 7 {
		t.Errorf("measured runs matched wrongly: %+v", pairs)
	}
	if got := RunPairs(nil, nil); len(got) != 0 {
		t.Errorf("no results gave %d pairs", len(got))
	}
}

// A value no JSON can hold (a never-converged run scores +Inf) must not
// break the page.
func TestChartSurvivesInfiniteValues(t *testing.T) {
	board := &d5list.Leaderboard{
		Benchmark: d5list.Benchmark{Ranking: d5list.RankingRule{Metric: d5list.MetricTimeToTrain, Unit: "s"}},
		Entries:   []d5list.Entry{{Rank: 1, Submitter: "</script><script>alert(1)</script>", Value: math.Inf(1)}},
	}
	var buf bytes.Buffer
	if err := Chart("c", "label", LeaderboardChart(board)).Render(context.Background(), &buf); err != nil {
		t.Fatal(err)
	}
	html := buf.String()
	if strings.Count(html, "</script>") != 1 {
		t.Fatalf("a value closed the data block early:\n%s", html)
	}
	start := strings.Index(html, `type="application/json">`) + len(`type="application/json">`)
	var opts map[string]any
	if err := json.Unmarshal([]byte(strings.TrimSuffix(html[start:], "</script>")), &opts); err != nil {
		t.Fatalf("options: %v", err)
	}
}

// Counts print as counts where they are whole: "30", not "30.00", on the
// board's columns, the runs table and a finding's place.
func TestCountsPrintWhole(t *testing.T) {
	e := d5list.Entry{Measures: map[string]float64{d5list.MetricEpochsToTarget: 30, d5list.MetricFinalAccuracy: 0.9712}}
	for _, tt := range []struct{ got, want string }{
		{measureText(e, d5list.LevelColumn{Metric: d5list.MetricEpochsToTarget}), "30"},
		{measureText(e, d5list.LevelColumn{Metric: d5list.MetricFinalAccuracy}), "0.9712"},
		{runMetricCell(&d5list.RunMetrics{EpochsToTarget: 21}, d5list.MetricEpochsToTarget), "21"},
		{runMetricCell(&d5list.RunMetrics{EpochsToTarget: 2.5}, d5list.MetricEpochsToTarget), "2.5"},
		{runMetricCell(&d5list.RunMetrics{TimeToTrain: 30}, d5list.MetricTimeToTrain), "30.0"},
		{reasonWhere(d5list.Reason{Epoch: new(21.0)}), "epoch 21"},
	} {
		if tt.got != tt.want {
			t.Errorf("got %q, want %q", tt.got, tt.want)
		}
	}
}

// A benchmark is ranked by what it times: an operator benchmark ranked by
// the runner's clock does not say "time to train".
func TestRankedLabelSaysWhatIsTimed(t *testing.T) {
	for _, tt := range []struct {
		bench d5list.Benchmark
		want  string
	}{
		{d5list.Benchmark{Level: 0, Ranking: d5list.RankingRule{Metric: d5list.MetricTimeToTrain, Unit: "s"}}, "time of the timed calls (s)"},
		{d5list.Benchmark{Level: 2, Ranking: d5list.RankingRule{Metric: d5list.MetricTimeToTrain, Unit: "s"}}, "time to train (s)"},
		{d5list.Benchmark{Level: 0, Ranking: d5list.RankingRule{Metric: d5list.MetricOpTime, Unit: "ms"}}, "operator time (ms)"},
	} {
		if got := RankedAxis(&tt.bench); got != tt.want {
			t.Errorf("level %d ranked by %s: %q, want %q", tt.bench.Level, tt.bench.Ranking.Metric, got, tt.want)
		}
	}
}

// The target line reads the target as the benchmark states it, where
// ECharts' own {c} would round 0.945 to 0.94.
func TestTargetLineReadsTheTarget(t *testing.T) {
	bench := &d5list.Benchmark{Quality: d5list.QualityTarget{Metric: "eval_accuracy", Target: 0.945}}
	run := d5list.RunMetrics{Evals: []d5list.EvalPoint{{Epoch: 1, Seconds: 1, Accuracy: 0.95}}}
	chart := AccuracyChart(&d5list.Submission{Claimed: &d5list.Result{Runs: []d5list.RunMetrics{run}}}, bench)
	chart.Validate()
	data, err := json.Marshal(chart.JSON())
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(data, []byte(`"formatter":"target 0.945"`)) {
		t.Errorf("the target line's label is not \"target 0.945\": %s", data)
	}
}

// A finding's claimed and measured values read as the page's other values
// of the same quantity: a time with three significant digits even where
// it is whole, an accuracy to four decimals, a seed and an epoch count
// whole.
func TestFindingValuesReadAsThePage(t *testing.T) {
	bench := &d5list.Benchmark{Level: 2, Quality: d5list.QualityTarget{Metric: "eval_accuracy"},
		Ranking: d5list.RankingRule{Metric: d5list.MetricTimeToTrain, Unit: "s"}}
	pair := func(code string, c, m float64) d5list.Reason {
		return d5list.Reason{Code: code, Claimed: &c, Measured: &m}
	}
	for _, tt := range []struct {
		r    d5list.Reason
		want string
	}{
		{pair(verifier.CodeRunTimingMismatch, 6, 15.04), "time to train: claimed 6.00 s, measured 15.0 s"},
		{pair(verifier.CodeEpochTimeMismatch, 0.039, 0.0575), "median time between evaluations: claimed 0.0390 s, measured 0.0575 s"},
		{pair(verifier.CodeFinalAccuracy, 0.945, 0.9449), "accuracy: claimed 0.9450, measured 0.9449"},
		{pair(verifier.CodeSeedMismatch, 1234, 4321), "seed: claimed 1234, measured 4321"},
		{pair(verifier.CodeEpochsToTarget, 3, 4.5), "epochs to target: claimed 3 epochs, measured 4.5 epochs"},
	} {
		if got := findingValues(tt.r, bench); got != tt.want {
			t.Errorf("%s: %q, want %q", tt.r.Code, got, tt.want)
		}
	}
}
