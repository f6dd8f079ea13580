// Package stats holds the small set of statistics the portal needs to judge
// benchmark timings: order statistics with nonparametric confidence
// intervals (Hoefler & Belli, "Scientific benchmarking of parallel computing
// systems", SC15), Student's t distribution and one-sided tests.
//
// Every function is pure, leaves its inputs unmodified and returns NaN where
// the answer is undefined (an empty sample, too few values), so callers can
// never mistake "no data" for a real value.
package stats

import (
	"math"
	"sort"
)

// sorted returns a sorted copy so callers' slices keep their order (run
// order matters to whoever passed them).
func sorted(xs []float64) []float64 {
	s := append([]float64(nil), xs...)
	sort.Float64s(s)
	return s
}

// Mean is the arithmetic mean; NaN for an empty sample.
func Mean(xs []float64) float64 {
	if len(xs) == 0 {
		return math.NaN()
	}
	sum := 0.0
	for _, x := range xs {
		sum += x
	}
	return sum / float64(len(xs))
}

// OlympicMean drops the best and the worst of three or more values and
// averages the rest: the score's rule (MLPerf's, DAWNBench's) on plain
// values. NaN for an empty sample.
func OlympicMean(xs []float64) float64 {
	s := sorted(xs)
	if len(s) >= 3 {
		s = s[1 : len(s)-1]
	}
	return Mean(s)
}

// Variance is the unbiased sample variance (divisor n-1); NaN below two values.
func Variance(xs []float64) float64 {
	if len(xs) < 2 {
		return math.NaN()
	}
	m := Mean(xs)
	ss := 0.0
	for _, x := range xs {
		d := x - m
		ss += d * d
	}
	return ss / float64(len(xs)-1)
}

// StdDev is the sample standard deviation (divisor n-1); NaN below two values.
func StdDev(xs []float64) float64 { return math.Sqrt(Variance(xs)) }

// Median is the middle value, or the mean of the two middle values for an
// even count; NaN for an empty sample.
func Median(xs []float64) float64 { return Quantile(xs, 0.5) }

// Quantile returns the q-quantile (0 <= q <= 1) by linear interpolation
// between order statistics (Hyndman & Fan type 7, the default of R and
// NumPy), so Quantile(xs, 0.5) is the usual median. NaN for an empty sample
// or q outside [0, 1].
func Quantile(xs []float64, q float64) float64 {
	if len(xs) == 0 || !(q >= 0 && q <= 1) {
		return math.NaN()
	}
	s := sorted(xs)
	h := q * float64(len(s)-1)
	lo := math.Floor(h)
	i := int(lo)
	if i >= len(s)-1 {
		return s[len(s)-1]
	}
	return s[i] + (h-lo)*(s[i+1]-s[i])
}

// MedianCI returns a distribution-free confidence interval [lo, hi] for the
// median at the given confidence (e.g. 0.95), as recommended by Hoefler &
// Belli for benchmark timings that are rarely normal.
//
// The interval is [x(l), x(n+1-l)] of the sorted sample, where the number of
// values below the true median is Binomial(n, 1/2), so the interval covers
// the median with probability 1 - 2·P(B <= l-1). l is the largest rank whose
// coverage still reaches the confidence (exact binomial, no normal
// approximation, so small n is handled correctly).
//
// When even the full range [min, max] cannot reach the confidence (n <= 5 at
// 95 %: its coverage is 1 - 2/2^n), the full range is returned and ok is
// false: the caller must not present it as a 95 % interval. ok is also false
// (and lo, hi NaN) for an empty sample or a confidence outside (0, 1).
func MedianCI(xs []float64, confidence float64) (lo, hi float64, ok bool) {
	n := len(xs)
	if n == 0 || !(confidence > 0 && confidence < 1) {
		return math.NaN(), math.NaN(), false
	}
	s := sorted(xs)
	best := 0 // 1-based rank l; 0 = none reaches the confidence
	for l := 1; l <= (n+1)/2; l++ {
		if MedianCICoverage(n, l) >= confidence {
			best = l
		} else {
			break
		}
	}
	if best == 0 {
		return s[0], s[n-1], false
	}
	return s[best-1], s[n-best], true
}

// MedianCICoverage is the probability that [x(l), x(n+1-l)] of n values
// covers the true median: 1 - 2·P(Binomial(n, 1/2) <= l-1).
func MedianCICoverage(n, l int) float64 {
	if n <= 0 || l < 1 || 2*l > n+1 {
		return math.NaN()
	}
	return 1 - 2*BinomialCDF(l-1, n, 0.5)
}

// BinomialCDF is P(B <= k) for B ~ Binomial(n, p), summed exactly in log
// space so large n neither overflows nor underflows.
func BinomialCDF(k, n int, p float64) float64 {
	if n < 0 || !(p >= 0 && p <= 1) {
		return math.NaN()
	}
	if k < 0 {
		return 0
	}
	if k >= n {
		return 1
	}
	sum := 0.0
	for i := 0; i <= k; i++ {
		sum += binomialPMF(i, n, p)
	}
	return math.Min(sum, 1)
}

func binomialPMF(k, n int, p float64) float64 {
	switch {
	case p == 0:
		if k == 0 {
			return 1
		}
		return 0
	case p == 1:
		if k == n {
			return 1
		}
		return 0
	}
	lc := lgamma(float64(n+1)) - lgamma(float64(k+1)) - lgamma(float64(n-k+1))
	return math.Exp(lc + float64(k)*math.Log(p) + float64(n-k)*math.Log1p(-p))
}

func lgamma(x float64) float64 {
	v, _ := math.Lgamma(x)
	return v
}

// RegIncBeta is the regularized incomplete beta function I_x(a, b) for
// a, b > 0 and 0 <= x <= 1, evaluated with the Lentz continued fraction
// (Numerical Recipes §6.4) on whichever side converges fast.
func RegIncBeta(x, a, b float64) float64 {
	if !(a > 0 && b > 0) || !(x >= 0 && x <= 1) {
		return math.NaN()
	}
	if x == 0 || x == 1 {
		return x
	}
	lbt := lgamma(a+b) - lgamma(a) - lgamma(b) + a*math.Log(x) + b*math.Log1p(-x)
	bt := math.Exp(lbt)
	if x < (a+1)/(a+b+2) {
		return bt * betaCF(x, a, b) / a
	}
	return 1 - bt*betaCF(1-x, b, a)/b
}

func betaCF(x, a, b float64) float64 {
	const (
		maxIter = 500
		eps     = 1e-15
		tiny    = 1e-300
	)
	qab, qap, qam := a+b, a+1, a-1
	c, d := 1.0, 1-qab*x/qap
	if math.Abs(d) < tiny {
		d = tiny
	}
	d = 1 / d
	h := d
	for m := 1; m <= maxIter; m++ {
		fm := float64(m)
		m2 := 2 * fm
		aa := fm * (b - fm) * x / ((qam + m2) * (a + m2))
		d = 1 + aa*d
		if math.Abs(d) < tiny {
			d = tiny
		}
		c = 1 + aa/c
		if math.Abs(c) < tiny {
			c = tiny
		}
		d = 1 / d
		h *= d * c
		aa = -(a + fm) * (qab + fm) * x / ((a + m2) * (qap + m2))
		d = 1 + aa*d
		if math.Abs(d) < tiny {
			d = tiny
		}
		c = 1 + aa/c
		if math.Abs(c) < tiny {
			c = tiny
		}
		d = 1 / d
		del := d * c
		h *= del
		if math.Abs(del-1) < eps {
			break
		}
	}
	return h
}

// StudentTCDF is P(T <= t) for Student's t distribution with df > 0 degrees
// of freedom (df need not be an integer, as Welch's test needs), using
// P(|T| > |t|) = I_{df/(df+t²)}(df/2, 1/2).
func StudentTCDF(t, df float64) float64 {
	if math.IsNaN(t) || !(df > 0) {
		return math.NaN()
	}
	if math.IsInf(t, 1) {
		return 1
	}
	if math.IsInf(t, -1) {
		return 0
	}
	if math.IsInf(df, 1) {
		return 0.5 * math.Erfc(-t/math.Sqrt2)
	}
	tail := 0.5 * RegIncBeta(df/(df+t*t), df/2, 0.5)
	if t > 0 {
		return 1 - tail
	}
	return tail
}

// OneSampleTTestLess tests H1: the mean of xs is less than mu, against
// H0: it equals mu. It returns the t statistic and the one-sided p-value
// P(T <= t) with n-1 degrees of freedom; small p is evidence for H1.
//
// A sample without spread (every value equal, as deterministic workloads
// give) has no t distribution: t is -Inf with p = 0 when the mean is below
// mu, otherwise t is +Inf or 0 and p = 1 (no evidence). Fewer than two
// values give NaN.
func OneSampleTTestLess(xs []float64, mu float64) (t, p float64) {
	n := len(xs)
	if n < 2 || math.IsNaN(mu) {
		return math.NaN(), math.NaN()
	}
	m, sd := Mean(xs), StdDev(xs)
	if sd == 0 {
		return degenerate(m - mu)
	}
	t = (m - mu) / (sd / math.Sqrt(float64(n)))
	return t, StudentTCDF(t, float64(n-1))
}

// WelchTTestLess tests H1: mean(xs) < mean(ys) without assuming equal
// variances (Welch's t test with Welch–Satterthwaite degrees of freedom).
// It returns t and the one-sided p-value. Either sample below two values
// gives NaN; two samples without spread follow OneSampleTTestLess's rule.
func WelchTTestLess(xs, ys []float64) (t, p float64) {
	nx, ny := float64(len(xs)), float64(len(ys))
	if nx < 2 || ny < 2 {
		return math.NaN(), math.NaN()
	}
	vx, vy := Variance(xs)/nx, Variance(ys)/ny
	diff := Mean(xs) - Mean(ys)
	if vx+vy == 0 {
		return degenerate(diff)
	}
	t = diff / math.Sqrt(vx+vy)
	df := (vx + vy) * (vx + vy) / (vx*vx/(nx-1) + vy*vy/(ny-1))
	return t, StudentTCDF(t, df)
}

// PooledTTestLess tests H1: mean1 < mean2 for two samples known only by
// their means and sizes and sharing the standard deviation sd (Student's
// two-sample t test with n1+n2-2 degrees of freedom), as MLPerf's RCP check
// does. It returns t and the one-sided p-value; sd = 0 follows
// OneSampleTTestLess's rule. Either size below one, or a total below
// three, gives NaN.
func PooledTTestLess(mean1 float64, n1 int, mean2, sd float64, n2 int) (t, p float64) {
	if n1 < 1 || n2 < 1 || n1+n2 < 3 || math.IsNaN(sd) || sd < 0 {
		return math.NaN(), math.NaN()
	}
	diff := mean1 - mean2
	if sd == 0 {
		return degenerate(diff)
	}
	t = diff / (sd * math.Sqrt(1/float64(n1)+1/float64(n2)))
	return t, StudentTCDF(t, float64(n1+n2-2))
}

func degenerate(diff float64) (t, p float64) {
	switch {
	case diff < 0:
		return math.Inf(-1), 0
	case diff > 0:
		return math.Inf(1), 1
	}
	return 0, 1
}
