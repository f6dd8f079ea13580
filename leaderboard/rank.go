// Package leaderboard ranks a benchmark's submissions the way Top500 and
// MLPerf lists do: one value per submission from its claimed runs, a fixed
// order with fully specified tie-breaks, and one row per system.
package leaderboard

import (
	"cmp"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"

	d5list "github.com/deep500/d5list"
)

// Options select and shape a board. The zero value is the public default:
// verified submissions only, each system's best entry, no filters.
type Options struct {
	// IncludeUnverified adds submissions still being checked or re-run
	// (checking, queued, running), those that need review, flagged ones,
	// and accepted ones whose timing no runner of their hardware
	// re-measured. Rejected, failed and discrepancy submissions are never
	// listed.
	IncludeUnverified bool
	// AllPerSystem lists every entry instead of each system's best.
	AllPerSystem bool
	// Filters, compared case-insensitively; empty matches everything.
	Division, Availability, Accelerator, Framework string
	// Search keeps the entries whose submitter, system, framework or
	// accelerator contains it (case-insensitively). Unlike the filters,
	// which make a board of their own, it finds rows: each keeps its rank
	// on the board the other options make.
	Search string
	// Sort orders the rows by another column (SortDate, SortSubmitter,
	// SortSystem, SortScore, SortScoreReverse); each keeps its rank. Empty
	// is by rank.
	Sort string
}

// The orders a board's rows may be shown in besides by rank.
const (
	SortDate      = "date" // newest first
	SortSubmitter = "submitter"
	SortSystem    = "system"
	// SortScore is the score column, best first: the ranking's order.
	SortScore = "score"
	// SortScoreReverse is the score column, worst first: the ranking's
	// reverse.
	SortScoreReverse = "score-reverse"
)

// normalized makes options that select the same board compare equal, so
// the cache does not hold the same board twice.
func (o Options) normalized() Options {
	n := func(s string) string { return strings.ToLower(strings.TrimSpace(s)) }
	o.Division, o.Availability, o.Accelerator, o.Framework = n(o.Division), n(o.Availability), n(o.Accelerator), n(o.Framework)
	o.Search, o.Sort = n(o.Search), n(o.Sort)
	return o
}

func listed(s *d5list.Submission, includeUnverified bool) bool {
	return listedStatus(s.Status, s.Flag, includeUnverified)
}

// listedEntry is listed for its status, but a value the portal did not
// re-measure is never on the default board, whatever an organiser decided:
// accepted, it is shown (marked) only in the view that includes unverified
// entries.
func listedEntry(e *d5list.Entry, includeUnverified bool) bool {
	if e.Basis == d5list.BasisClaimed && !includeUnverified {
		return false
	}
	return listedStatus(e.Status, e.Flag, includeUnverified)
}

func listedStatus(status d5list.Status, flag string, includeUnverified bool) bool {
	switch status {
	case d5list.StatusRejected, d5list.StatusFailed, d5list.StatusDiscrepancy:
		return false
	case d5list.StatusVerified:
		return flag == "" || includeUnverified
	case d5list.StatusChecking, d5list.StatusQueued, d5list.StatusRunning, d5list.StatusNeedsReview:
		return includeUnverified
	}
	return false // an unknown status is not trusted onto a public list
}

func matches(filter, value string) bool {
	return filter == "" || strings.EqualFold(filter, strings.TrimSpace(value))
}

type candidate struct {
	entry     d5list.Entry
	secondary float64
	secValid  bool
	place     int    // index among the candidates, the last tie-break
	system    string // SystemKey, for one row per system
}

// Rank orders the submissions of bench and numbers them 1..n. The value of
// each is recomputed from its runs (d5list.OlympicScore), so a stored score
// can never be stale: the portal's re-run where it ran on the declared
// hardware, else the claimed runs (rankedRuns); submissions without a valid
// score are left out. Rules(bench) states the same rules in words.
func Rank(bench *d5list.Benchmark, subs []d5list.Submission, opt Options) []d5list.Entry {
	return Score(bench, subs).Rank(opt)
}

// candidateOf is a submission as any board of bench may list it: its
// entry and its sort keys; false when no board lists it.
func candidateOf(bench *d5list.Benchmark, s *d5list.Submission) (candidate, bool) {
	metric, dir := bench.Ranking.Metric, direction(bench.Ranking.Metric, bench.Ranking.Direction)
	secMetric := bench.Ranking.Secondary
	secDir := direction(secMetric, bench.Ranking.SecondaryDirection)
	if s.BenchmarkID != "" && s.BenchmarkID != bench.ID {
		return candidate{}, false
	}
	if !listed(s, true) || s.Claimed == nil || len(s.Claimed.Runs) == 0 {
		return candidate{}, false
	}
	runs, basis := RankedRuns(bench, s)
	score := d5list.OlympicScore(runs, metric, dir)
	if !score.Valid || math.IsNaN(score.Value) || math.IsInf(score.Value, 0) {
		return candidate{}, false
	}
	c := candidate{entry: d5list.Entry{
		SubmissionID:       s.ID,
		Submitter:          s.Submitter,
		SystemName:         s.SystemName,
		Framework:          s.Framework,
		Division:           s.Division,
		Availability:       s.Availability,
		Accelerator:        s.Accelerator,
		Accelerators:       s.Accelerators,
		HostCPU:            s.HostCPU,
		SubmitterConfirmed: s.SubmitterConfirmed,
		CostPerHour:        s.CostPerHour,
		CodeURL:            s.CodeURL,
		Status:             s.Status,
		Accepted:           s.Accepted(),
		Flag:               s.Flag,
		Metric:             metric,
		Value:              score.Value,
		Min:                score.Min,
		Max:                score.Max,
		Runs:               len(runs),
		Basis:              basis,
		CreatedAt:          s.CreatedAt,
		Measures:           Measures(bench.Level, runs),
	}, system: SystemKey(s.Submitter, s.SystemName)}
	if basis == d5list.BasisMeasured {
		if cs := d5list.OlympicScore(s.Claimed.Runs, metric, dir); cs.Valid && !math.IsInf(cs.Value, 0) {
			c.entry.Claimed = cs.Value
		}
		c.entry.ClaimedRuns = len(s.Claimed.Runs)
		for _, r := range runs {
			if r.Fresh {
				c.entry.FreshRuns++
			}
		}
	}
	if secMetric != "" {
		sec := d5list.OlympicScore(runs, secMetric, secDir)
		c.secondary, c.secValid = sec.Value, sec.Valid
	}
	return c, true
}

// Scored is a benchmark's submissions scored and in ranking order, every
// one that any board may list: the expensive part of ranking, done once.
// Each board (Options) is then one pass over it. It is read-only once
// made, and safe for concurrent use.
type Scored struct {
	order []*candidate
}

// Len is the number of submissions any board of it may list.
func (s *Scored) Len() int { return len(s.order) }

// Score scores the submissions of bench that some board may list and
// sorts them by the ranking rules.
func Score(bench *d5list.Benchmark, subs []d5list.Submission) *Scored {
	dir := direction(bench.Ranking.Metric, bench.Ranking.Direction)
	secDir := direction(bench.Ranking.Secondary, bench.Ranking.SecondaryDirection)

	cands := make([]candidate, 0, len(subs))
	for i := range subs {
		c, ok := candidateOf(bench, &subs[i])
		if !ok {
			continue
		}
		c.place = len(cands)
		cands = append(cands, c)
	}

	// Sorting pointers, not the candidates: an Entry is a few hundred
	// bytes, and moving them was most of the time of ranking a large board.
	order := make([]*candidate, len(cands))
	for i := range cands {
		order[i] = &cands[i]
	}
	// The last tie-break, the place in subs, makes the order total: an
	// unstable sort gives what a stable one would, in n log n comparisons.
	slices.SortFunc(order, func(a, b *candidate) int {
		if a.entry.Value != b.entry.Value {
			return before(dir.Better(a.entry.Value, b.entry.Value))
		}
		if a.secValid != b.secValid {
			return before(a.secValid) // a missing secondary loses the tie
		}
		if a.secValid && a.secondary != b.secondary {
			return before(secDir.Better(a.secondary, b.secondary))
		}
		if !a.entry.CreatedAt.Equal(b.entry.CreatedAt) {
			return a.entry.CreatedAt.Compare(b.entry.CreatedAt)
		}
		if a.entry.SubmissionID != b.entry.SubmissionID {
			return cmp.Compare(a.entry.SubmissionID, b.entry.SubmissionID)
		}
		return cmp.Compare(a.place, b.place)
	})
	return &Scored{order: order}
}

// Measures are the medians over runs of the level's columns
// (d5list.LevelColumns), nil where no run logged any.
func Measures(level int, runs []d5list.RunMetrics) map[string]float64 {
	var out map[string]float64
	vals := make([]float64, 0, len(runs))
	for _, col := range d5list.LevelColumns(level) {
		vals = vals[:0]
		for i := range runs {
			if v, ok := runs[i].Metric(col.Metric); ok && !math.IsNaN(v) && !math.IsInf(v, 0) {
				vals = append(vals, v)
			}
		}
		if len(vals) == 0 {
			continue
		}
		if out == nil {
			out = map[string]float64{}
		}
		slices.Sort(vals)
		out[col.Metric] = noNoise(median(vals))
	}
	return out
}

// RankedRuns are the runs a submission is ranked by: what the portal
// measured (its fresh-seed runs, d5list.Result.TimedRuns), where its
// re-run ran on the hardware the submission declares,
// since a claim is a hypothesis and a forged clock must buy nothing. Where
// it could not (no runner of that hardware, or no re-run yet) the claim is
// all there is, and the entry says so.
func RankedRuns(bench *d5list.Benchmark, s *d5list.Submission) ([]d5list.RunMetrics, string) {
	if m := s.Measured; m != nil && len(m.Runs) > 0 && bench.RemeasuredOn(s, m.Runner) {
		return m.TimedRuns(), d5list.BasisMeasured
	}
	return s.Claimed.Runs, d5list.BasisClaimed
}

// Rank is the board opt selects: the order does not depend on the
// options, so filtering, keeping each system's best and numbering is one
// pass.
func (s *Scored) Rank(opt Options) []d5list.Entry {
	opt = opt.normalized()
	entries := make([]d5list.Entry, 0, len(s.order))
	rank := 0
	var seen map[string]bool
	if !opt.AllPerSystem {
		seen = map[string]bool{}
	}
	for _, c := range s.order {
		e := &c.entry
		if !listedEntry(e, opt.IncludeUnverified) {
			continue
		}
		if !matches(opt.Division, e.Division) || !matches(opt.Availability, e.Availability) ||
			!matches(opt.Accelerator, e.Accelerator) || !matches(opt.Framework, e.Framework) {
			continue
		}
		if seen != nil {
			if seen[c.system] {
				continue
			}
			seen[c.system] = true
		}
		rank++
		if opt.Search != "" && !found(e, opt.Search) {
			continue
		}
		entry := *e
		entry.Rank = rank
		entry.Value, entry.Min, entry.Max, entry.Claimed = noNoise(entry.Value), noNoise(entry.Min), noNoise(entry.Max), noNoise(entry.Claimed)
		entries = append(entries, entry)
	}
	sortRows(entries, opt.Sort)
	return entries
}

// sortRows shows the ranked rows in another order; ties keep rank order.
func sortRows(entries []d5list.Entry, by string) {
	var less func(a, b *d5list.Entry) int
	switch by {
	case SortDate:
		less = func(a, b *d5list.Entry) int { return b.CreatedAt.Compare(a.CreatedAt) }
	case SortSubmitter:
		less = func(a, b *d5list.Entry) int {
			return strings.Compare(strings.ToLower(a.Submitter), strings.ToLower(b.Submitter))
		}
	case SortSystem:
		less = func(a, b *d5list.Entry) int {
			return strings.Compare(strings.ToLower(a.SystemName), strings.ToLower(b.SystemName))
		}
	case SortScoreReverse:
		less = func(a, b *d5list.Entry) int { return b.Rank - a.Rank }
	default:
		return
	}
	slices.SortStableFunc(entries, func(a, b d5list.Entry) int { return less(&a, &b) })
}

// found says whether a search (lower case) is in one of the entry's names.
func found(e *d5list.Entry, search string) bool {
	for _, s := range []string{e.Submitter, e.SystemName, e.Framework, e.Accelerator} {
		if strings.Contains(strings.ToLower(s), search) {
			return true
		}
	}
	return false
}

// noNoise rounds a value for the boards and exports to 12 significant
// digits: the olympic mean of times logged in milliseconds is exact to far
// fewer, and the float arithmetic's last digits (1.2630000000000001) are
// noise a reader would copy. The order was settled on the exact values.
func noNoise(v float64) float64 {
	if v == 0 || math.IsInf(v, 0) || math.IsNaN(v) {
		return v
	}
	r, err := strconv.ParseFloat(strconv.FormatFloat(v, 'g', 12, 64), 64)
	if err != nil {
		return v
	}
	return r
}

// before is a comparison's answer when a differs from b: -1 when a goes
// first.
func before(aFirst bool) int {
	if aFirst {
		return -1
	}
	return 1
}

// SystemKey is how the boards tell one system from another: its
// organisation and its name, case and outer spaces ignored. The index
// keeps it (board_rows.system_key), and a system's page looks it up.
func SystemKey(submitter, system string) string {
	return strings.ToLower(strings.TrimSpace(submitter)) + "\x00" + strings.ToLower(strings.TrimSpace(system))
}

// direction falls back, for a rule that names none, to what the metric
// means: times and epoch counts are better low, everything else high.
func direction(metric string, d d5list.Direction) d5list.Direction {
	if d == d5list.LowerIsBetter || d == d5list.HigherIsBetter {
		return d
	}
	switch metric {
	case d5list.MetricTimeToTrain, d5list.MetricTTA, d5list.MetricEpochsToTarget,
		d5list.MetricOpTime, d5list.MetricOpRelL2Error, d5list.MetricOpMaxError,
		d5list.MetricLatencyP50, d5list.MetricLatencyP99:
		return d5list.LowerIsBetter
	}
	return d5list.HigherIsBetter
}

func better(d d5list.Direction) string {
	if d == d5list.LowerIsBetter {
		return "lower is better"
	}
	return "higher is better"
}

// Rules states, in one paragraph for the board's page, every rule Rank
// applies to bench.
func Rules(bench *d5list.Benchmark) string {
	r := bench.Ranking
	dir := direction(r.Metric, r.Direction)
	var b strings.Builder
	unit := ""
	if r.Unit != "" {
		unit = ", in " + r.Unit
	}
	fmt.Fprintf(&b, "Ranked by %s (%s%s) as the portal measured it when it re-ran the submission on the hardware the submission declares; the claimed value is shown beside it. ", r.Metric, better(dir), unit)
	b.WriteString("The value is ")
	runs := "its runs"
	if bench.Runs > 0 {
		runs = fmt.Sprintf("its %d runs", bench.Runs)
	}
	fmt.Fprintf(&b, "the olympic mean over %s, that is the best and the worst run dropped and the rest averaged. ", runs)
	q := bench.Quality
	target := "the quality target"
	if q.Metric == "" && q.Target == 0 {
		target = "the end of the run (run_stop status success)"
	} else if q.Metric != "" {
		cmp := "at least"
		if q.Direction == d5list.LowerIsBetter {
			cmp = "at most"
		}
		target = fmt.Sprintf("%s %s %v", q.Metric, cmp, q.Target)
	}
	fmt.Fprintf(&b, "A run that does not reach %s counts as the worst run and is the one dropped; a submission with two or more such runs is not ranked. ", target)
	b.WriteString("Only verified submissions are listed; the \"include unverified\" view adds those still being checked or re-run, those needing review, flagged ones, and accepted ones that no runner of their hardware could re-measure (marked \"claimed, not re-measured\", ranked by their claim), never rejected, failed or discrepant ones. ")
	b.WriteString("Equal values are ordered ")
	if r.Secondary != "" {
		fmt.Fprintf(&b, "by %s (olympic mean, %s), then ", r.Secondary, better(direction(r.Secondary, r.SecondaryDirection)))
	}
	b.WriteString("by the earlier submission, then by the lower submission number. ")
	b.WriteString("Each system (submitter and system name, ignoring case) appears once, with its best entry, unless all entries are shown. ")
	b.WriteString("Ranks are numbered 1, 2, 3, … in this order, without shared places. ")
	b.WriteString("The range shown with each value spans its fastest and slowest converged run.")
	return b.String()
}
