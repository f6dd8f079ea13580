package templates

import (
	"context"
	"math"
	"net/url"
	"sort"
	"strconv"
	"strings"

	d5list "github.com/deep500/d5list"
	"github.com/deep500/d5list/leaderboard"
)

// BoardView is what a board's page shows: the live list of a benchmark, or
// the same benchmark in a frozen edition.
type BoardView struct {
	Board   *d5list.Leaderboard
	Options leaderboard.Options
	Path    string // the page's path, without query
	Edition string // "" for the live list
	Latest  string // the latest edition's name, for a link from the live list
	Charts  []ListChart
	// ChartsHTML, where not empty, is ChartFigures(Charts) as rendered
	// once for every view of the board (RenderChartFigures).
	ChartsHTML string
	// Accelerators and Frameworks offer the filter values seen on the
	// benchmark's unfiltered board.
	Accelerators, Frameworks []string
	// Page picks the table's rows; the charts and the exports are of the
	// whole board.
	Page leaderboard.Page
	// Sliced: Board holds the page's rows only (read from the index), and
	// Total is the board's row count.
	Sliced bool
	Total  int
}

// Rows are the entries of the board that this page's table shows.
func (v BoardView) Rows() []d5list.Entry {
	if v.Sliced {
		return v.Board.Entries
	}
	lo, hi := v.Page.Bounds(len(v.Board.Entries))
	return v.Board.Entries[lo:hi]
}

// total is the number of rows of the whole board.
func (v BoardView) total() int {
	if v.Sliced {
		return v.Total
	}
	return len(v.Board.Entries)
}

// PageNumber and Pages say where the page is among the board's pages.
func (v BoardView) PageNumber() int { return max(v.Page.Number, 1) }

func (v BoardView) Pages() int { return v.Page.Pages(v.total()) }

// PageLink is this view at page n, every filter and the page size kept.
func (v BoardView) PageLink(n int) string { return v.Options.PageLink(v.Path, v.Page.At(n)) }

// Permalink is exactly this view: filters, page size and page.
func (v BoardView) Permalink() string { return v.Options.PageLink(v.Path, v.Page) }

// RowsSummary says which rows of how many the page shows, in the rank
// order of the whole board: "rows 101–200 of 4,000".
func (v BoardView) RowsSummary() string {
	total := v.total()
	lo, hi := v.Page.Bounds(total)
	if hi == lo {
		return "no rows"
	}
	return "rows " + groupDigits(lo+1) + "–" + groupDigits(hi) + " of " + groupDigits(total)
}

// groupDigits writes n with thousands separated by commas.
func groupDigits(n int) string {
	s := itoa(n)
	for i := len(s) - 3; i > 0 && s[i-1] != '-'; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	return s
}

// CSVLink and JSONLink are the exports of exactly the board on the page.
func (v BoardView) CSVLink() string {
	return v.Options.Link(v.exportPath() + ".csv")
}

func (v BoardView) JSONLink() string { return v.Options.Link(v.exportPath()) }

func (v BoardView) exportPath() string {
	if v.Edition != "" {
		return "/api/v1/editions/" + v.Edition + "/benchmarks/" + v.Board.Benchmark.ID
	}
	return "/api/v1/leaderboards/" + v.Board.Benchmark.ID
}

// toggle returns the link of this view with one toggle changed. The rows
// change, so it goes to the first page; the page size is kept.
func (v BoardView) toggle(f func(*leaderboard.Options)) string {
	o := v.Options
	f(&o)
	return o.PageLink(v.Path, v.Page.At(1))
}

// SortLink is this view's link ordered by column ("" for rank), from the
// first page.
func (v BoardView) SortLink(by string) string {
	return v.toggle(func(o *leaderboard.Options) { o.Sort = by })
}

// SortedBy says whether the rows are shown in the order of column by.
func (v BoardView) SortedBy(by string) bool { return strings.EqualFold(v.Options.Sort, by) }

// ScoreSortLink is the score column's link: worst first from the
// ranking's own order (by rank or by score), best first from any other.
func (v BoardView) ScoreSortLink() string {
	if v.SortedBy("") || v.SortedBy(leaderboard.SortScore) {
		return v.SortLink(leaderboard.SortScoreReverse)
	}
	return v.SortLink(leaderboard.SortScore)
}

// scoreAriaSort is the score column's aria-sort, which names the order of
// the values, not of their merit: best first is ascending for a time and
// descending for a throughput.
func (v BoardView) scoreAriaSort() string {
	best, worst := v.SortedBy(leaderboard.SortScore), v.SortedBy(leaderboard.SortScoreReverse)
	higherBetter := v.Board.Benchmark.Ranking.Direction == d5list.HigherIsBetter
	return ariaSort(best || worst, best == higherBetter)
}

// perPageField is the page size the filter form carries along, or "" for
// the default (which the form then leaves out of the link).
func (v BoardView) perPageField() string {
	return v.Page.At(1).Query().Get(leaderboard.ParamPer)
}

// HasMarks reports whether the board carries rank changes to show.
func (v BoardView) HasMarks() bool {
	for _, e := range v.Board.Entries {
		if e.New || e.PrevRank != 0 {
			return true
		}
	}
	return false
}

// change says how an entry moved since the previous edition.
func change(e d5list.Entry) (text, class string) {
	switch {
	case e.New:
		return "new", "change-new"
	case e.PrevRank == 0:
		return "", ""
	case e.PrevRank > e.Rank:
		return "▲" + itoa(e.PrevRank-e.Rank), "change-up"
	case e.PrevRank < e.Rank:
		return "▼" + itoa(e.Rank-e.PrevRank), "change-down"
	}
	return "=", "change-same"
}

// statusBadge names an entry that is not (or not only) verified.
func statusBadge(e d5list.Entry) string {
	if e.Flag != "" {
		return "flagged"
	}
	if e.Status == d5list.StatusVerified {
		switch {
		case e.Basis == d5list.BasisClaimed:
			return "claimed, not re-measured"
		case e.Accepted:
			return "accepted by an organiser"
		}
		return ""
	}
	return strings.ReplaceAll(string(e.Status), "_", " ")
}

// badgeTitles explain the badges of entries that are ranked although the
// portal's re-run did not verify them by itself.
var badgeTitles = map[string]string{
	"claimed, not re-measured": "No runner of the declared hardware could re-measure it: the value is the submitted logs', accepted by an organiser.",
	"accepted by an organiser": "The portal's re-run found differences from the claim; an organiser reviewed them and accepted the entry. The findings are on its page.",
}

// badgeClass makes a badge's words a CSS class name.
func badgeClass(words string) string {
	return strings.Map(func(r rune) rune {
		if r >= 'a' && r <= 'z' || r >= '0' && r <= '9' {
			return r
		}
		return '-'
	}, strings.ReplaceAll(strings.ToLower(words), ", ", "-"))
}

// claimGap says in words how far an entry's claim is from what the
// portal measured, beside "claimed 6.00 s": "60% lower than measured";
// "" where the entry has no measured value beside a claim.
func claimGap(e *d5list.Entry) string {
	r := e.ClaimRatio()
	if r <= 0 {
		return ""
	}
	switch pct := math.Round((r - 1) * 100); {
	case pct == 0:
		return "as measured"
	case pct < 0:
		return strconv.FormatFloat(-pct, 'f', 0, 64) + "% lower than measured"
	case r < 2:
		return strconv.FormatFloat(pct, 'f', 0, 64) + "% higher than measured"
	default:
		return leaderboard.FormatNumber(r) + " times the measured value"
	}
}

// claimTitle explains the claim beside a measured value, as the board's
// tooltip on it.
func claimTitle(e *d5list.Entry, unit string) string {
	return "The submitted logs claimed " + FormatValue(e.Claimed, unit) + "; the portal's re-run on the declared hardware measured " +
		FormatValue(e.Value, unit) + ". The board ranks the measured value."
}

// runsWords says whose runs an entry's range covers and how many, in the
// entry page's words: a re-run may count more runs than the claim, since
// the portal adds runs with seeds it drew. "5 runs claimed, re-run 7 (2
// with seeds the portal drew)"; "5 runs claimed" where nothing was
// re-measured.
func runsWords(e *d5list.Entry) string {
	switch e.Basis {
	case d5list.BasisClaimed:
		return countOf(e.Runs, "run", "runs") + " claimed"
	case d5list.BasisMeasured:
	default:
		return countOf(e.Runs, "run", "runs")
	}
	if e.ClaimedRuns == 0 {
		return countOf(e.Runs, "run", "runs") + " re-run"
	}
	s := countOf(e.ClaimedRuns, "run", "runs") + " claimed, re-run " + itoa(e.Runs)
	if e.FreshRuns > 0 {
		s += " (" + itoa(e.FreshRuns) + " with seeds the portal drew)"
	}
	return s
}

// runsTitle explains runsWords and the range after it, as the tooltip on
// them.
func runsTitle(e *d5list.Entry) string {
	switch e.Basis {
	case d5list.BasisClaimed:
		return "The value is the olympic mean of the " + countOf(e.Runs, "run", "runs") +
			" in the submitted logs (the best and the worst dropped), not re-measured by the portal; the range is their best to worst."
	case d5list.BasisMeasured:
	default:
		return "The value is the olympic mean of the " + countOf(e.Runs, "run", "runs") + " (the best and the worst dropped); the range is their best to worst."
	}
	s := "The portal re-ran the recipe " + countOf(e.Runs, "time", "times") + " on the declared hardware"
	if e.ClaimedRuns > 0 {
		given := e.Runs - e.FreshRuns
		s += ": " + countOf(given, "run", "runs") + " with the submitted seeds"
		if e.FreshRuns > 0 {
			s += " and " + countOf(e.FreshRuns, "run", "runs") + " with seeds it drew, which the competitor could not tune for"
		}
		s += " (the submitted logs hold " + countOf(e.ClaimedRuns, "run", "runs") + ")"
	}
	return s + ". The value is the olympic mean of the re-runs (the best and the worst dropped); the range is their best to worst."
}

// Distinct lists the distinct non-empty values of f over entries, sorted.
func Distinct(entries []d5list.Entry, f func(d5list.Entry) string) []string {
	seen := map[string]bool{}
	var out []string
	for _, e := range entries {
		v := strings.TrimSpace(f(e))
		if v != "" && !seen[strings.ToLower(v)] {
			seen[strings.ToLower(v)] = true
			out = append(out, v)
		}
	}
	sort.Strings(out)
	return out
}

func editionSuffix(name string) string {
	if name == "" {
		return ""
	}
	return " · edition " + name
}

// levelLink is the list's navigation page of a level, or of one category.
func levelLink(level int, category string) string {
	q := url.Values{}
	q.Set("level", itoa(level))
	if category != "" {
		q.Set("category", category)
	}
	return "/list?" + q.Encode()
}

func equalFold(a, b string) bool {
	return strings.EqualFold(strings.TrimSpace(a), strings.TrimSpace(b))
}

// ariaSort is a column header's aria-sort: the order of the column the
// rows are shown by (dates newest first: descending), else "none".
func ariaSort(sorted, descending bool) string {
	switch {
	case !sorted:
		return "none"
	case descending:
		return "descending"
	}
	return "ascending"
}

// LevelColumns are the measurements this board shows beside its score:
// the level's columns that some row on the page has.
func (v BoardView) LevelColumns() []d5list.LevelColumn {
	var out []d5list.LevelColumn
	rows := v.Rows()
	for _, col := range d5list.LevelColumns(v.Board.Benchmark.Level) {
		if col.Metric == v.Board.Benchmark.Ranking.Metric {
			continue // the score column shows it
		}
		for _, e := range rows {
			if _, ok := e.Measures[col.Metric]; ok {
				out = append(out, col)
				break
			}
		}
	}
	return out
}

// measureText is an entry's value of a level column, or a dash. Counts
// are whole where they are (metricValue), and bytes read in kB or MB, not
// as "1500000.0 B".
func measureText(e d5list.Entry, col d5list.LevelColumn) string {
	v, ok := e.Measures[col.Metric]
	switch {
	case !ok:
		return "—"
	case col.Unit == "B" && v >= 0 && v < math.MaxInt64:
		return bytesWords(int64(v))
	}
	return metricValue(col.Metric, v, col.Unit)
}

// hardwareText is what an entry ran on: its accelerators, else its host
// processor.
func hardwareText(e d5list.Entry) string {
	if e.Accelerator != "" {
		if e.Accelerators > 0 {
			return itoa(e.Accelerators) + " × " + e.Accelerator
		}
		return e.Accelerator
	}
	if e.HostCPU != "" {
		return e.HostCPU
	}
	return "—"
}

// columnHeader is a column's label with its unit; bytes, scaled per
// value, carry theirs in each cell.
func columnHeader(col d5list.LevelColumn) string {
	if col.Unit == "" || col.Unit == "B" {
		return col.Label
	}
	return col.Label + " (" + col.Unit + ")"
}

// RenderChartFigures renders ChartFigures(charts), for BoardView.ChartsHTML.
func RenderChartFigures(ctx context.Context, charts []ListChart) (string, error) {
	var b strings.Builder
	err := ChartFigures(charts).Render(ctx, &b)
	return b.String(), err
}
