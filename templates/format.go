// Package templates holds the portal's pages as templ components, and the
// go-echarts charts they show. Components take domain values and nothing
// else; all data fetching happens in handlers.
package templates

import (
	"encoding/json"
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"
	"time"

	d5list "github.com/deep500/d5list"
	"github.com/deep500/d5list/leaderboard"
)

// Level is one Deep500 level with the benchmarks it holds.
type Level struct {
	Number      int
	Name        string
	Description string
	Benchmarks  []d5list.Benchmark
}

// levels names the four Deep500 levels, after Ben-Nun et al. (IPDPS 2019).
var levels = []Level{
	{Number: 0, Name: "Operators", Description: "single operators (convolution, matrix multiplication) measured for speed and numerical error"},
	{Number: 1, Name: "Network processing", Description: "whole networks' forward and backward passes, measured per sample"},
	{Number: 2, Name: "Training", Description: "training a network on one node to a quality target, ranked by time to train"},
	{Number: 3, Name: "Distributed training", Description: "training across several nodes to a quality target, ranked by time to train"},
}

// Levels groups benchmarks by level, L0 to L3, every level present even
// when empty; benchmarks keep the order they came in.
func Levels(benchmarks []d5list.Benchmark) []Level {
	out := make([]Level, len(levels))
	copy(out, levels)
	for _, b := range benchmarks {
		if b.Level >= 0 && b.Level < len(out) {
			out[b.Level].Benchmarks = append(out[b.Level].Benchmarks, b)
		}
	}
	return out
}

// metricLabels are the human names of the shared metrics.
var metricLabels = map[string]string{
	d5list.MetricTimeToTrain:    "time to train",
	d5list.MetricTTA:            "time to accuracy",
	d5list.MetricFinalAccuracy:  "final accuracy",
	d5list.MetricBestAccuracy:   "best accuracy",
	d5list.MetricEpochsToTarget: "epochs to target",
	d5list.MetricThroughput:     "throughput",
	"eval_accuracy":             "accuracy",
	d5list.MetricOpTime:         "operator time",
	d5list.MetricOpGFLOPS:       "operator speed",
	d5list.MetricOpRelL2Error:   "relative L2 error",
	d5list.MetricOpMaxError:     "max error",
	d5list.MetricLatencyP50:     "median latency",
	d5list.MetricLatencyP99:     "99th percentile latency",
}

// MetricLabel returns the human name of a metric.
func MetricLabel(metric string) string {
	if l, ok := metricLabels[metric]; ok {
		return l
	}
	return strings.ReplaceAll(metric, "_", " ")
}

// AxisName is a metric's label with its unit, as charts name their axes.
func AxisName(metric, unit string) string {
	if unit == "" {
		return MetricLabel(metric)
	}
	return MetricLabel(metric) + " (" + unit + ")"
}

// RankedLabel names what bench ranks by, as its board, rules, charts and
// the home page say it. A benchmark without a training curve (operators,
// inference) that ranks by the runner's clock times the calls its code
// makes between run_start and run_stop: "time to train" would misname it.
func RankedLabel(b *d5list.Benchmark) string {
	if b.Ranking.Metric == d5list.MetricTimeToTrain && b.Level <= 1 {
		return "time of the timed calls"
	}
	return MetricLabel(b.Ranking.Metric)
}

// RankedAxis is RankedLabel with the unit, as axes and columns name it.
func RankedAxis(b *d5list.Benchmark) string {
	if b.Ranking.Unit == "" {
		return RankedLabel(b)
	}
	return RankedLabel(b) + " (" + b.Ranking.Unit + ")"
}

// qualityUnit is the unit of a quality metric: accuracies and errors are
// fractions of one in MLLOG.
func qualityUnit(metric string) string {
	if leaderboard.IsFraction(metric) {
		return "fraction"
	}
	return ""
}

func directionWords(d d5list.Direction) string {
	if d == d5list.HigherIsBetter {
		return "higher is better"
	}
	return "lower is better"
}

func comparator(d d5list.Direction) string {
	if d == d5list.LowerIsBetter {
		return "≤"
	}
	return "≥"
}

func targetMode(mode string) string {
	if mode == "final" {
		return "the last evaluation of every run must reach it"
	}
	return "a run converges at its first evaluation that reaches it"
}

// FormatValue prints a metric value with its unit as every page, feed,
// export and badge prints it (leaderboard.FormatValue).
func FormatValue(v float64, unit string) string { return leaderboard.FormatValue(v, unit) }

func formatNumber(v float64) string { return leaderboard.FormatNumber(v) }

// formatFraction prints an accuracy or an error (leaderboard.FormatFraction).
func formatFraction(v float64) string { return leaderboard.FormatFraction(v) }

// formatMetric prints a value of the named metric without a unit: an
// accuracy or an error as a fraction, anything else as a measurement.
func formatMetric(metric string, v float64) string {
	if leaderboard.IsFraction(metric) {
		return formatFraction(v)
	}
	return formatNumber(v)
}

func formatRange(min, max float64, unit string) string {
	if math.IsInf(min, 0) || math.IsInf(max, 0) {
		return "—"
	}
	lo := formatNumber(min)
	if unit == "fraction" {
		lo = formatFraction(min)
	}
	return lo + "–" + FormatValue(max, unit)
}

func formatEpochs(e float64) string {
	if e < 0 {
		return "not reached"
	}
	return leaderboard.FormatCount(e)
}

func formatTime(t time.Time) string {
	if t.IsZero() {
		return "—"
	}
	return t.UTC().Format("2006-01-02 15:04 UTC")
}

func formatAny(v any) string {
	switch x := v.(type) {
	case nil:
		return "null"
	case string:
		return x
	case d5list.Symbol:
		return x.Name
	case map[string]any:
		keys := sortedKeys(x)
		parts := make([]string, len(keys))
		for i, k := range keys {
			parts[i] = k + ": " + formatAny(x[k])
		}
		return "{" + strings.Join(parts, ", ") + "}"
	case []any:
		parts := make([]string, len(x))
		for i, e := range x {
			parts[i] = formatAny(e)
		}
		return "[" + strings.Join(parts, ", ") + "]"
	}
	return fmt.Sprint(v)
}

func sortedKeys(m map[string]any) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

func itoa(i int) string     { return strconv.Itoa(i) }
func i64toa(i int64) string { return strconv.FormatInt(i, 10) }

// rankLabel and submissionLabel name a rank and an entry's number
// (leaderboard.RankLabel); SubmissionTitle opens a heading with the entry.
func rankLabel(rank int) string       { return leaderboard.RankLabel(rank) }
func submissionLabel(id int64) string { return leaderboard.SubmissionLabel(id) }
func SubmissionTitle(id int64) string { return "Submission " + i64toa(id) }

func submissionURL(id int64) string { return "/submissions/" + i64toa(id) }

// reasonWhere says where a finding is: file and line, run, epoch.
func reasonWhere(r d5list.Reason) string {
	var parts []string
	if r.File != "" {
		where := r.File
		if r.Line > 0 {
			where += ":" + itoa(r.Line)
		}
		parts = append(parts, where)
	}
	if r.Run != nil {
		parts = append(parts, "run "+itoa(*r.Run))
	}
	if r.Epoch != nil {
		parts = append(parts, "epoch "+leaderboard.FormatCount(*r.Epoch))
	}
	return strings.Join(parts, ", ")
}

// reasonValues shows a finding's claimed and measured numbers.
func reasonValues(r d5list.Reason) string {
	var parts []string
	if r.Claimed != nil {
		parts = append(parts, "claimed "+formatNumber(*r.Claimed))
	}
	if r.Measured != nil {
		parts = append(parts, "measured "+formatNumber(*r.Measured))
	}
	return strings.Join(parts, ", ")
}

// RunPair is one run index with its claimed and its re-run metrics.
type RunPair struct {
	Index    int
	Seed     int64
	Claimed  *d5list.RunMetrics
	Measured *d5list.RunMetrics
}

// RunPairs lines claimed and measured runs up by run index.
func RunPairs(claimed, measured *d5list.Result) []RunPair {
	byIndex := map[int]*RunPair{}
	var order []int
	add := func(res *d5list.Result, set func(*RunPair, *d5list.RunMetrics)) {
		if res == nil {
			return
		}
		for i := range res.Runs {
			r := &res.Runs[i]
			p, ok := byIndex[r.Index]
			if !ok {
				p = &RunPair{Index: r.Index, Seed: r.Seed}
				byIndex[r.Index] = p
				order = append(order, r.Index)
			}
			set(p, r)
		}
	}
	add(claimed, func(p *RunPair, r *d5list.RunMetrics) { p.Claimed = r })
	add(measured, func(p *RunPair, r *d5list.RunMetrics) { p.Measured = r })
	sort.Ints(order)
	out := make([]RunPair, len(order))
	for i, idx := range order {
		out[i] = *byIndex[idx]
	}
	return out
}

func runCell(r *d5list.RunMetrics, f func(*d5list.RunMetrics) string) string {
	if r == nil {
		return "—"
	}
	return f(r)
}

func ttt(r *d5list.RunMetrics) string    { return FormatValue(r.TimeToTrain, "s") }
func epochs(r *d5list.RunMetrics) string { return formatEpochs(r.EpochsToTarget) }
func finalAcc(r *d5list.RunMetrics) string {
	return formatFraction(r.FinalAccuracy)
}

func scoreValue(r *d5list.Result, unit string) string {
	if r == nil {
		return "—"
	}
	if !r.Score.Valid {
		return "no valid score"
	}
	return FormatValue(r.Score.Value, unit)
}

func scoreRange(r *d5list.Result, unit string) string {
	if r == nil || !r.Score.Valid {
		return "—"
	}
	return formatRange(r.Score.Min, r.Score.Max, unit)
}

func scoreDropped(r *d5list.Result) string {
	if r == nil || len(r.Score.Dropped) == 0 {
		return "—"
	}
	parts := make([]string, len(r.Score.Dropped))
	for i, d := range r.Score.Dropped {
		parts[i] = "run " + itoa(d)
	}
	return strings.Join(parts, ", ")
}

func scoreNote(r *d5list.Result) string {
	if r == nil {
		return "not yet measured"
	}
	return r.Score.Note
}

// runsCount is how many runs a result holds, and of a re-run how many
// used seeds the portal drew, as the board says it: "7 (2 with seeds the
// portal drew)".
func runsCount(r *d5list.Result) string {
	if r == nil {
		return "—"
	}
	fresh := 0
	for _, run := range r.Runs {
		if run.Fresh {
			fresh++
		}
	}
	if fresh > 0 {
		return itoa(len(r.Runs)) + " (" + itoa(fresh) + " with seeds the portal drew)"
	}
	return itoa(len(r.Runs))
}

func statusWords(s d5list.Status) string {
	return strings.ReplaceAll(string(s), "_", " ")
}

// submissionScripts adds the status poller while a verdict is pending.
func submissionScripts(sub *d5list.Submission) []string {
	if sub.Status.Final() {
		return chartScripts
	}
	return append([]string{"/static/js/submission.js"}, chartScripts...)
}

type recipeValue struct{ key, value string }

type recipePart struct {
	name   string
	values []recipeValue
}

// recipeParts lays a recipe out as the page shows it: fixed, mutable,
// metrics and entrypoint, keys sorted, values as JSON.
func recipeParts(r *d5list.Recipe) []recipePart {
	section := func(name string, m map[string]any) recipePart {
		p := recipePart{name: name}
		keys := make([]string, 0, len(m))
		for k := range m {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			p.values = append(p.values, recipeValue{k, jsonText(m[k])})
		}
		return p
	}
	var parts []recipePart
	for _, p := range []recipePart{section("fixed", r.Fixed), section("mutable", r.Mutable)} {
		if len(p.values) > 0 {
			parts = append(parts, p)
		}
	}
	if len(r.Metrics) > 0 {
		p := recipePart{name: "metrics"}
		for _, m := range r.Metrics {
			p.values = append(p.values, recipeValue{m.Name, metricWords(m)})
		}
		parts = append(parts, p)
	}
	if r.Entrypoint != "" {
		parts = append(parts, recipePart{name: "entrypoint", values: []recipeValue{{"", r.Entrypoint}}})
	}
	return parts
}

func jsonText(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprint(v)
	}
	return string(b)
}

// metricWords is a recipe metric's acceptable value in words.
func metricWords(m d5list.MetricSpec) string {
	if m.Acceptable == nil {
		return "reported"
	}
	op := ">="
	if m.Direction == d5list.LowerIsBetter {
		op = "<="
	}
	return op + " " + jsonText(*m.Acceptable)
}

// bytesWords is a size for people: 4.2 MB, 512 kB, 900 bytes.
func bytesWords(n int64) string {
	switch {
	case n >= 1<<20:
		return strconv.FormatFloat(float64(n)/(1<<20), 'f', 1, 64) + " MB"
	case n >= 1<<10:
		return strconv.FormatFloat(float64(n)/(1<<10), 'f', 0, 64) + " kB"
	}
	return strconv.FormatInt(n, 10) + " bytes"
}

// countOf is n with the noun in its number: "1 entry", "3 entries".
func countOf(n int, one, many string) string {
	if n == 1 {
		return "1 " + one
	}
	return itoa(n) + " " + many
}
