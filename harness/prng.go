package harness

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"math"
	"strings"
)

// The streams of random numbers both halves make (d5harness.py: stream_key
// and uniform): SplitMix64 over a counter, from a key that is the first
// eight bytes of the SHA-256 of the stream's name.
const (
	golden = 0x9E3779B97F4A7C15
	mix1   = 0xBF58476D1CE4E5B9
	mix2   = 0x94D049BB133111EB
)

// StreamKey is the key of the stream its parts name, joined by ":" as
// Python's str() writes them (integers in decimal).
func StreamKey(parts ...any) uint64 {
	s := make([]string, len(parts))
	for i, p := range parts {
		s[i] = fmt.Sprint(p)
	}
	h := sha256.Sum256([]byte(strings.Join(s, ":")))
	return binary.BigEndian.Uint64(h[:8])
}

// Uniform is n numbers in [0, 1) of the stream key.
func Uniform(key uint64, n int) []float64 {
	out := make([]float64, n)
	for j := range out {
		z := key + uint64(j+1)*golden
		z = (z ^ (z >> 30)) * mix1
		z = (z ^ (z >> 27)) * mix2
		z ^= z >> 31
		out[j] = float64(z>>11) * (1.0 / (1 << 53))
	}
	return out
}

// signed maps numbers in [0, 1) to [-1, 1), in place, as 2u - 1.
func signed(u []float64) []float64 {
	for i, v := range u {
		u[i] = v*2 - 1
	}
	return u
}

// fold is an output's digest: the XOR of its 64-bit little-endian words.
// It needs every bit of the output; the audit holds revealed outputs to
// the runner's reference, so a committed fold cannot be met by an output
// that was not computed (only the low bits of each word, within the
// tolerance, are free, and they reach only the fold's low bits).
func fold(b []byte) uint64 {
	var x uint64
	for i := 0; i+8 <= len(b); i += 8 {
		x ^= binary.LittleEndian.Uint64(b[i:])
	}
	return x
}

// shaDigest is the digest of an output whose tolerance is loose (float32
// logits): the first eight bytes of its SHA-256.
func shaDigest(b []byte) uint64 {
	h := sha256.Sum256(b)
	return binary.BigEndian.Uint64(h[:8])
}

// commitment is what a run logs for a section: the SHA-256, in hex, of its
// calls' digests as eight big-endian bytes each.
func commitment(digests []byte) string {
	h := sha256.Sum256(digests)
	return hex.EncodeToString(h[:])
}

// chainKey is the key of call i's fresh input in a section: from the
// digest of the call before it (d5harness.py: _Section.chain).
func chainKey(seed int64, section string, i int, digests []byte) uint64 {
	if i == 0 {
		return StreamKey(seed, section, "chain")
	}
	return StreamKey(seed, section, i, binary.BigEndian.Uint64(digests[(i-1)*8:]))
}

// float64s reads little-endian float64 values.
func float64s(b []byte) []float64 {
	v := make([]float64, len(b)/8)
	for i := range v {
		v[i] = math.Float64frombits(binary.LittleEndian.Uint64(b[i*8:]))
	}
	return v
}

// float32s reads little-endian float32 values.
func float32s(b []byte) []float32 {
	v := make([]float32, len(b)/4)
	for i := range v {
		v[i] = math.Float32frombits(binary.LittleEndian.Uint32(b[i*4:]))
	}
	return v
}
