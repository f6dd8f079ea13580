package catalog

import (
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
	if !levels[2] {
		t.Fatal("no level 2 benchmark in the catalogue")
	}
}

func TestParseRejectsBadEntries(t *testing.T) {
	tests := []struct{ name, yaml, want string }{
		{"unknown field", "- id: x\n  levle: 2\n", "levle"},
		{"bad level", "- id: x\n  level: 7\n  category: c\n  runs: 1\n  ranking: {metric: m}\n", "level: must be 0..3"},
		{"no runs", "- id: x\n  level: 1\n  category: c\n  ranking: {metric: m}\n", "runs"},
		{"both fixed and mutable", "- id: x\n  level: 1\n  category: c\n  runs: 1\n  ranking: {metric: m}\n  division: {fixed: {a: 1}, mutable: {a: 2}}\n", "both fixed and mutable"},
		{"duplicate", "- {id: x, level: 1, category: c, runs: 1, ranking: {metric: m}}\n- {id: x, level: 1, category: c, runs: 1, ranking: {metric: m}}\n", "duplicate id"},
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
