package templates

import (
	"fmt"
	"strings"
	"testing"

	d5list "github.com/deep500/d5list"
)

// An entry's measurements are its replaced attempts' and then its
// verdict's, each named by its job; an attempt whose measurement the
// reader may not see (blanked by the handler) is left out, and an entry
// not re-run yet has none.
func TestMeasurements(t *testing.T) {
	runs := func(n int) *d5list.Result { return &d5list.Result{Runs: make([]d5list.RunMetrics, n)} }
	attempt := func(id int64, remeasure int, st d5list.Status, measured *d5list.Result) d5list.Attempt {
		return d5list.Attempt{Job: d5list.Job{ID: id, Remeasure: remeasure}, Status: st, Measured: measured}
	}
	for _, tc := range []struct {
		name     string
		sub      d5list.Submission
		attempts []d5list.Attempt
		want     string
	}{
		{"not re-run yet", d5list.Submission{}, []d5list.Attempt{attempt(1, 0, "", nil)}, ""},
		{"one re-run", d5list.Submission{Measured: runs(10)}, []d5list.Attempt{attempt(1, 0, "", nil)},
			"Re-run (job 1): the measurement that ranks, 10 runs"},
		{"no attempts kept", d5list.Submission{Measured: runs(10)}, nil, "The re-run: the measurement that ranks, 10 runs"},
		{"re-measured", d5list.Submission{Measured: runs(10)},
			[]d5list.Attempt{attempt(1, 0, d5list.StatusNeedsReview, runs(10)), attempt(2, 1, "", nil)},
			"Re-run (job 1): replaced, its verdict was needs review, 10 runs; Re-measure 1 of the timed runs (job 2): the measurement that ranks, 10 runs"},
		{"a replaced verdict the reader may not see", d5list.Submission{Measured: runs(10)},
			[]d5list.Attempt{attempt(1, 0, "", nil), attempt(2, 0, "", nil)},
			"Re-run (job 2): the measurement that ranks, 10 runs"},
		{"re-run again, not measured yet", d5list.Submission{},
			[]d5list.Attempt{attempt(1, 0, d5list.StatusDiscrepancy, runs(10)), attempt(2, 0, "", nil)},
			"Re-run (job 1): replaced, its verdict was discrepancy, 10 runs"},
	} {
		var got []string
		for _, m := range Measurements(&tc.sub, tc.attempts) {
			got = append(got, fmt.Sprintf("%s%s, %d runs", m.Name, measurementRole(m), len(m.Runs)))
		}
		if strings.Join(got, "; ") != tc.want {
			t.Errorf("%s: %q, want %q", tc.name, strings.Join(got, "; "), tc.want)
		}
	}
}
