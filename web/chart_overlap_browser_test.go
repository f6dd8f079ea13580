package web_test

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
