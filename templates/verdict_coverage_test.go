package templates

import (
	"strings"
	"testing"

	d5list "github.com/deep500/d5list"
)

// The coverage beside a verdict says what the runner checked: a sampled
// audit's chance, the final models of an evaluated benchmark (and the
// chance of its step audit), or nothing.
func TestAuditCoverageSaysWhatTheRunnerChecks(t *testing.T) {
	sampled := &d5list.Benchmark{Verify: d5list.VerifyPolicy{Harness: "operator", AuditEscape: 9.1e-4}}
	evaluated := &d5list.Benchmark{Verify: d5list.VerifyPolicy{AuditEscape: 1, Evaluation: &d5list.ModelEvaluation{Script: "x"}}}
	stepped := &d5list.Benchmark{Verify: d5list.VerifyPolicy{AuditEscape: 9.1e-4, Evaluation: &d5list.ModelEvaluation{Script: "x"}, Steps: &d5list.StepAudit{Script: "x", Stretches: 300}}}
	unaudited := &d5list.Benchmark{Verify: d5list.VerifyPolicy{AuditEscape: 1}}
	own := &d5list.Benchmark{Workload: "digits-mlp"}
	for _, tt := range []struct {
		name  string
		bench *d5list.Benchmark
		want  string
	}{
		{"a sampled audit", sampled, "with probability 0.00091 (1 in 1099)"},
		{"an evaluated benchmark", evaluated, "the model each run ends with"},
		{"an evaluated benchmark whose steps are audited", stepped, "stretches of its training steps, recomputed by the runner from the states the run handed over as it trained. An entry whose ranked runs skipped 5 % of their steps would pass every check of the re-run with probability 0.00091 (1 in 1099)"},
		{"no audit", unaudited, "Audit coverage: none."},
	} {
		if got := AuditCoverage(tt.bench); !strings.Contains(got, tt.want) {
			t.Errorf("%s: %q, want it to say %q", tt.name, got, tt.want)
		}
	}
	if got := AuditCoverage(own); got != "" {
		t.Errorf("the portal's own workload: %q, want nothing", got)
	}
}
