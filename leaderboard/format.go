package leaderboard

import (
	"math"
	"strconv"
)

// FormatValue prints a value with its unit the one way the list shows it:
// on the board, the entry page, the feed, the exports' value_text and the
// badge, so that a reader who meets a number twice meets the same string.
// A value that cannot be ranked (a run that never converged) is a dash.
func FormatValue(v float64, unit string) string {
	if math.IsInf(v, 0) || math.IsNaN(v) {
		return "—"
	}
	s := FormatNumber(v)
	if unit == "" || unit == "fraction" {
		return s
	}
	return s + " " + unit
}

// FormatNumber rounds a value for reading: two decimals from 1 to 100, one
// above, four below, and three significant digits under a thousandth.
func FormatNumber(v float64) string {
	switch a := math.Abs(v); {
	case a == 0:
		return "0"
	case a >= 100:
		return strconv.FormatFloat(v, 'f', 1, 64)
	case a >= 1:
		return strconv.FormatFloat(v, 'f', 2, 64)
	case a < 1e-3:
		// Operator errors (around 1e-15) and microsecond latencies keep
		// three significant digits instead of printing as 0.0000.
		return strconv.FormatFloat(v, 'g', 3, 64)
	default:
		return strconv.FormatFloat(v, 'f', 4, 64)
	}
}

// FormatCount prints a count that may be fractional (epochs to a target:
// MLPerf logs some as fractions of an epoch) whole where it is whole, and
// with up to two decimals where it is not: "30 epochs", not "30.00".
func FormatCount(v float64) string {
	if math.IsInf(v, 0) || math.IsNaN(v) {
		return "—"
	}
	return strconv.FormatFloat(math.Round(v*100)/100, 'f', -1, 64)
}

// RankLabel and SubmissionLabel are how the pages, charts, feed and badge
// name a rank and an entry's number, so that the two never look alike:
// a rank is "#3", an entry is "submission 12" ("Submission 12" opening a
// sentence or heading); no entry number is written with "#".
func RankLabel(rank int) string { return "#" + strconv.Itoa(rank) }

// SubmissionLabel is the name of the entry numbered id (see RankLabel).
func SubmissionLabel(id int64) string { return "submission " + strconv.FormatInt(id, 10) }
