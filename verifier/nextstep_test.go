package verifier

import (
	"strings"
	"testing"

	d5list "github.com/deep500/d5list"
)

// Every kind of verdict but a verified one says what to do next, in one
// step.
func TestNextStep(t *testing.T) {
	reason := func(codes ...string) []d5list.Reason {
		var rs []d5list.Reason
		for _, c := range codes {
			rs = append(rs, d5list.Reason{Code: c})
		}
		return rs
	}
	for _, tt := range []struct {
		name    string
		status  d5list.Status
		reasons []d5list.Reason
		want    string
	}{
		{"verified", d5list.StatusVerified, nil, ""},
		{"on its way", d5list.StatusRunning, nil, ""},
		{"rejected", d5list.StatusRejected, reason("accuracy_mismatch"), "submit a new entry"},
		{"re-run failed", d5list.StatusFailed, reason("rerun_failed"), "`d5list run`"},
		{"seeds", d5list.StatusDiscrepancy, reason(CodeSeedMismatch, CodeAccuracyMismatch), "$D5_GATE hands over"},
		{"a fresh seed ignored", d5list.StatusDiscrepancy, reason(CodeFreshSeedIgnored), "$D5_GATE hands over"},
		{"fresh seeds that do not converge", d5list.StatusDiscrepancy, reason(CodeFreshNotConverged), "any seed"},
		{"a window logged twice", d5list.StatusDiscrepancy, reason(d5list.BreachWindowRepeated, CodeAccuracyMismatch), "once each"},
		{"a seed never taken", d5list.StatusDiscrepancy, reason(d5list.BreachGateNotOpened), "opening it starts the runner's clock"},
		{"accuracies", d5list.StatusDiscrepancy, reason(CodeAccuracyMismatch), "deterministic"},
		{"accuracies and environment", d5list.StatusDiscrepancy, reason(CodeAccuracyMismatch, CodeEnvironmentDiffers), "name what differed"},
		{"timing", d5list.StatusDiscrepancy, reason(CodeTimingMismatch), "nothing else running"},
		{"hardware", d5list.StatusNeedsReview, reason(CodeTimingNotReproduced), "host_processor_model_name"},
		{"much faster", d5list.StatusNeedsReview, reason(CodeRerunMuchFaster), "organiser"},
		{"review", d5list.StatusNeedsReview, nil, "organiser will look"},
		{"discrepancy of another kind", d5list.StatusDiscrepancy, reason("no_measurement"), "ask the organisers for a review"},
		{"failed with no finding", d5list.StatusFailed, nil, "ask the organisers for a review"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			got := NextStep(tt.status, tt.reasons)
			if (tt.want == "") != (got == "") || !strings.Contains(got, tt.want) {
				t.Fatalf("next step %q, want %q", got, tt.want)
			}
			// One step: the review is asked for only where there is
			// nothing to fix.
			if asks := strings.Contains(got, "ask the organisers for a review"); asks != (tt.want == "ask the organisers for a review") {
				t.Errorf("next step %q asks for a review: %v, want %v", got, asks, !asks)
			}
		})
	}
}
