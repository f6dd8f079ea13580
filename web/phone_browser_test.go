package web_test

import (
	"context"
	"fmt"
	"strconv"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	d5list "github.com/deep500/d5list"
	"github.com/deep500/d5list/internal/browsertest"
)

// chartFaults lists, for every chart ECharts drew on the page, each text
// it drew past its canvas's edges (a clipped axis title or title), and
// each legend item it did not draw (a legend paged or cut).
const chartFaults = `(function () {
	var out = [];
	document.querySelectorAll('[data-chart]').forEach(function (el) {
		var c = echarts.getInstanceByDom(el);
		if (!c) { out.push(el.id + ': not drawn'); return; }
		var w = c.getWidth(), h = c.getHeight(), drawn = {};
		c.getZr().storage.getDisplayList(true).forEach(function (d) {
			if (d.type !== 'tspan' || !d.style || !d.style.text || d.invisible) { return; }
			drawn[d.style.text] = true;
			var r = d.getBoundingRect().clone();
			var m = d.getComputedTransform();
			if (m) { r.applyTransform(m); }
			if (r.x < -1 || r.x + r.width > w + 1 || r.y < -1 || r.y > h + 1) {
				out.push(el.id + ': "' + d.style.text + '" drawn at x ' + Math.round(r.x) + ' to ' + Math.round(r.x + r.width) + ' of ' + w);
			}
		});
		var opt = c.getOption(), legend = (opt.legend || [])[0];
		if (legend && legend.show !== false) {
			(opt.series || []).forEach(function (s) {
				if (s.name && !drawn[s.name]) { out.push(el.id + ': legend item "' + s.name + '" not drawn'); }
			});
		}
	});
	return out;
})()`

// At a phone's width as at a desktop's, the charts of a board (its
// charts tab), of an entry (each run's curves) and of a comparison draw
// every text inside their canvas, axis titles and wrapped titles
// included, and every legend item, no text of a chart over another
// (chartOverlaps); an entry's page with the runner's
// clock of each run is no wider than the window; a comparison's values
// each say whose they are once its table is a column of cards; and the
// home page, before the first edition and after, reaches each level in
// one tap.
func TestPagesReadOnAPhone(t *testing.T) {
	p := startReal(t)
	entry, _ := rerunEntry(t, p, 0.96, 0.96)
	clocked, _ := clockedEntry(t, p)
	if _, _, err := p.svc.Review(context.Background(), p.users["organiser"], clocked.ID, d5list.ReviewRequest{Action: d5list.ActionPublish}); err != nil {
		t.Fatal(err)
	}
	ids := crossBenchmarkList(t, p)
	empty := startReal(t)
	ctx := browsertest.Start(t, 120*time.Second)
	compare := fmt.Sprintf("/compare?ids=%d,%d", ids["rack-1 "+l2Digits+" 8"], ids["box "+l2Digits+" 11"])
	for _, width := range []int64{390, 1280} {
		for _, page := range []struct{ path, wait string }{
			{"/benchmarks/" + l2Digits + "#charts", "#records-chart canvas"},
			{"/submissions/" + strconv.FormatInt(entry, 10), "#accuracy-chart canvas"},
			{compare, "#compare-curves canvas"},
			{"/submissions/" + strconv.FormatInt(clocked.ID, 10), "#accuracy-chart canvas"},
		} {
			var faults, overlaps []string
			var fits bool
			var charts int
			err := chromedp.Run(ctx,
				chromedp.Navigate("about:blank"),
				chromedp.EmulateViewport(width, 900),
				chromedp.Navigate(p.url+page.path),
				chromedp.WaitVisible(page.wait, chromedp.ByQuery),
				chromedp.Evaluate(chartFaults, &faults),
				chromedp.Evaluate(fitsWindow, &fits),
				chromedp.Evaluate(`document.querySelectorAll('[data-chart]').length`, &charts),
				chromedp.Evaluate(chartOverlaps, &overlaps),
			)
			if err != nil {
				t.Fatalf("%d px, %s: %v", width, page.path, err)
			}
			if charts == 0 {
				t.Errorf("%d px, %s: no chart on the page", width, page.path)
			}
			for _, f := range append(faults, overlaps...) {
				t.Errorf("%d px, %s: %s", width, page.path, f)
			}
			if !fits {
				t.Errorf("%d px, %s: the page is wider than the window", width, page.path)
			}
		}

		var labels []string
		var want []string
		err := chromedp.Run(ctx,
			chromedp.Navigate(p.url+compare),
			chromedp.WaitVisible(`[data-testid="compare-facts"]`, chromedp.ByQuery),
			chromedp.Evaluate(`Array.from(document.querySelectorAll('[data-testid="compare-facts"] [data-testid="compare-value"]')).map(function (td) {
				return getComputedStyle(td, '::before').content; })`, &labels),
			chromedp.Evaluate(`Array.from(document.querySelectorAll('[data-testid="compare-facts"] [data-testid="compare-value"]')).map(function (td) {
				return '"' + td.getAttribute('data-label') + '"'; })`, &want),
		)
		if err != nil {
			t.Fatal(err)
		}
		first := `"Submission ` + strconv.FormatInt(ids["rack-1 "+l2Digits+" 8"], 10) + `: Acme Lab · rack-1"`
		if len(labels) < 4 || len(want) != len(labels) || (width < 600 && labels[0] != first) {
			t.Fatalf("%d px: the comparison's values are labelled %q, the first want %s", width, labels, first)
		}
		for i := range labels {
			if width < 600 && labels[i] != want[i] || width >= 600 && labels[i] != "none" {
				t.Errorf("%d px: compared value %d is labelled %s, want %s on a phone and no label on a desktop", width, i, labels[i], want[i])
				break
			}
		}
	}

	// On a phone the jump list is on the first screen, and its L3 link
	// brings L3 to the top, on the home page before the first edition (the
	// benchmarks by level) and after it (the latest edition).
	for _, portal := range []*realPortal{empty, p} {
		var linkTop, sectionTop float64
		var target string
		err := chromedp.Run(ctx,
			chromedp.Navigate("about:blank"),
			chromedp.EmulateViewport(390, 800),
			chromedp.Navigate(portal.url+"/"),
			chromedp.WaitVisible(`[data-testid="level-jump-link"][data-level="3"]`, chromedp.ByQuery),
			chromedp.Evaluate(`document.querySelector('[data-testid="level-jump-link"][data-level="3"]').getBoundingClientRect().bottom`, &linkTop),
			chromedp.Click(`[data-testid="level-jump-link"][data-level="3"]`, chromedp.ByQuery),
			chromedp.Sleep(200*time.Millisecond),
			chromedp.Evaluate(`location.hash`, &target),
			chromedp.Evaluate(`document.getElementById(location.hash.slice(1)).getBoundingClientRect().top`, &sectionTop),
		)
		if err != nil {
			t.Fatal(err)
		}
		if linkTop > 800 || target != "#level-3" || sectionTop < -1 || sectionTop > 50 {
			t.Errorf("home page of %s: the L3 link ends %.0f px down, leads to %q, whose section is then %.0f px from the top; want it on the first screen and L3 at the top",
				portal.url, linkTop, target, sectionTop)
		}
	}
}
