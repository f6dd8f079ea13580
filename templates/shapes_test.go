package templates

import (
	"bytes"
	"context"
	"testing"

	"github.com/PuerkitoBio/goquery"

	d5list "github.com/deep500/d5list"
)

// A Level 0 page shows each operator shape once, claimed against re-run:
// its time the median over the runs, its errors the worst run's, and a dash
// for a shape one side did not measure.
func TestShapesTable(t *testing.T) {
	run := func(shapes ...d5list.ShapeMetrics) d5list.RunMetrics { return d5list.RunMetrics{Shapes: shapes} }
	shape := func(name string, ms, relL2 float64) d5list.ShapeMetrics {
		return d5list.ShapeMetrics{Shape: name, Metrics: map[string]float64{
			d5list.MetricOpTime: ms, d5list.MetricOpRelL2Error: relL2, d5list.MetricOpMaxError: relL2 * 100}}
	}
	sub := &d5list.Submission{
		Claimed: &d5list.Result{Runs: []d5list.RunMetrics{
			run(shape("1760x16x1760", 10, 1e-15)), run(shape("1760x16x1760", 30, 3e-15)), run(shape("1760x16x1760", 12, 2e-15)),
		}},
		Measured: &d5list.Result{Runs: []d5list.RunMetrics{
			run(shape("1760x16x1760", 20, 1e-15), shape("512x64x1024", 8, 4e-15)),
			run(shape("1760x16x1760", 21, 3e-15), shape("512x64x1024", 9, 4e-15)),
			run(shape("1760x16x1760", 22, 2e-15), shape("512x64x1024", 7, 4e-15)),
		}},
	}
	var buf bytes.Buffer
	if err := shapesTable(ShapeRows(sub)).Render(context.Background(), &buf); err != nil {
		t.Fatal(err)
	}
	doc, err := goquery.NewDocumentFromReader(&buf)
	if err != nil {
		t.Fatal(err)
	}
	cell := func(shape, side, metric string) string {
		return doc.Find(`[data-testid="shape-row"][data-shape="` + shape + `"] [data-testid="shape-` + side + `"][data-metric="` + metric + `"]`).Text()
	}
	if n := doc.Find(`[data-testid="shape-row"]`).Length(); n != 2 {
		t.Fatalf("%d shape rows, want 2", n)
	}
	for _, c := range []struct{ shape, side, metric, want string }{
		{"1760x16x1760", "claimed", d5list.MetricOpTime, "12.0"},
		{"1760x16x1760", "measured", d5list.MetricOpTime, "21.0"},
		{"1760x16x1760", "claimed", d5list.MetricOpRelL2Error, formatNumber(3e-15)},
		{"1760x16x1760", "measured", d5list.MetricOpMaxError, formatNumber(3e-13)},
		{"512x64x1024", "claimed", d5list.MetricOpTime, "—"},
		{"512x64x1024", "measured", d5list.MetricOpTime, "8.00"},
	} {
		if got := cell(c.shape, c.side, c.metric); got != c.want {
			t.Errorf("%s %s %s: %q, want %q", c.shape, c.side, c.metric, got, c.want)
		}
	}
	if first := doc.Find(`[data-testid="shape-row"]`).First().AttrOr("data-shape", ""); first != "1760x16x1760" {
		t.Errorf("first row %q, want the claim's first shape", first)
	}
}
