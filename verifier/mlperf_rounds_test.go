package verifier

import (
	"strings"
	"testing"
)

// The round files load, oldest first: every Training round MLCommons'
// logging package has rules for. A mistake in one is named with its file.
func TestMLPerfRoundData(t *testing.T) {
	rounds, err := MLPerfRounds()
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, r := range rounds {
		names = append(names, r.Round)
		if r.Configs[firstConfigName] == nil || len(r.Benchmarks) == 0 {
			t.Errorf("round %s has no common rules or no benchmarks", r.Round)
		}
	}
	if strings.Join(names, " ") != "0.6 0.7 1.0 1.1 2.0 2.1 3.0 3.1 4.0 4.1 5.0 5.1 6.0 6.1" {
		t.Errorf("rounds %v", names)
	}
	const head = "ruleset: 9.0.0\nround: \"9.0\"\nformat: mllog\n"
	const common = "configs:\n  common:\n    keys:\n      - {key: seed, req: exactly_one}\n"
	for _, c := range []struct{ yaml, msg string }{
		{head + "benchmarks:\n  x: {runs: 5}\n" + common + "future_key: 1\n", "future_key"},
		{head + "benchmarks:\n  x: {runs: 0}\n" + common, "benchmark x needs runs"},
		{head + "benchmarks:\n  x: {runs: 5}\nconfigs:\n  common:\n    keys:\n      - {key: seed, req: once}\n", `rule for "seed": req must be`},
		{head + "benchmarks:\n  x: {runs: 5}\nconfigs:\n  common:\n    keys:\n      - {key: seed, check: [\"value >\"]}\n", `"value >"`},
		{head + "benchmarks:\n  x: {runs: 5}\nconfigs:\n  common:\n    begin: [\"a == 1\"]\n    keys: []\n", "an assignment is name = expression"},
		{head + "benchmarks:\n  x: {runs: 5, rcp: {runs: 5, converge: {}, refs: []}}\n" + common, "rcp converge needs"},
		{"ruleset: 9.0.0\nround: \"9.0\"\nformat: csv\nbenchmarks:\n  x: {runs: 5}\n" + common, "format must be"},
	} {
		if _, err := parseMLPerfRound("training_9.0.0.yaml", []byte(c.yaml)); err == nil || !strings.Contains(err.Error(), c.msg) || !strings.Contains(err.Error(), "training_9.0.0.yaml") {
			t.Errorf("%q: %v, want %q", c.yaml, err, c.msg)
		}
	}
}
