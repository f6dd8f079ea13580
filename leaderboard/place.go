package leaderboard

import (
	"time"

	d5list "github.com/deep500/d5list"
)

// Place is a system's entry on one benchmark's board: on the live default
// board where Edition is empty, else on the board edition Edition froze.
// Entry carries its rank on that board, which listed Of entries.
type Place struct {
	BenchmarkID string
	Edition     string
	FrozenAt    time.Time
	Entry       d5list.Entry
	Of          int
}

// Found is one board's part of a search across the list: the best entries
// of the systems whose organisation, system, framework or accelerator
// name contains the text, ranked on the board's default view, and how
// many systems of that board match.
type Found struct {
	BenchmarkID string
	Entries     []d5list.Entry
	Systems     int
}
