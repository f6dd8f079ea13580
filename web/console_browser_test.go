package web_test

import (
	"context"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto/emulation"
	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"

	d5list "github.com/deep500/d5list"
	"github.com/deep500/d5list/internal/browsertest"
)

// browserWidths are the widths the page tests look at: a desktop window,
// and a phone's 390 px.
var browserWidths = []struct {
	name  string
	width int64
}{{"desktop", 1200}, {"390px", 390}}

// tabAt opens a tab of browser whose page is width px wide.
func tabAt(t *testing.T, browser context.Context, width int64) context.Context {
	t.Helper()
	tab, closeTab := chromedp.NewContext(browser)
	t.Cleanup(closeTab)
	if err := chromedp.Run(tab, emulation.SetDeviceMetricsOverride(width, 900, 1, width < 600)); err != nil {
		t.Fatal(err)
	}
	return tab
}

// fitsTheScreen fails t where the page is wider than the tab's screen.
func fitsTheScreen(t *testing.T, tab context.Context, what string) {
	t.Helper()
	var fits bool
	if err := chromedp.Run(tab, chromedp.Evaluate(`document.documentElement.scrollWidth <= window.innerWidth`, &fits)); err != nil || !fits {
		t.Errorf("%s is wider than the screen (%v)", what, err)
	}
}

// An organiser reviews an entry in the console in Chromium, at desktop
// width and at 390 px: the row shows claimed and measured with units and
// the finding in words, the actions are labelled and explained, and
// freezing an edition asks first, on a page of its own, and freezes
// nothing until confirmed (a cancel leaves no edition).
func TestBrowserConsoleReviewAndFreeze(t *testing.T) {
	browser := browsertest.Start(t, 120*time.Second)
	for _, w := range browserWidths {
		t.Run(w.name, func(t *testing.T) {
			p := startReal(t)
			id := remeasuredEntry(t, p, d5list.StatusNeedsReview, []d5list.Reason{{Code: "timing_too_noisy", Message: "its runs' work took from 0.30 to 1.70 of their median"}})
			row := `[data-testid="review-row"][data-id="` + strconv.FormatInt(id, 10) + `"]`
			tab := tabAt(t, browser, w.width)
			var claimed, measured, finding, help string
			browse(t, tab, "log in and open the console",
				chromedp.Navigate(p.url+"/login?next=/console"),
				chromedp.SendKeys(`[data-testid="login-name"]`, "organiser-user", chromedp.ByQuery),
				chromedp.SendKeys(`[data-testid="login-password"]`, "password of organiser-user", chromedp.ByQuery),
				chromedp.Click(`[data-testid="login-submit"]`, chromedp.ByQuery),
				chromedp.WaitVisible(row, chromedp.ByQuery),
				chromedp.Text(row+` [data-testid="review-claimed"]`, &claimed, chromedp.ByQuery),
				chromedp.Text(row+` [data-testid="review-measured"]`, &measured, chromedp.ByQuery),
				chromedp.Text(row+` [data-testid="review-finding"]`, &finding, chromedp.ByQuery),
				chromedp.Click(`[data-testid="review-actions-help"] summary`, chromedp.ByQuery),
				chromedp.Text(`[data-testid="review-action-help"][data-action="move_to_open"]`, &help, chromedp.ByQuery))
			if claimed != "12.9 s" || measured != "6.38 s" || !strings.Contains(finding, "varied too much") || strings.Contains(finding, "1.70") {
				t.Errorf("review row: claimed %q, measured %q, finding %q", claimed, measured, finding)
			}
			if !strings.Contains(help, "open division") {
				t.Errorf("move_to_open is explained as %q", help)
			}
			fitsTheScreen(t, tab, "the console")

			var notice string
			browse(t, tab, "accept the entry",
				chromedp.SetValue(row+` [data-testid="review-action"]`, "accept", chromedp.ByQuery),
				chromedp.Click(row+` [data-testid="review-submit"]`, chromedp.ByQuery),
				chromedp.WaitVisible(`[data-testid="console-notice"]`, chromedp.ByQuery),
				chromedp.Text(`[data-testid="console-notice"]`, &notice, chromedp.ByQuery))
			if !strings.Contains(notice, "is now verified") {
				t.Errorf("after accepting, the console says %q", notice)
			}

			var question string
			browse(t, tab, "freeze, then cancel",
				chromedp.SendKeys(`[data-testid="edition-name"]`, "2026-11", chromedp.ByQuery),
				chromedp.Click(`[data-testid="edition-freeze"]`, chromedp.ByQuery),
				chromedp.WaitVisible(`[data-testid="edition-confirm-submit"]`, chromedp.ByQuery),
				chromedp.Text(`[data-testid="edition-confirm"] h1`, &question, chromedp.ByQuery))
			if question != "Freeze every board as edition 2026-11?" {
				t.Errorf("the confirmation asks %q", question)
			}
			fitsTheScreen(t, tab, "the freeze confirmation")
			var items int
			browse(t, tab, "cancel",
				chromedp.Click(`[data-testid="edition-confirm-cancel"]`, chromedp.ByQuery),
				chromedp.WaitVisible(`[data-testid="edition-form"]`, chromedp.ByQuery),
				chromedp.Evaluate(`document.querySelectorAll('[data-testid="edition-item"]').length`, &items))
			if items != 0 {
				t.Fatalf("a cancelled freeze left %d editions", items)
			}
			var edition string
			browse(t, tab, "freeze and confirm",
				chromedp.SendKeys(`[data-testid="edition-name"]`, "2026-11", chromedp.ByQuery),
				chromedp.Click(`[data-testid="edition-freeze"]`, chromedp.ByQuery),
				chromedp.WaitVisible(`[data-testid="edition-confirm-submit"]`, chromedp.ByQuery),
				chromedp.Click(`[data-testid="edition-confirm-submit"]`, chromedp.ByQuery),
				chromedp.WaitVisible(`[data-testid="edition-item"]`, chromedp.ByQuery),
				chromedp.Text(`[data-testid="edition-item"]`, &edition, chromedp.ByQuery))
			if !strings.HasPrefix(edition, "2026-11") {
				t.Errorf("the console lists the edition %q", edition)
			}
		})
	}
}

// browse runs a browser step, failing t with its name.
func browse(t *testing.T, tab context.Context, step string, actions ...chromedp.Action) {
	t.Helper()
	ctx, cancel := context.WithTimeout(tab, 30*time.Second)
	defer cancel()
	if err := chromedp.Run(ctx, actions...); err != nil {
		t.Fatalf("%s: %v", step, err)
	}
}

// The feed, fetched and parsed by the browser on the board's page, gives
// an entry the value the board shows (the measured 6.38 s, not the claimed
// 12.92 s), at both widths.
func TestBrowserFeedReadsTheBoardsValue(t *testing.T) {
	p := startReal(t)
	id := remeasuredEntry(t, p, d5list.StatusVerified, nil)
	browser := browsertest.Start(t, 60*time.Second)
	for _, w := range browserWidths {
		t.Run(w.name, func(t *testing.T) {
			tab := tabAt(t, browser, w.width)
			var score string
			var feed struct {
				Title   string `json:"title"`
				Summary string `json:"summary"`
			}
			browse(t, tab, "read the board and the feed",
				chromedp.Navigate(p.url+"/benchmarks/l2-digits-mlp-cpu"),
				chromedp.Text(`[data-testid="leaderboard-row"][data-submission="`+strconv.FormatInt(id, 10)+`"] [data-testid="entry-score"]`, &score, chromedp.ByQuery),
				chromedp.Evaluate(`fetch('/feed.atom').then(r => r.text()).then(xml => {
					const doc = new DOMParser().parseFromString(xml, 'application/xml');
					if (doc.querySelector('parsererror')) { throw new Error('the feed is not XML'); }
					const e = [...doc.getElementsByTagName('entry')].find(e => e.getElementsByTagName('id')[0].textContent.endsWith('/submissions/`+strconv.FormatInt(id, 10)+`'));
					return {title: e.getElementsByTagName('title')[0].textContent, summary: e.getElementsByTagName('summary')[0].textContent};
				})`, &feed, func(p *runtime.EvaluateParams) *runtime.EvaluateParams { return p.WithAwaitPromise(true) }))
			if score != "6.38 s" || !strings.HasSuffix(feed.Title, ": "+score) || !strings.Contains(feed.Summary, score+", as the portal measured it (claimed 12.9 s)") {
				t.Errorf("the board shows %q; the feed's entry reads %q / %q", score, feed.Title, feed.Summary)
			}
			fitsTheScreen(t, tab, "the board")
		})
	}
}
