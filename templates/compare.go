package templates

import (
	"html"
	"strings"

	"github.com/go-echarts/go-echarts/v2/charts"
	"github.com/go-echarts/go-echarts/v2/opts"
	"github.com/go-echarts/go-echarts/v2/types"

	d5list "github.com/deep500/d5list"
	"github.com/deep500/d5list/leaderboard"
)

// MaxCompared bounds the entries one comparison shows side by side.
const MaxCompared = 6

// CompareEntry is one entry of a comparison with its benchmark.
type CompareEntry struct {
	Sub   *d5list.Submission
	Bench *d5list.Benchmark
}

// Label names the entry where its column's head is not in sight: its
// number, organisation and system.
func (e CompareEntry) Label() string {
	return SubmissionTitle(e.Sub.ID) + ": " + e.Sub.Submitter + " · " + e.Sub.SystemName
}

// CompareRow is one line of a comparison: a label and each entry's value;
// Differs marks a line whose values are not all the same.
type CompareRow struct {
	Section string
	Label   string
	Values  []string
	Differs bool
}

// Recipe reports whether the row is a recipe's key, named as the recipe
// writes it.
func (r CompareRow) Recipe() bool {
	switch r.Section {
	case "fixed", "mutable", "metrics", "entrypoint":
		return true
	}
	return false
}

// CompareView is the /compare page.
type CompareView struct {
	Entries  []CompareEntry
	Facts    []CompareRow
	Recipe   []CompareRow
	Measures []CompareRow
}

// NewCompareView lays the entries side by side.
func NewCompareView(entries []CompareEntry) CompareView {
	v := CompareView{Entries: entries}
	row := func(section, label string, value func(CompareEntry) string) CompareRow {
		r := CompareRow{Section: section, Label: label}
		for i, e := range entries {
			r.Values = append(r.Values, value(e))
			r.Differs = r.Differs || (i > 0 && r.Values[i] != r.Values[0])
		}
		return r
	}
	v.Facts = []CompareRow{
		row("entry", "Organisation", func(e CompareEntry) string { return e.Sub.Submitter }),
		row("entry", "System", func(e CompareEntry) string { return e.Sub.SystemName }),
		row("entry", "Benchmark", func(e CompareEntry) string { return e.Bench.Name }),
		row("entry", "Status", func(e CompareEntry) string { return statusWords(e.Sub.Status) }),
		row("entry", "Submitted", func(e CompareEntry) string { return formatTime(e.Sub.CreatedAt) }),
		row("score", "Measured", func(e CompareEntry) string { return scoreValue(e.Sub.Measured, e.Bench.Ranking.Unit) }),
		row("score", "Claimed", func(e CompareEntry) string { return scoreValue(e.Sub.Claimed, e.Bench.Ranking.Unit) }),
		row("system", "Accelerators", func(e CompareEntry) string { return acceleratorText(e.Sub) }),
		row("system", "Host CPU", func(e CompareEntry) string { return orDash(e.Sub.HostCPU) }),
		row("system", "Framework", func(e CompareEntry) string { return e.Sub.Framework }),
		row("system", "Division", func(e CompareEntry) string { return e.Sub.Division }),
		row("system", "Availability", func(e CompareEntry) string { return e.Sub.Availability }),
		row("system", "Price", func(e CompareEntry) string {
			if e.Sub.CostPerHour <= 0 {
				return "—"
			}
			return FormatValue(e.Sub.CostPerHour, "USD") + " per hour"
		}),
	}
	v.Recipe = compareRecipes(entries)
	seen := map[string]bool{}
	for _, e := range entries {
		for _, col := range d5list.LevelColumns(e.Bench.Level) {
			if seen[col.Metric] {
				continue
			}
			seen[col.Metric] = true
			v.Measures = append(v.Measures, row("measures", columnHeader(col), func(e CompareEntry) string {
				runs := rankedRunsOf(e)
				m := leaderboard.Measures(e.Bench.Level, runs)
				val, ok := m[col.Metric]
				if !ok {
					return "—"
				}
				return metricValue(col.Metric, val, col.Unit)
			}))
		}
	}
	return v
}

// rankedRunsOf are the runs a comparison reads: the ones its board ranks
// (the portal's re-run where it ran on the declared hardware, else the
// claim), so that a comparison never shows a figure the board does not.
func rankedRunsOf(e CompareEntry) []d5list.RunMetrics {
	if e.Sub.Claimed == nil && e.Sub.Measured == nil {
		return nil
	}
	if e.Sub.Claimed == nil {
		return e.Sub.Measured.Runs
	}
	runs, _ := leaderboard.RankedRuns(e.Bench, e.Sub)
	return runs
}

// compareRecipes lines up the recipes' keys, fixed and mutable, and their
// acceptable metrics; a key one recipe lacks shows as a dash.
func compareRecipes(entries []CompareEntry) []CompareRow {
	type key struct{ section, name string }
	var keys []key
	seen := map[key]bool{}
	values := make([]map[key]string, len(entries))
	for i, e := range entries {
		values[i] = map[key]string{}
		if e.Sub.Recipe == nil {
			continue
		}
		for _, part := range recipeParts(e.Sub.Recipe) {
			for _, kv := range part.values {
				k := key{part.name, kv.key}
				values[i][k] = kv.value
				if !seen[k] {
					seen[k] = true
					keys = append(keys, k)
				}
			}
		}
	}
	rows := make([]CompareRow, 0, len(keys))
	for _, k := range keys {
		r := CompareRow{Section: k.section, Label: k.name}
		for i := range entries {
			val, ok := values[i][k]
			if !ok {
				val = "—"
			}
			r.Values = append(r.Values, val)
			r.Differs = r.Differs || (i > 0 && val != r.Values[0])
		}
		rows = append(rows, r)
	}
	return rows
}

func orDash(s string) string {
	if s == "" {
		return "—"
	}
	return s
}

// CompareChart overlays each entry's median run, of the runs its board
// ranks, as accuracy against time. Only entries whose benchmark measures
// the first entry's quality metric share its axis; the others are named
// in the subtitle rather than drawn on a scale that is not theirs.
func CompareChart(v CompareView) *charts.Line {
	q := v.Entries[0].Bench.Quality
	subtitle := "each entry's median run, as its board ranks it"
	if left := v.uncharted(); len(left) > 0 {
		subtitle += "; not drawn (another quality metric): " + strings.Join(left, ", ")
	}
	line := charts.NewLine()
	line.SetGlobalOptions(
		charts.WithTitleOpts(opts.Title{Title: MetricLabel(q.Metric) + " versus time", Subtitle: subtitle}),
		charts.WithTooltipOpts(opts.Tooltip{Show: opts.Bool(true), Trigger: "item",
			Formatter: types.FuncStr("{a}<br/>time (s), " + html.EscapeString(MetricLabel(q.Metric)) + ": {c}")}),
		charts.WithLegendOpts(opts.Legend{Show: opts.Bool(true), Bottom: "0"}),
		charts.WithGridOpts(opts.Grid{ContainLabel: opts.Bool(true), Left: "3%", Right: "4%", Bottom: "60"}),
		charts.WithXAxisOpts(opts.XAxis{Type: "value", Name: "time since run start (s)", NameLocation: "middle", NameGap: 28}),
		charts.WithYAxisOpts(opts.YAxis{Type: "value", Name: AxisName(q.Metric, qualityUnit(q.Metric)), Scale: opts.Bool(true)}),
		charts.WithAnimation(false),
	)
	for i, e := range v.Entries {
		run := v.curveOf(e)
		if run == nil {
			continue
		}
		points := make([]opts.LineData, len(run.Evals))
		for j, ev := range run.Evals {
			points[j] = opts.LineData{Value: []float64{round4(ev.Seconds), round4(ev.Accuracy)}}
		}
		color := palette[i%len(palette)]
		line.AddSeries(SubmissionTitle(e.Sub.ID)+": "+e.Sub.Submitter, points,
			charts.WithLineStyleOpts(opts.LineStyle{Color: color, Width: 2}),
			charts.WithItemStyleOpts(opts.ItemStyle{Color: color}))
	}
	return line
}

// curveOf is the median run the chart draws for e, or nil where e has no
// evaluations or measures another quality metric than the first entry.
func (v CompareView) curveOf(e CompareEntry) *d5list.RunMetrics {
	if e.Bench.Quality.Metric != v.Entries[0].Bench.Quality.Metric {
		return nil
	}
	run := MedianRun(&d5list.Result{Runs: rankedRunsOf(e)})
	if run == nil || len(run.Evals) == 0 {
		return nil
	}
	return run
}

// uncharted names the entries left off the chart for their metric.
func (v CompareView) uncharted() []string {
	var names []string
	for _, e := range v.Entries {
		if e.Bench.Quality.Metric != v.Entries[0].Bench.Quality.Metric {
			names = append(names, submissionLabel(e.Sub.ID))
		}
	}
	return names
}

// HasCurves reports whether the chart has a curve to draw.
func (v CompareView) HasCurves() bool {
	for _, e := range v.Entries {
		if v.curveOf(e) != nil {
			return true
		}
	}
	return false
}

func boolText(b bool) string {
	if b {
		return "true"
	}
	return "false"
}
