package web_test

import (
	"context"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto/dom"
	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"

	d5list "github.com/deep500/d5list"
	"github.com/deep500/d5list/internal/browsertest"
)

// layoutWidths are a desktop window and a phone.
var layoutWidths = []int64{1280, 390}

// sideScroll describes what makes the page wider than its window: the
// document's widths, and the elements that reach past its right edge
// (the innermost ones, so that the culprit is named, not its parents).
const sideScroll = `(function () {
	var d = document.documentElement;
	if (d.scrollWidth <= d.clientWidth) { return ''; }
	var past = [];
	document.querySelectorAll('body *').forEach(function (el) {
		var r = el.getBoundingClientRect();
		if (r.width === 0 || r.right <= d.clientWidth + 1) { return; }
		for (var c = el.firstElementChild; c; c = c.nextElementSibling) {
			if (c.getBoundingClientRect().right > d.clientWidth + 1) { return; }
		}
		past.push(el.tagName.toLowerCase() + (el.className ? '.' + String(el.className).replace(/ /g, '.') : '') +
			(el.dataset.testid ? '[' + el.dataset.testid + ']' : '') + ' to ' + Math.round(r.right));
	});
	return 'scrollWidth ' + d.scrollWidth + ' > clientWidth ' + d.clientWidth + ': ' + past.slice(0, 6).join(', ');
})()`

// boardFits says where the board's table is wider than the box it scrolls
// in, or its Details column ends past the window.
const boardFits = `(function () {
	var table = document.querySelector('[data-testid="leaderboard"]'), wrap = table.parentElement;
	var out = [];
	if (wrap.scrollWidth > wrap.clientWidth) { out.push('the table is ' + wrap.scrollWidth + ' px wide in a box of ' + wrap.clientWidth); }
	var heads = table.querySelectorAll('thead th'), last = heads[heads.length - 1];
	// On a phone the head is hidden and each row is a card.
	var cards = getComputedStyle(table.querySelector('thead')).position === 'absolute';
	if (!cards && last.getBoundingClientRect().right > document.documentElement.clientWidth) {
		out.push('its last column, ' + last.textContent + ', ends at ' + Math.round(last.getBoundingClientRect().right));
	}
	return out.join('; ');
})()`

// cellLabels gives, for each cell of the selector, the label a reader sees
// with it: the card's label (the cell's ::before) where the table is a
// column of cards, else its column's heading, if that heading is shown.
const cellLabels = `(function (sel) {
	return Array.from(document.querySelectorAll(sel)).map(function (td) {
		var before = getComputedStyle(td, '::before');
		if (before.content && before.content !== 'none' && before.display !== 'none') {
			return before.content.replace(/^"|"$/g, '');
		}
		var th = td.closest('table').querySelectorAll('thead tr:last-child th')[td.cellIndex];
		var r = th && th.getBoundingClientRect();
		if (!th || r.width < 2 || r.height < 2 || getComputedStyle(th.closest('thead')).position === 'absolute') { return ''; }
		return th.textContent.trim();
	});
})`

// brokenWords lists, in the cells of the selector, each word (a run
// without spaces) the browser broke over two lines although it fitted the
// cell's width on one: "Syntheti|c", "2026-|11-28".
const brokenWords = `(function (sel) {
	var out = [];
	document.querySelectorAll(sel).forEach(function (td) {
		var cs = getComputedStyle(td);
		var room = td.clientWidth - parseFloat(cs.paddingLeft) - parseFloat(cs.paddingRight);
		var walker = document.createTreeWalker(td, NodeFilter.SHOW_TEXT);
		for (var n = walker.nextNode(); n; n = walker.nextNode()) {
			var re = /\S+/g, m;
			while ((m = re.exec(n.data))) {
				var range = document.createRange();
				range.setStart(n, m.index);
				range.setEnd(n, m.index + m[0].length);
				var rects = Array.from(range.getClientRects()).filter(function (r) { return r.width > 0; });
				var tops = {}, width = 0;
				rects.forEach(function (r) { tops[Math.round(r.top)] = true; width += r.width; });
				if (Object.keys(tops).length > 1 && width <= room) {
					out.push('"' + m[0] + '" broken over ' + Object.keys(tops).length + ' lines in a cell with ' + Math.round(room) + ' px of room for its ' + Math.round(width));
				}
			}
		}
	});
	return out;
})`

// valueBoxes gives the boxes of the text of each cell of the selector, in
// the window's coordinates, as [left, top, right, bottom].
const valueBoxes = `(function (sel) {
	return Array.from(document.querySelectorAll(sel)).map(function (td) {
		var range = document.createRange();
		range.selectNodeContents(td);
		return Array.from(range.getClientRects()).filter(function (r) { return r.width > 0; })
			.map(function (r) { return [r.left, r.top, r.right, r.bottom]; });
	});
})`

// box is a rectangle in the window's coordinates.
type box struct{ left, top, right, bottom float64 }

// apart reports whether a and b are read as two things: one above the
// other, or side by side at least gap px apart.
func apart(a, b box, gap float64) bool {
	return a.bottom <= b.top+0.5 || b.bottom <= a.top+0.5 || a.right+gap <= b.left || b.right+gap <= a.left
}

// beforeBoxes gives the box the browser laid out for each ::before of the
// cells of the selector (nil where a cell has none), as DevTools reads it:
// a pseudo-element has no DOM rectangle of its own.
func beforeBoxes(t *testing.T, tab context.Context, sel string) []*box {
	t.Helper()
	var n int
	browse(t, tab, "count "+sel, chromedp.Evaluate(`document.querySelectorAll(`+strconv.Quote(sel)+`).length`, &n))
	out := make([]*box, n)
	for i := range n {
		var cell *runtime.RemoteObject
		var cellRect []float64
		expr := `document.querySelectorAll(` + strconv.Quote(sel) + `)[` + strconv.Itoa(i) + `]`
		browse(t, tab, "find a cell",
			chromedp.Evaluate(expr, &cell),
			chromedp.Evaluate(`(function (r) { return [r.left, r.top]; })(`+expr+`.getBoundingClientRect())`, &cellRect))
		err := chromedp.Run(tab, chromedp.ActionFunc(func(ctx context.Context) error {
			defer func() { _ = runtime.ReleaseObject(cell.ObjectID).Do(ctx) }()
			node, err := dom.DescribeNode().WithObjectID(cell.ObjectID).Do(ctx)
			if err != nil {
				return err
			}
			cellModel, err := dom.GetBoxModel().WithObjectID(cell.ObjectID).Do(ctx)
			if err != nil {
				return err
			}
			// DevTools and the page measure from the same origin, or the
			// comparison below would mean nothing.
			if math.Abs(cellModel.Border[0]-cellRect[0]) > 1 || math.Abs(cellModel.Border[1]-cellRect[1]) > 1 {
				return fmt.Errorf("DevTools puts the cell at %v, the page at %v", cellModel.Border[:2], cellRect)
			}
			for _, pe := range node.PseudoElements {
				if pe.PseudoType != "before" {
					continue
				}
				m, err := dom.GetBoxModel().WithBackendNodeID(pe.BackendNodeID).Do(ctx)
				if err != nil {
					return err
				}
				q := m.Border
				out[i] = &box{min(q[0], q[6]), min(q[1], q[3]), max(q[2], q[4]), max(q[5], q[7])}
			}
			return nil
		}))
		if err != nil {
			t.Fatalf("the box of %s's label: %v", expr, err)
		}
	}
	return out
}

// shotFor saves a full-page screenshot under D5LIST_ARTEFACTS, where set,
// to look at what a failure describes.
func shotFor(t *testing.T, tab context.Context, name string) {
	dir := os.Getenv("D5LIST_ARTEFACTS")
	if dir == "" {
		return
	}
	var png []byte
	if err := chromedp.Run(tab, chromedp.FullScreenshot(&png, 90)); err != nil {
		t.Logf("screenshot %s: %v", name, err)
		return
	}
	if err := os.WriteFile(filepath.Join(dir, name+".png"), png, 0o644); err != nil {
		t.Logf("screenshot %s: %v", name, err)
	}
}

// At a desktop's 1280 px and a phone's 390 px, with an organiser's full
// header: the home page, a board, an entry, a comparison and the console
// are no wider than the window, and the board's table, Details column
// included, fits without scrolling sideways; an entry's score says which
// value is claimed and which measured; a comparison's cards keep each
// value apart from its label and break no word that fits its card; the
// header's links take at most two lines and the board's filters one line
// each on a phone.
func TestLayoutAtDesktopAndPhoneWidths(t *testing.T) {
	p := startReal(t)
	ids := crossBenchmarkList(t, p)
	entry := remeasuredEntry(t, p, d5list.StatusVerified, nil)
	// A row in the console's review queue, its widest table.
	remeasuredEntry(t, p, d5list.StatusNeedsReview, []d5list.Reason{{Code: "timing_too_noisy", Message: "its runs' work took from 0.30 to 1.70 of their median"}})
	compare := fmt.Sprintf("/compare?ids=%d,%d,%d", ids["rack-1 "+l2Digits+" 8"], ids["box "+l2Digits+" 11"], entry)
	browser := browsertest.Start(t, 120*time.Second)
	for _, width := range layoutWidths {
		t.Run(strconv.FormatInt(width, 10)+"px", func(t *testing.T) {
			tab := tabAt(t, browser, width)
			browse(t, tab, "log in as an organiser",
				chromedp.Navigate(p.url+"/login?next=/console"),
				chromedp.SendKeys(`[data-testid="login-name"]`, "organiser-user", chromedp.ByQuery),
				chromedp.SendKeys(`[data-testid="login-password"]`, "password of organiser-user", chromedp.ByQuery),
				chromedp.Click(`[data-testid="login-submit"]`, chromedp.ByQuery),
				// The console's own section, not the header's link: a tab
				// of a browser already logged in shows that link on the
				// login page, and the next navigation would abort the
				// form's.
				chromedp.WaitVisible(`[data-testid="console-review"]`, chromedp.ByQuery))
			for _, page := range []struct{ name, path, ready string }{
				{"home", "/", `[data-testid="site-header"]`},
				{"board", "/benchmarks/" + l2Digits, `[data-testid="leaderboard"]`},
				{"entry", "/submissions/" + strconv.FormatInt(entry, 10), `[data-testid="score-table"]`},
				{"compare", compare, `[data-testid="compare-facts"]`},
				{"console", "/console", `[data-testid="review-row"]`},
			} {
				var scroll string
				browse(t, tab, "open the "+page.name,
					chromedp.Navigate(p.url+page.path),
					chromedp.WaitReady(page.ready, chromedp.ByQuery),
					chromedp.Evaluate(sideScroll, &scroll))
				shotFor(t, tab, fmt.Sprintf("layout-%d-%s", width, page.name))
				if scroll != "" {
					t.Errorf("%d px, the %s (%s) scrolls sideways: %s", width, page.name, page.path, scroll)
				}
			}
			// The L3 board has more level columns; with every status the
			// Details column carries badges.
			for _, board := range []string{l2Digits, l3Digits, l2Digits + "?status=all"} {
				checkBoard(t, tab, p, board, width)
			}
			checkScoreLabels(t, tab, p, entry)
			checkCompareCards(t, tab, p, compare, width)
			if width < 600 {
				checkHeaderLines(t, tab, p)
			}
		})
	}
}

// checkBoard: the board's table fits its box, and on a phone each filter
// has a line of its own.
func checkBoard(t *testing.T, tab context.Context, p *realPortal, board string, width int64) {
	t.Helper()
	var fits string
	var shared []string
	browse(t, tab, "read the board",
		chromedp.Navigate(p.url+"/benchmarks/"+board),
		chromedp.WaitReady(`[data-testid="leaderboard"]`, chromedp.ByQuery),
		chromedp.Evaluate(boardFits, &fits),
		chromedp.Evaluate(`(function () {
			var fields = Array.from(document.querySelectorAll('[data-testid="filters"] > label, [data-testid="filters"] > button'));
			var out = [];
			for (var i = 1; i < fields.length; i++) {
				var a = fields[i - 1].getBoundingClientRect(), b = fields[i].getBoundingClientRect();
				if (b.top < a.bottom - 1) { out.push(fields[i - 1].textContent.trim().split(/\s+/)[0] + ' / ' + fields[i].textContent.trim().split(/\s+/)[0]); }
			}
			return out;
		})()`, &shared))
	if fits != "" {
		t.Errorf("%d px, the board %s scrolls sideways: %s", width, board, fits)
	}
	if width < 600 && len(shared) > 0 {
		t.Errorf("%d px, the board %s: its filters share lines: %q", width, board, shared)
	}
}

// checkScoreLabels: the entry's claimed and measured values are each
// labelled so, as a table's columns or as a card's lines.
func checkScoreLabels(t *testing.T, tab context.Context, p *realPortal, entry int64) {
	t.Helper()
	var claimed, measured []string
	browse(t, tab, "read the entry's score",
		chromedp.Navigate(p.url+"/submissions/"+strconv.FormatInt(entry, 10)),
		chromedp.WaitReady(`[data-testid="score-table"]`, chromedp.ByQuery),
		chromedp.Evaluate(cellLabels+`('[data-testid="score-claimed"]')`, &claimed),
		chromedp.Evaluate(cellLabels+`('[data-testid="score-measured"]')`, &measured))
	if len(claimed) != 1 || !strings.EqualFold(claimed[0], "claimed") {
		t.Errorf("the claimed score is labelled %q, want claimed", claimed)
	}
	if len(measured) != 1 || !strings.EqualFold(measured[0], "measured") {
		t.Errorf("the measured score is labelled %q, want measured", measured)
	}
	var all []string
	browse(t, tab, "read the score's other rows",
		chromedp.Evaluate(cellLabels+`('[data-testid="score-table"] tbody td')`, &all))
	for i, l := range all {
		if want := []string{"claimed", "measured"}[i%2]; !strings.EqualFold(l, want) {
			t.Errorf("value %d of the score table is labelled %q, want %s", i, l, want)
		}
	}
}

// checkCompareCards: each compared value is apart from its label, and no
// word of a value or label is broken although it fits.
func checkCompareCards(t *testing.T, tab context.Context, p *realPortal, compare string, width int64) {
	t.Helper()
	const cells = `[data-testid="compare-facts"] [data-testid="compare-value"]`
	var labels []string
	var values [][][]float64
	var broken []string
	browse(t, tab, "read the comparison",
		chromedp.Navigate(p.url+compare),
		chromedp.WaitReady(`[data-testid="compare-facts"]`, chromedp.ByQuery),
		chromedp.Evaluate(cellLabels+`('`+cells+`')`, &labels),
		chromedp.Evaluate(valueBoxes+`('`+cells+`')`, &values),
		chromedp.Evaluate(brokenWords+`('[data-testid="compare"] td, [data-testid="compare"] th')`, &broken))
	for _, b := range broken {
		t.Errorf("%d px, the comparison: %s", width, b)
	}
	if width >= 600 {
		return
	}
	befores := beforeBoxes(t, tab, cells)
	if len(befores) < 8 || len(values) != len(befores) {
		t.Fatalf("%d px, the comparison has %d values and %d labels; want its cards", width, len(values), len(befores))
	}
	for i, label := range befores {
		if label == nil || labels[i] == "" {
			t.Errorf("%d px, compared value %d has no label", width, i)
			continue
		}
		for _, v := range values[i] {
			if vb := (box{v[0], v[1], v[2], v[3]}); !apart(*label, vb, 8) {
				t.Errorf("%d px, compared value %d runs into its label %q: label at %.0f,%.0f–%.0f,%.0f, value at %.0f,%.0f–%.0f,%.0f",
					width, i, labels[i], label.left, label.top, label.right, label.bottom, vb.left, vb.top, vb.right, vb.bottom)
				break
			}
		}
	}
}

// checkHeaderLines: the header's links, an organiser's all of them, take
// at most two lines.
func checkHeaderLines(t *testing.T, tab context.Context, p *realPortal) {
	t.Helper()
	var lines int
	browse(t, tab, "read the header",
		chromedp.Navigate(p.url+"/"),
		chromedp.WaitReady(`[data-testid="site-header"]`, chromedp.ByQuery),
		chromedp.Evaluate(`(function () {
			// A link broken over two lines is two boxes, one a line.
			var rects = Array.from(document.querySelectorAll('[data-testid="site-header"] nav a, [data-testid="site-header"] nav button'))
				.flatMap(function (el) { return Array.from(el.getClientRects()); })
				.filter(function (r) { return r.width > 0; })
				.sort(function (a, b) { return a.top - b.top; });
			var lines = 0, bottom = -Infinity;
			rects.forEach(function (r) {
				if (r.top >= bottom - 2) { lines++; bottom = r.bottom; } else { bottom = Math.max(bottom, r.bottom); }
			});
			return lines;
		})()`, &lines))
	if lines > 2 || lines == 0 {
		t.Errorf("390 px, the header's links take %d lines, want at most 2", lines)
	}
}
