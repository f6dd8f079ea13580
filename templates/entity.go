package templates

import (
	"slices"
	"strings"

	d5list "github.com/deep500/d5list"
	"github.com/deep500/d5list/leaderboard"
)

// SubmitterURL is the page of an organisation.
func SubmitterURL(submitter string) string { return leaderboard.SubmitterPath(submitter) }

// SystemURL is the page of one organisation's system.
func SystemURL(submitter, system string) string { return leaderboard.SystemPath(submitter, system) }

// EntityRow is one entry on an organisation's or a system's page.
type EntityRow struct {
	Sub   d5list.Submission
	Bench d5list.Benchmark
}

// EntitySystem is one system of an organisation, with its latest entry.
type EntitySystem struct {
	Name    string
	Entries int
	Latest  *d5list.Submission
}

// EntityView is an organisation's or a system's page: the entries newest
// first, the systems in the order of their latest entry, and a system's
// standing on each benchmark.
type EntityView struct {
	Submitter string
	Confirmed bool
	System    string
	Rows      []EntityRow
	Systems   []EntitySystem
	Standings []Standing
}

// Standing is a system's results on one benchmark, as Top500's system
// pages list a system's place in each list: its place on the live board
// (nil where that does not list it), its places in the frozen editions,
// the latest first, and how many of its entries the page lists.
type Standing struct {
	Bench    d5list.Benchmark
	Live     *leaderboard.Place
	Editions []leaderboard.Place
	Entries  int
}

// AddStandings gives a system's view its standing on each benchmark it
// has entries or places on, in the catalogue's order; a benchmark only a
// frozen edition still has comes last, named by its id.
func (v *EntityView) AddStandings(places []leaderboard.Place, benches []d5list.Benchmark) {
	entries := map[string]int{}
	for _, row := range v.Rows {
		entries[row.Bench.ID]++
	}
	var order []*Standing
	byBench := map[string]*Standing{}
	standing := func(b d5list.Benchmark) *Standing {
		if st, ok := byBench[b.ID]; ok {
			return st
		}
		st := &Standing{Bench: b, Entries: entries[b.ID]}
		byBench[b.ID] = st
		order = append(order, st)
		return st
	}
	for _, b := range benches {
		standing(b)
	}
	for i := range places {
		st := standing(d5list.Benchmark{ID: places[i].BenchmarkID, Name: places[i].BenchmarkID})
		if places[i].Edition == "" {
			st.Live = &places[i]
		} else {
			st.Editions = append(st.Editions, places[i])
		}
	}
	for _, st := range order {
		if st.Entries > 0 || st.Live != nil || len(st.Editions) > 0 {
			v.Standings = append(v.Standings, *st)
		}
	}
}

// NewEntityView groups entries (newest first, of one submitter) by system.
func NewEntityView(subs []d5list.Submission, benches []d5list.Benchmark) EntityView {
	byID := make(map[string]d5list.Benchmark, len(benches))
	for _, b := range benches {
		byID[b.ID] = b
	}
	var v EntityView
	index := map[string]int{}
	for i := range subs {
		s := &subs[i]
		if i == 0 {
			v.Submitter, v.System = s.Submitter, s.SystemName
		}
		v.Confirmed = v.Confirmed || s.SubmitterConfirmed
		bench, ok := byID[s.BenchmarkID]
		if !ok {
			bench = d5list.Benchmark{ID: s.BenchmarkID, Name: s.BenchmarkID}
		}
		v.Rows = append(v.Rows, EntityRow{Sub: *s, Bench: bench})
		key := strings.ToLower(s.SystemName)
		if j, ok := index[key]; ok {
			v.Systems[j].Entries++
			continue
		}
		index[key] = len(v.Systems)
		v.Systems = append(v.Systems, EntitySystem{Name: s.SystemName, Entries: 1, Latest: s})
	}
	slices.SortStableFunc(v.Systems, func(a, b EntitySystem) int { return b.Latest.CreatedAt.Compare(a.Latest.CreatedAt) })
	return v
}

// entryScore is the entry's score as the list counts it: the portal's
// measurement where there is one, else the claim, marked so.
func entryScore(s *d5list.Submission, unit string) string {
	if s.Measured != nil && s.Measured.Score.Valid {
		return FormatValue(s.Measured.Score.Value, unit) + " measured"
	}
	if s.Claimed != nil && s.Claimed.Score.Valid {
		return FormatValue(s.Claimed.Score.Value, unit) + " claimed"
	}
	return "—"
}

func acceleratorText(s *d5list.Submission) string {
	if s.Accelerator == "" {
		return "none (CPU)"
	}
	return itoa(s.Accelerators) + " × " + s.Accelerator
}
