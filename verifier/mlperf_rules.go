package verifier

import (
	"bytes"
	"embed"
	"fmt"
	"math"
	"path"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"

	"gopkg.in/yaml.v3"
)

// The rules of every MLPerf Training round d5list reads, one YAML file per
// round as MLPerf keeps its own: a new round is a data change.
//
//go:embed mlperf_rounds/*.yaml
var mlperfRoundFiles embed.FS

// MLPerfRound is what MLPerf's tools check of a result folder in one round
// (mlperf_rounds/training_<ruleset>.yaml says where each part comes from).
type MLPerfRound struct {
	Ruleset string `yaml:"ruleset"`
	Round   string `yaml:"round"`
	// Common are the keys every file logs; ClosedCommon those of the
	// closed division.
	Common       []MLPerfKeyRule                 `yaml:"common"`
	ClosedCommon []MLPerfKeyRule                 `yaml:"closed_common"`
	Benchmarks   map[string]MLPerfBenchmarkRules `yaml:"benchmarks"`
}

// MLPerfBenchmarkRules are one benchmark's rules in a round.
type MLPerfBenchmarkRules struct {
	// Runs is the exact number of result files the package checker wants.
	Runs int `yaml:"runs"`
	// MaxFailed is how many files may fail the compliance checks and be
	// dropped by olympic scoring (1, or 4 for unet3d); it is also how many
	// scores the summarizer drops at each end.
	MaxFailed int `yaml:"max_failed"`
	// Quality: at least one eval_accuracy must meet every bound.
	Quality []MLPerfBound `yaml:"quality"`
	// EvalAggregate names the metadata key that groups eval_accuracy lines
	// logging different metrics (metadata.metric: stable_diffusion's FID
	// and CLIP) into one evaluation, as the round's checker aggregates them.
	EvalAggregate string `yaml:"eval_aggregate"`
	// SeedOptional: a closed-division file may log no seed.
	SeedOptional bool            `yaml:"seed_optional"`
	Closed       []MLPerfKeyRule `yaml:"closed"`
	// ClosedBy adds the rules of one value of a key (resnet's opt_name:
	// closed_resnet_lars.yaml or closed_resnet_sgd.yaml).
	ClosedBy *struct {
		Key   string                     `yaml:"key"`
		Rules map[string][]MLPerfKeyRule `yaml:"rules"`
	} `yaml:"closed_by"`
}

// MLPerfBound bounds a value, or one field of a value that is a mapping
// (stable_diffusion's FID and CLIP): Min and Max inclusive, Above and
// Below exclusive.
type MLPerfBound struct {
	Field string   `yaml:"field"`
	Min   *float64 `yaml:"min"`
	Max   *float64 `yaml:"max"`
	Above *float64 `yaml:"above"`
	Below *float64 `yaml:"below"`
}

// MLPerfKeyRule is one key a file must log, and what its value must be.
type MLPerfKeyRule struct {
	Key         string `yaml:"key"`
	Req         string `yaml:"req"` // exactly_one or at_least_one
	MLPerfBound `yaml:",inline"`
	Equals      *float64 `yaml:"equals"`
	OneOf       []string `yaml:"one_of"`
}

const (
	reqExactlyOne = "exactly_one"
	reqAtLeastOne = "at_least_one"
)

// check reports why v does not satisfy the bound, or "".
func (b MLPerfBound) check(v any) string {
	if b.Field != "" {
		m, ok := v.(map[string]any)
		if !ok {
			return fmt.Sprintf("value %v has no field %s", v, b.Field)
		}
		v = m[b.Field]
	}
	x, ok := mlperfNumber(v)
	if !ok {
		return fmt.Sprintf("value %v is not a number", v)
	}
	var fails []string
	if b.Min != nil && !(x >= *b.Min) {
		fails = append(fails, fmt.Sprintf("at least %v", *b.Min))
	}
	if b.Max != nil && !(x <= *b.Max) {
		fails = append(fails, fmt.Sprintf("at most %v", *b.Max))
	}
	if b.Above != nil && !(x > *b.Above) {
		fails = append(fails, fmt.Sprintf("above %v", *b.Above))
	}
	if b.Below != nil && !(x < *b.Below) {
		fails = append(fails, fmt.Sprintf("below %v", *b.Below))
	}
	if len(fails) == 0 {
		return ""
	}
	what := "value"
	if b.Field != "" {
		what = b.Field
	}
	return fmt.Sprintf("%s %v must be %s", what, x, strings.Join(fails, " and "))
}

func (b MLPerfBound) String() string {
	var parts []string
	name := "value"
	if b.Field != "" {
		name = b.Field
	}
	for _, p := range []struct {
		op string
		v  *float64
	}{{">=", b.Min}, {">", b.Above}, {"<=", b.Max}, {"<", b.Below}} {
		if p.v != nil {
			parts = append(parts, fmt.Sprintf("%s %s %v", name, p.op, *p.v))
		}
	}
	return strings.Join(parts, " and ")
}

// check reports why the value logged for the rule's key is not allowed.
func (r MLPerfKeyRule) check(v any) string {
	if r.Equals != nil {
		if x, ok := mlperfNumber(v); !ok || x != *r.Equals {
			return fmt.Sprintf("must be %v, not %v", *r.Equals, v)
		}
	}
	if len(r.OneOf) > 0 && !slices.ContainsFunc(r.OneOf, func(s string) bool { return oneOfMatches(s, v) }) {
		return fmt.Sprintf("must be one of %s, not %v", strings.Join(r.OneOf, ", "), v)
	}
	if b := r.MLPerfBound; b.Min != nil || b.Max != nil || b.Above != nil || b.Below != nil {
		return b.check(v)
	}
	return "" // a rule without bounds accepts any value, numbers or not
}

// oneOfMatches compares a logged value with one allowed value as MLPerf's
// Python does: strings as strings, numbers as numbers ("inf" is
// float('inf')).
func oneOfMatches(allowed string, v any) bool {
	if s, ok := v.(string); ok {
		return s == allowed
	}
	x, ok := mlperfNumber(v)
	if !ok {
		return false
	}
	if allowed == "inf" {
		return math.IsInf(x, 1)
	}
	a, err := strconv.ParseFloat(allowed, 64)
	return err == nil && a == x
}

// mlperfNumber is v as a float, where Python would compare it as one: any
// number, infinities included.
func mlperfNumber(v any) (float64, bool) {
	switch x := v.(type) {
	case float64:
		return x, !math.IsNaN(x)
	case int64:
		return float64(x), true
	case bool:
		return 0, false
	}
	return 0, false
}

var mlperfRounds = sync.OnceValues(func() (map[string]*MLPerfRound, error) {
	entries, err := mlperfRoundFiles.ReadDir("mlperf_rounds")
	if err != nil {
		return nil, err
	}
	rounds := map[string]*MLPerfRound{}
	for _, e := range entries {
		name := path.Join("mlperf_rounds", e.Name())
		data, err := mlperfRoundFiles.ReadFile(name)
		if err != nil {
			return nil, err
		}
		r, err := parseMLPerfRound(name, data)
		if err != nil {
			return nil, err
		}
		rounds[r.Round] = r
	}
	return rounds, nil
})

func parseMLPerfRound(name string, data []byte) (*MLPerfRound, error) {
	dec := yaml.NewDecoder(bytes.NewReader(data))
	dec.KnownFields(true)
	var r MLPerfRound
	if err := dec.Decode(&r); err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	if r.Round == "" || r.Ruleset == "" || len(r.Benchmarks) == 0 {
		return nil, fmt.Errorf("%s: round, ruleset and benchmarks are required", name)
	}
	keyRules := slices.Concat(r.Common, r.ClosedCommon)
	for b, rules := range r.Benchmarks {
		if rules.Runs < 1 || len(rules.Quality) == 0 {
			return nil, fmt.Errorf("%s: benchmark %s needs runs and a quality target", name, b)
		}
		keyRules = append(keyRules, rules.Closed...)
		if rules.ClosedBy != nil {
			for _, rs := range rules.ClosedBy.Rules {
				keyRules = append(keyRules, rs...)
			}
		}
		if rules.MaxFailed == 0 {
			rules.MaxFailed = 1
			r.Benchmarks[b] = rules
		}
	}
	for _, k := range keyRules {
		if k.Key == "" || (k.Req != reqExactlyOne && k.Req != reqAtLeastOne) {
			return nil, fmt.Errorf("%s: rule for %q: req must be %s or %s", name, k.Key, reqExactlyOne, reqAtLeastOne)
		}
	}
	return &r, nil
}

// MLPerfRounds lists the rounds d5list knows, oldest first.
func MLPerfRounds() ([]*MLPerfRound, error) {
	m, err := mlperfRounds()
	if err != nil {
		return nil, err
	}
	out := make([]*MLPerfRound, 0, len(m))
	for _, r := range m {
		out = append(out, r)
	}
	sort.Slice(out, func(i, j int) bool { return roundLess(out[i].Round, out[j].Round) })
	return out, nil
}

func roundLess(a, b string) bool {
	pa, pb := strings.Split(a, "."), strings.Split(b, ".")
	for i := 0; i < len(pa) && i < len(pb); i++ {
		x, _ := strconv.Atoi(pa[i])
		y, _ := strconv.Atoi(pb[i])
		if x != y {
			return x < y
		}
	}
	return len(pa) < len(pb)
}
