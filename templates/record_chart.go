package templates

import (
	"github.com/go-echarts/go-echarts/v2/charts"
	"github.com/go-echarts/go-echarts/v2/opts"
	"github.com/go-echarts/go-echarts/v2/types"

	d5list "github.com/deep500/d5list"
)

// RecordChart is the best result on a board over time, the state of the
// art as a step line: each point an entry that bettered every entry
// submitted before it (leaderboard.Records), the line holding its value
// until the next one.
func RecordChart(bench *d5list.Benchmark, records []d5list.Entry) ListChart {
	rule := bench.Ranking
	axis := AxisName(rule.Metric, rule.Unit)
	t := Table{Caption: "Best result over time", Head: []string{"submitted", "entry", axis}}
	var points []opts.LineData
	var values []float64
	for _, e := range records {
		label, day := entryLabel(e), e.CreatedAt.UTC().Format("2006-01-02")
		// The tooltip shows the point's name: ECharts escapes it.
		points = append(points, opts.LineData{Name: label + ": " + FormatValue(e.Value, rule.Unit) + ", submitted " + day,
			Value: []any{e.CreatedAt.UnixMilli(), asShown(e.Value)}})
		values = append(values, e.Value)
		t.Rows = append(t.Rows, []string{day, label, formatNumber(e.Value)})
	}
	line := charts.NewLine()
	line.SetGlobalOptions(
		charts.WithTitleOpts(opts.Title{Title: "Best " + MetricLabel(rule.Metric) + " over time",
			Subtitle: "each point an entry better than every one submitted before it; " + directionWords(rule.Direction)}),
		charts.WithTooltipOpts(opts.Tooltip{Show: opts.Bool(true), Trigger: "item", Formatter: types.FuncStr("{b}")}),
		charts.WithLegendOpts(opts.Legend{Show: opts.Bool(false)}),
		charts.WithGridOpts(opts.Grid{ContainLabel: opts.Bool(true), Left: "3%", Right: "6%", Bottom: "40"}),
		charts.WithXAxisOpts(opts.XAxis{Type: "time", Name: "submitted", NameLocation: "middle", NameGap: 28}),
		charts.WithYAxisOpts(opts.YAxis{Type: axisType(spansDecades(values...)), Name: axis, Scale: opts.Bool(true)}),
		charts.WithAnimation(false),
	)
	line.AddSeries("best so far", points, charts.WithLineChartOpts(opts.LineChart{Step: "end"}),
		charts.WithLineStyleOpts(opts.LineStyle{Color: palette[0], Width: 2}), charts.WithItemStyleOpts(opts.ItemStyle{Color: palette[0]}))
	return ListChart{ID: "records-chart", Label: "Step line chart of the best " + axis + " over time", Chart: line, Table: t}
}
