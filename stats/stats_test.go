package stats

import (
	"math"
	"math/rand"
	"slices"
	"testing"
)

func near(a, b, tol float64) bool { return math.Abs(a-b) <= tol }

func TestMeanStdDevMedianQuantile(t *testing.T) {
	xs := []float64{9, 2, 4, 4, 5, 4, 5, 7}
	orig := slices.Clone(xs)
	if got := Mean(xs); got != 5 {
		t.Errorf("Mean = %v, want 5", got)
	}
	// Sum of squares 32 over n-1 = 7.
	if got, want := StdDev(xs), math.Sqrt(32.0/7); !near(got, want, 1e-12) {
		t.Errorf("StdDev = %v, want %v", got, want)
	}
	if got := Median(xs); got != 4.5 {
		t.Errorf("Median = %v, want 4.5", got)
	}
	if !slices.Equal(xs, orig) {
		t.Errorf("input reordered: %v", xs)
	}
	if got := Median([]float64{3, 1, 2}); got != 2 {
		t.Errorf("odd Median = %v, want 2", got)
	}
	// R: quantile(c(1,2,3,4), c(0, .25, .9, 1)) = 1, 1.75, 3.7, 4.
	for _, c := range []struct{ q, want float64 }{{0, 1}, {0.25, 1.75}, {0.9, 3.7}, {1, 4}} {
		if got := Quantile([]float64{4, 3, 2, 1}, c.q); !near(got, c.want, 1e-12) {
			t.Errorf("Quantile(%v) = %v, want %v", c.q, got, c.want)
		}
	}
	for name, v := range map[string]float64{
		"Mean(nil)":      Mean(nil),
		"Median(nil)":    Median(nil),
		"StdDev(1 val)":  StdDev([]float64{1}),
		"Quantile(q>1)":  Quantile(xs, 1.5),
		"Quantile(q<0)":  Quantile(xs, -0.1),
		"Quantile(NaNq)": Quantile(xs, math.NaN()),
	} {
		if !math.IsNaN(v) {
			t.Errorf("%s = %v, want NaN", name, v)
		}
	}
}

func TestStudentTCDFTable(t *testing.T) {
	// Critical values from a printed t table (three decimals, hence 5e-4).
	cases := []struct{ t, df, p float64 }{
		{2.015, 5, 0.95},
		{2.571, 5, 0.975},
		{2.228, 10, 0.975},
		{3.169, 10, 0.995},
		{12.706, 1, 0.975},
		{2.086, 20, 0.975},
		{1.697, 30, 0.95},
		{1.645, math.Inf(1), 0.95},
		{1.960, 1e7, 0.975},
	}
	for _, c := range cases {
		if got := StudentTCDF(c.t, c.df); !near(got, c.p, 5e-4) {
			t.Errorf("StudentTCDF(%v, %v) = %.6f, want %.3f", c.t, c.df, got, c.p)
		}
		if got := StudentTCDF(-c.t, c.df); !near(got, 1-c.p, 5e-4) {
			t.Errorf("StudentTCDF(%v, %v) = %.6f, want %.3f", -c.t, c.df, got, 1-c.p)
		}
	}
}

func TestStudentTCDFClosedForms(t *testing.T) {
	// Closed forms for df = 1 (Cauchy), 2 and 4.
	forms := map[float64]func(x float64) float64{
		1: func(x float64) float64 { return 0.5 + math.Atan(x)/math.Pi },
		2: func(x float64) float64 { return 0.5 + x/(2*math.Sqrt(2+x*x)) },
		4: func(x float64) float64 {
			u := 1 + x*x/4
			return 0.5 + 3.0/8*x/math.Sqrt(u)*(1-x*x/(12*u))
		},
	}
	for df, f := range forms {
		for x := -30.0; x <= 30; x += 0.37 {
			if got, want := StudentTCDF(x, df), f(x); !near(got, want, 1e-12) {
				t.Fatalf("StudentTCDF(%v, %v) = %.15f, closed form %.15f", x, df, got, want)
			}
		}
	}
}

func TestStudentTCDFProperties(t *testing.T) {
	for _, df := range []float64{0.5, 1, 2.7, 5, 24.99, 100, 1e4} {
		prev := 0.0
		for x := -50.0; x <= 50; x += 0.25 {
			p := StudentTCDF(x, df)
			if p < prev-1e-15 || p < 0 || p > 1 {
				t.Fatalf("df=%v: CDF not monotone in [0,1] at %v: %v after %v", df, x, p, prev)
			}
			if s := StudentTCDF(-x, df); !near(p+s, 1, 1e-12) {
				t.Fatalf("df=%v: CDF(%v)+CDF(%v) = %v, want 1", df, x, -x, p+s)
			}
			prev = p
		}
		if got := StudentTCDF(0, df); !near(got, 0.5, 1e-15) {
			t.Errorf("df=%v: CDF(0) = %v", df, got)
		}
	}
	if StudentTCDF(math.Inf(1), 3) != 1 || StudentTCDF(math.Inf(-1), 3) != 0 {
		t.Error("CDF at ±Inf must be 1 and 0")
	}
	for _, df := range []float64{0, -1, math.NaN()} {
		if !math.IsNaN(StudentTCDF(1, df)) {
			t.Errorf("df=%v must give NaN", df)
		}
	}
}

func TestRegIncBeta(t *testing.T) {
	for x := 0.0; x <= 1; x += 0.05 {
		cases := []struct{ a, b, want float64 }{
			{1, 1, x},
			{3, 1, x * x * x},
			{1, 4, 1 - math.Pow(1-x, 4)},
			// I_x(2,2) = 3x² - 2x³.
			{2, 2, 3*x*x - 2*x*x*x},
		}
		for _, c := range cases {
			if got := RegIncBeta(x, c.a, c.b); !near(got, c.want, 1e-12) {
				t.Errorf("I_%v(%v,%v) = %v, want %v", x, c.a, c.b, got, c.want)
			}
		}
		// Symmetry I_x(a,b) = 1 - I_{1-x}(b,a).
		if got := RegIncBeta(x, 2.5, 7) + RegIncBeta(1-x, 7, 2.5); !near(got, 1, 1e-12) {
			t.Errorf("symmetry at %v: %v", x, got)
		}
	}
	if !math.IsNaN(RegIncBeta(1.2, 1, 1)) || !math.IsNaN(RegIncBeta(0.5, 0, 1)) {
		t.Error("invalid arguments must give NaN")
	}
}

func TestMedianCI(t *testing.T) {
	seq := func(n int) []float64 {
		xs := make([]float64, n)
		for i := range xs {
			xs[i] = float64(n - i) // descending: MedianCI must sort
		}
		return xs
	}
	// Order-statistic ranks of the 95 % interval from published tables
	// (e.g. Conover, Practical Nonparametric Statistics; Le Boudec,
	// Performance Evaluation, table A.1): n=6 → 1..6, n=10 → 2..9,
	// n=20 → 6..15, n=100 → 40..61.
	cases := []struct {
		n, lo, hi int
		ok        bool
	}{
		{1, 1, 1, false},
		{2, 1, 2, false},
		{5, 1, 5, false}, // full range covers only 1-2/32 = 93.75 %
		{6, 1, 6, true},  // 1-2/64 = 96.9 %
		{10, 2, 9, true},
		{20, 6, 15, true},
		{100, 40, 61, true},
	}
	for _, c := range cases {
		lo, hi, ok := MedianCI(seq(c.n), 0.95)
		if lo != float64(c.lo) || hi != float64(c.hi) || ok != c.ok {
			t.Errorf("n=%d: MedianCI = [%v, %v] ok=%v, want [%d, %d] ok=%v", c.n, lo, hi, ok, c.lo, c.hi, c.ok)
		}
	}
	// At 90 % five runs suffice (93.75 % coverage).
	if lo, hi, ok := MedianCI(seq(5), 0.90); !ok || lo != 1 || hi != 5 {
		t.Errorf("n=5 at 90%%: [%v, %v] ok=%v", lo, hi, ok)
	}
	if _, _, ok := MedianCI(nil, 0.95); ok {
		t.Error("empty sample must not be ok")
	}
	if _, _, ok := MedianCI(seq(10), 1); ok {
		t.Error("confidence 1 must not be ok")
	}
}

func TestMedianCICoverage(t *testing.T) {
	// The chosen interval reaches the confidence and the next narrower one
	// does not, for every n up to 60.
	for n := 6; n <= 60; n++ {
		xs := make([]float64, n)
		for i := range xs {
			xs[i] = float64(i + 1)
		}
		lo, _, ok := MedianCI(xs, 0.95)
		l := int(lo)
		if !ok || MedianCICoverage(n, l) < 0.95 {
			t.Fatalf("n=%d: rank %d covers %v", n, l, MedianCICoverage(n, l))
		}
		if 2*(l+1) <= n+1 && MedianCICoverage(n, l+1) >= 0.95 {
			t.Fatalf("n=%d: rank %d is not the narrowest (rank %d covers %v)", n, l, l+1, MedianCICoverage(n, l+1))
		}
	}
}

func TestBinomialCDF(t *testing.T) {
	if got := BinomialCDF(0, 5, 0.5); !near(got, 1.0/32, 1e-15) {
		t.Errorf("P(B<=0 | 5) = %v", got)
	}
	if got := BinomialCDF(2, 4, 0.5); !near(got, 11.0/16, 1e-15) {
		t.Errorf("P(B<=2 | 4) = %v", got)
	}
	if got := BinomialCDF(500, 1000, 0.5); !near(got, 0.5+0.5*binomialPMF(500, 1000, 0.5), 1e-12) {
		t.Errorf("P(B<=500 | 1000) = %v", got)
	}
}

func TestOneSampleTTestLess(t *testing.T) {
	// mean 3, s = √2.5, se = √0.5 → t = -2/√0.5 = -2.8284 on 4 df.
	tt, p := OneSampleTTestLess([]float64{1, 2, 3, 4, 5}, 5)
	if !near(tt, -2/math.Sqrt(0.5), 1e-12) {
		t.Errorf("t = %v", tt)
	}
	// Between the table's 0.025 (2.776) and 0.01 (3.747) columns for 4 df.
	if !(p > 0.01 && p < 0.025) || !near(p, StudentTCDF(tt, 4), 1e-15) {
		t.Errorf("p = %v", p)
	}
	if _, p := OneSampleTTestLess([]float64{1, 2, 3, 4, 5}, 1); p < 0.9 {
		t.Errorf("mean above mu must give a large p, got %v", p)
	}
	cases := []struct {
		xs     []float64
		mu     float64
		wantT  float64
		wantP  float64
		reason string
	}{
		{[]float64{2, 2, 2}, 3, math.Inf(-1), 0, "constant below mu"},
		{[]float64{4, 4, 4}, 3, math.Inf(1), 1, "constant above mu"},
		{[]float64{3, 3, 3}, 3, 0, 1, "constant at mu"},
	}
	for _, c := range cases {
		tt, p := OneSampleTTestLess(c.xs, c.mu)
		if tt != c.wantT || p != c.wantP {
			t.Errorf("%s: t=%v p=%v, want t=%v p=%v", c.reason, tt, p, c.wantT, c.wantP)
		}
	}
	if tt, p := OneSampleTTestLess([]float64{1}, 0); !math.IsNaN(tt) || !math.IsNaN(p) {
		t.Error("one value must give NaN")
	}
}

func TestWelchTTestLess(t *testing.T) {
	// Wikipedia, "Welch's t-test", example 1: t = -2.46, ν = 24.9885,
	// two-sided p = 0.021.
	a1 := []float64{27.5, 21.0, 19.0, 23.6, 17.0, 17.9, 16.9, 20.1, 21.9, 22.6, 23.1, 19.6, 19.0, 21.7, 21.4}
	a2 := []float64{27.1, 22.0, 20.8, 23.4, 23.4, 23.5, 25.8, 22.0, 24.8, 20.2, 21.9, 22.1, 22.9, 20.5, 24.4}
	tt, p := WelchTTestLess(a1, a2)
	if !near(tt, -2.46, 0.005) || !near(2*p, 0.021, 0.0005) {
		t.Errorf("Welch example 1: t=%v two-sided p=%v, want -2.46 and 0.021", tt, 2*p)
	}
	// Swapping the samples mirrors t and complements p.
	tt2, p2 := WelchTTestLess(a2, a1)
	if !near(tt2, -tt, 1e-12) || !near(p+p2, 1, 1e-12) {
		t.Errorf("swap: t=%v p=%v against t=%v p=%v", tt2, p2, tt, p)
	}
	// With equal sizes and variances Welch equals Student's pooled test
	// on 2n-2 df.
	xs := []float64{1, 2, 3, 4, 5}
	ys := []float64{3, 4, 5, 6, 7}
	tt, p = WelchTTestLess(xs, ys)
	if !near(tt, -2, 1e-12) || !near(p, StudentTCDF(-2, 8), 1e-12) {
		t.Errorf("equal variances: t=%v p=%v", tt, p)
	}
	if _, p := WelchTTestLess([]float64{1, 1}, []float64{2, 2}); p != 0 {
		t.Errorf("constant samples, xs below: p=%v, want 0", p)
	}
	if tt, _ := WelchTTestLess([]float64{1}, ys); !math.IsNaN(tt) {
		t.Error("one value must give NaN")
	}
}

func TestSignTestLess(t *testing.T) {
	xs := []float64{1, 1, 1, 1, 1, 1, 1, 1, 1, 5, 7}
	ys := []float64{2, 2, 2, 2, 2, 2, 2, 2, 2, 4, 7} // last pair tied, dropped
	below, n, p := SignTestLess(xs, ys)
	// 9 of 10 below: P(B >= 9) = (10+1)/1024.
	if below != 9 || n != 10 || !near(p, 11.0/1024, 1e-15) {
		t.Errorf("got below=%d n=%d p=%v", below, n, p)
	}
	if _, _, p := SignTestLess([]float64{1, 2}, []float64{1, 2}); p != 1 {
		t.Errorf("no differences: p=%v, want 1", p)
	}
	if _, _, p := SignTestLess([]float64{1}, []float64{1, 2}); !math.IsNaN(p) {
		t.Error("length mismatch must give NaN")
	}
}

func TestWilcoxonSignedRankLess(t *testing.T) {
	// Five pairs all below: W+ = 0, p = 1/32.
	w, n, p := WilcoxonSignedRankLess([]float64{1, 2, 3, 4, 5}, []float64{2, 4, 6, 8, 10})
	if w != 0 || n != 5 || !near(p, 1.0/32, 1e-15) {
		t.Errorf("all below: W+=%v n=%d p=%v", w, n, p)
	}
	// n = 10, W+ = 10: the one-sided 5 % critical value of printed tables,
	// P = 43/1024 = 0.0420.
	d := []float64{-1, -2, -3, 4, -5, 6, -7, -8, -9, -10}
	zero := make([]float64, len(d))
	w, _, p = WilcoxonSignedRankLess(d, zero)
	if w != 10 || !near(p, 43.0/1024, 1e-15) {
		t.Errorf("n=10: W+=%v p=%v, want 10 and %v", w, p, 43.0/1024)
	}
	if _, _, p := WilcoxonSignedRankLess([]float64{3, 3}, []float64{3, 3}); p != 1 {
		t.Errorf("no differences: p=%v", p)
	}
}

// The exact distribution, ties included, agrees with brute-force enumeration
// of all 2^n sign assignments.
func TestWilcoxonExactMatchesEnumeration(t *testing.T) {
	rng := rand.New(rand.NewSource(7))
	for trial := 0; trial < 40; trial++ {
		n := 1 + rng.Intn(12)
		d := make([]float64, n)
		for i := range d {
			d[i] = float64(rng.Intn(9) - 4) // small integers: ties and zeros
		}
		w, m, p := WilcoxonSignedRankLess(d, make([]float64, n))
		if m == 0 {
			continue
		}
		var mags []float64
		for _, v := range d {
			if v != 0 {
				mags = append(mags, math.Abs(v))
			}
		}
		ranks := averageRanks(mags)
		count := 0
		for mask := 0; mask < 1<<m; mask++ {
			s := 0.0
			for i := 0; i < m; i++ {
				if mask&(1<<i) != 0 {
					s += ranks[i]
				}
			}
			if s <= w+1e-9 {
				count++
			}
		}
		if want := float64(count) / float64(int(1)<<m); !near(p, want, 1e-12) {
			t.Fatalf("d=%v: p=%v, enumeration %v", d, p, want)
		}
	}
}

func averageRanks(xs []float64) []float64 {
	r := make([]float64, len(xs))
	for i, x := range xs {
		less, equal := 0, 0
		for _, y := range xs {
			if y < x {
				less++
			} else if y == x {
				equal++
			}
		}
		r[i] = float64(less) + float64(equal+1)/2
	}
	return r
}

func TestWilcoxonNormalApproximation(t *testing.T) {
	// Above the exact limit the approximation must still agree closely with
	// the t test's verdict on a clearly shifted sample and be ~0.5 at zero shift.
	n := exactWilcoxonMax + 50
	xs, ys := make([]float64, n), make([]float64, n)
	for i := range xs {
		xs[i] = float64(i%17) - 8
		if i%2 == 0 {
			xs[i] += 0.5
		}
	}
	_, _, p := WilcoxonSignedRankLess(xs, ys)
	if p < 0.3 || p > 0.99 {
		t.Errorf("symmetric-ish sample: p=%v", p)
	}
	for i := range xs {
		ys[i] = xs[i] + 1 + float64(i%3)
	}
	if _, _, p := WilcoxonSignedRankLess(xs, ys); p > 1e-10 {
		t.Errorf("all below: p=%v", p)
	}
}

func TestPooledTTestLess(t *testing.T) {
	// Means 10 (3 values) and 12 (10 values), shared sd 1: t = -2/sqrt(1/3
	// + 1/10) = -3.0382 on 11 df, one-sided p = 0.005641 (numerical
	// integration of the t density).
	tt, p := PooledTTestLess(10, 3, 12, 1, 10)
	if !near(tt, -3.0382181, 1e-6) || !near(p, 0.0056412, 1e-6) {
		t.Errorf("t=%v p=%v, want -3.0382 and 0.005641", tt, p)
	}
	// n1 = n2 = 6, sd such that the standard error is 1: t = -2 on 10 df,
	// whose lower tail is 0.036694 (t tables).
	if tt, p := PooledTTestLess(8, 6, 10, 1/math.Sqrt(1.0/6+1.0/6), 6); !near(tt, -2, 1e-12) || !near(p, 0.036694, 1e-5) {
		t.Errorf("t table: t=%v p=%v, want -2 and 0.036694", tt, p)
	}
	// It agrees with Welch's test on raw samples of equal size and spread.
	xs := []float64{1, 2, 3, 4, 5}
	ys := []float64{3, 4, 5, 6, 7}
	tw, pw := WelchTTestLess(xs, ys)
	if tt, p := PooledTTestLess(Mean(xs), 5, Mean(ys), StdDev(xs), 5); !near(tt, tw, 1e-12) || !near(p, pw, 1e-12) {
		t.Errorf("pooled t=%v p=%v, Welch t=%v p=%v", tt, p, tw, pw)
	}
	for _, c := range []struct {
		name       string
		mean1      float64
		want       float64
		n1, n2     int
		sd         float64
		wantNaNOut bool
	}{
		{"no spread, below", 1, 0, 3, 3, 0, false},
		{"no spread, above", 3, 1, 3, 3, 0, false},
		{"no spread, equal", 2, 1, 3, 3, 0, false},
		{"too few values", 1, 0, 1, 1, 1, true},
		{"negative sd", 1, 0, 3, 3, -1, true},
	} {
		_, p := PooledTTestLess(c.mean1, c.n1, 2, c.sd, c.n2)
		if c.wantNaNOut != math.IsNaN(p) || (!c.wantNaNOut && p != c.want) {
			t.Errorf("%s: p=%v", c.name, p)
		}
	}
}

func TestOlympicMean(t *testing.T) {
	for _, c := range []struct {
		xs   []float64
		want float64
	}{
		{[]float64{5, 1, 3, 100, 2}, 10.0 / 3}, // 1 and 100 dropped
		{[]float64{4, 2, 9}, 4},
		{[]float64{2, 6}, 4}, // too few to drop any
		{[]float64{7}, 7},
	} {
		in := append([]float64(nil), c.xs...)
		if got := OlympicMean(c.xs); math.Abs(got-c.want) > 1e-12 {
			t.Errorf("OlympicMean(%v) = %v, want %v", c.xs, got, c.want)
		}
		if !slices.Equal(in, c.xs) {
			t.Errorf("OlympicMean reordered its input: %v, was %v", c.xs, in)
		}
	}
	if got := OlympicMean(nil); !math.IsNaN(got) {
		t.Errorf("OlympicMean(nil) = %v, want NaN", got)
	}
}
