package harness

import "math"

// Layer is one fully connected layer of an inference task's network:
// float32 weights (Out x In, torch.nn.Linear's layout) and biases.
type Layer struct {
	In, Out int
	W, B    []float32
}

// MLPWeights is the fixed network of an inference task
// (d5harness.py: mlp_weights): each layer's weights and biases drawn
// uniformly within ±1/sqrt(fan_in), as torch.nn.Linear initialises them,
// from streams named by the layer, and rounded to float32.
func MLPWeights(layers []int) []Layer {
	var net []Layer
	for i := range len(layers) - 1 {
		in, out := layers[i], layers[i+1]
		bound := 1 / math.Sqrt(float64(in))
		l := Layer{In: in, Out: out, W: make([]float32, in*out), B: make([]float32, out)}
		for j, u := range Uniform(StreamKey("mlp-inference", i, "weight"), in*out) {
			l.W[j] = float32((u*2 - 1) * bound)
		}
		for j, u := range Uniform(StreamKey("mlp-inference", i, "bias"), out) {
			l.B[j] = float32((u*2 - 1) * bound)
		}
		net = append(net, l)
	}
	return net
}

// mlpForward is the runner's reference forward pass of a batch of count
// samples (x, row after row): float64 sums of the float32 weights, ReLU
// between layers, the last layer's logits.
func mlpForward(net []Layer, x []float64, count int) []float64 {
	h := x
	for li, l := range net {
		next := make([]float64, count*l.Out)
		for s := range count {
			in := h[s*l.In : (s+1)*l.In]
			for o := range l.Out {
				sum := float64(l.B[o])
				w := l.W[o*l.In : (o+1)*l.In]
				for k, v := range in {
					sum += float64(w[k]) * v
				}
				if li < len(net)-1 && sum < 0 {
					sum = 0
				}
				next[s*l.Out+o] = sum
			}
		}
		h = next
	}
	return h
}
