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

// chartOverlaps lists, for every chart ECharts drew on the page, each two
// texts it drew over one another (an axis title over the subtitle, the
// legend over an axis title). ECharts draws to a canvas, so the boxes come
// from its own display list, as it placed each line of text.
const chartOverlaps = `(function () {
	var out = [], ctx = document.createElement('canvas').getContext('2d');
	// textBox is the box a line of text covers as the canvas draws it, from
	// its font, alignment and baseline; zrender's own box for a line of
	// text is a few pixels high whatever its font.
	function textBox(d) {
		var st = d.style, font = st.font || '12px sans-serif';
		ctx.font = font;
		var size = parseFloat((font.match(/(\d+(\.\d+)?)px/) || [0, 12])[1]);
		var w = ctx.measureText(st.text).width, x = st.x || 0, y = st.y || 0;
		if (st.textAlign === 'center') { x -= w / 2; } else if (st.textAlign === 'right' || st.textAlign === 'end') { x -= w; }
		if (st.textBaseline === 'middle') { y -= size / 2; } else if (st.textBaseline === 'bottom' || st.textBaseline === 'alphabetic') { y -= size; }
		var r = new echarts.graphic.BoundingRect(x, y, w, size);
		var m = d.getComputedTransform();
		if (m) { r.applyTransform(m); }
		return r;
	}
	document.querySelectorAll('[data-chart]').forEach(function (el) {
		var c = echarts.getInstanceByDom(el);
		if (!c) { out.push(el.id + ': not drawn'); return; }
		var boxes = [];
		c.getZr().storage.getDisplayList(true).forEach(function (d) {
			if (d.type !== 'tspan' || !d.style || !d.style.text || d.invisible) { return; }
			boxes.push({text: d.style.text, r: textBox(d)});
		});
		for (var i = 0; i < boxes.length; i++) {
			for (var j = i + 1; j < boxes.length; j++) {
				var a = boxes[i].r, b = boxes[j].r;
				// One pixel of slack: lines of one wrapped title touch.
				var w = Math.min(a.x + a.width, b.x + b.width) - Math.max(a.x, b.x);
				var h = Math.min(a.y + a.height, b.y + b.height) - Math.max(a.y, b.y);
				if (w > 1 && h > 1) {
					out.push(el.id + ': "' + boxes[i].text + '" at (' + Math.round(a.x) + ',' + Math.round(a.y) + ') overlaps "' +
						boxes[j].text + '" at (' + Math.round(b.x) + ',' + Math.round(b.y) + ')');
				}
			}
		}
	});
	return out;
})()`

// At a desktop's width and a phone's, no chart of a board (each kind on
// its charts tab), of an entry (its runs' curves) or of a comparison draws
// one text over another: titles, subtitles, axis titles, axis labels, the
// target's label and the legend each keep their own place.
func TestChartTextsDoNotOverlap(t *testing.T) {
	p := startReal(t)
	entry, _ := rerunEntry(t, p, 0.96, 0.96)
	clocked, _ := clockedEntry(t, p)
	if _, _, err := p.svc.Review(context.Background(), p.users["organiser"], clocked.ID, d5list.ReviewRequest{Action: d5list.ActionPublish}); err != nil {
		t.Fatal(err)
	}
	ids := crossBenchmarkList(t, p)
	ctx := browsertest.Start(t, 120*time.Second)
	compare := fmt.Sprintf("/compare?ids=%d,%d", ids["rack-1 "+l2Digits+" 8"], ids["box "+l2Digits+" 11"])
	pages := []struct{ path, wait string }{
		{"/benchmarks/" + l2Digits + "#charts", "#records-chart canvas"},
		{"/submissions/" + strconv.FormatInt(entry, 10), "#accuracy-chart canvas"},
		{compare, "#compare-curves canvas"},
		{"/submissions/" + strconv.FormatInt(clocked.ID, 10), "#accuracy-chart canvas"},
	}
	for _, width := range []int64{1280, 390} {
		for _, page := range pages {
			var overlaps []string
			var charts int
			err := chromedp.Run(ctx,
				chromedp.Navigate("about:blank"),
				chromedp.EmulateViewport(width, 900),
				chromedp.Navigate(p.url+page.path),
				chromedp.WaitVisible(page.wait, chromedp.ByQuery),
				chromedp.Evaluate(`document.querySelectorAll('[data-chart]').length`, &charts),
				chromedp.Evaluate(chartOverlaps, &overlaps),
			)
			if err != nil {
				t.Fatalf("%d px, %s: %v", width, page.path, err)
			}
			if charts == 0 {
				t.Errorf("%d px, %s: no chart on the page", width, page.path)
			}
			for _, o := range overlaps {
				t.Errorf("%d px, %s: %s", width, page.path, o)
			}
		}
	}
}
