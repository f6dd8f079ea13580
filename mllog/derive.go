package mllog

import (
	"fmt"
	"maps"
	"math"
	"slices"

	d5list "github.com/deep500/d5list"
)

// Reason codes Derive reports.
const (
	CodeMissingRunStart = "missing_run_start"
	CodeMissingRunStop  = "missing_run_stop"
	CodeStopBeforeStart = "run_stop_before_run_start"
	CodeMissingStatus   = "missing_run_status"
	CodeEvalNoEpoch     = "eval_without_epoch"
	CodeEvalNotNumber   = "eval_not_a_number"
	CodeNotFinite       = "value_not_finite"
)

// StatusSuccess and StatusAborted are the run_stop statuses MLPerf uses.
const (
	StatusSuccess = "success"
	StatusAborted = "aborted"
)

// extraMetricKeys are MLLOG keys whose last numeric value Derive keeps in
// RunMetrics.Extra, for the Deep500 levels whose score is not a training
// time (operator error, latency, ...).
var extraMetricKeys = map[string]bool{
	"l1_error": true, "l2_error": true, "max_error": true,
	"latency_ms": true, "wallclock_time": true, "operator_time_s": true,
	"train_accuracy": true, "test_accuracy": true, "train_loss": true, "eval_loss": true,
	"memory_bytes": true, "communication_bytes": true, "scaling_efficiency": true,
	d5list.MetricNumberOfWorkers: true,
}

// summaryKeys are the metrics of Level 0 and 1 runs, logged between
// run_start and run_stop once per operator shape (or once per run), and
// how Derive folds them into one RunMetrics.Extra value per run: a time
// adds up over the shapes (one pass over all of them), an error is the worst
// shape's, a latency the last logged.
var summaryKeys = map[string]func(acc, v float64) float64{
	d5list.MetricOpTime:       func(acc, v float64) float64 { return acc + v },
	d5list.MetricOpRelL2Error: math.Max,
	d5list.MetricOpMaxError:   math.Max,
	d5list.MetricLatencyP50:   func(_, v float64) float64 { return v },
	d5list.MetricLatencyP99:   func(_, v float64) float64 { return v },

	d5list.MetricPredictionChecksum: func(_, v float64) float64 { return v },
}

// shapeKeys are the summary metrics an operator run logs once per shape
// (metadata.shape), each shape each of them exactly once; Derive keeps them
// per shape as well as folded.
var shapeKeys = map[string]bool{
	d5list.MetricOpTime: true, d5list.MetricOpRelL2Error: true, d5list.MetricOpMaxError: true,
}

// offClockKeys are the summary metrics that may also be logged after
// run_stop: an operator's errors, which check its outputs against a
// reference and are not the work the window times (Deep500's L0 harness
// times the call, not the check).
var offClockKeys = map[string]bool{d5list.MetricOpRelL2Error: true, d5list.MetricOpMaxError: true}

// IsOffClockMetric reports whether metric may be logged after run_stop.
func IsOffClockMetric(metric string) bool { return offClockKeys[metric] }

// IsShapeMetric reports whether an operator run logs metric once per shape.
func IsShapeMetric(metric string) bool { return shapeKeys[metric] }

// addShapeMetric records one shape's value, the shapes kept in the order
// they first appear. A second value for the same shape and key (which
// verifier.Check refuses) replaces the first.
func addShapeMetric(shapes []d5list.ShapeMetrics, shape, key string, v float64) []d5list.ShapeMetrics {
	for i := range shapes {
		if shapes[i].Shape == shape {
			shapes[i].Metrics[key] = v
			return shapes
		}
	}
	return append(shapes, d5list.ShapeMetrics{Shape: shape, Metrics: map[string]float64{key: v}})
}

// IsSummaryMetric reports whether metric is one Derive folds over a run
// (operator time and errors, latencies) instead of reading an evaluation
// curve; a quality target on such a metric is judged on the run's value.
func IsSummaryMetric(metric string) bool {
	_, ok := summaryKeys[metric]
	return ok
}

// Derive computes one run's metrics from its events.
//
//   - StartMS/StopMS are the first run_start and first run_stop;
//     TimeToTrain is their difference in seconds (MLPerf's score of a run).
//   - Evals are the q.Metric events (eval_accuracy when q.Metric is empty)
//     between run_start and run_stop, in log order. The epoch is
//     metadata.epoch_num, else metadata.samples_count / train_samples.
//   - EpochsToTarget and TTA belong to the first eval that reaches q
//     (-1 and 0 if none does).
//   - Converged is run_stop status "success" and the target reached: at any
//     eval for q.Mode "first" (MLPerf, DAWNBench), at the last for "final".
//     A QualityTarget without a metric and target only needs "success".
//   - Throughput is the mean of the `throughput` events (or of
//     tracked_stats.throughput), else train_samples x last epoch / time.
//   - The summary metrics (IsSummaryMetric: op_time_ms, op_rel_l2_error,
//     op_max_error, latency_p50_ms, latency_p99_ms) logged between
//     run_start and run_stop (the errors also after run_stop) go to Extra, folded over the run: op_time_ms
//     summed over the shapes, the errors their maximum. When q.Metric is
//     one of them there is no curve: the run converges when its run_stop
//     status is "success" and its value reaches q (an operator error at
//     most the tolerance).
//
// The reasons are structural problems that make a metric undefined; the
// full rule checks are verifier.Check's.
func Derive(events []Event, q d5list.QualityTarget, file string, index int) (d5list.RunMetrics, []d5list.Reason) {
	m := d5list.RunMetrics{Index: index, File: file, EpochsToTarget: -1, Evals: []d5list.EvalPoint{}}
	var reasons []d5list.Reason
	reason := func(code string, line int, format string, args ...any) {
		run := index
		reasons = append(reasons, d5list.Reason{Code: code, File: file, Line: line, Run: &run, Message: fmt.Sprintf(format, args...)})
	}
	metric := q.Metric
	if metric == "" {
		metric = KeyEvalAccuracy
	}
	lastLine := 0
	if len(events) > 0 {
		lastLine = events[len(events)-1].Line
	}

	start, stop := -1, -1
	for i := range events {
		switch events[i].Key {
		case KeyRunStart:
			if start < 0 {
				start = i
			}
		case KeyRunStop:
			if stop < 0 {
				stop = i
			}
		}
	}
	if start < 0 {
		reason(CodeMissingRunStart, lastLine, "no run_start event in the log (read to line %d)", lastLine)
	} else {
		m.StartMS = events[start].TimeMS
	}
	if stop < 0 {
		reason(CodeMissingRunStop, lastLine, "no run_stop event in the log (read to line %d)", lastLine)
	} else {
		m.StopMS = events[stop].TimeMS
		st, ok := events[stop].Meta("status").(string)
		if !ok || st == "" {
			reason(CodeMissingStatus, events[stop].Line, "run_stop has no metadata.status (success or aborted)")
		}
		m.Status = st
	}
	timed := false
	if start >= 0 && stop >= 0 {
		if stop < start || m.StopMS < m.StartMS {
			reason(CodeStopBeforeStart, events[stop].Line, "run_stop (line %d) comes before run_start (line %d)", events[stop].Line, events[start].Line)
		} else {
			m.TimeToTrain = float64(m.StopMS-m.StartMS) / 1000
			timed = true
		}
	}

	var (
		trainSamples       float64
		throughputs        []float64
		trackedThroughputs []float64
		seedSet, gbsSet    bool
	)
	// Pass one: run-wide values that may be logged anywhere in the file.
	for i := range events {
		e := &events[i]
		switch e.Key {
		case KeySeed:
			if s, ok := Int(e.Value); ok && !seedSet {
				m.Seed, seedSet = s, true
			}
		case KeyGlobalBatchSize:
			if g, ok := Int(e.Value); ok && !gbsSet {
				m.GlobalBatchSize, gbsSet = int(g), true
			}
		case KeyTrainSamples:
			if f, ok := Float(e.Value); ok && trainSamples == 0 {
				trainSamples = f
			}
		case KeyThroughput:
			if f, ok := Float(e.Value); ok {
				throughputs = append(throughputs, f)
			}
		case "tracked_stats":
			if v, ok := e.Value.(map[string]any); ok {
				if f, ok := Float(v[KeyThroughput]); ok {
					trackedThroughputs = append(trackedThroughputs, f)
				}
			}
		default:
			if extraMetricKeys[e.Key] {
				if f, ok := Float(e.Value); ok {
					if m.Extra == nil {
						m.Extra = map[string]float64{}
					}
					m.Extra[e.Key] = f
				}
			}
		}
	}

	// Pass two: evaluations inside the timed region.
	from, to := 0, len(events)
	if start >= 0 {
		from = start
	}
	if stop >= 0 && stop >= from {
		to = stop + 1
	}
	summaries := map[string]float64{}
	for i := from; i < len(events); i++ {
		e := &events[i]
		fold, ok := summaryKeys[e.Key]
		if !ok || (i >= to && !offClockKeys[e.Key]) {
			continue
		}
		v, ok := Float(e.Value)
		if !ok || math.IsNaN(v) {
			reason(CodeEvalNotNumber, e.Line, "%s value %v is not a number", e.Key, e.Value)
			continue
		}
		if shape, ok := e.Meta("shape").(string); ok && shape != "" && shapeKeys[e.Key] {
			m.Shapes = addShapeMetric(m.Shapes, shape, e.Key, v)
		}
		if acc, seen := summaries[e.Key]; seen {
			v = fold(acc, v)
		}
		summaries[e.Key] = v
	}
	for k, v := range summaries {
		if m.Extra == nil {
			m.Extra = map[string]float64{}
		}
		m.Extra[k] = v
	}
	summaryTarget := IsSummaryMetric(metric)

	best := math.Inf(-1)
	if q.Direction == d5list.LowerIsBetter {
		best = math.Inf(1)
	}
	reachedAt := -1
	for i := from; i < to; i++ {
		e := &events[i]
		if e.Key != metric || summaryTarget {
			continue
		}
		acc, ok := Float(e.Value)
		if !ok || math.IsNaN(acc) {
			reason(CodeEvalNotNumber, e.Line, "%s value %v is not a number", metric, e.Value)
			continue
		}
		epoch := float64(len(m.Evals) + 1)
		if f, ok := Float(e.Meta("epoch_num")); ok {
			epoch = f
		} else if s, ok := Float(e.Meta("samples_count")); ok && trainSamples > 0 {
			epoch = s / trainSamples
		} else {
			reason(CodeEvalNoEpoch, e.Line, "%s has neither metadata.epoch_num nor metadata.samples_count with train_samples logged; counted as evaluation %d", metric, len(m.Evals)+1)
		}
		var secs float64
		if start >= 0 {
			secs = float64(e.TimeMS-m.StartMS) / 1000
		}
		m.Evals = append(m.Evals, d5list.EvalPoint{Epoch: epoch, Seconds: secs, Accuracy: acc})
		if q.Direction.Better(acc, best) || math.IsInf(best, 0) {
			best = acc
		}
		if reachedAt < 0 && q.Reached(acc) {
			reachedAt = len(m.Evals) - 1
		}
	}
	if n := len(m.Evals); n > 0 {
		m.FinalAccuracy = m.Evals[n-1].Accuracy
		m.BestAccuracy = best
	}
	if reachedAt >= 0 {
		m.EpochsToTarget = m.Evals[reachedAt].Epoch
		m.TTA = m.Evals[reachedAt].Seconds
	}

	noTarget := q.Metric == "" && q.Target == 0
	reached := reachedAt >= 0
	if q.Mode == "final" {
		reached = len(m.Evals) > 0 && q.Reached(m.FinalAccuracy)
	}
	if summaryTarget {
		v, ok := summaries[metric]
		reached = ok && q.Reached(v)
	}
	m.Converged = m.Status == StatusSuccess && (noTarget || reached) && timed

	switch {
	case len(throughputs) > 0:
		m.Throughput = mean(throughputs)
	case len(trackedThroughputs) > 0:
		m.Throughput = mean(trackedThroughputs)
	case trainSamples > 0 && len(m.Evals) > 0 && m.TimeToTrain > 0:
		m.Throughput = trainSamples * m.Evals[len(m.Evals)-1].Epoch / m.TimeToTrain
	}

	// Every value is finite by now, but a sum, a mean or a quotient of huge
	// ones may not be (1e308 logged twice): nothing that is not a finite
	// number leaves Derive, since neither the store nor JSON can hold it.
	if !finite(m.Throughput) {
		reason(CodeNotFinite, 0, "throughput: the logged values overflow a float64 (%v)", m.Throughput)
		m.Throughput = 0
	}
	for _, k := range slices.Sorted(maps.Keys(m.Extra)) {
		if v := m.Extra[k]; !finite(v) {
			reason(CodeNotFinite, 0, "%s: the logged values overflow a float64 (%v)", k, v)
			delete(m.Extra, k)
		}
	}
	for i := range m.Shapes {
		for _, k := range slices.Sorted(maps.Keys(m.Shapes[i].Metrics)) {
			if v := m.Shapes[i].Metrics[k]; !finite(v) {
				reason(CodeNotFinite, 0, "%s of shape %s: the logged values overflow a float64 (%v)", k, m.Shapes[i].Shape, v)
				delete(m.Shapes[i].Metrics, k)
			}
		}
	}
	kept := m.Evals[:0]
	for _, e := range m.Evals {
		if finite(e.Epoch) && finite(e.Seconds) && finite(e.Accuracy) {
			kept = append(kept, e)
		} else {
			reason(CodeNotFinite, 0, "an evaluation at epoch %v overflows a float64", e.Epoch)
		}
	}
	m.Evals = kept
	return m, reasons
}

func finite(v float64) bool { return !math.IsNaN(v) && !math.IsInf(v, 0) }

func mean(xs []float64) float64 {
	s := 0.0
	for _, x := range xs {
		s += x
	}
	return s / float64(len(xs))
}

// NonFinite lists, a reason each (at most max), the events of a log whose
// value, or a number in whose metadata, is a NaN or an infinity, which
// Python's json module writes as bare NaN and Infinity: a loss, an
// accuracy or a metric that no comparison can judge.
func NonFinite(events []Event, file string, max int) []d5list.Reason {
	var reasons []d5list.Reason
	for i := range events {
		e := &events[i]
		bad := notFinite(e.Value)
		for _, v := range e.Metadata {
			bad = bad || notFinite(v)
		}
		if !bad {
			continue
		}
		if len(reasons) == max {
			break
		}
		reasons = append(reasons, d5list.Reason{Code: CodeEvalNotNumber, File: file, Line: e.Line,
			Message: fmt.Sprintf("%s at line %d holds a NaN or an infinity", e.Key, e.Line)})
	}
	return reasons
}

func notFinite(v any) bool {
	f, ok := v.(float64)
	return ok && !finite(f)
}
