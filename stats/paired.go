package stats

import (
	"math"
	"sort"
)

// SignTestLess is the paired sign test of H1: xs[i] tends to be less than
// ys[i]. Pairs with equal values carry no sign and are dropped; with k of
// the remaining n pairs below, p = P(Binomial(n, 1/2) >= k). It needs no
// assumption about the distribution, only independent pairs. p is 1 when no
// pair differs and NaN when the lengths differ or a value is NaN.
func SignTestLess(xs, ys []float64) (below, n int, p float64) {
	d, ok := differences(xs, ys)
	if !ok {
		return 0, 0, math.NaN()
	}
	for _, v := range d {
		if v < 0 {
			below++
		}
	}
	n = len(d)
	if n == 0 {
		return 0, 0, 1
	}
	// Summed directly: 1 - CDF loses the small tail to rounding.
	p = 0
	for k := below; k <= n; k++ {
		p += binomialPMF(k, n, 0.5)
	}
	return below, n, math.Min(p, 1)
}

// exactWilcoxonMax bounds the exact null distribution's cost (n³/2 steps);
// above it the normal approximation is already accurate.
const exactWilcoxonMax = 200

// WilcoxonSignedRankLess is the paired Wilcoxon signed-rank test of H1: the
// differences xs[i]-ys[i] are centred below zero. Zero differences are
// dropped (Wilcoxon's convention), tied magnitudes get average ranks, and
// W+ is the rank sum of the positive differences; p = P(W+ <= observed).
//
// For up to 200 pairs p is exact: the null distribution conditional on the
// observed (possibly tied) ranks is enumerated, so small samples such as
// five benchmark runs get a true p-value. Larger samples use the normal
// approximation with tie correction and continuity correction.
// p is 1 when no pair differs and NaN when the lengths differ or a value is NaN.
func WilcoxonSignedRankLess(xs, ys []float64) (wPlus float64, n int, p float64) {
	d, ok := differences(xs, ys)
	if !ok {
		return math.NaN(), 0, math.NaN()
	}
	n = len(d)
	if n == 0 {
		return 0, 0, 1
	}
	idx := make([]int, n)
	for i := range idx {
		idx[i] = i
	}
	sort.Slice(idx, func(a, b int) bool { return math.Abs(d[idx[a]]) < math.Abs(d[idx[b]]) })
	// Ranks doubled so average ranks of ties stay integers.
	rank2 := make([]int, n)
	tieTerm := 0.0
	for i := 0; i < n; {
		j := i
		for j+1 < n && math.Abs(d[idx[j+1]]) == math.Abs(d[idx[i]]) {
			j++
		}
		r2 := i + j + 2 // 2 × the average of ranks i+1..j+1
		for k := i; k <= j; k++ {
			rank2[idx[k]] = r2
		}
		t := float64(j - i + 1)
		tieTerm += t*t*t - t
		i = j + 1
	}
	w2 := 0
	for i, v := range d {
		if v > 0 {
			w2 += rank2[i]
		}
	}
	wPlus = float64(w2) / 2
	if n <= exactWilcoxonMax {
		return wPlus, n, exactSignedRankCDF(rank2, w2)
	}
	fn := float64(n)
	mean := fn * (fn + 1) / 4
	variance := fn*(fn+1)*(2*fn+1)/24 - tieTerm/48
	if variance <= 0 {
		return wPlus, n, 1
	}
	z := (wPlus + 0.5 - mean) / math.Sqrt(variance)
	return wPlus, n, 0.5 * math.Erfc(-z/math.Sqrt2)
}

// exactSignedRankCDF is P(W2 <= w2) where W2 sums a random subset of the
// doubled ranks, each included with probability 1/2 independently (the null
// hypothesis of a symmetric distribution around zero).
func exactSignedRankCDF(rank2 []int, w2 int) float64 {
	total := 0
	for _, r := range rank2 {
		total += r
	}
	// Probabilities rather than counts: 2^200 subsets overflow any integer.
	dist := make([]float64, total+1)
	dist[0] = 1
	reach := 0
	for _, r := range rank2 {
		for s := reach; s >= 0; s-- {
			if dist[s] != 0 {
				dist[s+r] += dist[s] / 2
				dist[s] /= 2
			}
		}
		reach += r
	}
	p := 0.0
	for s := 0; s <= w2 && s <= total; s++ {
		p += dist[s]
	}
	return math.Min(p, 1)
}

func differences(xs, ys []float64) ([]float64, bool) {
	if len(xs) != len(ys) {
		return nil, false
	}
	d := make([]float64, 0, len(xs))
	for i := range xs {
		v := xs[i] - ys[i]
		if math.IsNaN(v) {
			return nil, false
		}
		if v != 0 {
			d = append(d, v)
		}
	}
	return d, true
}
