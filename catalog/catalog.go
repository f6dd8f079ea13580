// Package catalog holds the benchmark catalogue that ships with the binary.
package catalog

import (
	"bytes"
	_ "embed"
	"fmt"
	"math"
	"slices"
	"strings"

	"gopkg.in/yaml.v3"

	d5list "github.com/deep500/d5list"
	"github.com/deep500/d5list/harness"
)

//go:embed benchmarks.yaml
var benchmarksYAML []byte

// Skeleton is a new benchmark's definition with every field commented,
// where the console's editor starts; its id is empty, so that saving it
// unchanged is refused.
//
//go:embed skeleton.yaml
var Skeleton string

// CopyOf is b's definition as YAML under a new id, for a benchmark that
// starts from an existing one.
func CopyOf(b d5list.Benchmark) (string, error) {
	var out strings.Builder
	out.WriteString("# A copy of " + b.ID + ": give it its own id and name, change what differs, and save.\n")
	b.ID += "-copy"
	b.Name = "Copy of " + b.Name
	enc := yaml.NewEncoder(&out)
	enc.SetIndent(2)
	if err := enc.Encode(b); err != nil {
		return "", err
	}
	if err := enc.Close(); err != nil {
		return "", err
	}
	return out.String(), nil
}

// Benchmarks returns the embedded catalogue, validated.
func Benchmarks() ([]d5list.Benchmark, error) {
	return Parse("benchmarks.yaml", benchmarksYAML)
}

// RefuseBuiltIn refuses definitions that would replace a built-in
// benchmark: the portal seeds those from the embedded catalogue at every
// start, so a change made elsewhere would be undone at the next one. A
// built-in benchmark changes in catalog/benchmarks.yaml, with a release.
func RefuseBuiltIn(bs []d5list.Benchmark) error {
	builtIn, err := Benchmarks()
	if err != nil {
		return err
	}
	for _, b := range bs {
		if _, err := Lookup(builtIn, b.ID); err == nil {
			return d5list.Errorf(d5list.EINVALID, "benchmark %s is built in: the portal seeds it from catalog/benchmarks.yaml at every start, so a change made here would be undone; add it under a new id, or change that file", b.ID)
		}
	}
	return nil
}

// CheckWorkloads refuses a benchmark whose workload: names none of the
// builtin workloads known (workloads.Names): only a builtin runner takes
// such a benchmark's jobs, and none could run it, so they would wait in
// the queue for good. name is the file the benchmarks came from.
func CheckWorkloads(name string, bs []d5list.Benchmark, known []string) error {
	for i, b := range bs {
		if b.Workload == "" || slices.Contains(known, b.Workload) {
			continue
		}
		return d5list.Errorf(d5list.EINVALID, "%s: entry %d (%s): workload: %q is not a builtin workload of this portal (%s): no runner could take its jobs, which would wait in the queue for good; name one of those, or leave workload out for a benchmark whose entries bring their own code",
			name, i, b.ID, b.Workload, strings.Join(known, ", "))
	}
	return nil
}

// Parse reads a catalogue file and validates every entry.
func Parse(name string, data []byte) ([]d5list.Benchmark, error) {
	bs, err := decodeBenchmarks(data)
	if err != nil {
		return nil, d5list.Errorf(d5list.EINVALID, "%s: %v", name, err)
	}
	seen := map[string]bool{}
	for i := range bs {
		b := &bs[i]
		if seen[b.ID] {
			return nil, d5list.Errorf(d5list.EINVALID, "%s: entry %d: duplicate id %q", name, i, b.ID)
		}
		seen[b.ID] = true
		if err := Validate(b); err != nil {
			return nil, d5list.Errorf(d5list.EINVALID, "%s: entry %d (%s): %s", name, i, b.ID, d5list.ErrorMessage(err))
		}
		normalize(b)
		if err := stateCoverage(b); err != nil {
			return nil, d5list.Errorf(d5list.EINVALID, "%s: entry %d (%s): %s", name, i, b.ID, d5list.ErrorMessage(err))
		}
	}
	return bs, nil
}

// stateCoverage sets the audit's stated coverage of b
// (VerifyPolicy.AuditEscape).
func stateCoverage(b *d5list.Benchmark) error {
	b.Verify.AuditEscape = 0
	switch {
	case b.Workload != "":
		return nil // the portal's own code: nothing to audit
	case b.Verify.Steps != nil:
		b.Verify.AuditEscape = harness.StretchEscape(b.Verify.Steps.Stretches, b.FreshRunCount(), d5list.AuditSkipShare)
		return nil
	case b.Verify.Harness == "":
		b.Verify.AuditEscape = 1
		return nil
	}
	task, err := harness.For(b, &d5list.Recipe{Fixed: b.Division.Fixed, Mutable: b.Division.Mutable})
	if err != nil {
		return err
	}
	b.Verify.AuditEscape = task.EscapeProbability(d5list.AuditSkipShare)
	return nil
}

// decodeBenchmarks reads the three shapes people write: the catalogue's
// own (a list of benchmarks), the same list under a "benchmarks:" key, and
// one benchmark alone. Unknown fields are errors, so a misspelt key is not
// silently dropped.
func decodeBenchmarks(data []byte) ([]d5list.Benchmark, error) {
	var node yaml.Node
	if err := yaml.Unmarshal(data, &node); err != nil {
		return nil, err
	}
	if len(node.Content) == 0 {
		return nil, nil
	}
	root := node.Content[0]
	// The shape is read from the tree, the values from the text itself, so
	// that errors keep the text's line numbers.
	decode := func(v any) error {
		dec := yaml.NewDecoder(bytes.NewReader(data))
		dec.KnownFields(true)
		return dec.Decode(v)
	}
	var bs []d5list.Benchmark
	switch {
	case root.Kind == yaml.SequenceNode:
		err := decode(&bs)
		return bs, err
	case root.Kind == yaml.MappingNode && len(root.Content) == 2 && root.Content[0].Value == "benchmarks":
		var wrapped struct {
			Benchmarks []d5list.Benchmark `yaml:"benchmarks"`
		}
		err := decode(&wrapped)
		return wrapped.Benchmarks, err
	case root.Kind == yaml.MappingNode:
		var b d5list.Benchmark
		if err := decode(&b); err != nil {
			return nil, err
		}
		return []d5list.Benchmark{b}, nil
	}
	return nil, fmt.Errorf("line %d: want a list of benchmarks, a list under benchmarks:, or one benchmark", root.Line)
}

// Validate checks one benchmark definition.
func Validate(b *d5list.Benchmark) error {
	switch {
	case b.ID == "":
		return d5list.Errorf(d5list.EINVALID, "id: required")
	case b.Level < 0 || b.Level > 3:
		return d5list.Errorf(d5list.EINVALID, "level: must be 0..3, got %d", b.Level)
	case b.Category == "":
		return d5list.Errorf(d5list.EINVALID, "category: required")
	case b.Runs < 1:
		return d5list.Errorf(d5list.EINVALID, "runs: must be at least 1, got %d", b.Runs)
	case b.DailyQuota < 0:
		return d5list.Errorf(d5list.EINVALID, "daily_quota: must be 0 (the portal's --quota) or more, got %d", b.DailyQuota)
	case b.Ranking.Metric == "":
		return d5list.Errorf(d5list.EINVALID, "ranking.metric: required")
	}
	for field, d := range map[string]d5list.Direction{"ranking.direction": b.Ranking.Direction, "quality.direction": b.Quality.Direction} {
		if d != "" && d != d5list.LowerIsBetter && d != d5list.HigherIsBetter {
			return d5list.Errorf(d5list.EINVALID, "%s: must be lower or higher, got %q", field, d)
		}
	}
	if m := b.Quality.Mode; m != "" && m != "first" && m != "final" {
		return d5list.Errorf(d5list.EINVALID, "quality.mode: must be first or final, got %q", m)
	}
	for field, names := range map[string][]string{"verify.reproduce": b.Verify.Reproduce, "verify.timed": b.Verify.Timed} {
		for i, n := range names {
			if strings.TrimSpace(n) == "" {
				return d5list.Errorf(d5list.EINVALID, "%s[%d]: empty metric name", field, i)
			}
		}
	}
	for k := range b.Division.Fixed {
		if _, ok := b.Division.Mutable[k]; ok {
			return d5list.Errorf(d5list.EINVALID, "division: key %q is both fixed and mutable", k)
		}
	}
	if e := b.Verify.Evaluation; e != nil {
		switch {
		case b.Workload != "":
			return d5list.Errorf(d5list.EINVALID, "verify.evaluation: the portal's own workload %q is not evaluated by a script", b.Workload)
		case b.Verify.Harness != "":
			return d5list.Errorf(d5list.EINVALID, "verify.evaluation: a benchmark with a harness (%q) has the harness's evaluation already", b.Verify.Harness)
		case strings.TrimSpace(e.Script) == "":
			return d5list.Errorf(d5list.EINVALID, "verify.evaluation.script: required: the Python source that prints {\"accuracy\": A} for each model file it is given")
		case e.MaxModelBytes < 0:
			return d5list.Errorf(d5list.EINVALID, "verify.evaluation.max_model_bytes: must be 0 (%d) or more, got %d", d5list.DefaultMaxModelBytes, e.MaxModelBytes)
		case e.TimeLimitSeconds < 0:
			return d5list.Errorf(d5list.EINVALID, "verify.evaluation.time_limit_s: must be 0 (%d) or more, got %d", d5list.DefaultEvaluationSeconds, e.TimeLimitSeconds)
		// The evaluation's answer is an accuracy that the run's own final
		// accuracy is held to: a target in percent, or an error to go
		// down, would fail every honest run.
		case b.Quality.Direction == d5list.LowerIsBetter || b.Quality.Target <= 0 || b.Quality.Target > 1:
			return d5list.Errorf(d5list.EINVALID, "quality: a benchmark the runner evaluates is judged by an accuracy, a fraction between 0 and 1 that is better higher; got target %v, direction %q", b.Quality.Target, b.Quality.Direction)
		}
	}
	if st := b.Verify.Steps; st != nil {
		switch {
		case b.Verify.Evaluation == nil:
			return d5list.Errorf(d5list.EINVALID, "verify.steps: needs verify.evaluation: the last stretch's state is held to the model the evaluation scores")
		case strings.TrimSpace(st.Script) == "":
			return d5list.Errorf(d5list.EINVALID, "verify.steps.script: required: the Python source that recomputes each stretch it is given and prints {\"error\": E}")
		case st.Stretches < 1 || st.Stretches > d5list.MaxStepStretches:
			return d5list.Errorf(d5list.EINVALID, "verify.steps.stretches: must be 1 to %d, got %d", d5list.MaxStepStretches, st.Stretches)
		case st.MaxStateBytes < 0:
			return d5list.Errorf(d5list.EINVALID, "verify.steps.max_state_bytes: must be 0 (%d) or more, got %d", d5list.DefaultMaxStateBytes, st.MaxStateBytes)
		case st.Tolerance < 0 || math.IsNaN(st.Tolerance) || math.IsInf(st.Tolerance, 0):
			return d5list.Errorf(d5list.EINVALID, "verify.steps.tolerance: must be 0 (%v) or a positive number, got %v", d5list.DefaultStepTolerance, st.Tolerance)
		case st.TimeLimitSeconds < 0:
			return d5list.Errorf(d5list.EINVALID, "verify.steps.time_limit_s: must be 0 (%d) or more, got %d", d5list.DefaultEvaluationSeconds, st.TimeLimitSeconds)
		}
	}
	// A harness benchmark's task is made from its own definition: one that
	// makes none would fail every job at the runner.
	if _, err := harness.For(b, &d5list.Recipe{Fixed: b.Division.Fixed, Mutable: b.Division.Mutable}); err != nil {
		return d5list.Errorf(d5list.EINVALID, "verify.harness: %v", err)
	}
	return nil
}

// normalize fills defaults and makes YAML's int values int64, as the
// recipe parsers do, so that fixed components compare equal.
func normalize(b *d5list.Benchmark) {
	if b.Quality.Mode == "" {
		b.Quality.Mode = "first"
	}
	if b.Quality.Direction == "" {
		b.Quality.Direction = d5list.HigherIsBetter
	}
	if b.Ranking.Direction == "" {
		b.Ranking.Direction = d5list.LowerIsBetter
	}
	b.Division.Fixed = normalizeMap(b.Division.Fixed)
	b.Division.Mutable = normalizeMap(b.Division.Mutable)
}

func normalizeMap(m map[string]any) map[string]any {
	if m == nil {
		return map[string]any{}
	}
	out := make(map[string]any, len(m))
	for k, v := range m {
		out[k] = normalizeValue(v)
	}
	return out
}

func normalizeValue(v any) any {
	switch x := v.(type) {
	case int:
		return int64(x)
	case map[string]any:
		return normalizeMap(x)
	case []any:
		out := make([]any, len(x))
		for i := range x {
			out[i] = normalizeValue(x[i])
		}
		return out
	}
	return v
}

// Lookup returns the benchmark with the given id from bs.
func Lookup(bs []d5list.Benchmark, id string) (*d5list.Benchmark, error) {
	for i := range bs {
		if bs[i].ID == id {
			return &bs[i], nil
		}
	}
	return nil, d5list.Errorf(d5list.ENOTFOUND, "unknown benchmark %q", id)
}
