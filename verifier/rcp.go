package verifier

import (
	"encoding/json"
	"fmt"
	"io"
	"math"
	"os"
	"sort"

	d5list "github.com/deep500/d5list"
	"github.com/deep500/d5list/stats"
)

// RCPAlpha is the significance level of the convergence test (MLPerf's).
const RCPAlpha = 0.05

// LoadRCPFile reads an MLPerf rcp_checker file (rcps_<benchmark>.json).
func LoadRCPFile(path string) ([]d5list.ConvergencePoint, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return LoadRCP(f, path)
}

// LoadRCP turns MLPerf reference convergence points into
// []d5list.ConvergencePoint sorted by batch size. As MLPerf's rcp_checker
// does, each reference's epochs list is trimmed of its lowest and highest
// value (olympic) before EpochsMean and EpochsStdev (population standard
// deviation, numpy's np.std) are taken; Samples is the trimmed count.
// References with the same batch size are merged.
func LoadRCP(r io.Reader, name string) ([]d5list.ConvergencePoint, error) {
	var raw map[string]struct {
		BS     *int      `json:"BS"`
		Epochs []float64 `json:"Epochs to converge"`
	}
	if err := json.NewDecoder(r).Decode(&raw); err != nil {
		return nil, d5list.Errorf(d5list.EINVALID, "%s: not an MLPerf RCP file: %v", name, err)
	}
	byBS := map[int][]float64{}
	for key, rec := range raw {
		if rec.BS == nil || *rec.BS <= 0 {
			return nil, d5list.Errorf(d5list.EINVALID, "%s: %s: missing or bad \"BS\"", name, key)
		}
		if len(rec.Epochs) < 3 {
			return nil, d5list.Errorf(d5list.EINVALID, "%s: %s: needs at least 3 \"Epochs to converge\"", name, key)
		}
		byBS[*rec.BS] = append(byBS[*rec.BS], rec.Epochs...)
	}
	var pts []d5list.ConvergencePoint
	for bs, eps := range byBS {
		s := append([]float64(nil), eps...)
		sort.Float64s(s)
		s = s[1 : len(s)-1]
		mean := stats.Mean(s)
		ss := 0.0
		for _, e := range s {
			ss += (e - mean) * (e - mean)
		}
		pts = append(pts, d5list.ConvergencePoint{GlobalBatchSize: bs, EpochsMean: mean, EpochsStdev: math.Sqrt(ss / float64(len(s))), Samples: len(s)})
	}
	sort.Slice(pts, func(i, j int) bool { return pts[i].GlobalBatchSize < pts[j].GlobalBatchSize })
	return pts, nil
}

// InterpolateRCP returns the reference for batch size bs: the point itself,
// or mean, stdev and samples linearly interpolated between the neighbouring
// batch sizes (MLPerf's _create_interp_rcp). ok is false outside the range
// of the references, where MLPerf has no reference either.
func InterpolateRCP(points []d5list.ConvergencePoint, bs int) (d5list.ConvergencePoint, bool) {
	pts := append([]d5list.ConvergencePoint(nil), points...)
	sort.Slice(pts, func(i, j int) bool { return pts[i].GlobalBatchSize < pts[j].GlobalBatchSize })
	for i, p := range pts {
		if p.GlobalBatchSize == bs {
			return p, true
		}
		if p.GlobalBatchSize > bs {
			if i == 0 {
				return d5list.ConvergencePoint{}, false
			}
			lo := pts[i-1]
			w := float64(bs-lo.GlobalBatchSize) / float64(p.GlobalBatchSize-lo.GlobalBatchSize)
			return d5list.ConvergencePoint{
				GlobalBatchSize: bs,
				EpochsMean:      lo.EpochsMean + w*(p.EpochsMean-lo.EpochsMean),
				EpochsStdev:     lo.EpochsStdev + w*(p.EpochsStdev-lo.EpochsStdev),
				Samples:         min(lo.Samples, p.Samples),
			}, true
		}
	}
	return d5list.ConvergencePoint{}, false
}

// RCPResult is the outcome of the convergence test of one submission.
type RCPResult struct {
	Reference d5list.ConvergencePoint
	Epochs    []float64 // the submission's trimmed epochs to target
	Mean      float64
	T, P      float64
	Pass      bool
	Note      string // why no test was made, when Checked is false
	Checked   bool
}

// TestRCP judges whether runs converge implausibly fast. The submission's
// epochs to target are trimmed olympic-style (a run that did not converge
// is the one dropped as worst; with fewer than three runs nothing is
// dropped). Like MLPerf's rcp_checker, the submission is assumed to share
// the reference's standard deviation (its own, from three trimmed runs, is
// too noisy, and deterministic workloads have none), and a one-sided
// two-sample Student t test with pooled deviation asks whether its mean is
// below the reference mean; p < RCPAlpha fails.
func TestRCP(points []d5list.ConvergencePoint, bs int, runs []d5list.RunMetrics) RCPResult {
	var res RCPResult
	if len(points) == 0 {
		res.Note = "the benchmark has no reference convergence points"
		return res
	}
	ref, ok := InterpolateRCP(points, bs)
	if !ok {
		res.Note = fmt.Sprintf("global batch size %d is outside the reference range %d..%d; convergence not checked",
			bs, minBS(points), maxBS(points))
		return res
	}
	res.Reference = ref
	var eps []float64
	failed := 0
	for _, r := range runs {
		if r.Converged && r.EpochsToTarget >= 0 {
			eps = append(eps, r.EpochsToTarget)
		} else {
			failed++
			eps = append(eps, math.Inf(1))
		}
	}
	sort.Float64s(eps)
	if len(eps) >= 3 {
		eps = eps[1 : len(eps)-1]
	}
	if failed > 1 || len(eps) == 0 || math.IsInf(eps[len(eps)-1], 1) {
		res.Note = "not enough converged runs for the convergence test"
		return res
	}
	res.Epochs = eps
	res.Mean = stats.Mean(eps)
	res.Checked = true
	res.T, res.P = stats.PooledTTestLess(res.Mean, len(eps), ref.EpochsMean, ref.EpochsStdev, max(ref.Samples, 2))
	res.Pass = !(res.P < RCPAlpha)
	return res
}

func minBS(p []d5list.ConvergencePoint) int {
	m := p[0].GlobalBatchSize
	for _, x := range p {
		m = min(m, x.GlobalBatchSize)
	}
	return m
}

func maxBS(p []d5list.ConvergencePoint) int {
	m := p[0].GlobalBatchSize
	for _, x := range p {
		m = max(m, x.GlobalBatchSize)
	}
	return m
}
