package templates

import d5list "github.com/deep500/d5list"

// levelAnchor is the id of a level's first section on a page that lists
// boards by level, which the page's jump list links.
func levelAnchor(level int) string { return "level-" + itoa(level) }

// editionLevels are the levels an edition's boards hold, in order, and
// for the first board of each, the anchor the jump list links.
func editionLevels(boards []d5list.Leaderboard) ([]Level, map[string]string) {
	anchors := map[string]string{}
	seen := map[int]bool{}
	for _, b := range boards {
		if l := b.Benchmark.Level; !seen[l] {
			seen[l] = true
			anchors[b.Benchmark.ID] = levelAnchor(l)
		}
	}
	var out []Level
	for _, l := range levels {
		if seen[l.Number] {
			out = append(out, l)
		}
	}
	return out, anchors
}
