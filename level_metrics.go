package d5list

// Metric names of the Level 0 (operator) and Level 1 (inference)
// benchmarks. Each is also the MLLOG key a run logs it under, between
// run_start and run_stop, so a catalogue entry can name the key it ranks.
const (
	// MetricOpTime is one pass over the benchmark's operator shapes: the
	// sum of each shape's median time over reruns, in milliseconds.
	MetricOpTime = "op_time_ms"
	// MetricOpGFLOPS is the operator's speed on one shape (reported only).
	MetricOpGFLOPS = "op_gflops"
	// MetricOpRelL2Error is ||got - reference|| / ||reference|| against a
	// naive reference implementation; a run's value is its worst shape's.
	MetricOpRelL2Error = "op_rel_l2_error"
	// MetricOpMaxError is the largest absolute difference from the
	// reference; a run's value is its worst shape's.
	MetricOpMaxError = "op_max_error"
	// MetricLatencyP50 and MetricLatencyP99 are per-batch inference
	// latency quantiles in milliseconds.
	MetricLatencyP50 = "latency_p50_ms"
	MetricLatencyP99 = "latency_p99_ms"
	// MetricPredictionChecksum is a hash of an inference run's predictions,
	// in order (FNV-1a over the class indices, below 2^32). The same model,
	// seed and inputs give the same value on any hardware, so a re-run
	// proves the claimed throughput came from computing these predictions.
	MetricPredictionChecksum = "prediction_checksum"
)

// TimingDirection says which way a timed metric gets faster: throughputs
// (and GFLOP/s) grow, times and latencies shrink.
func TimingDirection(metric string) Direction {
	switch metric {
	case MetricThroughput, MetricOpGFLOPS:
		return HigherIsBetter
	}
	return LowerIsBetter
}

// LevelColumn is a measurement a level's boards show beside the ranked
// value, from the same runs.
type LevelColumn struct {
	Metric string `json:"metric"`
	Label  string `json:"label"`
	Unit   string `json:"unit,omitempty"`
}

// MetricNumberOfWorkers is a Level 3 run's worker count.
const MetricNumberOfWorkers = "number_of_workers"

// LevelColumns are what each Deep500 level measures besides its score:
// operator error at L0, latency at L1, accuracy at L2, and at L3 the
// workers, scaling efficiency and bytes communicated.
func LevelColumns(level int) []LevelColumn {
	switch level {
	case 0:
		return []LevelColumn{{MetricOpRelL2Error, "Rel. L2 error", ""}, {MetricOpMaxError, "Max error", ""}}
	case 1:
		return []LevelColumn{{MetricLatencyP50, "p50 latency", "ms"}, {MetricLatencyP99, "p99 latency", "ms"}, {MetricThroughput, "Throughput", "samples/s"}}
	case 2:
		return []LevelColumn{{MetricFinalAccuracy, "Final accuracy", ""}, {MetricEpochsToTarget, "Epochs to target", ""}}
	case 3:
		return []LevelColumn{{MetricNumberOfWorkers, "Workers", ""}, {"scaling_efficiency", "Scaling efficiency", ""},
			{"communication_bytes", "Communicated", "B"}, {MetricFinalAccuracy, "Final accuracy", ""}}
	}
	return nil
}
