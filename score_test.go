package d5list

import (
	"math"
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
