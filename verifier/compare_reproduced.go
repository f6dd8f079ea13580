package verifier

import (
	"fmt"
	"math"
	"strings"

	d5list "github.com/deep500/d5list"
)

// compareReproduced holds the claimed run to its re-run on every metric the
// benchmark says a re-run reproduces (rule 8), but for those that skip,
// when set, says were compared otherwise.
func (c *comparison) compareReproduced(cr, mr *d5list.RunMetrics, skip func(name string) bool) {
	idx := cr.Index
	for _, name := range c.bench.Verify.Reproduce {
		if skip != nil && skip(name) {
			continue
		}
		cv, cok := cr.Metric(name)
		mv, mok := mr.Metric(name)
		switch {
		case !cok && !mok:
			continue
		case cok != mok:
			where := "the re-run did not log it"
			if !cok {
				where = "the log has no value but the re-run measured " + cmpNum(mv)
			} else {
				where = "the log claims " + cmpNum(cv) + " but " + where
			}
			c.discrepancy(d5list.Reason{Code: CodeMetricMissing, Run: cmpIntPtr(idx), File: cr.File,
				Message: fmt.Sprintf("run %d: %s: %s", idx, name, where)})
		case math.Abs(cv-mv) > c.tol+reproduceSlack(cv, mv):
			c.discrepancy(d5list.Reason{Code: CodeMetricMismatch, Run: cmpIntPtr(idx), File: cr.File,
				Claimed: cmpFloatPtr(cv), Measured: cmpFloatPtr(mv),
				Message: fmt.Sprintf("run %d: the log claims %s %s but the re-run with the same seed measured %s%s", idx, name, cmpNum(cv), cmpNum(mv), c.tolWords())})
		}
	}
}

// compareShapes applies rule 9 to a run whose claim and re-run both have
// per-shape results, and reports whether it did: rule 8 is then applied
// per shape here instead of to the folded values.
func (c *comparison) compareShapes(cr, mr *d5list.RunMetrics) bool {
	if len(cr.Shapes) == 0 || len(mr.Shapes) == 0 {
		return false
	}
	idx := cr.Index
	measured := make(map[string]map[string]float64, len(mr.Shapes))
	for _, s := range mr.Shapes {
		measured[s.Shape] = s.Metrics
	}
	var missing, extra []string
	claimedNames := make(map[string]bool, len(cr.Shapes))
	for _, s := range cr.Shapes {
		claimedNames[s.Shape] = true
		if _, ok := measured[s.Shape]; !ok {
			extra = append(extra, s.Shape)
		}
	}
	for _, s := range mr.Shapes {
		if !claimedNames[s.Shape] {
			missing = append(missing, s.Shape)
		}
	}
	if len(missing)+len(extra) > 0 {
		var parts []string
		if len(missing) > 0 {
			parts = append(parts, "leaves out ["+strings.Join(missing, ", ")+"]")
		}
		if len(extra) > 0 {
			parts = append(parts, "adds ["+strings.Join(extra, ", ")+"]")
		}
		// verifier.Check made every claimed run measure the same shapes,
		// so one reason speaks for all of them.
		if !c.shapesDiffer {
			c.shapesDiffer = true
			c.discrepancy(d5list.Reason{Code: CodeOpShapesDiffer,
				Message: fmt.Sprintf("the logs %s against the shapes the re-run of the recipe measured ([%s]); a claim measures every shape of its recipe",
					strings.Join(parts, " and "), strings.Join(shapeNames(mr.Shapes), ", "))})
		}
		return true
	}
	for _, s := range cr.Shapes {
		for _, name := range c.bench.Verify.Reproduce {
			cv, cok := s.Metrics[name]
			mv, mok := measured[s.Shape][name]
			if !cok || !mok || math.Abs(cv-mv) <= c.tol+reproduceSlack(cv, mv) {
				continue
			}
			c.discrepancy(d5list.Reason{Code: CodeMetricMismatch, Run: cmpIntPtr(idx), File: cr.File,
				Claimed: cmpFloatPtr(cv), Measured: cmpFloatPtr(mv),
				Message: fmt.Sprintf("run %d, shape %s: the log claims %s %s but the re-run with the same seed measured %s%s", idx, s.Shape, name, cmpNum(cv), cmpNum(mv), c.tolWords())})
		}
	}
	// A metric of rule 8 that no shape carries is still compared folded.
	c.compareReproduced(cr, mr, func(name string) bool { return shapeMetric(cr.Shapes, name) && shapeMetric(mr.Shapes, name) })
	return true
}

func shapeNames(shapes []d5list.ShapeMetrics) []string {
	out := make([]string, len(shapes))
	for i, s := range shapes {
		out[i] = s.Shape
	}
	return out
}

// shapeMetric reports whether every shape carries the metric.
func shapeMetric(shapes []d5list.ShapeMetrics, name string) bool {
	for _, s := range shapes {
		if _, ok := s.Metrics[name]; !ok {
			return false
		}
	}
	return len(shapes) > 0
}

// reproduceSlack is what float formatting may change in a logged value.
// Integers (byte counts, checksums) are logged exactly, so they must match
// exactly: a relative slack would let a large checksum be off by a few.
func reproduceSlack(cv, mv float64) float64 {
	if cv == math.Trunc(cv) && mv == math.Trunc(mv) && math.Abs(cv) < 1<<53 && math.Abs(mv) < 1<<53 {
		return 0
	}
	return floatEps * math.Max(math.Abs(cv), math.Abs(mv))
}
