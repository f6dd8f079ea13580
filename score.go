package d5list

import (
	"math"
	"sort"
)

// OlympicScore scores runs the MLPerf way: the named metric of every run,
// the best and the worst dropped and the rest averaged. A run that did not
// converge counts as the worst possible value and is the one dropped; with
// two or more such runs the score is invalid. With fewer than three runs
// nothing is dropped.
func OlympicScore(runs []RunMetrics, metric string, dir Direction) Score {
	s := Score{Metric: metric}
	type val struct {
		idx int
		v   float64
	}
	worst := math.Inf(1)
	if dir == HigherIsBetter {
		worst = math.Inf(-1)
	}
	vals := make([]val, 0, len(runs))
	failed := 0
	for _, r := range runs {
		v, ok := r.Metric(metric)
		if !r.Converged || !ok || math.IsNaN(v) {
			failed++
			v = worst
		}
		vals = append(vals, val{r.Index, v})
	}
	if len(vals) == 0 {
		s.Note = "no runs"
		return s
	}
	// Sort best first; ties keep run order so the dropped runs are stable.
	sort.SliceStable(vals, func(i, j int) bool { return dir.Better(vals[i].v, vals[j].v) })
	if failed > 1 {
		s.Note = "more than one run did not converge"
		s.Value = worst
		return s
	}
	kept := vals
	if len(vals) >= 3 {
		s.Dropped = []int{vals[0].idx, vals[len(vals)-1].idx}
		kept = vals[1 : len(vals)-1]
	} else if failed > 0 {
		s.Note = "a run did not converge and too few runs to drop it"
		s.Value = worst
		return s
	}
	sum := 0.0
	for _, k := range kept {
		sum += k.v
	}
	s.Value = sum / float64(len(kept))
	s.Valid = true
	s.Min, s.Max = math.Inf(1), math.Inf(-1)
	for _, v := range vals {
		if math.IsInf(v.v, 0) {
			continue
		}
		s.Min = math.Min(s.Min, v.v)
		s.Max = math.Max(s.Max, v.v)
	}
	return s
}
