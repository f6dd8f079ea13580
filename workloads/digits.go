package workloads

import (
	"math"
	"sync"
)

// DigitsConfig describes a synthetic digits data set. The benchmark's data set
// is DefaultDigits; its Seed is a constant of the benchmark, not of a run, so
// every run and every runner sees the same images.
type DigitsConfig struct {
	Size       int     // images are Size x Size pixels
	Train      int     // training images
	Test       int     // held-out images
	Seed       uint64  // data set seed
	NoiseSigma float64 // standard deviation of the additive pixel noise
	Jitter     float64 // maximum glyph shift in pixels, each axis
}

// DefaultDigits is the data set of l2-digits-mlp-cpu.
var DefaultDigits = DigitsConfig{Size: 12, Train: 3000, Test: 1000, Seed: 500, NoiseSigma: 0.1, Jitter: 1.5}

// Dataset holds images as rows of Size*Size float64 pixels, standardised
// with the training set's mean and standard deviation.
type Dataset struct {
	Dim                   int
	TrainX, TestX         [][]float64
	TrainLabels, TestLabs []int
}

// sevenSegments lists each segment as two endpoints in glyph coordinates
// (x right, y down, both in [0, 1]).
var sevenSegments = map[byte][4]float64{
	'a': {0, 0, 1, 0},
	'b': {1, 0, 1, 0.5},
	'c': {1, 0.5, 1, 1},
	'd': {0, 1, 1, 1},
	'e': {0, 0.5, 0, 1},
	'f': {0, 0, 0, 0.5},
	'g': {0, 0.5, 1, 0.5},
}

// digitGlyphs are the classic seven-segment digits.
var digitGlyphs = [10]string{"abcdef", "bc", "abged", "abgcd", "fgbc", "afgcd", "afgedc", "abc", "abcdefg", "abcdfg"}

type datasetEntry struct {
	once sync.Once
	ds   *Dataset
}

var (
	datasetMu    sync.Mutex
	datasetCache = map[DigitsConfig]*datasetEntry{}
)

// Digits returns the data set for cfg, generating it on first use. Later
// calls with the same cfg share the same (read-only) Dataset.
func Digits(cfg DigitsConfig) *Dataset {
	datasetMu.Lock()
	e, ok := datasetCache[cfg]
	if !ok {
		e = &datasetEntry{}
		datasetCache[cfg] = e
	}
	datasetMu.Unlock()
	e.once.Do(func() { e.ds = generateDigits(cfg) })
	return e.ds
}

func generateDigits(cfg DigitsConfig) *Dataset {
	r := newRNG(cfg.Seed, 0xd161)
	n := cfg.Train + cfg.Test
	dim := cfg.Size * cfg.Size
	images := make([][]float64, n)
	labels := make([]int, n)
	for i := range n {
		// Balanced classes in a fixed interleaved order, so both splits hold
		// every digit in (almost) equal numbers.
		labels[i] = i % 10
		images[i] = renderDigit(r, labels[i], cfg)
	}
	// Standardise with training statistics only: the held-out split must not
	// influence what the model sees.
	var sum, sumSq float64
	for _, img := range images[:cfg.Train] {
		for _, p := range img {
			sum += p
			sumSq += float64(p * p)
		}
	}
	count := float64(cfg.Train * dim)
	mean := sum / count
	std := math.Sqrt(sumSq/count - float64(mean*mean))
	if std == 0 {
		std = 1
	}
	for _, img := range images {
		for j := range img {
			img[j] = (img[j] - mean) / std
		}
	}
	return &Dataset{
		Dim:         dim,
		TrainX:      images[:cfg.Train],
		TrainLabels: labels[:cfg.Train],
		TestX:       images[cfg.Train:],
		TestLabs:    labels[cfg.Train:],
	}
}

// renderDigit draws one glyph with random placement, size, slant, stroke
// thickness and per-stroke intensity, then adds Gaussian pixel noise.
func renderDigit(r *rng, digit int, cfg DigitsConfig) []float64 {
	size := float64(cfg.Size)
	height := size * r.uniform(0.62, 0.80)
	width := height * r.uniform(0.48, 0.66)
	cx := size/2 + r.uniform(-cfg.Jitter, cfg.Jitter)
	cy := size/2 + r.uniform(-cfg.Jitter, cfg.Jitter)
	shear := r.uniform(-0.25, 0.25)
	thickness := r.uniform(0.8, 1.6)

	type stroke struct{ x0, y0, x1, y1, ink float64 }
	strokes := make([]stroke, 0, 7)
	place := func(u, v float64) (float64, float64) {
		y := cy + float64((v-0.5)*height)
		x := cx + float64((u-0.5)*width) - float64(shear*float64((v-0.5)*height))
		return x, y
	}
	for _, name := range []byte(digitGlyphs[digit]) {
		s := sevenSegments[name]
		x0, y0 := place(s[0], s[1])
		x1, y1 := place(s[2], s[3])
		strokes = append(strokes, stroke{x0, y0, x1, y1, r.uniform(0.6, 1.0)})
	}

	img := make([]float64, cfg.Size*cfg.Size)
	for py := range cfg.Size {
		for px := range cfg.Size {
			x, y := float64(px)+0.5, float64(py)+0.5
			var v float64
			for _, s := range strokes {
				d := segmentDistance(x, y, s.x0, s.y0, s.x1, s.y1)
				// Anti-aliased coverage: full ink within half the thickness,
				// fading out over one pixel.
				c := math.Min(1, math.Max(0, thickness/2+0.5-d)) * s.ink
				v = math.Max(v, c)
			}
			v += float64(cfg.NoiseSigma * r.normal())
			img[py*cfg.Size+px] = math.Min(1, math.Max(0, v))
		}
	}
	return img
}

func segmentDistance(x, y, x0, y0, x1, y1 float64) float64 {
	dx, dy := x1-x0, y1-y0
	t := 0.0
	if l2 := float64(dx*dx) + float64(dy*dy); l2 > 0 {
		t = math.Min(1, math.Max(0, (float64((x-x0)*dx)+float64((y-y0)*dy))/l2))
	}
	ex, ey := x-(x0+float64(t*dx)), y-(y0+float64(t*dy))
	return math.Sqrt(float64(ex*ex) + float64(ey*ey))
}
