package web_test

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/PuerkitoBio/goquery"

	"github.com/deep500/d5list/static"
)

// drawnChart is what web/testdata/draw_charts.js reports for one chart.
type drawnChart struct {
	ID     string `json:"id"`
	Series int    `json:"series"`
	SVG    string `json:"svg"`
}

// newChartDrawer copies static/js/charts.js and the vendored ECharts into a
// temp dir and returns a function that hands every chart of a page to them
// under Node: it returns the charts drawn and how many the page carries. It
// skips the test where node is not installed, before any server is built.
func newChartDrawer(t *testing.T) func(*goquery.Document) (drawn []drawnChart, onPage int) {
	t.Helper()
	node, err := exec.LookPath("node")
	if err != nil {
		t.Skip("node is not installed")
	}
	dir := t.TempDir()
	for _, name := range []string{"vendor/echarts.min.js", "js/charts.js"} {
		data, err := static.FS.ReadFile(name)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, filepath.Base(name)), data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return func(doc *goquery.Document) ([]drawnChart, int) {
		t.Helper()
		type block struct {
			ID        string `json:"id"`
			OptionsID string `json:"options_id"`
			Text      string `json:"text"`
		}
		var blocks []block
		doc.Find("[data-chart]").Each(func(_ int, el *goquery.Selection) {
			id, _ := el.Attr("id")
			optionsID, _ := el.Attr("data-chart")
			blocks = append(blocks, block{id, optionsID, doc.Find("#" + optionsID).Text()})
		})
		blocksFile := filepath.Join(dir, "blocks.json")
		data, _ := json.Marshal(blocks)
		if err := os.WriteFile(blocksFile, data, 0o644); err != nil {
			t.Fatal(err)
		}
		out, err := exec.Command(node, filepath.Join("testdata", "draw_charts.js"),
			filepath.Join(dir, "echarts.min.js"), filepath.Join(dir, "charts.js"), blocksFile).Output()
		if err != nil {
			var stderr string
			if ee, ok := err.(*exec.ExitError); ok {
				stderr = string(ee.Stderr)
			}
			t.Fatalf("node: %v\n%s", err, stderr)
		}
		var drawn []drawnChart
		if err := json.Unmarshal(out, &drawn); err != nil {
			t.Fatalf("node printed %.200s: %v", out, err)
		}
		return drawn, len(blocks)
	}
}

// TestChartsDrawInECharts runs static/js/charts.js and the vendored ECharts
// under Node on the options the pages carry: the JSON blocks must be what
// ECharts draws, axis names included. Skipped where node is not installed.
func TestChartsDrawInECharts(t *testing.T) {
	draw := newChartDrawer(t)
	s := newServer(t, 0)
	tests := []struct {
		path   string
		chart  string
		series int
		texts  []string
	}{
		{"/benchmarks/l2-digits-mlp-cpu", "leaderboard-chart", 1, []string{"time to train (s)", "#1 First Lab · box-a", "#2 Second &lt;b&gt;Lab&lt;/b&gt; · box-b"}},
		{"/submissions/7", "accuracy-chart", 10, []string{"time since run start (s)", "accuracy (fraction)", "run 0", "run 4"}},
	}
	for _, tt := range tests {
		t.Run(tt.path, func(t *testing.T) {
			drawn, _ := draw(page(t, s, tt.path))
			if len(drawn) != 1 || drawn[0].ID != tt.chart || drawn[0].Series != tt.series {
				t.Fatalf("charts.js drew %+v, want %s with %d series", drawn, tt.chart, tt.series)
			}
			for _, text := range tt.texts {
				if !strings.Contains(drawn[0].SVG, text) {
					t.Errorf("the drawn chart has no %q", text)
				}
			}
		})
	}
}
