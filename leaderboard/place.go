package leaderboard

import (
	"net/url"
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

// EntryPlace is where one submission stands on its benchmark's live
// default board, the board of each system's best entry: Entry, ranked,
// on a board of Of entries; or, for an entry listed among every entry of
// its system but not as the system's best, the entry SupersededBy that
// the default board lists in its place. The zero EntryPlace is an entry
// no board lists (not verified, flagged, or withdrawn).
type EntryPlace struct {
	Entry        *d5list.Entry
	Of           int
	SupersededBy int64
}

// BoardLink is the path of the default board's page that lists the
// entry, or "" where it lists none.
func (p EntryPlace) BoardLink(benchmarkID string) string {
	if p.Entry == nil || p.Entry.Rank < 1 {
		return ""
	}
	path := "/benchmarks/" + url.PathEscape(benchmarkID)
	return Options{}.PageLink(path, Page{}.At((p.Entry.Rank-1)/DefaultPerPage+1))
}
