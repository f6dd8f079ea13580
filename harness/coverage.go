package harness

import (
	"math"

	d5list "github.com/deep500/d5list"
)

// The audit is sized for a stated coverage: a job whose fresh runs skip (or
// compute wrongly) a share CoverageSkipShare of a section's calls passes
// every audit with probability at most CoverageEscapeTarget.
const (
	CoverageSkipShare    = d5list.AuditSkipShare
	CoverageEscapeTarget = 1e-3
)

// auditsPerSection is how many calls of each section the runner checks in
// every run of a fresh seed, the runs that rank. A job whose fresh runs
// leave out shares f_1 … f_n of a section's calls (spread over its runs and
// sections in any way, n = freshRuns runs) escapes k checks of each with
// probability at most Π (1-f_i)^k ≤ exp(-k Σ f_i) = exp(-k·n·f), f the
// mean share: k = ln(1/target) / (n·f) makes that the target whatever the
// spread. Drawing distinct calls, as Challenge does, only lowers it.
func auditsPerSection(freshRuns int) int {
	n := max(freshRuns, 1)
	return int(math.Ceil(math.Log(1/CoverageEscapeTarget) / (float64(n) * CoverageSkipShare)))
}

// fullChecks is how many of a section's checked calls the runner
// recomputes whole, for the run's error against the reference
// (AuditSection.MaxRelError); the rest it checks by a random projection
// (Freivalds), a matrix-vector product instead of a matrix product, where
// the section has one.
const fullChecks = 2

// EscapeProbability is the stated probability that a job whose fresh runs
// skip a share f of their work (calls of every section, or a training
// run's minibatch steps) passes every audit of one job. It is 1 for a task whose
// work the runner samples in none of its runs.
func (t *Task) EscapeProbability(f float64) float64 {
	if f <= 0 {
		return 1
	}
	p := 0.0
	for _, s := range t.sections {
		// The job escapes if it escapes in its least-audited section: the
		// cheat puts its skipped work there.
		p = math.Max(p, s.escape(t, f))
	}
	return math.Min(p, 1)
}

// escape is one section's share of EscapeProbability.
func (s section) escape(t *Task, f float64) float64 {
	runs := t.freshRuns
	if runs == 0 {
		return 1 // no run of the job is sampled
	}
	if t.Streamed() {
		return StretchEscape(t.stretches(), runs, f)
	}
	return sampledEscape(s.calls, runs, f)
}

// StretchEscape is EscapeProbability for a training run of g stretches
// audited as DrawStretches draws them, in a job of freshRuns fresh runs.
// Its units are the stretches (state 0 is no work): a run that skips or
// shortens a share f of its steps touches at least a share f of its
// stretches, each of which fails where it is drawn.
func StretchEscape(g, freshRuns int, f float64) float64 {
	if f <= 0 || freshRuns <= 0 {
		return 1
	}
	return sampledEscape(g, freshRuns, f)
}

// sampledEscape is the chance that k = auditsPerSection draws of a
// section of units in each of runs fresh runs all miss a share f.
func sampledEscape(units, runs int, f float64) float64 {
	k := min(auditsPerSection(runs), units)
	if k >= units {
		return 0
	}
	return math.Exp(-float64(k) * float64(runs) * f)
}
