package leaderboard

import (
	"math"
	"testing"
)

// Every measurement keeps three significant digits whatever its size, so
// that values side by side on a page read alike; digits left of the point
// are never rounded away.
func TestFormatNumberKeepsThreeSignificantDigits(t *testing.T) {
	for _, tt := range []struct {
		v    float64
		want string
	}{
		{0.776, "0.776"},
		{0.7760, "0.776"},
		{0.825, "0.825"},
		{1.39, "1.39"},
		{2.7912, "2.79"},
		{0.0575, "0.0575"},
		{0.039, "0.0390"},
		{0.0066, "0.00660"},
		{0.001, "0.00100"},
		{0.00066, "0.000660"},
		{0.000123456, "0.000123"},
		{1.5e-15, "1.50e-15"},
		{1.5688878137201688e-15, "1.57e-15"},
		{12.5, "12.5"},
		{30, "30.0"},
		{99.96, "100"},
		{0.9996, "1.00"},
		{9.996, "10.0"},
		{123.44, "123"},
		{999.6, "1000"},
		{1234.56, "1235"},
		{-1.234, "-1.23"},
		{0.21680000000000002, "0.217"},
		{0, "0"},
		{math.Inf(1), "—"},
		{math.NaN(), "—"},
	} {
		if got := FormatNumber(tt.v); got != tt.want {
			t.Errorf("FormatNumber(%v) = %q, want %q", tt.v, got, tt.want)
		}
	}
}

// An accuracy keeps four decimals, so that one just under its target does
// not read as the target.
func TestFormatFractionKeepsFourDecimals(t *testing.T) {
	for _, tt := range []struct {
		v    float64
		want string
	}{
		{0.9449, "0.9449"},
		{0.945, "0.9450"},
		{0.97512, "0.9751"},
		{0.5, "0.5000"},
		{0.0123, "0.0123"},
		{1.5688878137201688e-15, "1.57e-15"},
		{0, "0"},
		{math.Inf(-1), "—"},
	} {
		if got := FormatFraction(tt.v); got != tt.want {
			t.Errorf("FormatFraction(%v) = %q, want %q", tt.v, got, tt.want)
		}
	}
}

// FormatValue is FormatNumber with the unit, and FormatFraction for a
// fraction, which prints without one.
func TestFormatValueByUnit(t *testing.T) {
	for _, tt := range []struct {
		v    float64
		unit string
		want string
	}{
		{0.776, "s", "0.776 s"},
		{1.39, "s", "1.39 s"},
		{4321.9, "samples/s", "4322 samples/s"},
		{0.0066, "ms", "0.00660 ms"},
		{0.9751, "fraction", "0.9751"},
		{0.9751, "", "0.975"},
		{math.Inf(1), "s", "—"},
	} {
		if got := FormatValue(tt.v, tt.unit); got != tt.want {
			t.Errorf("FormatValue(%v, %q) = %q, want %q", tt.v, tt.unit, got, tt.want)
		}
	}
}

// A value reads the same whether it comes from a board, which holds it
// without float noise, or from the entry's own record, which holds it
// exact: a mean a hair past a rounding tie once read 2.65 s on the board
// and 2.66 s on the entry's page.
func TestFormatReadsTheSameWithAndWithoutFloatNoise(t *testing.T) {
	for _, v := range []float64{2.6550000000000002, 2.6549999999999998, 0.12350000000000001, 1.0005000000000002, 0.94505000000000006} {
		if a, b := FormatNumber(v), FormatNumber(noNoise(v)); a != b {
			t.Errorf("FormatNumber(%v) = %q but FormatNumber(noNoise) = %q", v, a, b)
		}
		if a, b := FormatFraction(v), FormatFraction(noNoise(v)); a != b {
			t.Errorf("FormatFraction(%v) = %q but FormatFraction(noNoise) = %q", v, a, b)
		}
	}
}
