package workloads

import (
	"math"
	"math/rand/v2"
)

// rng pins every derived distribution to code in this package: only the PCG
// bit stream comes from the standard library (whose algorithm is specified),
// so a Go upgrade cannot silently change the data set or a run's shuffles.
type rng struct{ src *rand.PCG }

func newRNG(seed, stream uint64) *rng { return &rng{src: rand.NewPCG(seed, stream)} }

// float returns a uniform value in [0, 1).
func (r *rng) float() float64 { return float64(r.src.Uint64()>>11) * 0x1p-53 }

// uniform returns a uniform value in [lo, hi).
func (r *rng) uniform(lo, hi float64) float64 { return lo + float64((hi-lo)*r.float()) }

// intn returns a uniform integer in [0, n) without modulo bias.
func (r *rng) intn(n int) int {
	bound := uint64(n)
	limit := math.MaxUint64 - math.MaxUint64%bound
	for {
		if v := r.src.Uint64(); v < limit {
			return int(v % bound)
		}
	}
}

// normal returns an approximately standard normal value: the Irwin-Hall sum
// of twelve uniforms, which needs only additions, so no assembly-backed
// math function can make two architectures disagree.
func (r *rng) normal() float64 {
	var s float64
	for range 12 {
		s += r.float()
	}
	return s - 6
}

// shuffle permutes idx in place (Fisher-Yates).
func (r *rng) shuffle(idx []int) {
	for i := len(idx) - 1; i > 0; i-- {
		j := r.intn(i + 1)
		idx[i], idx[j] = idx[j], idx[i]
	}
}
