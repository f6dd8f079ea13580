package templates

import (
	"html"
	"math"
	"strconv"

	"github.com/go-echarts/go-echarts/v2/charts"
	"github.com/go-echarts/go-echarts/v2/opts"
	"github.com/go-echarts/go-echarts/v2/types"

	d5list "github.com/deep500/d5list"
)

// palette gives run i the same colour in its submitted and re-run curves.
var palette = []string{"#2f6db5", "#d9622b", "#3a9a5b", "#b23a48", "#7b5ea7", "#8c6d31", "#1b9aaa", "#c2497f", "#5f6b73", "#a0a21d"}

// LeaderboardChart is a horizontal bar per ranked entry, the best on top.
func LeaderboardChart(board *d5list.Leaderboard) *charts.Bar {
	rule := board.Benchmark.Ranking
	axis := RankedAxis(&board.Benchmark)
	labels := make([]string, 0, len(board.Entries))
	data := make([]opts.BarData, 0, len(board.Entries))
	for _, e := range board.Entries {
		label := rankLabel(e.Rank) + " " + e.Submitter + " · " + e.SystemName
		labels = append(labels, label)
		data = append(data, opts.BarData{Name: label, Value: asShown(e.Value)})
	}
	bar := charts.NewBar()
	bar.SetGlobalOptions(
		charts.WithTitleOpts(opts.Title{Title: RankedLabel(&board.Benchmark), Subtitle: directionWords(rule.Direction)}),
		// ECharts substitutes {b} and {c} HTML-escaped; only our own
		// unit goes into the template verbatim, so it is escaped here.
		charts.WithTooltipOpts(opts.Tooltip{Show: opts.Bool(true), Trigger: "item",
			Formatter: types.FuncStr("{b}<br/>{a}: {c} " + html.EscapeString(rule.Unit))}),
		charts.WithLegendOpts(opts.Legend{Show: opts.Bool(false)}),
		charts.WithGridOpts(opts.Grid{ContainLabel: opts.Bool(true), Left: "2%", Right: "6%"}),
		charts.WithXAxisOpts(opts.XAxis{Type: "value", Name: axis, NameLocation: "middle", NameGap: 30}),
		charts.WithYAxisOpts(opts.YAxis{Type: "category", Name: "entry", Inverse: opts.Bool(true)}),
		charts.WithAnimation(false),
	)
	bar.SetXAxis(labels).AddSeries(RankedLabel(&board.Benchmark), data,
		charts.WithItemStyleOpts(opts.ItemStyle{Color: palette[0]}))
	bar.XYReversal()
	return bar
}

// AccuracyChart overlays every run's submitted curve (dashed) and re-run
// curve (solid), with the quality target as a horizontal line.
func AccuracyChart(sub *d5list.Submission, bench *d5list.Benchmark) *charts.Line {
	q := bench.Quality
	yName := AxisName(q.Metric, qualityUnit(q.Metric))
	line := charts.NewLine()
	line.SetGlobalOptions(
		charts.WithTitleOpts(opts.Title{Title: MetricLabel(q.Metric) + " versus time", Subtitle: "dashed: submitted logs · solid: re-run by the portal"}),
		charts.WithTooltipOpts(opts.Tooltip{Show: opts.Bool(true), Trigger: "item",
			Formatter: types.FuncStr("{a}, {b}<br/>time (s), " + html.EscapeString(MetricLabel(q.Metric)) + ": {c}")}),
		// One legend item per run, for its submitted and re-run curves
		// alike (ECharts joins series of one name): five fit a phone.
		charts.WithLegendOpts(opts.Legend{Show: opts.Bool(true), Bottom: "0"}),
		charts.WithGridOpts(opts.Grid{ContainLabel: opts.Bool(true), Left: "3%", Right: "4%", Bottom: "50"}),
		charts.WithXAxisOpts(opts.XAxis{Type: "value", Name: "time since run start (s)", NameLocation: "middle", NameGap: 28}),
		charts.WithYAxisOpts(opts.YAxis{Type: "value", Name: yName, Scale: opts.Bool(true)}),
		charts.WithAnimation(false),
	)
	first := true
	addRuns := func(res *d5list.Result, what, dash string) {
		if res == nil {
			return
		}
		for _, r := range res.Runs {
			color := palette[r.Index%len(palette)]
			points := make([]opts.LineData, len(r.Evals))
			for i, e := range r.Evals {
				points[i] = opts.LineData{Name: what, Value: []float64{round4(e.Seconds), round4(e.Accuracy)}}
			}
			seriesOpts := []charts.SeriesOpts{
				charts.WithLineStyleOpts(opts.LineStyle{Type: dash, Color: color, Width: 2}),
				charts.WithItemStyleOpts(opts.ItemStyle{Color: color}),
			}
			if first {
				seriesOpts = append(seriesOpts, targetLine(q.Target)...)
				first = false
			}
			line.AddSeries("run "+itoa(r.Index), points, seriesOpts...)
		}
	}
	addRuns(sub.Claimed, "submitted", "dashed")
	addRuns(sub.Measured, "re-run", "solid")
	return line
}

// targetLine draws the quality target across a chart, labelled with the
// target as the benchmark states it: ECharts' own "{c}" rounds 0.945 to
// 0.94. The label sits inside the plot, so that a narrow chart does not
// clip it.
func targetLine(target float64) []charts.SeriesOpts {
	return []charts.SeriesOpts{
		charts.WithMarkLineNameYAxisItemOpts(opts.MarkLineNameYAxisItem{Name: "target", YAxis: target}),
		charts.WithMarkLineStyleOpts(opts.MarkLineStyle{Symbol: []string{"none", "none"},
			Label: &opts.Label{Show: opts.Bool(true), Formatter: "target " + exactNumber(target), Position: "insideEndTop"}}),
	}
}

// exactNumber prints a number a benchmark states (a target, a tolerance)
// with every digit it has: 0.945, 1e-12.
func exactNumber(v float64) string { return strconv.FormatFloat(v, 'g', -1, 64) }

// asShown is a ranked value rounded as the board prints it, so that a
// chart's tooltip reads the board's figure (6.38 s, not 6.3833).
func asShown(v float64) float64 {
	if math.IsInf(v, 0) || math.IsNaN(v) {
		return round4(v) // which JSON can carry
	}
	shown, _ := strconv.ParseFloat(formatNumber(v), 64) // its own output parses
	return shown
}

// round4 keeps the JSON small, since a chart shows no more than four
// decimals, and turns values JSON cannot carry (a run that never converged
// scores +Inf) into 0.
func round4(v float64) float64 {
	if math.IsInf(v, 0) || math.IsNaN(v) {
		return 0
	}
	return math.Round(v*1e4) / 1e4
}
