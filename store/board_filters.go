package store

import (
	"slices"
	"strings"

	"github.com/deep500/d5list/leaderboard"
)

// filterColumns are the board_rows columns a board filters on, alone or
// several at once.
var filterColumns = [4]string{"division", "availability", "accelerator", "framework"}

type filterValues [4]string

// filterSet is a set of filter columns, a bit per filterColumns index: a
// board filtered on those columns at once. Each system's best row under
// each set's values is kept in board_filter_best, and the entries under
// them counted in board_counts, so that any filtering is a range of one
// index.
type filterSet uint8

// filterSets are every non-empty set of filter columns.
var filterSets = func() []filterSet {
	var out []filterSet
	for s := filterSet(1); s < 1<<len(filterColumns); s++ {
		out = append(out, s)
	}
	return out
}()

// col is the set's key in board_filter_best and board_counts: its column
// names in filterColumns's order, joined by commas ("division" for one).
func (s filterSet) col() string {
	var names []string
	for i, c := range filterColumns {
		if s&(1<<i) != 0 {
			names = append(names, c)
		}
	}
	return strings.Join(names, ",")
}

// val is the set's part of vals, joined by NUL, which no stored value holds.
func (s filterSet) val(vals filterValues) string {
	var parts []string
	for i, v := range vals {
		if s&(1<<i) != 0 {
			parts = append(parts, v)
		}
	}
	return strings.Join(parts, "\x00")
}

// mask is vals with the columns outside the set emptied.
func (s filterSet) mask(vals filterValues) filterValues {
	for i := range vals {
		if s&(1<<i) == 0 {
			vals[i] = ""
		}
	}
	return vals
}

// filterGroup is a system's rows with the values val in the columns of
// set (col is set.col()).
type filterGroup struct {
	system   string
	set      filterSet
	col, val string
}

// addFilterGroups adds to groups those a row of system with vals is in,
// one per filter set, each once.
func addFilterGroups(groups []filterGroup, system string, vals filterValues) []filterGroup {
	for _, s := range filterSets {
		if g := (filterGroup{system, s, s.col(), s.val(vals)}); !slices.Contains(groups, g) {
			groups = append(groups, g)
		}
	}
	return groups
}

// filterView is one filtered board as board_filter_best keys it: its view
// ("default" or "all") and filter set and values.
type filterView struct {
	view, col, val string
	set            filterSet
	vals           filterValues
}

// filterOf is the filtering opt asks for, and false where it asks for
// none.
func filterOf(opt leaderboard.Options) (filterView, bool) {
	f := filterView{view: "default", vals: filterValues{opt.Division, opt.Availability, opt.Accelerator, opt.Framework}}
	if opt.IncludeUnverified {
		f.view = "all"
	}
	for i, v := range f.vals {
		if v != "" {
			f.set |= 1 << i
		}
	}
	f.col, f.val = f.set.col(), f.set.val(f.vals)
	return f, f.set != 0
}

// filterCountView is board_counts' key of every entry of view (on_default
// or on_all) with the values val in the columns of set col.
func filterCountView(view, col, val string) string {
	return view + "\x00" + col + "\x00" + val
}
