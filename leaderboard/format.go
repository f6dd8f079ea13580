package leaderboard

import (
	"math"
	"strconv"
	"strings"
)

// FormatValue prints a value with its unit the one way the list shows it:
// on the board, the entry page, the feed, the exports' value_text and the
// badge, so that a reader who meets a number twice meets the same string.
// A value that cannot be ranked (a run that never converged) is a dash.
// A fraction of one (an accuracy, an error) prints as FormatFraction,
// anything else as FormatNumber.
func FormatValue(v float64, unit string) string {
	if math.IsInf(v, 0) || math.IsNaN(v) {
		return "—"
	}
	if unit == "fraction" {
		return FormatFraction(v)
	}
	s := FormatNumber(v)
	if unit == "" {
		return s
	}
	return s + " " + unit
}

// SignificantDigits is how many significant digits FormatNumber keeps.
const SignificantDigits = 3

// FormatNumber rounds a measurement (a time, a throughput, a price) for
// reading to SignificantDigits significant digits, whatever its size, so
// that values side by side read alike: 0.776 s beside 1.39 s and 12.5 s,
// not 0.7760 s beside 1.39 s. Digits left of the point are never rounded
// away (1235 s, not 1.24e+03 s), and a value under a ten-thousandth (an
// operator's error) is written with an exponent rather than as a row of
// zeros: 1.57e-15.
func FormatNumber(v float64) string {
	if math.IsInf(v, 0) || math.IsNaN(v) {
		return "—"
	}
	// The boards hold values without their float noise (noNoise) and an
	// entry's own record holds them exact; a mean that lands a hair past a
	// rounding tie (2.6550000000000002) must read the same in both.
	v = noNoise(v)
	a := math.Abs(v)
	switch {
	case a == 0:
		return "0"
	case a < 1e-4:
		return strconv.FormatFloat(v, 'e', SignificantDigits-1, 64)
	}
	// Round to the significant digits first: 0.9996 has three digits
	// after the point in its exponent but rounds to 1.00, which has two.
	r, _ := strconv.ParseFloat(strconv.FormatFloat(v, 'g', SignificantDigits, 64), 64)
	intDigits := int(math.Floor(math.Log10(math.Abs(r)))) + 1
	return strconv.FormatFloat(v, 'f', max(SignificantDigits-intDigits, 0), 64)
}

// FormatFraction prints a fraction of one (an accuracy, an error rate) to
// four decimals: the quality targets are stated to three (0.945, 0.759),
// and an accuracy of 0.9449 must not read as the 0.945 it missed. Under a
// thousandth (an operator's error) it keeps FormatNumber's three
// significant digits instead of printing as 0.0000.
func FormatFraction(v float64) string {
	if math.IsInf(v, 0) || math.IsNaN(v) {
		return "—"
	}
	if a := math.Abs(v); a < 1e-3 {
		return FormatNumber(v)
	}
	return strconv.FormatFloat(noNoise(v), 'f', 4, 64)
}

// IsFraction reports whether a metric's values are fractions of one, as
// MLLOG logs accuracies and errors, which FormatFraction prints.
func IsFraction(metric string) bool {
	return strings.Contains(metric, "accuracy") || strings.Contains(metric, "error")
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
