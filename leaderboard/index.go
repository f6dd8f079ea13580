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
	// Performance is the entry's value summed in the shares charts.
	Performance float64
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
		Performance: Performance(bench, c.entry.Value),
	}
	if c.secValid {
		r.Key2 = ascending(c.secondary, secDir)
	}
	return r, true
}

// EntryOf is submission s as the boards of bench list it, without a rank
// and with its values rounded as the boards show them; false where no
// board lists it. A page or feed that names one entry quotes the board
// through it.
func EntryOf(bench *d5list.Benchmark, s *d5list.Submission) (d5list.Entry, bool) {
	c, ok := candidateOf(bench, s)
	if !ok {
		return d5list.Entry{}, false
	}
	e := c.entry
	Finish(&e, 0)
	return e, true
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

// Summary is what a board's charts and filter choices need, made by
// aggregate queries over the index: bounded in rows whatever the board's
// size.
type Summary struct {
	// Total is the number of entries on the board.
	Total int
	// Top are its first ChartTop entries, ranked.
	Top []d5list.Entry
	// ParetoAccelerators and ParetoCost hold, for each accelerator count
	// and each declared price above 0, the best entry: the Pareto front of
	// the whole board is among them. WithAccelerators and WithCost count
	// the entries that declare one.
	ParetoAccelerators, ParetoCost []d5list.Entry
	WithAccelerators, WithCost     int
	// Vendors and Frameworks are the shares of entries and performance.
	Vendors, Frameworks []Share
	// AcceleratorNames and FrameworkNames are the filter choices, from
	// every entry that any board lists.
	AcceleratorNames, FrameworkNames []string
	// Records are the best result over time (Records): the entries that
	// each bettered every entry of the view submitted before them, every
	// entry counted, not only each system's best.
	Records []d5list.Entry
}

// ChartTop is how many of the best entries the per-entry charts draw.
const ChartTop = 50

// GroupSum is one group of an aggregate query: its name, entries and
// summed performance.
type GroupSum struct {
	Name        string
	Entries     int
	Performance float64
}

// SharesOf turns groups into shares, regrouped by group(name), ordered as
// Shares orders them.
func SharesOf(groups []GroupSum, group func(string) string) []Share {
	byGroup := map[string]*Share{}
	var entries int
	var total float64
	for _, g := range groups {
		name := group(g.Name)
		s := byGroup[name]
		if s == nil {
			s = &Share{Group: name}
			byGroup[name] = s
		}
		s.Entries += g.Entries
		s.Performance += g.Performance
		entries += g.Entries
		total += g.Performance
	}
	return finishShares(byGroup, entries, total)
}

// SummaryOf is the summary of a board held in memory (an edition's, or a
// board of a store without the index): the same charts as the index's.
func SummaryOf(board *d5list.Leaderboard) *Summary {
	sum := &Summary{Total: len(board.Entries), Top: board.Entries[:min(ChartTop, len(board.Entries))]}
	seenAccel, seenFramework := map[string]bool{}, map[string]bool{}
	for _, e := range board.Entries {
		if e.Accelerators > 0 {
			sum.ParetoAccelerators = append(sum.ParetoAccelerators, e)
			sum.WithAccelerators++
		}
		if e.CostPerHour > 0 {
			sum.ParetoCost = append(sum.ParetoCost, e)
			sum.WithCost++
		}
		if a := strings.TrimSpace(e.Accelerator); a != "" && !seenAccel[a] {
			seenAccel[a] = true
			sum.AcceleratorNames = append(sum.AcceleratorNames, a)
		}
		if f := strings.TrimSpace(e.Framework); f != "" && !seenFramework[f] {
			seenFramework[f] = true
			sum.FrameworkNames = append(sum.FrameworkNames, f)
		}
	}
	sum.Vendors = Shares(&board.Benchmark, board.Entries, Vendor)
	sum.Frameworks = Shares(&board.Benchmark, board.Entries, Framework)
	sum.Records = Records(&board.Benchmark, board.Entries)
	return sum
}
