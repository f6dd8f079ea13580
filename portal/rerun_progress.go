package portal

import (
	"cmp"
	"context"
	"slices"
	"time"

	d5list "github.com/deep500/d5list"
	"github.com/deep500/d5list/mllog"
	"github.com/deep500/d5list/stats"
)

// progressLines is how many of a re-run's latest lines its progress is
// read from: as many as the store keeps of a job (store.MaxLogLinesPerJob).
const progressLines = 2000

// RerunProgress is how far the verification re-run of sub has got, read
// from the MLLOG lines of its job's latest attempt: nil where no line of
// it has arrived. Who may see it is the caller's decision, as for the
// lines themselves.
func (s *Service) RerunProgress(ctx context.Context, sub *d5list.Submission) (*d5list.RerunProgress, error) {
	ps, err := s.progressStore()
	if err != nil {
		return nil, err
	}
	lines, err := ps.JobLog(ctx, sub.ID, -1, progressLines)
	if err != nil || len(lines) == 0 {
		return nil, err
	}
	bench, err := s.store.Benchmark(ctx, sub.BenchmarkID)
	if err != nil {
		return nil, err
	}
	return rerunProgress(bench, sub.Claimed, lines, time.Now()), nil
}

// runLines is what one run's lines told so far.
type runLines struct {
	start, stop time.Time
	// timed: its run_start line is among those read, so stop - start is
	// its time (the store keeps a job's latest lines only).
	timed, stopped bool
	epoch, value   *float64
}

// rerunProgress reads the progress of a re-run of bench from its lines
// (oldest first) at now. Times are the lines' arrival at the portal, not
// the runner's or the competitor's clocks. A run's expected time is the
// median of the finished runs', or before the first ends the claim's time
// for that run; its expected epochs are those its claim logged.
func rerunProgress(bench *d5list.Benchmark, claimed *d5list.Result, lines []d5list.LogLine, now time.Time) *d5list.RerunProgress {
	last := lines[len(lines)-1]
	metric := bench.Quality.Metric
	if metric == "" {
		metric = mllog.KeyEvalAccuracy
	}
	runs := map[int]*runLines{}
	// The claimed seeds' runs, then the fresh seeds' the lease drew.
	total := bench.Runs + bench.FreshRunCount()
	if claimed != nil && len(claimed.Runs) > 0 {
		total = len(claimed.Runs) + bench.FreshRunCount()
	}
	for _, l := range lines {
		if l.JobID != last.JobID || l.Attempt != last.Attempt {
			continue // an earlier job's or attempt's run
		}
		r := runs[l.Run]
		if r == nil {
			r = &runLines{start: l.Time}
			runs[l.Run] = r
			total = max(total, l.Run+1)
		}
		if l.Stream != d5list.StreamMLLOG {
			continue
		}
		ev, ok := mllog.ParseLine(l.Text)
		if !ok {
			continue
		}
		switch ev.Key {
		case mllog.KeyRunStart:
			r.start, r.timed = l.Time, true
		case mllog.KeyRunStop:
			r.stopped, r.stop = true, l.Time
		}
		if e, ok := mllog.Float(ev.Meta("epoch_num")); ok {
			r.epoch = &e
		}
		if v, ok := mllog.Float(ev.Value); ok && ev.Key == metric {
			r.value = &v
		}
	}

	// A job's runs go one after the other, so a run before one that has
	// lines is done, though the store may no longer keep any of its own.
	latest := -1
	for i := range runs {
		latest = max(latest, i)
	}
	for i := range latest {
		if runs[i] == nil {
			runs[i] = &runLines{stopped: true}
		}
	}
	var done []float64
	for _, r := range runs {
		if r.stopped && r.timed {
			done = append(done, r.stop.Sub(r.start).Seconds())
		}
	}
	p := &d5list.RerunProgress{Metric: metric, EstimatedFrom: d5list.EstimateFromClaim, Runs: make([]d5list.RunProgress, total)}
	expected := func(i int) (float64, bool) {
		if len(done) > 0 {
			return stats.Median(done), true
		}
		seconds, _ := claimedRun(claimed, i)
		return seconds, seconds > 0
	}
	if len(done) > 0 {
		p.EstimatedFrom = d5list.EstimateFromRuns
	}
	known := true
	for i := range p.Runs {
		rp := &p.Runs[i]
		rp.Number, rp.State = i+1, d5list.RunWaiting
		exp, expOK := expected(i)
		r := runs[i]
		switch {
		case r == nil:
			if p.Current == 0 {
				p.Current = rp.Number
			}
			p.SecondsLeft += exp
			known = known && expOK
			continue
		case r.stopped:
			rp.State, rp.Fraction = d5list.RunDone, 1
			if r.timed {
				rp.Seconds = r.stop.Sub(r.start).Seconds()
			}
		default:
			rp.State, rp.Seconds = d5list.RunRunning, max(now.Sub(r.start).Seconds(), 0)
			if p.Current == 0 {
				p.Current = rp.Number
			}
			_, epochs := claimedRun(claimed, i)
			left, ok := runLeft(rp.Seconds, exp, expOK, r.epoch, epochs)
			if ok && rp.Seconds+left > 0 {
				// A run is done only at its run_stop, however far its
				// estimate says it got.
				rp.Fraction = min(rp.Seconds/(rp.Seconds+left), 0.99)
			}
			p.SecondsLeft += left
			known = known && ok
		}
		rp.Epoch, rp.Value = r.epoch, r.value
	}
	if !known {
		p.SecondsLeft = -1
	}
	return p
}

// runLeft is a running run's time left after elapsed seconds: from its
// epochs where its claim says how many it took (elapsed per epoch so far),
// else from its expected time. ok is false where neither is known.
func runLeft(elapsed, expected float64, expectedOK bool, epoch *float64, epochs float64) (left float64, ok bool) {
	if epoch != nil && *epoch > 0 && epochs > 0 {
		return max(elapsed/(*epoch/epochs)-elapsed, 0), true
	}
	if expectedOK {
		return max(expected-elapsed, 0), true
	}
	return 0, false
}

// claimedRun is what the claim says of run i of the re-run: its time and
// the last epoch it evaluated (0 where it logged no evaluation, as an
// operator's or an inference run). A fresh seed's run, after the claimed
// ones, has no claim of its own: the claimed runs' medians stand for it.
func claimedRun(claimed *d5list.Result, i int) (seconds, epochs float64) {
	if claimed == nil || len(claimed.Runs) == 0 {
		return 0, 0
	}
	lastEpoch := func(r d5list.RunMetrics) float64 {
		if len(r.Evals) == 0 {
			return 0
		}
		return slices.MaxFunc(r.Evals, func(a, b d5list.EvalPoint) int { return cmp.Compare(a.Epoch, b.Epoch) }).Epoch
	}
	if i < len(claimed.Runs) {
		return claimed.Runs[i].TimeToTrain, lastEpoch(claimed.Runs[i])
	}
	times := make([]float64, len(claimed.Runs))
	lasts := make([]float64, len(claimed.Runs))
	for j, r := range claimed.Runs {
		times[j], lasts[j] = r.TimeToTrain, lastEpoch(r)
	}
	return stats.Median(times), stats.Median(lasts)
}
