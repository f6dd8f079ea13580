package templates

import (
	"fmt"
	"strings"

	d5list "github.com/deep500/d5list"
)

// Measurement is one of the portal's measurements of an entry: a re-run,
// or a re-measure of its timed runs, with each run as the runner reported
// it, its clocks included.
type Measurement struct {
	Name string
	// Ranked marks the measurement the verdict stands on, whose values the
	// entry shows and ranks by; Replaced is the verdict of one a later
	// measurement replaced.
	Ranked   bool
	Replaced d5list.Status
	Runs     []d5list.RunMetrics
}

// Measurements are sub's measurements, oldest first: those of its
// attempts that a later one replaced (d5list.Attempt.Measured; those the
// reader may not see are blanked, and left out), then the one its verdict
// stands on.
func Measurements(sub *d5list.Submission, attempts []d5list.Attempt) []Measurement {
	var out []Measurement
	var latest *d5list.Job
	for i := range attempts {
		a := &attempts[i]
		latest = &a.Job
		if a.Measured != nil && len(a.Measured.Runs) > 0 {
			out = append(out, Measurement{Name: measurementName(&a.Job), Replaced: a.Status, Runs: a.Measured.Runs})
		}
	}
	if sub.Measured != nil && len(sub.Measured.Runs) > 0 {
		out = append(out, Measurement{Name: measurementName(latest), Ranked: true, Runs: sub.Measured.Runs})
	}
	return out
}

// measurementName names the measurement job made; nil is the one job of a
// service that keeps no attempts.
func measurementName(job *d5list.Job) string {
	switch {
	case job == nil:
		return "The re-run"
	case job.Remeasure > 0:
		return fmt.Sprintf("Re-measure %d of the timed runs (job %d)", job.Remeasure, job.ID)
	}
	return fmt.Sprintf("Re-run (job %d)", job.ID)
}

// measurementRole says what became of m: it ranks, or what verdict it
// gave before a later measurement replaced it.
func measurementRole(m Measurement) string {
	switch {
	case m.Ranked:
		return ": the measurement that ranks"
	case m.Replaced != "":
		return ": replaced, its verdict was " + statusWords(m.Replaced)
	}
	return ": replaced"
}

// clockWindow is the run's timed window on the runner's clock, the time
// that ranks a run of the competitor's code (RunClock.TimedS). The
// portal's own workloads, and runs whose log the runner could only read
// after them (Slurm), are timed by their log.
func clockWindow(c *d5list.RunClock) string {
	if !c.CompetitorLog {
		return "from its log"
	}
	s, whole := c.TimedS()
	if whole {
		return FormatValue(s, "s") + " (the whole run: no window held)"
	}
	return FormatValue(s, "s")
}

// clockWholeRun is the run's wall and CPU time from its start to its end:
// its thread's, or its whole process tree's.
func clockWholeRun(c *d5list.RunClock) string {
	cpu := FormatValue(c.CPUS, "s") + " CPU"
	if c.CPUS == 0 {
		// No executor measures a run at no CPU time: one that cannot
		// read it (Slurm's, on another node) leaves it 0.
		cpu = "CPU not read"
	}
	return FormatValue(c.WallS, "s") + " wall / " + cpu
}

// clockBeforeWindow is the wall and CPU time the run spent before its
// window opened (only a run of the competitor's code has a window); a
// runner that did not record the wall time shows the CPU time alone.
func clockBeforeWindow(c *d5list.RunClock) string {
	if !c.CompetitorLog {
		return "—"
	}
	cpu := FormatValue(c.BeforeWindowCPUS, "s") + " CPU"
	if c.BeforeWindowS == 0 {
		return cpu
	}
	return FormatValue(c.BeforeWindowS, "s") + " wall / " + cpu
}

// The states of a run's audit (RunClock.Audit), as the page marks them.
const (
	auditPassed = "passed"
	auditFailed = "failed"
	auditNotRun = "not run"
)

// auditState is whether the runner's audit of the run passed, failed or
// was not run (a run without the runner's window, or from a runner older
// than its benchmark's harness).
func auditState(c *d5list.RunClock) string {
	switch {
	case c.Audit == nil:
		return auditNotRun
	case len(c.Audit.Failures) > 0:
		return auditFailed
	}
	return auditPassed
}

// auditWords is the audit's state with what failed in it.
func auditWords(c *d5list.RunClock) string {
	if auditState(c) != auditFailed {
		return auditState(c)
	}
	why := make([]string, len(c.Audit.Failures))
	for i, f := range c.Audit.Failures {
		why[i] = f.Message
	}
	return auditFailed + ": " + strings.Join(why, "; ")
}

// clockColumns is how many columns of the clock table a run's clock fills
// for bench: the window, the whole run, the CPU before the window, the
// wait and other work's CPU, and the audit where bench's harness has one.
func clockColumns(bench *d5list.Benchmark) int {
	if bench.Audited() {
		return 6
	}
	return 5
}
