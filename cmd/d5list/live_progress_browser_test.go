package main

import (
	"context"
	"fmt"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto/emulation"
	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/chromedp"

	d5list "github.com/deep500/d5list"
	"github.com/deep500/d5list/internal/browsertest"
	"github.com/deep500/d5list/internal/chaos"
)

// queueRuns queues a submission of the pool benchmark that claims runs
// runs of epochs epochs each, about claimedSeconds long, whose re-run
// trains every run to its epoch cap.
func (p *pool) queueRuns(t *testing.T, runs, epochs int, claimedSeconds float64) int64 {
	t.Helper()
	claimed := &d5list.Result{}
	for i := range runs {
		claimed.Runs = append(claimed.Runs, d5list.RunMetrics{Index: i, Seed: int64(7 + i), TimeToTrain: claimedSeconds,
			Evals: []d5list.EvalPoint{{Epoch: float64(epochs), Seconds: claimedSeconds, Accuracy: 0.5}}})
	}
	sub := chaos.DigitsSubmission(poolBenchmark, p.ownerID, epochs)
	sub.Claimed = claimed
	if err := p.db.CreateSubmission(context.Background(), sub); err != nil {
		t.Fatal(err)
	}
	return sub.ID
}

// TestBrowserFollowsARerun watches a real re-run on a runner process from
// its queue to its verdict, in Chromium at desktop width and at 390 px
// (a phone), as someone who may read its log (an organiser's token): the
// page says which run of how many it is on, at which epoch and accuracy,
// with a bar per run and the time left, updated from the event stream;
// the raw MLLOG lines are folded under it, still kept current.
func TestBrowserFollowsARerun(t *testing.T) {
	p := startPool(t, 10*time.Second)
	// Three claimed runs (the pool's benchmark adds no fresh seeds).
	id := p.queueRuns(t, 3, 200, 4)
	desktop := browsertest.Start(t, 240*time.Second, chromedp.WindowSize(1200, 900))
	phone, closePhone := chromedp.NewContext(desktop)
	t.Cleanup(closePhone)
	page := fmt.Sprintf("%s/submissions/%d", p.url, id)
	asOrganiser := network.SetExtraHTTPHeaders(network.Headers{"Authorization": "Bearer " + p.orgToken})
	type tab struct {
		name  string
		ctx   context.Context
		setup []chromedp.Action
	}
	tabs := []tab{
		{"desktop", desktop, nil},
		{"390px", phone, []chromedp.Action{emulation.SetDeviceMetricsOverride(390, 844, 3, true)}},
	}
	for _, tab := range tabs {
		actions := append([]chromedp.Action{network.Enable(), asOrganiser}, tab.setup...)
		actions = append(actions, chromedp.Navigate(page),
			chromedp.WaitVisible(`[data-testid="rerun-progress"]`, chromedp.ByQuery))
		if err := chromedp.Run(tab.ctx, actions...); err != nil {
			t.Fatalf("%s: opening %s: %v", tab.name, page, err)
		}
	}
	text := func(ctx context.Context, testid string) string {
		var s string
		if err := chromedp.Run(ctx, chromedp.Evaluate(`(document.querySelector('[data-testid="`+testid+`"]') || {}).textContent || ''`, &s)); err != nil {
			t.Fatal(err)
		}
		return s
	}
	if s := text(desktop, "progress-line"); s != "The re-run has not logged anything yet." {
		t.Errorf("a queued re-run's progress reads %q", s)
	}

	p.startRunner(t, "live")
	// waitFor polls tb until the script cond is true.
	waitFor := func(tb tab, what, cond string, within time.Duration) {
		t.Helper()
		ctx, cancel := context.WithTimeout(tb.ctx, within)
		defer cancel()
		if err := chromedp.Run(ctx, chromedp.Poll(cond, nil, chromedp.WithPollingInterval(100*time.Millisecond))); err != nil {
			t.Fatalf("%s: waiting for %s: %v; the page reads %q", tb.name, what, err, text(tb.ctx, "rerun-progress"))
		}
	}
	line := func(ctx context.Context) string { return text(ctx, "progress-line") }
	running := `document.querySelector('[data-testid="run-bar"][data-state="running"] progress')`
	// A run of 200 epochs takes seconds; the stream reports twice a
	// second, so the page is caught in a run, whichever.
	mid := regexp.MustCompile(`^run [123] of 3 · epoch \d+ · accuracy 0\.\d{4}$`)
	for _, tab := range tabs {
		waitFor(tab, "a run at an epoch", `/^run [123] of 3 · epoch \d+ · accuracy/.test((document.querySelector('[data-testid="progress-line"]') || {}).textContent || '')`, 90*time.Second)
		if s := line(tab.ctx); !mid.MatchString(s) && !strings.HasPrefix(s, "All 3 runs done") {
			t.Errorf("%s: progress %q, want a run of 3 with its epoch and accuracy", tab.name, s)
		}
	}
	var bars int
	if err := chromedp.Run(desktop, chromedp.Evaluate(`document.querySelectorAll('[data-testid="run-bar"]').length`, &bars)); err != nil || bars != 3 {
		t.Errorf("%d bars, want one per run (%v)", bars, err)
	}
	waitFor(tabs[0], "the running run's bar to move", running+` && `+running+`.value > 0`, 30*time.Second)

	// Once a run is done, the time left is estimated from it.
	for _, tab := range tabs {
		waitFor(tab, "a run done", `!!document.querySelector('[data-testid="run-bar"][data-state="done"]') && /^run [23] of 3/.test(document.querySelector('[data-testid="progress-line"]').textContent)`, 120*time.Second)
	}
	if left := text(desktop, "progress-left"); !regexp.MustCompile(`^About (\d+ s|\d+ min \d+ s) left, estimated from the times of the runs done\.$`).MatchString(left) {
		t.Errorf("time left %q, want it estimated from the runs done", left)
	}
	var fits bool
	if err := chromedp.Run(phone, chromedp.Evaluate(`document.documentElement.scrollWidth <= window.innerWidth &&
		[...document.querySelectorAll('[data-testid="run-bar"]')].every(b => b.getBoundingClientRect().right <= window.innerWidth)`, &fits)); err != nil || !fits {
		t.Errorf("at 390 px the progress does not fit the screen (%v)", err)
	}

	// The raw log is folded, and kept current under the fold.
	var folded bool
	var lines int
	if err := chromedp.Run(desktop,
		chromedp.Evaluate(`!document.querySelector('[data-testid="raw-log"]').open`, &folded),
		chromedp.Evaluate(`document.querySelectorAll('[data-testid="log-line"]').length`, &lines)); err != nil {
		t.Fatal(err)
	}
	if !folded || lines == 0 {
		t.Errorf("raw log folded %v with %d lines, want folded and filled", folded, lines)
	}

	for _, tab := range tabs {
		waitFor(tab, "the verdict", `!!document.querySelector('[data-testid="verdict-summary"]')`, 120*time.Second)
	}
	if n := text(desktop, "rerun-progress"); n != "" {
		t.Errorf("the verdict's page still shows the progress %q", n)
	}
}
