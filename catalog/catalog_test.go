package catalog

import (
	"math"
	"os"
	"strings"
	"testing"

	d5list "github.com/deep500/d5list"
)

func TestEmbeddedCatalogueIsValid(t *testing.T) {
	bs, err := Benchmarks()
	if err != nil {
		t.Fatal(err)
	}
	b, err := Lookup(bs, "l2-digits-mlp-cpu")
	if err != nil {
		t.Fatal(err)
	}
	if b.Level != 2 || b.Runs != 5 || b.Ranking.Direction != d5list.LowerIsBetter || b.Ranking.Metric != d5list.MetricTimeToTrain {
		t.Fatalf("l2-digits-mlp-cpu defined as %+v", b)
	}
	// YAML integers must become int64 as the recipe parsers produce them,
	// or a closed-division comparison of the fixed part would never match.
	if _, ok := b.Division.Fixed["epochs"].(int64); !ok {
		t.Fatalf("fixed.epochs is %T, want int64", b.Division.Fixed["epochs"])
	}
	levels := map[int]bool{}
	for _, b := range bs {
		levels[b.Level] = true
	}
	for _, level := range []int{0, 1, 2, 3} {
		if !levels[level] {
			t.Errorf("no level %d benchmark in the catalogue", level)
		}
	}
}

// TestOperatorAndInferenceEntries pins what the pipeline relies on for the
// Level 0 and 1 entries: a builtin workload, a ranking metric in the right
// direction, and what a re-run must reproduce.
func TestOperatorAndInferenceEntries(t *testing.T) {
	bs, err := Benchmarks()
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		id, workload, metric string
		level                int
		dir                  d5list.Direction
		quality              string
	}{
		{"l0-gemm-cpu", "gemm", d5list.MetricOpTime, 0, d5list.LowerIsBetter, d5list.MetricOpRelL2Error},
		{"l0-conv2d-cpu", "conv2d", d5list.MetricOpTime, 0, d5list.LowerIsBetter, d5list.MetricOpRelL2Error},
		{"l1-mlp-inference-cpu", "mlp-inference", d5list.MetricThroughput, 1, d5list.HigherIsBetter, ""},
	} {
		b, err := Lookup(bs, tt.id)
		if err != nil {
			t.Fatal(err)
		}
		if b.Level != tt.level || b.Workload != tt.workload || b.Ranking.Metric != tt.metric || b.Ranking.Direction != tt.dir || b.Quality.Metric != tt.quality {
			t.Errorf("%s defined as %+v", tt.id, b)
		}
		if len(b.Verify.Timed) == 0 || len(b.Verify.SameHardware) == 0 {
			t.Errorf("%s: verify %+v names no timed metric or no hardware label", tt.id, b.Verify)
		}
		if tt.level == 0 {
			if b.Quality.Direction != d5list.LowerIsBetter || !(b.Quality.Target > 0 && b.Quality.Target < 1e-6) || len(b.Verify.Reproduce) != 2 {
				t.Errorf("%s: quality %+v, reproduce %v: want an error tolerance, lower is better, both errors reproduced", tt.id, b.Quality, b.Verify.Reproduce)
			}
			if _, ok := b.Division.Fixed["shapes"].([]any); !ok {
				t.Errorf("%s: fixed.shapes is %T", tt.id, b.Division.Fixed["shapes"])
			}
		}
	}
}

func TestParseRejectsBadEntries(t *testing.T) {
	tests := []struct{ name, yaml, want string }{
		{"unknown field", "- id: x\n  levle: 2\n", "levle"},
		{"bad level", "- id: x\n  level: 7\n  category: c\n  runs: 1\n  ranking: {metric: m}\n", "level: must be 0..3"},
		{"no runs", "- id: x\n  level: 1\n  category: c\n  ranking: {metric: m}\n", "runs"},
		{"both fixed and mutable", "- id: x\n  level: 1\n  category: c\n  runs: 1\n  ranking: {metric: m}\n  division: {fixed: {a: 1}, mutable: {a: 2}}\n", "both fixed and mutable"},
		{"empty timed metric", "- id: x\n  level: 0\n  category: c\n  runs: 1\n  ranking: {metric: m}\n  verify: {timed: [op_time_ms, \"\"]}\n", "verify.timed[1]: empty metric name"},
		{"negative quota", "- {id: x, level: 1, category: c, runs: 1, ranking: {metric: m}, daily_quota: -1}\n", "daily_quota: must be 0"},
		{"duplicate", "- {id: x, level: 1, category: c, runs: 1, ranking: {metric: m}}\n- {id: x, level: 1, category: c, runs: 1, ranking: {metric: m}}\n", "duplicate id"},
		{"an evaluation without its script", "- {id: x, level: 2, category: c, runs: 1, ranking: {metric: m}, verify: {evaluation: {max_model_bytes: 10}}}\n", "verify.evaluation.script: required"},
		{"an evaluation beside a harness", "- {id: x, level: 2, category: c, runs: 1, ranking: {metric: m}, verify: {harness: operator, evaluation: {script: x}}}\n", "has the harness's evaluation already"},
		{"an evaluation of a target in percent", "- {id: x, level: 2, category: c, runs: 1, ranking: {metric: m}, quality: {metric: eval_accuracy, target: 93}, verify: {evaluation: {script: x}}}\n", "quality: a benchmark the runner evaluates is judged by an accuracy, a fraction between 0 and 1"},
		{"an evaluation of an error", "- {id: x, level: 2, category: c, runs: 1, ranking: {metric: m}, quality: {metric: eval_error, target: 0.1, direction: lower}, verify: {evaluation: {script: x}}}\n", "better higher; got target 0.1"},
		{"an evaluation of negative size", "- {id: x, level: 2, category: c, runs: 1, ranking: {metric: m}, verify: {evaluation: {script: x, max_model_bytes: -1}}}\n", "verify.evaluation.max_model_bytes: must be 0"},
		{"a step audit without an evaluation", "- {id: x, level: 2, category: c, runs: 1, ranking: {metric: m}, verify: {steps: {script: x, stretches: 10}}}\n", "verify.steps: needs verify.evaluation"},
		{"a step audit without its script", "- {id: x, level: 2, category: c, runs: 1, ranking: {metric: m}, quality: {metric: eval_accuracy, target: 0.9}, verify: {evaluation: {script: x}, steps: {stretches: 10}}}\n", "verify.steps.script: required"},
		{"a step audit of no stretches", "- {id: x, level: 2, category: c, runs: 1, ranking: {metric: m}, quality: {metric: eval_accuracy, target: 0.9}, verify: {evaluation: {script: x}, steps: {script: x}}}\n", "verify.steps.stretches: must be 1 to 1000000, got 0"},
		{"a step audit of negative state size", "- {id: x, level: 2, category: c, runs: 1, ranking: {metric: m}, quality: {metric: eval_accuracy, target: 0.9}, verify: {evaluation: {script: x}, steps: {script: x, stretches: 3, max_state_bytes: -1}}}\n", "verify.steps.max_state_bytes: must be 0"},
		{"a step audit of negative tolerance", "- {id: x, level: 2, category: c, runs: 1, ranking: {metric: m}, quality: {metric: eval_accuracy, target: 0.9}, verify: {evaluation: {script: x}, steps: {script: x, stretches: 3, tolerance: -0.1}}}\n", "verify.steps.tolerance: must be 0"},
		{"a step audit misspelt", "- {id: x, level: 2, category: c, runs: 1, ranking: {metric: m}, quality: {metric: eval_accuracy, target: 0.9}, verify: {evaluation: {script: x}, steps: {script: x, strecthes: 3}}}\n", "strecthes"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Parse("b.yaml", []byte(tt.yaml))
			if err == nil || !strings.Contains(err.Error(), tt.want) || !strings.Contains(err.Error(), "b.yaml") {
				t.Fatalf("error %v, want one naming b.yaml and containing %q", err, tt.want)
			}
		})
	}
}

// The Level 3 entry: the worker count is part of the closed division, and a
// workload that exists re-runs it.
func TestDataParallelEntry(t *testing.T) {
	bs, err := Benchmarks()
	if err != nil {
		t.Fatal(err)
	}
	b, err := Lookup(bs, "l3-digits-mlp-dp-cpu")
	if err != nil {
		t.Fatal(err)
	}
	if b.Level != 3 || b.Category != "distributed-training" || b.Workload != "digits-mlp-dp" || b.Runs != 5 ||
		b.Ranking.Metric != d5list.MetricTimeToTrain || b.Ranking.Direction != d5list.LowerIsBetter || b.Verify.AccuracyTolerance != 0 {
		t.Fatalf("l3-digits-mlp-dp-cpu defined as %+v", b)
	}
	if w, ok := b.Division.Fixed["workers"].(int64); !ok || w < 1 {
		t.Fatalf("fixed.workers is %v (%T), want a positive int64", b.Division.Fixed["workers"], b.Division.Fixed["workers"])
	}
}

// The three shapes people write all read as the same benchmarks, and an
// unknown field is named with its line in each.
func TestParseAcceptsTheShapesPeopleWrite(t *testing.T) {
	one := "id: x\nname: X\nlevel: 2\ncategory: c\nruns: 1\nranking: {metric: m}\n"
	indented := "  " + strings.ReplaceAll(strings.TrimSuffix(one, "\n"), "\n", "\n  ") + "\n"
	for _, tt := range []struct{ name, yaml string }{
		{"the catalogue's list", "- " + strings.ReplaceAll(strings.TrimSuffix(one, "\n"), "\n", "\n  ") + "\n"},
		{"a list under benchmarks:", "benchmarks:\n  -" + strings.TrimPrefix(strings.ReplaceAll(indented, "\n  ", "\n    "), " ")},
		{"one benchmark", one},
	} {
		t.Run(tt.name, func(t *testing.T) {
			bs, err := Parse("b.yaml", []byte(tt.yaml))
			if err != nil || len(bs) != 1 || bs[0].ID != "x" || bs[0].Level != 2 || bs[0].Ranking.Metric != "m" {
				t.Fatalf("%q: %+v %v", tt.yaml, bs, err)
			}
		})
	}
	_, err := Parse("b.yaml", []byte("benchmarks:\n  - id: x\n    levle: 2\n"))
	if err == nil || !strings.Contains(err.Error(), "line 3") || !strings.Contains(err.Error(), "levle") {
		t.Fatalf("a misspelt field under benchmarks: %v, want it named with its line", err)
	}
}

// The published Deep500 and MLPerf entries go only to a runner that has
// their accelerators, framework and data set, and say which in words
// (issue 14).
func TestPublishedEntriesNeedTheirHardwareAndData(t *testing.T) {
	bs, err := Benchmarks()
	if err != nil {
		t.Fatal(err)
	}
	cpu := map[string]string{"cpu_model": "AMD EPYC", "runs": "entrypoint", "framework.torch": "2.3.0"}
	gpu := map[string]string{"cpu_model": "AMD EPYC", "runs": "entrypoint", "framework.torch": "2.3.0",
		"accelerator_model": "NVIDIA H100 80GB HBM3", "accelerator_count": "8"}
	for _, tc := range []struct{ id, dataset string }{
		{"l2-cifar10-resnet44-gpu", "cifar10"},
		{"l2-imagenet-resnet50-gpu", "imagenet"},
		{"mlperf-training-bert", "wikipedia-2020-01-01"},
		{"mlperf-training-ssd", "openimages-mlperf"},
		{"mlperf-training-dlrm-dcnv2", "criteo-multihot"},
		{"mlperf-training-llama2-70b-lora", "scrolls-govreport"},
	} {
		b, err := Lookup(bs, tc.id)
		if err != nil {
			t.Fatal(err)
		}
		if b.ReRunBy() != d5list.RunsEntrypoint {
			t.Errorf("%s is re-run by %q, want the competitor's entrypoint", tc.id, b.ReRunBy())
		}
		withData := map[string]string{"dataset." + tc.dataset: "yes"}
		for k, v := range gpu {
			withData[k] = v
		}
		switch {
		case b.RunnableBy(cpu):
			t.Errorf("%s goes to a CPU runner", tc.id)
		case b.RunnableBy(gpu):
			t.Errorf("%s goes to a GPU runner without %s", tc.id, tc.dataset)
		case !b.RunnableBy(withData):
			t.Errorf("%s does not go to a GPU runner with %s (needs %s)", tc.id, tc.dataset, b.RunnerNeeds(nil))
		case !strings.Contains(b.RunnerNeeds(nil), "dataset."+tc.dataset+"=yes"):
			t.Errorf("%s says it needs %q", tc.id, b.RunnerNeeds(nil))
		}
	}
}

// The example benchmark an organiser imports parses as the import reads
// it, with its evaluation and its step audit, and states the coverage of
// the stretches its runner draws: 70 of 300 in each of 2 fresh runs, so
// exp(-70·2·0.05) for a job that skips 5 % of its steps.
func TestExampleImportedBenchmarkIsValid(t *testing.T) {
	const file = "../examples/benchmarks/l2-uci-digits-torch-evaluated.yaml"
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	bs, err := Parse(file, data)
	if err != nil {
		t.Fatal(err)
	}
	if len(bs) != 1 {
		t.Fatalf("%d benchmarks, want 1", len(bs))
	}
	e := bs[0].Verify.Evaluation
	if e == nil || !strings.Contains(e.Script, "weights_only=True") || e.ModelBytes() != 8000000 || !bs[0].Audited() {
		t.Fatalf("verify %+v (evaluation %+v), want the weights-only evaluation of 8 MB models, audited", bs[0].Verify, e)
	}
	st := bs[0].Verify.Steps
	if st == nil || st.Stretches != 300 || !strings.Contains(st.Script, "weights_only=True") || st.StateBytes() != 2408528 {
		t.Fatalf("steps %+v, want a step audit of 300 stretches of states of 2,408,528 bytes, its models read weights-only", st)
	}
	if got, want := bs[0].Verify.AuditEscape, math.Exp(-70*2*0.05); math.Abs(got-want) > 1e-12 || got > 1e-3 {
		t.Fatalf("stated escape %v, want %v, under 1e-3", got, want)
	}
}
