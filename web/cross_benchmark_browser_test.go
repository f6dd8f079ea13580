package web_test

import (
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/deep500/d5list/internal/browsertest"
)

// fitsWindow is true where nothing on the page is wider than the window.
const fitsWindow = `document.documentElement.scrollWidth <= window.innerWidth`

// In a real Chromium, at a desktop's width and at a phone's, a visitor
// types an organisation's name into the header's search box, reads what
// each benchmark's list has of it, opens one system's page from the
// results and reads its place on each list, now and in the frozen
// edition. Neither page is wider than the window; on the phone each
// table's cells name their column.
func TestSearchAndSystemPagesInBrowser(t *testing.T) {
	p := startReal(t)
	crossBenchmarkList(t, p)
	ctx := browsertest.Start(t, 90*time.Second)
	for _, width := range []int64{1280, 390} {
		var groups, results, standings int
		var searchFits, systemFits bool
		var location, heading, label string
		var editions []string
		err := chromedp.Run(ctx,
			chromedp.EmulateViewport(width, 900),
			chromedp.Navigate(p.url+"/"),
			chromedp.WaitVisible(`[data-testid="site-search"]`, chromedp.ByQuery),
			chromedp.SendKeys(`[data-testid="site-search"]`, "acme\n", chromedp.ByQuery),
			chromedp.WaitVisible(`[data-testid="search-group"]`, chromedp.ByQuery),
			chromedp.Evaluate(`document.querySelectorAll('[data-testid="search-group"]').length`, &groups),
			chromedp.Evaluate(`document.querySelectorAll('[data-testid="search-result"]').length`, &results),
			chromedp.Evaluate(fitsWindow, &searchFits),
			chromedp.Click(`[data-testid="search-group"][data-benchmark="`+l3Digits+`"] [data-testid="search-system"]`, chromedp.ByQuery),
			chromedp.WaitVisible(`[data-testid="system-standings"]`, chromedp.ByQuery),
			chromedp.Location(&location),
			chromedp.Text(`[data-testid="system-name"]`, &heading, chromedp.ByQuery),
			chromedp.Evaluate(`document.querySelectorAll('[data-testid="system-standing"]').length`, &standings),
			chromedp.Evaluate(`Array.from(document.querySelectorAll('[data-testid="standing-edition"]')).map(function (e) { return e.textContent.replace(/\s+/g, ' ').trim(); })`, &editions),
			chromedp.Evaluate(`getComputedStyle(document.querySelector('[data-testid="standing-live"]'), '::before').content`, &label),
			chromedp.Evaluate(fitsWindow, &systemFits),
		)
		if err != nil {
			t.Fatalf("%d px: %v", width, err)
		}
		if groups != 2 || results != 3 {
			t.Errorf("%d px: searching acme shows %d benchmarks and %d results, want 2 and 3", width, groups, results)
		}
		if !strings.HasSuffix(location, systemPath(acmeRack.submitter, acmeRack.system)) || strings.TrimSpace(heading) != acmeRack.system {
			t.Errorf("%d px: the search's system link opened %s (%q), want rack-1's page", width, location, heading)
		}
		if standings != 2 || len(editions) != 2 || !strings.HasPrefix(editions[0], "2026-06: #3 of 3") || !strings.HasPrefix(editions[1], "2026-06: #2 of 2") {
			t.Errorf("%d px: the system page shows %d benchmarks, editions %q; want 2, #3 of 3 and #2 of 2 in 2026-06", width, standings, editions)
		}
		if !searchFits || !systemFits {
			t.Errorf("%d px: the search page fits the window: %v, the system page: %v", width, searchFits, systemFits)
		}
		// The phone's layout makes each row a card whose cells say what
		// they are; the desktop's has the table's head.
		if wantLabel := width < 600; wantLabel != (label == `"On the list now"`) {
			t.Errorf("%d px: the place's cell is labelled %s", width, label)
		}
	}
}
