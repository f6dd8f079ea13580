package d5list

import (
	"encoding/json"
	"math"
	"strings"
)

// Result is the set of metrics derived from the N run logs of a submission,
// either as claimed (the uploaded logs) or as measured (the portal's re-run).
type Result struct {
	Runs  []RunMetrics `json:"runs"`
	Score Score        `json:"score"`
	// Runner describes where a measured result was produced (labels).
	Runner map[string]string `json:"runner,omitempty"`
}

// TimedRuns are the runs of a measured result whose times the portal ranks
// and judges. For the competitor's code, the fresh-seed runs where the
// re-run had any: the code knew the claimed seeds in advance and could
// have computed their results before any clock started. The portal's own
// workloads compute nothing ahead, so every run of theirs counts.
func (r *Result) TimedRuns() []RunMetrics {
	if r == nil {
		return nil
	}
	var fresh []RunMetrics
	for _, run := range r.Runs {
		if run.Fresh && run.Clock != nil && run.Clock.CompetitorLog {
			fresh = append(fresh, run)
		}
	}
	if len(fresh) > 0 {
		return fresh
	}
	return r.Runs
}

// ClaimedSeedRuns are the re-runs of the claim's own seeds, which must
// reproduce the claimed runs.
func (r *Result) ClaimedSeedRuns() []RunMetrics {
	if r == nil {
		return nil
	}
	var runs []RunMetrics
	for _, run := range r.Runs {
		if !run.Fresh {
			runs = append(runs, run)
		}
	}
	return runs
}

// RecordedVersions are the software versions a runner recorded inside the
// re-run's own sandbox: the framework.* labels of its runs'
// RunClock.Environment (probed once per job, so alike in every run). Nil
// where none were recorded (a claim, the builtin executor).
func (r *Result) RecordedVersions() map[string]string {
	if r == nil {
		return nil
	}
	for _, run := range r.Runs {
		if run.Clock == nil || len(run.Clock.Environment) == 0 {
			continue
		}
		var versions map[string]string
		for k, v := range run.Clock.Environment {
			if strings.HasPrefix(k, "framework.") {
				if versions == nil {
					versions = map[string]string{}
				}
				versions[k] = v
			}
		}
		return versions
	}
	return nil
}

// RunMetrics are the metrics of one run, derived from its MLLOG.
type RunMetrics struct {
	Index           int     `json:"index"`
	File            string  `json:"file"`
	Seed            int64   `json:"seed"`
	Status          string  `json:"status"` // run_stop metadata.status
	Converged       bool    `json:"converged"`
	StartMS         int64   `json:"start_ms"`
	StopMS          int64   `json:"stop_ms"`
	TimeToTrain     float64 `json:"time_to_train_s"`
	TTA             float64 `json:"tta_s"`            // 0 when the target was never reached
	EpochsToTarget  float64 `json:"epochs_to_target"` // -1 when the target was never reached
	FinalAccuracy   float64 `json:"final_accuracy"`
	BestAccuracy    float64 `json:"best_accuracy"`
	Throughput      float64 `json:"throughput,omitempty"`
	GlobalBatchSize int     `json:"global_batch_size,omitempty"`
	// Extra holds workload-specific metrics (operator error, latency, ...).
	Extra map[string]float64 `json:"extra,omitempty"`
	// Shapes are a Level 0 run's results per operator shape, in log order;
	// Extra holds them folded over the shapes.
	Shapes []ShapeMetrics `json:"shapes,omitempty"`
	Evals  []EvalPoint    `json:"evals"`
	// Clock is the runner's own measurement of a re-run (nil in a claim).
	Clock *RunClock `json:"clock,omitempty"`
	// LogSHA256 names a re-run's MLLOG as its runner reported it, kept in
	// the portal's blob store for download; empty in a claim, whose logs
	// are in its bundle, and for re-runs measured before logs were kept.
	LogSHA256 string `json:"log_sha256,omitempty"`
	// Fresh marks a re-run whose seed the portal drew when it leased the
	// job (JobSpec.FreshSeeds); false in a claim.
	Fresh bool `json:"fresh,omitempty"`
	// GivenSeed is the seed the runner handed a re-run, which its log must
	// name as Seed; 0 in a claim.
	GivenSeed int64 `json:"given_seed,omitempty"`
	// NonFinite are the events of a re-run's log that hold a NaN or an
	// infinity (each a discrepancy); empty in a claim, whose logs the
	// bundle's checks judge.
	NonFinite []Reason `json:"non_finite,omitempty"`
}

// ShapeMetrics are the results of one operator shape (MLLOG
// metadata.shape) in a Level 0 run: op_time_ms, op_rel_l2_error and
// op_max_error.
type ShapeMetrics struct {
	Shape   string             `json:"shape"`
	Metrics map[string]float64 `json:"metrics"`
}

// Metric returns the named metric of the run.
func (r *RunMetrics) Metric(name string) (float64, bool) {
	switch name {
	case MetricTimeToTrain:
		return r.TimeToTrain, true
	case MetricTTA:
		return r.TTA, r.EpochsToTarget >= 0
	case MetricFinalAccuracy:
		return r.FinalAccuracy, true
	case MetricBestAccuracy:
		return r.BestAccuracy, true
	case MetricEpochsToTarget:
		return r.EpochsToTarget, r.EpochsToTarget >= 0
	case MetricThroughput:
		return r.Throughput, r.Throughput > 0
	}
	v, ok := r.Extra[name]
	return v, ok
}

// EvalPoint is one evaluation of a run.
type EvalPoint struct {
	Epoch    float64 `json:"epoch"`
	Seconds  float64 `json:"t"` // since run_start
	Accuracy float64 `json:"acc"`
}

// Score is a submission's ranking value over its runs, the MLPerf way: the
// olympic mean (drop the best and the worst, average the rest), where a
// non-converged run counts as infinitely slow.
type Score struct {
	Metric  string  `json:"metric"`
	Value   float64 `json:"value"`
	Valid   bool    `json:"valid"`
	Dropped []int   `json:"dropped,omitempty"` // run indices left out
	Min     float64 `json:"min"`
	Max     float64 `json:"max"`
	Note    string  `json:"note,omitempty"`
}

// scoreJSON is Score on the wire: JSON has no infinity, and an invalid
// score's value (a run that never converged counts as infinitely slow) is
// null there, beside "valid": false and the note saying why.
type scoreJSON struct {
	Metric  string   `json:"metric"`
	Value   *float64 `json:"value"`
	Valid   bool     `json:"valid"`
	Dropped []int    `json:"dropped,omitempty"`
	Min     *float64 `json:"min"`
	Max     *float64 `json:"max"`
	Note    string   `json:"note,omitempty"`
}

func finiteOrNil(v float64) *float64 {
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return nil
	}
	return &v
}

func (s Score) MarshalJSON() ([]byte, error) {
	return json.Marshal(scoreJSON{Metric: s.Metric, Value: finiteOrNil(s.Value), Valid: s.Valid, Dropped: s.Dropped,
		Min: finiteOrNil(s.Min), Max: finiteOrNil(s.Max), Note: s.Note})
}

// UnmarshalJSON reads a null value back as NaN: no number, and never a
// rank (an invalid score is not ranked whatever its value).
func (s *Score) UnmarshalJSON(data []byte) error {
	var w scoreJSON
	if err := json.Unmarshal(data, &w); err != nil {
		return err
	}
	orNaN := func(p *float64) float64 {
		if p == nil {
			return math.NaN()
		}
		return *p
	}
	*s = Score{Metric: w.Metric, Value: orNaN(w.Value), Valid: w.Valid, Dropped: w.Dropped, Min: orNaN(w.Min), Max: orNaN(w.Max), Note: w.Note}
	return nil
}
