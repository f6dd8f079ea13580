package templates

import (
	"fmt"
	"html"
	"math"
	"sort"
	"strconv"

	"github.com/go-echarts/go-echarts/v2/charts"
	"github.com/go-echarts/go-echarts/v2/opts"
	"github.com/go-echarts/go-echarts/v2/types"

	d5list "github.com/deep500/d5list"
	"github.com/deep500/d5list/leaderboard"
)

// Table is a chart's data for readers who do not see the chart, and for
// copying: each chart on the list pages comes with one.
type Table struct {
	Caption string
	Head    []string
	Rows    [][]string
}

// ListChart is one chart of a board's page with its data as a table.
type ListChart struct {
	ID, Label string
	Chart     ChartOptions
	Table     Table
}

// spansDecades reports whether positive values span two orders of
// magnitude or more, where a linear axis would flatten the small ones.
func spansDecades(vals ...float64) bool {
	lo, hi := math.Inf(1), 0.0
	for _, v := range vals {
		if v > 0 {
			lo, hi = math.Min(lo, v), math.Max(hi, v)
		}
	}
	return hi > 0 && hi/lo >= 100
}

func axisType(log bool) string {
	if log {
		return "log"
	}
	return "value"
}

func num(v float64) string { return strconv.FormatFloat(round4(v), 'g', -1, 64) }

func entryLabel(e d5list.Entry) string {
	if e.Rank == 0 {
		// A Pareto candidate read by an aggregate query: its rank is not
		// counted.
		return e.Submitter + " · " + e.SystemName
	}
	return rankLabel(e.Rank) + " " + e.Submitter + " · " + e.SystemName
}

// ChartTop is how many of the best entries the per-entry charts draw: a
// board of 100,000 entries must not make a page of 100,000 bars (the
// shares and the Pareto front are still taken over the whole board).
const ChartTop = leaderboard.ChartTop

// RankingRangeChart draws each entry's olympic mean as a bar and the range
// of its runs (fastest to slowest converged run) as a whisker on it, for
// the best ChartTop entries.
func RankingRangeChart(bench *d5list.Benchmark, top []d5list.Entry, total int) ListChart {
	rule := bench.Ranking
	axis := RankedAxis(bench)
	var labels []string
	var bars []opts.BarData
	var ranges []opts.BoxPlotData
	var all []float64
	if len(top) > ChartTop {
		top = top[:ChartTop]
	}
	title, caption := RankedLabel(bench)+" by entry", "Ranking with the range of each entry's runs"
	if total > len(top) {
		title += ", top " + itoa(len(top))
		caption += ", the top " + itoa(len(top)) + " of " + itoa(total)
	}
	t := Table{Caption: caption, Head: []string{"rank", "entry", axis, "min", "max", "runs"}}
	for _, e := range top {
		// The axis names ranks, which stay readable at 50 bars; the
		// tooltip and the table name the entry.
		label := entryLabel(e)
		labels = append(labels, rankLabel(e.Rank))
		lo, hi := math.Min(e.Min, e.Value), math.Max(e.Max, e.Value)
		v := asShown(e.Value)
		bars = append(bars, opts.BarData{Name: label, Value: v})
		// A box collapsed onto the mean leaves the whiskers: min to max.
		ranges = append(ranges, opts.BoxPlotData{Name: label, Value: []float64{asShown(lo), v, v, v, asShown(hi)}})
		all = append(all, lo, hi, e.Value)
		t.Rows = append(t.Rows, []string{itoa(e.Rank), label, formatNumber(e.Value), formatNumber(e.Min), formatNumber(e.Max), itoa(e.Runs)})
	}
	log := spansDecades(all...)
	bar := charts.NewBar()
	bar.SetGlobalOptions(
		charts.WithTitleOpts(opts.Title{Title: title, Subtitle: directionWords(rule.Direction) + "; whiskers: fastest to slowest run"}),
		charts.WithTooltipOpts(opts.Tooltip{Show: opts.Bool(true), Trigger: "item",
			Formatter: types.FuncStr("{b}<br/>{a}: {c} " + html.EscapeString(rule.Unit))}),
		charts.WithLegendOpts(opts.Legend{Show: opts.Bool(true), Bottom: "0"}),
		// The axis's name under it, not past its end, where a phone's
		// narrow chart clips it.
		charts.WithGridOpts(opts.Grid{ContainLabel: opts.Bool(true), Left: "3%", Right: "4%", Bottom: "60"}),
		charts.WithXAxisOpts(opts.XAxis{Type: "category", Name: "rank", NameLocation: "middle", NameGap: 28}),
		charts.WithYAxisOpts(opts.YAxis{Type: axisType(log), Name: axis}),
		charts.WithAnimation(false),
	)
	bar.SetXAxis(labels).AddSeries("olympic mean", bars, charts.WithItemStyleOpts(opts.ItemStyle{Color: palette[0]}))
	box := charts.NewBoxPlot()
	box.AddSeries("run range", ranges, charts.WithItemStyleOpts(opts.ItemStyle{Color: "#222", BorderColor: "#222"}))
	bar.Overlap(box)
	return ListChart{ID: "ranking-chart", Label: "Bar chart of " + axis + " per entry with the range of its runs", Chart: bar, Table: t}
}

// Curve is one entry's accuracy over time, from the runs its board ranks.
type Curve struct {
	Entry  d5list.Entry
	Points [][2]float64 // seconds, accuracy
}

// AccuracyTop10Chart overlays the accuracy curves of the best entries.
func AccuracyTop10Chart(bench *d5list.Benchmark, curves []Curve) ListChart {
	q := bench.Quality
	yName := AxisName(q.Metric, qualityUnit(q.Metric))
	t := Table{Caption: "Accuracy versus time of the top 10 (one run each)", Head: []string{"entry", "time (s)", MetricLabel(q.Metric)}}
	var xs []float64
	for _, c := range curves {
		for _, p := range c.Points {
			xs = append(xs, p[0])
		}
	}
	line := charts.NewLine()
	line.SetGlobalOptions(
		charts.WithTitleOpts(opts.Title{Title: MetricLabel(q.Metric) + " versus time, top 10", Subtitle: "the median-time run of each entry, as the board ranks it"}),
		charts.WithTooltipOpts(opts.Tooltip{Show: opts.Bool(true), Trigger: "item",
			Formatter: types.FuncStr("{b}<br/>time (s), " + html.EscapeString(MetricLabel(q.Metric)) + ": {c}")}),
		// Ranks in the legend fit one line; the tooltip names the entry.
		charts.WithLegendOpts(opts.Legend{Show: opts.Bool(true), Bottom: "0"}),
		charts.WithGridOpts(opts.Grid{ContainLabel: opts.Bool(true), Left: "3%", Right: "4%", Bottom: "50"}),
		charts.WithXAxisOpts(opts.XAxis{Type: axisType(spansDecades(xs...)), Name: "time since run start (s)", NameLocation: "middle", NameGap: 28}),
		charts.WithYAxisOpts(opts.YAxis{Type: "value", Name: yName, Scale: opts.Bool(true)}),
		charts.WithAnimation(false),
	)
	for i, c := range curves {
		label := entryLabel(c.Entry)
		pts := make([]opts.LineData, len(c.Points))
		for j, p := range c.Points {
			pts[j] = opts.LineData{Name: label, Value: []float64{round4(p[0]), round4(p[1])}}
			t.Rows = append(t.Rows, []string{label, num(p[0]), num(p[1])})
		}
		color := palette[i%len(palette)]
		so := []charts.SeriesOpts{charts.WithLineStyleOpts(opts.LineStyle{Color: color, Width: 2}), charts.WithItemStyleOpts(opts.ItemStyle{Color: color})}
		if i == 0 {
			so = append(so, targetLine(q.Target)...)
		}
		line.AddSeries(rankLabel(c.Entry.Rank), pts, so...)
	}
	return ListChart{ID: "accuracy-top10-chart", Label: "Line chart of " + yName + " over time for the ten best entries", Chart: line, Table: t}
}

// MedianRun picks the run whose time to train is the median of the
// converged runs, the one most representative of the entry.
func MedianRun(res *d5list.Result) *d5list.RunMetrics {
	if res == nil {
		return nil
	}
	var conv []*d5list.RunMetrics
	for i := range res.Runs {
		if res.Runs[i].Converged {
			conv = append(conv, &res.Runs[i])
		}
	}
	if len(conv) == 0 {
		return nil
	}
	sort.SliceStable(conv, func(i, j int) bool { return conv[i].TimeToTrain < conv[j].TimeToTrain })
	return conv[len(conv)/2]
}

// ParetoChart plots entries' values against x (accelerator count, or the
// declared price per hour) with the Pareto front: the entries no other
// entry beats on both. The front is taken over the whole board; the dots
// are the front and the best ChartTop entries, so that the chart does not
// grow with the board. Entries for which x is 0 (undeclared) are left out.
//
// top are the board's best entries; candidates hold the front (the whole
// board, or the best entry of each x); count is the entries with an x.
func ParetoChart(id string, bench *d5list.Benchmark, top, candidates []d5list.Entry, count int, xName string, x func(d5list.Entry) float64) ListChart {
	rule := bench.Ranking
	dir := rule.Direction
	if dir == "" {
		dir = d5list.LowerIsBetter
		if rule.Metric == d5list.MetricFinalAccuracy || rule.Metric == d5list.MetricBestAccuracy || rule.Metric == d5list.MetricThroughput {
			dir = d5list.HigherIsBetter
		}
	}
	axis := RankedAxis(bench)
	type pt struct {
		x, y       float64
		label      string
		top, front bool
	}
	var best float64
	var pts []pt
	var xs, ys []float64
	inTop := map[int64]bool{}
	for i, e := range top {
		if v := x(e); v > 0 && i < ChartTop {
			pts = append(pts, pt{v, e.Value, entryLabel(e), true, false})
			inTop[e.SubmissionID] = true
		}
	}
	for _, e := range candidates {
		if v := x(e); v > 0 && !inTop[e.SubmissionID] {
			pts = append(pts, pt{v, e.Value, entryLabel(e), false, false})
		}
	}
	// Cheapest first; among equal x the best value first, so it alone
	// joins the front.
	sort.SliceStable(pts, func(i, j int) bool {
		if pts[i].x != pts[j].x {
			return pts[i].x < pts[j].x
		}
		return dir.Better(pts[i].y, pts[j].y)
	})
	for i := range pts {
		if i == 0 || dir.Better(pts[i].y, best) {
			pts[i].front, best = true, pts[i].y
		}
	}
	shown := pts[:0:0]
	for _, p := range pts {
		if p.top || p.front {
			shown = append(shown, p)
			xs, ys = append(xs, p.x), append(ys, p.y)
		}
	}
	caption, subtitle := axis+" against "+xName, "line: the Pareto front"
	if len(shown) < count {
		caption += ": the top " + itoa(ChartTop) + " entries and the Pareto front of all " + itoa(count)
		subtitle = "dots: the top " + itoa(ChartTop) + " and the front; line: the Pareto front of all " + itoa(count) + " entries"
	}
	t := Table{Caption: caption, Head: []string{"entry", xName, axis, "on the Pareto front"}}
	var scatter []opts.ScatterData
	var front []opts.LineData
	for _, p := range shown {
		onFront := p.front
		scatter = append(scatter, opts.ScatterData{Name: p.label, Value: []float64{round4(p.x), round4(p.y)}})
		if onFront {
			front = append(front, opts.LineData{Name: p.label, Value: []float64{round4(p.x), round4(p.y)}})
		}
		t.Rows = append(t.Rows, []string{p.label, num(p.x), num(p.y), strconv.FormatBool(onFront)})
	}
	sc := charts.NewScatter()
	sc.SetGlobalOptions(
		charts.WithTitleOpts(opts.Title{Title: RankedLabel(bench) + " against " + xName, Subtitle: subtitle}),
		charts.WithTooltipOpts(opts.Tooltip{Show: opts.Bool(true), Trigger: "item",
			Formatter: types.FuncStr("{b}<br/>" + html.EscapeString(xName) + ", " + html.EscapeString(axis) + ": {c}")}),
		charts.WithLegendOpts(opts.Legend{Show: opts.Bool(true), Bottom: "0"}),
		// Room for the axis's name between its labels and the legend.
		charts.WithGridOpts(opts.Grid{ContainLabel: opts.Bool(true), Left: "3%", Right: "6%", Bottom: "60"}),
		charts.WithXAxisOpts(opts.XAxis{Type: axisType(spansDecades(xs...)), Name: xName, NameLocation: "middle", NameGap: 28}),
		charts.WithYAxisOpts(opts.YAxis{Type: axisType(spansDecades(ys...)), Name: axis}),
		charts.WithAnimation(false),
	)
	sc.AddSeries("entries", scatter, charts.WithItemStyleOpts(opts.ItemStyle{Color: palette[0]}))
	ln := charts.NewLine()
	ln.AddSeries("Pareto front", front, charts.WithLineChartOpts(opts.LineChart{Step: "end"}),
		charts.WithLineStyleOpts(opts.LineStyle{Color: palette[1], Width: 2}), charts.WithItemStyleOpts(opts.ItemStyle{Color: palette[1]}))
	sc.Overlap(ln)
	return ListChart{ID: id, Label: "Scatter chart of " + axis + " against " + xName + " with the Pareto front", Chart: sc, Table: t}
}

// MaxDevelopmentEditions bounds the editions the development chart and its
// table show, the latest: every board page carries them, and an edition
// costs each page about 250 bytes (fifty years of a list frozen twice a
// year fit; a portal that froze a thousand made every page 250 kB larger).
const MaxDevelopmentEditions = 100

// DevelopmentChart is the board's best, 10th and median entry in each
// edition, as Top500's performance development chart (the latest
// MaxDevelopmentEditions).
func DevelopmentChart(bench *d5list.Benchmark, points []leaderboard.DevelopmentPoint) ListChart {
	rule := bench.Ranking
	axis := RankedAxis(bench)
	t := Table{Caption: "Development across editions", Head: []string{"edition", "entries", "best", "10th", "median"}}
	if n := len(points); n > MaxDevelopmentEditions {
		points = points[n-MaxDevelopmentEditions:]
		t.Caption = fmt.Sprintf("Development across the latest %d of %d editions", MaxDevelopmentEditions, n)
	}
	var names []string
	var best, tenth, med []opts.LineData
	var all []float64
	for _, p := range points {
		names = append(names, p.Edition)
		best = append(best, opts.LineData{Value: round4(p.Best)})
		med = append(med, opts.LineData{Value: round4(p.Median)})
		tenthCell := "–"
		if p.Has10th {
			tenth = append(tenth, opts.LineData{Value: round4(p.Tenth)})
			tenthCell = num(p.Tenth)
			all = append(all, p.Tenth)
		} else {
			// ECharts leaves a gap for "-".
			tenth = append(tenth, opts.LineData{Value: "-"})
		}
		all = append(all, p.Best, p.Median)
		t.Rows = append(t.Rows, []string{p.Edition, itoa(p.Entries), num(p.Best), tenthCell, num(p.Median)})
	}
	line := charts.NewLine()
	line.SetGlobalOptions(
		charts.WithTitleOpts(opts.Title{Title: "Development across editions", Subtitle: directionWords(rule.Direction)}),
		charts.WithTooltipOpts(opts.Tooltip{Show: opts.Bool(true), Trigger: "axis"}),
		charts.WithLegendOpts(opts.Legend{Show: opts.Bool(true), Bottom: "0"}),
		charts.WithGridOpts(opts.Grid{ContainLabel: opts.Bool(true), Left: "3%", Right: "4%", Bottom: "60"}),
		charts.WithXAxisOpts(opts.XAxis{Type: "category", Name: "edition", NameLocation: "middle", NameGap: 28}),
		charts.WithYAxisOpts(opts.YAxis{Type: axisType(spansDecades(all...)), Name: axis, Scale: opts.Bool(true)}),
		charts.WithAnimation(false),
	)
	line.SetXAxis(names).
		AddSeries("best", best, charts.WithItemStyleOpts(opts.ItemStyle{Color: palette[0]})).
		AddSeries("10th", tenth, charts.WithItemStyleOpts(opts.ItemStyle{Color: palette[1]})).
		AddSeries("median", med, charts.WithItemStyleOpts(opts.ItemStyle{Color: palette[2]}))
	return ListChart{ID: "development-chart", Label: "Line chart of the best, 10th and median " + axis + " per edition", Chart: line, Table: t}
}

// SharesChart shows each group's share of the entries and of the summed
// performance, as Top500's vendor and architecture statistics.
func SharesChart(id, by string, shares []leaderboard.Share) ListChart {
	t := Table{Caption: "Shares by " + by, Head: []string{by, "entries", "share of entries (%)", "share of performance (%)"}}
	var names []string
	var entries, perf []opts.BarData
	for _, s := range shares {
		names = append(names, s.Group)
		entries = append(entries, opts.BarData{Name: s.Group, Value: round4(100 * s.EntryShare)})
		perf = append(perf, opts.BarData{Name: s.Group, Value: round4(100 * s.Performance)})
		t.Rows = append(t.Rows, []string{s.Group, itoa(s.Entries), num(100 * s.EntryShare), num(100 * s.Performance)})
	}
	bar := charts.NewBar()
	bar.SetGlobalOptions(
		charts.WithTitleOpts(opts.Title{Title: "Shares by " + by, Subtitle: "performance: the value, or its reciprocal where lower is better, summed"}),
		charts.WithTooltipOpts(opts.Tooltip{Show: opts.Bool(true), Trigger: "item", Formatter: types.FuncStr("{b}<br/>{a}: {c} %")}),
		charts.WithLegendOpts(opts.Legend{Show: opts.Bool(true), Bottom: "0"}),
		charts.WithGridOpts(opts.Grid{ContainLabel: opts.Bool(true), Left: "3%", Right: "4%", Bottom: "60"}),
		charts.WithXAxisOpts(opts.XAxis{Type: "category", Name: by, NameLocation: "middle", NameGap: 28}),
		charts.WithYAxisOpts(opts.YAxis{Type: "value", Name: "share (%)", Max: 100}),
		charts.WithAnimation(false),
	)
	bar.SetXAxis(names).
		AddSeries("entries", entries, charts.WithItemStyleOpts(opts.ItemStyle{Color: palette[0]})).
		AddSeries("performance", perf, charts.WithItemStyleOpts(opts.ItemStyle{Color: palette[1]}))
	return ListChart{ID: id, Label: "Bar chart of the shares of entries and of performance by " + by, Chart: bar, Table: t}
}

// BoardCharts are the charts of a board's page, in page order, from its
// summary (leaderboard.Summary). curves are the top entries' accuracy
// curves; dev the development across editions (charts without data are
// left out).
func BoardCharts(bench *d5list.Benchmark, sum *leaderboard.Summary, curves []Curve, dev []leaderboard.DevelopmentPoint) []ListChart {
	if sum == nil || sum.Total == 0 {
		return nil
	}
	out := []ListChart{RankingRangeChart(bench, sum.Top, sum.Total)}
	if len(sum.Records) > 0 {
		out = append(out, RecordChart(bench, sum.Records))
	}
	if curvesHavePoints(curves) {
		out = append(out, AccuracyTop10Chart(bench, curves))
	}
	if sum.WithAccelerators > 0 {
		out = append(out, ParetoChart("pareto-accelerators-chart", bench, sum.Top, sum.ParetoAccelerators, sum.WithAccelerators,
			"accelerators (count)", func(e d5list.Entry) float64 { return float64(e.Accelerators) }))
	}
	if sum.WithCost > 0 {
		out = append(out, ParetoChart("pareto-cost-chart", bench, sum.Top, sum.ParetoCost, sum.WithCost,
			"price of the system (USD per hour)", func(e d5list.Entry) float64 { return e.CostPerHour }))
	}
	if len(dev) > 0 {
		out = append(out, DevelopmentChart(bench, dev))
	}
	out = append(out,
		SharesChart("vendor-shares-chart", "accelerator vendor", sum.Vendors),
		SharesChart("framework-shares-chart", "framework", sum.Frameworks))
	return out
}

func curvesHavePoints(curves []Curve) bool {
	for _, c := range curves {
		if len(c.Points) > 0 {
			return true
		}
	}
	return false
}
