package workloads

import "math"

// Floating-point determinism across architectures. The Go spec lets a
// compiler fuse x*y + z into one FMA instruction (arm64 does, amd64 does
// not), which changes the rounding; an explicit float64(x*y) conversion
// forbids it. Every multiply that feeds an addition in this package is
// therefore written float64(x*y). math.Exp and math.Log have per-architecture
// assembly, so the softmax uses detExp below; math.Sqrt is correctly
// rounded everywhere and safe.

const (
	ln2Hi = 6.93147180369123816490e-01 // high bits of ln 2: k*ln2Hi is exact for |k| < 2^20
	ln2Lo = 1.90821492927058770002e-10
	log2e = 1.44269504088896338700e+00
)

// detExp returns e^x for x <= 0 (softmax arguments after subtracting the
// maximum) with a relative error of a few ulp, using only +, *, Floor and
// Ldexp, which give the same bits on every architecture.
func detExp(x float64) float64 {
	if x < -745 {
		return 0
	}
	k := math.Floor(float64(x*log2e) + 0.5)
	r := (x - float64(k*ln2Hi)) - float64(k*ln2Lo) // |r| <= ln2/2
	// Taylor series to r^13/13!: the remainder is below 2^-60 for |r| <= 0.35.
	p := 1.0
	for n := 13; n >= 1; n-- {
		p = 1 + float64(p*r)/float64(n)
	}
	return math.Ldexp(p, int(k))
}
