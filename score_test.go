package d5list

import (
	"encoding/json"
	"math"
	"reflect"
	"strings"
	"testing"
)

func TestOlympicScore(t *testing.T) {
	run := func(i int, secs float64, ok bool) RunMetrics {
		return RunMetrics{Index: i, TimeToTrain: secs, Converged: ok, EpochsToTarget: 1}
	}
	tests := []struct {
		name    string
		runs    []RunMetrics
		valid   bool
		value   float64
		dropped []int
	}{
		{"drops fastest and slowest", []RunMetrics{run(0, 10, true), run(1, 30, true), run(2, 20, true), run(3, 40, true), run(4, 50, true)}, true, 30, []int{0, 4}},
		{"non-converged run is the one dropped", []RunMetrics{run(0, 10, true), run(1, 20, false), run(2, 30, true), run(3, 40, true), run(4, 50, true)}, true, 40, []int{0, 1}},
		{"two non-converged runs invalidate", []RunMetrics{run(0, 10, false), run(1, 20, false), run(2, 30, true)}, false, math.Inf(1), nil},
		{"two runs are averaged", []RunMetrics{run(0, 10, true), run(1, 20, true)}, true, 15, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := OlympicScore(tt.runs, MetricTimeToTrain, LowerIsBetter)
			if s.Valid != tt.valid || s.Value != tt.value {
				t.Fatalf("got valid=%v value=%v, want valid=%v value=%v", s.Valid, s.Value, tt.valid, tt.value)
			}
			if len(s.Dropped) != len(tt.dropped) {
				t.Fatalf("dropped %v, want %v", s.Dropped, tt.dropped)
			}
			for i := range tt.dropped {
				if s.Dropped[i] != tt.dropped[i] {
					t.Fatalf("dropped %v, want %v", s.Dropped, tt.dropped)
				}
			}
		})
	}
}

// An invalid score is +Inf (a run that never converged is infinitely
// slow); JSON has no infinity, so the wire says null beside valid: false,
// and a reader gets NaN back, never a number that could rank.
func TestScoreJSONWithoutInfinity(t *testing.T) {
	runs := []RunMetrics{{Index: 0}, {Index: 1}, {Index: 2, Converged: true, TimeToTrain: 3}}
	s := OlympicScore(runs, MetricTimeToTrain, LowerIsBetter)
	if s.Valid || !math.IsInf(s.Value, 1) {
		t.Fatalf("score %+v, want invalid +Inf", s)
	}
	data, err := json.Marshal(Result{Runs: runs, Score: s})
	if err != nil {
		t.Fatalf("marshal: %v", err)
	}
	if !strings.Contains(string(data), `"score":{"metric":"time_to_train_s","value":null,"valid":false,"min":0,"max":0,"note":"more than one run did not converge"}`) {
		t.Fatalf("JSON %s", data)
	}
	var back Result
	if err := json.Unmarshal(data, &back); err != nil {
		t.Fatal(err)
	}
	if back.Score.Valid || !math.IsNaN(back.Score.Value) || back.Score.Note != s.Note {
		t.Fatalf("read back %+v", back.Score)
	}
	s.Min = math.Inf(1)
	if data, err = json.Marshal(s); err != nil || !strings.Contains(string(data), `"min":null`) {
		t.Fatalf("infinite min: %s %v", data, err)
	}

	valid := Score{Metric: MetricTimeToTrain, Value: 2.5, Valid: true, Dropped: []int{0, 4}, Min: 1, Max: 4}
	data, _ = json.Marshal(valid)
	var again Score
	if err := json.Unmarshal(data, &again); err != nil || !reflect.DeepEqual(again, valid) {
		t.Fatalf("valid score %s read back %+v (%v)", data, again, err)
	}
}
