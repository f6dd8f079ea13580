package templates

import (
	"slices"
	"sort"

	d5list "github.com/deep500/d5list"
	"github.com/deep500/d5list/leaderboard"
	"github.com/deep500/d5list/stats"
)

// HasCurves reports whether any claimed or re-run run of sub has an
// evaluation curve. Operator (L0) and inference (L1) runs have none: their
// page shows the per-run metrics instead of an empty accuracy chart.
func HasCurves(sub *d5list.Submission) bool {
	for _, res := range []*d5list.Result{sub.Claimed, sub.Measured} {
		if res == nil {
			continue
		}
		for _, r := range res.Runs {
			if len(r.Evals) > 0 {
				return true
			}
		}
	}
	return false
}

// RunMetric is one per-run metric column of a benchmark without curves.
type RunMetric struct {
	Name string
	Unit string
}

// RunMetrics are the columns the runs table of bench shows when its runs
// have no curve: what it ranks by, then what a re-run must reproduce and
// what is timed, then the quality metric, each once.
func RunMetrics(bench *d5list.Benchmark) []RunMetric {
	names := []string{bench.Ranking.Metric, bench.Ranking.Secondary}
	names = append(names, bench.Verify.Reproduce...)
	names = append(names, bench.Verify.Timed...)
	names = append(names, bench.Quality.Metric)
	var out []RunMetric
	seen := map[string]bool{}
	for _, n := range names {
		if n == "" || seen[n] {
			continue
		}
		seen[n] = true
		unit := metricUnits[n]
		if n == bench.Ranking.Metric && bench.Ranking.Unit != "" {
			unit = bench.Ranking.Unit
		}
		out = append(out, RunMetric{Name: n, Unit: unit})
	}
	return out
}

// ExtraRunMetrics are the workload-specific metrics (RunMetrics.Extra) of
// any claimed or re-run run of sub, sorted by name.
func ExtraRunMetrics(sub *d5list.Submission) []RunMetric {
	seen := map[string]bool{}
	var names []string
	for _, res := range []*d5list.Result{sub.Claimed, sub.Measured} {
		if res == nil {
			continue
		}
		for _, r := range res.Runs {
			for k := range r.Extra {
				if !seen[k] {
					seen[k] = true
					names = append(names, k)
				}
			}
		}
	}
	sort.Strings(names)
	out := make([]RunMetric, len(names))
	for i, n := range names {
		out[i] = RunMetric{Name: n, Unit: metricUnits[n]}
	}
	return out
}

// metricUnits are the units of the per-run metrics logged with one.
var metricUnits = map[string]string{
	d5list.MetricTimeToTrain:  "s",
	d5list.MetricTTA:          "s",
	d5list.MetricOpTime:       "ms",
	d5list.MetricLatencyP50:   "ms",
	d5list.MetricLatencyP99:   "ms",
	d5list.MetricThroughput:   "samples/s",
	d5list.MetricOpGFLOPS:     "GFLOP/s",
	d5list.MetricOpRelL2Error: "",
	d5list.MetricOpMaxError:   "",
	"communication_bytes":     "bytes",
}

// runMetricCell prints metric name of run r, a dash where r lacks it.
func runMetricCell(r *d5list.RunMetrics, name string) string {
	if r == nil {
		return "—"
	}
	v, ok := r.Metric(name)
	if !ok {
		return "—"
	}
	return metricValue(name, v, "")
}

// countMetrics are the metrics that count something (epochs, workers) and
// so print whole where they are whole: "epochs to target 30", not 30.00.
var countMetrics = map[string]bool{
	d5list.MetricEpochsToTarget:  true,
	d5list.MetricNumberOfWorkers: true,
	"global_batch_size":          true,
}

// metricValue prints a value of the named metric with its unit: a count
// as a count, an accuracy or an error as a fraction, any other value as
// FormatValue does.
func metricValue(name string, v float64, unit string) string {
	if countMetrics[name] {
		s := leaderboard.FormatCount(v)
		if unit != "" {
			s += " " + unit
		}
		return s
	}
	if unit == "" && leaderboard.IsFraction(name) {
		return formatFraction(v)
	}
	return FormatValue(v, unit)
}

func runStatus(r *d5list.RunMetrics) string {
	if r.Status == "" {
		return "—"
	}
	return r.Status
}

// ShapeRow is one operator shape of a Level 0 submission: its time the
// median over the runs, its errors the worst run's, as claimed and as
// re-run. A side that did not measure the shape has a nil map.
type ShapeRow struct {
	Shape             string
	Claimed, Measured map[string]float64
}

// shapeColumns are the per-shape metrics the shapes table shows.
var shapeColumns = []RunMetric{
	{Name: d5list.MetricOpTime, Unit: "ms"},
	{Name: d5list.MetricOpRelL2Error},
	{Name: d5list.MetricOpMaxError},
}

// ShapeRows are the operator shapes of sub's claimed and re-run runs, in
// the order the claim logs them, then any shape only the re-run measured.
func ShapeRows(sub *d5list.Submission) []ShapeRow {
	var order []string
	seen := map[string]bool{}
	for _, res := range []*d5list.Result{sub.Claimed, sub.Measured} {
		if res == nil {
			continue
		}
		for _, r := range res.Runs {
			for _, s := range r.Shapes {
				if !seen[s.Shape] {
					seen[s.Shape] = true
					order = append(order, s.Shape)
				}
			}
		}
	}
	rows := make([]ShapeRow, len(order))
	for i, shape := range order {
		rows[i] = ShapeRow{Shape: shape, Claimed: foldShape(sub.Claimed, shape), Measured: foldShape(sub.Measured, shape)}
	}
	return rows
}

// foldShape folds one shape over a result's runs: times to their median,
// errors to their maximum.
func foldShape(res *d5list.Result, shape string) map[string]float64 {
	if res == nil {
		return nil
	}
	values := map[string][]float64{}
	for _, r := range res.Runs {
		for _, s := range r.Shapes {
			if s.Shape != shape {
				continue
			}
			for k, v := range s.Metrics {
				values[k] = append(values[k], v)
			}
		}
	}
	if len(values) == 0 {
		return nil
	}
	out := make(map[string]float64, len(values))
	for k, vs := range values {
		if k == d5list.MetricOpTime {
			out[k] = stats.Median(vs)
		} else {
			out[k] = slices.Max(vs)
		}
	}
	return out
}

func shapeCell(m map[string]float64, name string) string {
	v, ok := m[name]
	if !ok {
		return "—"
	}
	return formatMetric(name, v)
}
