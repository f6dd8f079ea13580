package verifier

import (
	"os"
	"path/filepath"
	"testing"
)

// BenchmarkCheckMLPerfTrees checks every published tree of testdata/mlperf
// once per iteration; BENCHMARKS.md compares the command line with
// MLCommons' own package checker on the untrimmed trees.
func BenchmarkCheckMLPerfTrees(b *testing.B) {
	trees, _ := filepath.Glob(filepath.Join(mlperfTestdata, "v*", "*"))
	if len(trees) == 0 {
		b.Skip("no trees")
	}
	for b.Loop() {
		for _, tree := range trees {
			round := filepath.Base(filepath.Dir(tree))[1:]
			if st, err := os.Stat(tree); err != nil || !st.IsDir() {
				continue
			}
			if _, err := CheckMLPerfTree(tree, round); err != nil {
				b.Fatal(err)
			}
		}
	}
}
