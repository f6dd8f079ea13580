package leaderboard

import (
	"strings"

	d5list "github.com/deep500/d5list"
)

// Row is a submission as the indexed boards keep it (the store's
// board_rows): its entry without a rank, the keys that order it, and the
// columns the views select on. RowOf and Score share candidateOf, so the
// index orders the same rows the same way as the in-memory ranking.
type Row struct {
	Entry d5list.Entry
	// OnDefault and OnAll: the entry is on the default board, and on the
	// board that includes unverified entries.
	OnDefault, OnAll bool
	// Key1, SecMissing, Key2, then Entry.CreatedAt and the submission id
	// order the rows, best first, ascending: values are negated where
	// higher is better.
	Key1       float64
	SecMissing bool
	Key2       float64
	// SystemKey is one row per system's key (submitter and system name,
	// case and outer spaces ignored).
	SystemKey string
	// The filters' columns, as matches compares them, and what a search
	// looks in.
	Division, Availability, Accelerator, Framework string
	Search                                         string
	// SortSubmitter and SortSystem are the Sort columns, lower case.
	SortSubmitter, SortSystem string
}

// RowOf is submission s of bench as the indexed boards keep it; false when
// no board lists it.
func RowOf(bench *d5list.Benchmark, s *d5list.Submission) (Row, bool) {
	c, ok := candidateOf(bench, s)
	if !ok {
		return Row{}, false
	}
	dir := direction(bench.Ranking.Metric, bench.Ranking.Direction)
	secDir := direction(bench.Ranking.Secondary, bench.Ranking.SecondaryDirection)
	e := c.entry
	// Who confirmed the organisation changes without the submission
	// changing; the store reads it with the row.
	e.SubmitterConfirmed = false
	lc := func(v string) string { return strings.ToLower(strings.TrimSpace(v)) }
	r := Row{
		Entry: e, OnDefault: listedEntry(&c.entry, false), OnAll: listedEntry(&c.entry, true),
		Key1: ascending(c.entry.Value, dir), SecMissing: !c.secValid,
		SystemKey: c.system,
		Division:  lc(e.Division), Availability: lc(e.Availability), Accelerator: lc(e.Accelerator), Framework: lc(e.Framework),
		Search:        strings.Join([]string{strings.ToLower(e.Submitter), strings.ToLower(e.SystemName), strings.ToLower(e.Framework), strings.ToLower(e.Accelerator)}, "\x00"),
		SortSubmitter: strings.ToLower(e.Submitter), SortSystem: strings.ToLower(e.SystemName),
	}
	if c.secValid {
		r.Key2 = ascending(c.secondary, secDir)
	}
	return r, true
}

// ascending maps a value so that smaller is better.
func ascending(v float64, dir d5list.Direction) float64 {
	if dir.Better(1, 0) {
		return -v
	}
	return v
}

// Finish makes a row read back from the index an entry of a board: its
// rank, and its values rounded as Rank rounds them.
func Finish(e *d5list.Entry, rank int) {
	e.Rank = rank
	e.Value, e.Min, e.Max, e.Claimed = noNoise(e.Value), noNoise(e.Min), noNoise(e.Max), noNoise(e.Claimed)
}

// SearchTerm is the text a search looks for in Row.Search: the options'
// search, which cannot span two names.
func SearchTerm(opt Options) string {
	return strings.ReplaceAll(opt.normalized().Search, "\x00", "")
}

// Normalized is opt as the boards compare it: filters lower case and
// trimmed.
func (o Options) Normalized() Options { return o.normalized() }
