package templates

import d5list "github.com/deep500/d5list"

// Category is one category of a level with its benchmarks.
type Category struct {
	Name       string
	Benchmarks []d5list.Benchmark
}

// NavLevel is a level with its benchmarks grouped by category.
type NavLevel struct {
	Level
	Categories []Category
}

// Navigation groups benchmarks level → category → benchmark, keeping only
// the level and category asked for (level < 0 or category "" keeps all).
func Navigation(benchmarks []d5list.Benchmark, level int, category string) []NavLevel {
	var out []NavLevel
	for _, l := range Levels(benchmarks) {
		if level >= 0 && l.Number != level {
			continue
		}
		nl := NavLevel{Level: l}
		idx := map[string]int{}
		for _, b := range l.Benchmarks {
			if category != "" && !equalFold(b.Category, category) {
				continue
			}
			i, ok := idx[b.Category]
			if !ok {
				i = len(nl.Categories)
				idx[b.Category] = i
				nl.Categories = append(nl.Categories, Category{Name: b.Category})
			}
			nl.Categories[i].Benchmarks = append(nl.Categories[i].Benchmarks, b)
		}
		out = append(out, nl)
	}
	return out
}
