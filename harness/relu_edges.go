package harness

import (
	"cmp"
	"math"
	"slices"

	"gonum.org/v1/gonum/blas"
)

// A float32 training run and the runner's float64 recomputation of its
// steps agree to about 1e-5 of a stretch's step, except where a hidden
// unit's pre-activation lies within rounding of zero: there the two may
// take the two sides of the ReLU, and the unit's share of the gradient
// is there in one and missing in the other. Such a unit on the edge is
// harmless mostly, but where its sample dominates the minibatch's
// gradient (late in training, one sample still misclassified) it moved
// an honest stretch 0.27 % of its step from the recomputation, sixty
// times the usual drift, and, rarely, past the tolerance. So a stretch
// over the tolerance is recomputed again with the most weighty units on
// the edge turned the other way, each and together; it passes where one
// of these, all honest computations of its steps, ends within the
// tolerance. A run cannot choose what lies on the edge: it is the state
// the run handed over at the stretch's start, and a state that puts many
// units there buys the run nothing but other honest steps.

// edgeShare is how near zero, against the sum of its terms' magnitudes,
// a pre-activation is on the edge. float32's rounding of a sum of n terms
// is at most about n·6e-8 of that sum (3e-5 for 512), and typically far
// less; 1e-4 leaves room for the drift of the steps before it.
const edgeShare = 1e-4

// maxEdgeCandidates is how many units on the edge, the weightiest, a
// stretch over the tolerance is recomputed with turned, one at a time; the
// one that took the run's side was the 2nd and the 6th weightiest of about
// fifty in the two outliers of eight seeds of the example (BENCHMARKS.md).
// maxEdgeFlips is how many turned at once: the nearest one kept, the
// others tried beside it, and so on.
const maxEdgeCandidates, maxEdgeFlips = 16, 2

// gateKey names one ReLU unit of one sample in one step of a stretch:
// step counts from the stretch's first, layer is the index of the hidden
// activation (1 for the first hidden layer), j the unit's place in the
// batch's activations (sample × width + unit).
type gateKey struct{ step, layer, j int }

// reluGates either records the units on the edge of a recomputation with
// their weight (how much of the gradient their gate decides), or names the
// units whose gradient gate a recomputation turns the other way.
type reluGates struct {
	record bool
	edges  map[activation][]edge
	flip   map[gateKey]bool
}

// activation names one hidden layer's activation in one step of a
// stretch, as gateKey does.
type activation struct{ step, layer int }

type edge struct {
	j      int
	weight float64
}

// flipped reports whether g turns the gate of unit j of layer's
// activation in step; a nil g turns none.
func (g *reluGates) flipped(step, layer, j int) bool {
	return g != nil && g.flip[gateKey{step, layer, j}]
}

// findEdges records the units of layer's activation (x times w
// transposed plus b, a batch of bs samples) whose pre-activation is on
// the edge.
func (g *reluGates) findEdges(step, layer int, x, w, b []float64, bs, in, out int) {
	pre := make([]float64, bs*out)
	gemm(blas.NoTrans, blas.Trans, bs, out, in, x, in, w, in, pre, out)
	ax, aw := make([]float64, len(x)), make([]float64, len(w))
	for i, v := range x {
		ax[i] = math.Abs(v)
	}
	for i, v := range w {
		aw[i] = math.Abs(v)
	}
	scale := make([]float64, bs*out)
	gemm(blas.NoTrans, blas.Trans, bs, out, in, ax, in, aw, in, scale, out)
	at := activation{step, layer}
	for r := range bs {
		for o := range out {
			j := r*out + o
			if math.Abs(pre[j]+b[o]) <= edgeShare*(scale[j]+math.Abs(b[o])) {
				g.edges[at] = append(g.edges[at], edge{j: j})
			}
		}
	}
}

// weigh gives each recorded unit of layer's activation in step its
// weight: the gradient at the unit before its gate (dh, bs × width) times
// the size of what it multiplies in the gradient of the layer below it
// (its sample's inputs x, and 1 for the bias). A sample's input norm is
// taken once, however many of its units are on the edge: a state that
// puts every unit there makes this a pass over x, not one a unit.
func (g *reluGates) weigh(step, layer int, dh, x []float64, width int) {
	edges := g.edges[activation{step, layer}]
	if len(edges) == 0 {
		return
	}
	bs := len(dh) / width
	inWidth := len(x) / bs
	norms := make([]float64, bs)
	for r := range norms {
		norms[r] = -1
	}
	for i, e := range edges {
		r := e.j / width
		if norms[r] < 0 {
			var sq float64
			for _, v := range x[r*inWidth : (r+1)*inWidth] {
				sq += v * v
			}
			norms[r] = math.Sqrt(sq)
		}
		edges[i].weight = math.Abs(dh[e.j]) * (norms[r] + 1)
	}
}

// weightiest is the n recorded units on the edge of most weight, those of
// none left out.
func (g *reluGates) weightiest(n int) []gateKey {
	type weighed struct {
		gateKey
		weight float64
	}
	var all []weighed
	for at, edges := range g.edges {
		for _, e := range edges {
			if e.weight > 0 {
				all = append(all, weighed{gateKey{at.step, at.layer, e.j}, e.weight})
			}
		}
	}
	slices.SortFunc(all, func(a, b weighed) int {
		if c := cmp.Compare(b.weight, a.weight); c != 0 {
			return c
		}
		return cmp.Or(cmp.Compare(a.step, b.step), cmp.Compare(a.layer, b.layer), cmp.Compare(a.j, b.j))
	})
	keys := make([]gateKey, min(n, len(all)))
	for i := range keys {
		keys[i] = all[i].gateKey
	}
	return keys
}

// recomputeOnEdges recomputes stretch [from, to) of epoch from start with
// its weightiest units on the edge turned, one at a time, then beside the
// nearest one the others, up to maxEdgeFlips, until one ends within the
// tolerance of got; it returns the distance of got from the nearest, or
// the inputs' rel and abs where none is nearer. At most maxEdgeCandidates
// recomputations a flip, and one more to find the edges.
func recomputeOnEdges(t *Task, data *dataset, start, got mlpState, seed int64, epoch, from, to int, pace func(), rel, abs float64) (float64, float64) {
	rec := &reluGates{record: true, edges: map[activation][]edge{}}
	trainStepsGated(t, data, start, seed, epoch, from, to, pace, rec)
	edges := rec.weightiest(maxEdgeCandidates)
	chosen := map[gateKey]bool{}
	for range maxEdgeFlips {
		nearest := -1
		for i, k := range edges {
			if rel <= stretchTolerance {
				return rel, abs
			}
			if chosen[k] {
				continue
			}
			flip := map[gateKey]bool{k: true}
			for c := range chosen {
				flip[c] = true
			}
			want := trainStepsGated(t, data, start, seed, epoch, from, to, pace, &reluGates{flip: flip})
			if r, a := stateDistance(got, want, start); r < rel {
				rel, abs, nearest = r, a, i
			}
		}
		if nearest < 0 || rel <= stretchTolerance {
			break
		}
		chosen[edges[nearest]] = true
	}
	return rel, abs
}
