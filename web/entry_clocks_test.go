package web_test

import (
	"context"
	"strconv"
	"strings"
	"testing"
	"time"

	d5list "github.com/deep500/d5list"
)

// torchRunner is what a runner of the PyTorch benchmarks reports of itself.
var torchRunner = map[string]string{d5list.LabelRuns: d5list.RunsEntrypoint, "framework.torch": "2.6.0", "cpu_model": testCPU}

// completeWithClocks leases the queued job of an entry of torch digits and
// completes it, as a runner's report would (Service.Complete), with a log
// of each run the lease asks for and the clock clockOf gives it.
func completeWithClocks(t *testing.T, p *realPortal, clockOf func(run d5list.SeededRun) *d5list.RunClock) {
	t.Helper()
	ctx := context.Background()
	lease, err := p.db.LeaseJob(ctx, "r1", torchRunner, time.Minute)
	if err != nil || lease == nil {
		t.Fatalf("lease: %v %v", lease, err)
	}
	var logs []d5list.RunLog
	for _, run := range lease.Spec.Runs() {
		logs = append(logs, d5list.RunLog{Index: run.Index, Seed: run.Seed, Fresh: run.Fresh,
			Log: digitsLog(run.Seed, run.Index, 0.97), Clock: clockOf(run)})
	}
	if err := p.svc.Complete(ctx, lease.Job.ID, lease.Secret, logs, torchRunner); err != nil {
		t.Fatal(err)
	}
}

// auditMismatch is the reason the runner's audit of clockedEntry's first
// fresh run failed.
const auditMismatch = "epoch 7: weights other than those the run committed to"

// clockedEntry stores an entry of torch digits whose first re-run is
// older data, without the runner's clocks, and whose organiser's re-run
// has a clock on each run: each claimed seed's a 2 s window in 6.5 s of
// wall time, run 1 not audited, run 2 without a window, and the first
// fresh run a 0.05 s window after 4.9 s of CPU before it, a wait for a
// CPU and a failed audit.
func clockedEntry(t *testing.T, p *realPortal) (*d5list.Submission, *d5list.Benchmark) {
	t.Helper()
	ctx := context.Background()
	bench, err := p.svc.Benchmark(ctx, "l2-digits-mlp-torch-cpu")
	if err != nil {
		t.Fatal(err)
	}
	sub := digitsClaim(t, p, bench.ID, "pytorch", testCPU, 0.97)
	completeWithClocks(t, p, func(d5list.SeededRun) *d5list.RunClock { return nil })
	if _, _, err := p.svc.Review(ctx, p.users["organiser"], sub.ID, d5list.ReviewRequest{Action: d5list.ActionRerun, Reason: "clocks"}); err != nil {
		t.Fatal(err)
	}
	passed := &d5list.Audit{Sections: []d5list.AuditSection{{Name: "epochs", Calls: 30, Checked: []int{7}}}}
	completeWithClocks(t, p, func(run d5list.SeededRun) *d5list.RunClock {
		c := &d5list.RunClock{CompetitorLog: true, LogS: 2, WallS: 6.5, CPUS: 3.2, BeforeWindowCPUS: 1.1, BeforeWindowS: 1.25, Audit: passed}
		switch run.Index {
		case 1:
			c.Audit = nil
		case 2:
			c.LogS, c.Breaches = 0, []d5list.Reason{{Code: d5list.BreachGateNotOpened, Message: "the run never opened its gate"}}
		case bench.Runs:
			c.LogS, c.WallS, c.CPUS, c.BeforeWindowCPUS, c.WaitS, c.ForeignCPUS = 0.05, 12.4, 5.1, 4.9, 0.3, 11.2
			c.BeforeWindowS = 0 // a runner that did not record it
			c.Audit = &d5list.Audit{Sections: passed.Sections, Failures: []d5list.Reason{{Code: d5list.AuditMismatch, Message: auditMismatch}}}
		}
		return c
	})
	return sub, bench
}

// An entry's page shows, for each run of each of the portal's
// measurements, what the runner's clock saw beside the measured values: a
// re-run from before the runner's clocks were kept says so, and the
// organiser's re-run that replaced it shows each run's window, its whole
// run's wall and CPU time, the CPU it spent before its window, its wait
// for a CPU, whether its seed was fresh and its audit: passed, failed with
// the reason, or not run. A short window after long work before it reads
// at a glance, and is the run's measured time.
func TestEntryPageShowsTheRunnersClock(t *testing.T) {
	p := startReal(t)
	sub, bench := clockedEntry(t, p)
	firstFresh := bench.Runs

	doc := p.login(t, "competitor").doc(t, "/submissions/"+strconv.FormatInt(sub.ID, 10))
	headings := doc.Find(testid("clock-measurement"))
	tables := doc.Find(testid("run-clocks-table"))
	if headings.Length() != 2 || tables.Length() != 2 {
		t.Fatalf("the page shows %d measurements' clocks (%d tables), want the replaced re-run's and the ranked one's", headings.Length(), tables.Length())
	}
	if h := strings.Join(strings.Fields(headings.Eq(0).Text()), " "); !strings.HasPrefix(h, "Re-run (job ") || !strings.HasSuffix(h, ": replaced, its verdict was needs review") {
		t.Errorf("the first measurement is headed %q, want the replaced re-run with its verdict", h)
	}
	if h := strings.Join(strings.Fields(headings.Eq(1).Text()), " "); !strings.HasSuffix(h, ": the measurement that ranks") {
		t.Errorf("the second measurement is headed %q, want it named as the one that ranks", h)
	}

	older := tables.Eq(0)
	runs := bench.Runs + bench.FreshRunCount()
	if n, none := older.Find(testid("clock-row")).Length(), older.Find(testid("clock-none")); n != runs || none.Length() != n ||
		!strings.HasPrefix(none.First().Text(), "not recorded") || older.Find(testid("clock-window")).Length() != 0 {
		t.Errorf("the re-run without clocks shows %d rows, %d saying no clock was recorded (%q); want every one of its %d runs so",
			n, none.Length(), none.First().Text(), runs)
	}

	ranked := tables.Eq(1)
	if _, ok := ranked.Attr("data-ranked"); !ok {
		t.Error("the re-run that replaced the first is not marked as the one that ranks")
	}
	cell := func(run int, id string) string {
		return strings.Join(strings.Fields(ranked.Find(testid("clock-row")+`[data-run="`+strconv.Itoa(run)+`"] `+testid(id)).Text()), " ")
	}
	for _, c := range []struct {
		run      int
		id, want string
		whatItIs string
	}{
		{0, "clock-window", "2.00 s", "a claimed seed's window"},
		{0, "clock-whole-run", "6.50 s wall / 3.20 s CPU", "its whole run"},
		{0, "clock-before-window", "1.25 s wall / 1.10 s CPU", "its time before the window"},
		{0, "clock-waited", "0 s", "its wait for a CPU"},
		{0, "clock-audit", "passed", "its audit"},
		{0, "clock-fresh", "", "a claimed seed's fresh mark"},
		{1, "clock-audit", "not run", "the audit the runner did not run"},
		{2, "clock-window", "6.50 s (the whole run: no window held)", "a breached window"},
		{firstFresh, "clock-fresh", "fresh", "a fresh seed's mark"},
		{firstFresh, "clock-window", "0.0500 s", "the window after work before it"},
		{firstFresh, "clock-whole-run", "12.4 s wall / 5.10 s CPU", "its whole run"},
		{firstFresh, "clock-before-window", "4.90 s CPU", "its CPU before the window, from a runner that kept no wall time of it"},
		{firstFresh, "clock-waited", "0.300 s", "its wait for a CPU"},
		{firstFresh, "clock-foreign", "11.2 s", "other work's CPU meanwhile"},
		{firstFresh, "clock-audit", "failed: " + auditMismatch, "its failed audit"},
	} {
		if got := cell(c.run, c.id); got != c.want {
			t.Errorf("run %d, %s: %q, want %q", c.run, c.whatItIs, got, c.want)
		}
	}
	if n := ranked.Find(testid("clock-fresh")).Length(); n != bench.FreshRunCount() {
		t.Errorf("%d runs are marked fresh, want the %d fresh-seed runs", n, bench.FreshRunCount())
	}
	// The window is the run's measured time, the one the runs table shows.
	measured := doc.Find(testid("runs-table") + " " + testid("run-row") + `[data-run="` + strconv.Itoa(firstFresh) + `"] ` + testid("ttt-measured")).Text()
	if measured != cell(firstFresh, "clock-window") {
		t.Errorf("the fresh run measured %q in the runs table, and its window is %q: want the same value", measured, cell(firstFresh, "clock-window"))
	}
}
