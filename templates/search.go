package templates

import (
	"net/url"

	d5list "github.com/deep500/d5list"
	"github.com/deep500/d5list/leaderboard"
)

// SearchView is the search across the list: the text, and what each
// benchmark's board has of it, in the catalogue's order.
type SearchView struct {
	Text   string
	Groups []SearchGroup
	// Cut: more names held the text than one search looks up.
	Cut bool
}

// SearchGroup is one benchmark's matches.
type SearchGroup struct {
	Bench   d5list.Benchmark
	Entries []d5list.Entry
	Systems int
}

// NewSearchView orders what a search found by the catalogue's order.
func NewSearchView(text string, found []leaderboard.Found, cut bool, benches []d5list.Benchmark) SearchView {
	v := SearchView{Text: text, Cut: cut}
	byID := map[string]leaderboard.Found{}
	for _, f := range found {
		byID[f.BenchmarkID] = f
	}
	for _, b := range benches {
		if f, ok := byID[b.ID]; ok {
			v.Groups = append(v.Groups, SearchGroup{Bench: b, Entries: f.Entries, Systems: f.Systems})
		}
	}
	return v
}

// Systems is how many systems matched on every board together.
func (v SearchView) Systems() int {
	n := 0
	for _, g := range v.Groups {
		n += g.Systems
	}
	return n
}

// BoardLink is the group's board searched for the same text, which lists
// every match.
func (v SearchView) BoardLink(g SearchGroup) string {
	return "/benchmarks/" + url.PathEscape(g.Bench.ID) + "?" + url.Values{leaderboard.ParamSearch: {v.Text}}.Encode()
}

// searchTitle is the search page's title.
func searchTitle(text string) string {
	if text == "" {
		return "Search"
	}
	return "Search: " + text
}

// matchWord agrees with a count of systems.
func matchWord(n int) string {
	if n == 1 {
		return "matches"
	}
	return "match"
}
