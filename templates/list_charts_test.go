package templates

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	d5list "github.com/deep500/d5list"
	"github.com/deep500/d5list/leaderboard"
)

var update = flag.Bool("update", false, "rewrite testdata/*.golden.json from the current output")

func chartBoard() *d5list.Leaderboard {
	at := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	bench := d5list.Benchmark{ID: "l2-x", Name: "X", Level: 2,
		Quality: d5list.QualityTarget{Metric: "eval_accuracy", Target: 0.97, Direction: d5list.HigherIsBetter},
		Ranking: d5list.RankingRule{Metric: d5list.MetricTimeToTrain, Direction: d5list.LowerIsBetter, Unit: "s"}}
	e := func(rank int, id int64, sys, fw, acc string, n int, cost, v, lo, hi float64) d5list.Entry {
		return d5list.Entry{Rank: rank, SubmissionID: id, Submitter: "Lab " + sys, SystemName: sys, Framework: fw, Accelerator: acc,
			// The worst was submitted first, each later one better: four
			// records, one a day.
			Accelerators: n, CostPerHour: cost, Value: v, Min: lo, Max: hi, Runs: 5, Status: d5list.StatusVerified, CreatedAt: at.AddDate(0, 0, -rank)}
	}
	return &d5list.Leaderboard{Benchmark: bench, Entries: []d5list.Entry{
		e(1, 11, "a", "torch", "NVIDIA H100", 64, 300, 12.5, 12, 13.25),
		e(2, 12, "b", "jax", "Google TPU v5e", 8, 40, 95, 90, 101),
		e(3, 13, "c", "torch", "NVIDIA A100", 8, 30, 130, 120, 150),
		e(4, 14, "d", "numpy", "", 0, 0, 2400, 2300, 2600),
	}}
}

// TestChartOptionsGolden snapshots the option JSON of every list chart;
// review a change with go test ./templates -run Golden -update && git diff.
func TestChartOptionsGolden(t *testing.T) {
	board := chartBoard()
	curves := []Curve{{Entry: board.Entries[0], Points: [][2]float64{{4, 0.8}, {12.5, 0.975}}}, {Entry: board.Entries[1], Points: [][2]float64{{50, 0.9}, {95, 0.971}}}}
	dev := leaderboard.Development([]string{"2025-11", "2026-05"}, [][]d5list.Entry{board.Entries[1:], board.Entries})
	charts := BoardCharts(&board.Benchmark, leaderboard.SummaryOf(board), curves, dev)
	want := []string{"ranking-chart", "records-chart", "accuracy-top10-chart", "pareto-accelerators-chart", "pareto-cost-chart", "development-chart", "vendor-shares-chart", "framework-shares-chart"}
	if len(charts) != len(want) {
		t.Fatalf("%d charts, want %d", len(charts), len(want))
	}
	for i, c := range charts {
		if c.ID != want[i] {
			t.Errorf("chart %d is %s, want %s", i, c.ID, want[i])
		}
		c.Chart.Validate()
		data, err := json.MarshalIndent(c.Chart.JSON(), "", "  ")
		if err != nil {
			t.Fatal(err)
		}
		data = append(data, '\n')
		path := filepath.Join("testdata", c.ID+".golden.json")
		if *update {
			if err := os.MkdirAll("testdata", 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(path, data, 0o644); err != nil {
				t.Fatal(err)
			}
			continue
		}
		golden, err := os.ReadFile(path)
		if err != nil {
			t.Fatalf("%v (run go test ./templates -update to create it)", err)
		}
		if !bytes.Equal(data, golden) {
			t.Errorf("%s differs from the output; got:\n%s", path, data)
		}
	}
}

// TestChartSemantics checks what the snapshots encode, so that an -update
// cannot bless a wrong chart unnoticed.
func TestChartSemantics(t *testing.T) {
	board := chartBoard()
	opt := func(c ListChart) map[string]any {
		c.Chart.Validate()
		data, _ := json.Marshal(c.Chart.JSON())
		var m map[string]any
		_ = json.Unmarshal(data, &m)
		return m
	}
	axisType := func(m map[string]any, axis string) string {
		return m[axis].([]any)[0].(map[string]any)["type"].(string)
	}
	rank := opt(RankingRangeChart(&board.Benchmark, board.Entries, len(board.Entries)))
	if got := axisType(rank, "yAxis"); got != "log" {
		t.Errorf("values from 12 s to 2600 s: y axis %q, want log", got)
	}
	series := rank["series"].([]any)
	box := series[1].(map[string]any)
	if box["type"] != "boxplot" {
		t.Fatalf("second series is %v, want the runs' range as a boxplot", box["type"])
	}
	first := box["data"].([]any)[0].(map[string]any)["value"].([]any)
	// 13.25 s is shown as the board prints it, three significant digits.
	if first[0].(float64) != 12 || first[4].(float64) != 13.2 {
		t.Errorf("range of #1 is %v, want 12..13.2", first)
	}

	pareto := ParetoChart("p", &board.Benchmark, board.Entries, board.Entries, len(board.Entries), "accelerators (count)", func(e d5list.Entry) float64 { return float64(e.Accelerators) })
	var front []string
	for _, r := range pareto.Table.Rows {
		if r[3] == "true" {
			front = append(front, r[0])
		}
	}
	// At 8 accelerators b (95 s) beats c (130 s); a (64) is faster still;
	// d declares no accelerator and is left out.
	if len(pareto.Table.Rows) != 3 || len(front) != 2 || front[0] != "#2 Lab b · b" || front[1] != "#1 Lab a · a" {
		t.Errorf("Pareto rows %v, front %v", pareto.Table.Rows, front)
	}

	shares := leaderboard.Shares(&board.Benchmark, board.Entries, leaderboard.Vendor)
	got := map[string]int{}
	var perf float64
	for _, s := range shares {
		got[s.Group] = s.Entries
		perf += s.Performance
	}
	if got["NVIDIA"] != 2 || got["Google"] != 1 || got["CPU only"] != 1 || perf < 0.9999 || perf > 1.0001 {
		t.Errorf("vendor shares %+v", shares)
	}
	// The fastest entry holds the largest share of performance.
	if shares[0].Group != "NVIDIA" || shares[0].Performance < 0.8 {
		t.Errorf("NVIDIA's performance share %v", shares[0].Performance)
	}
}

// The development chart and its table show the latest
// MaxDevelopmentEditions editions, and say so where there were more.
func TestDevelopmentChartShowsTheLatestEditions(t *testing.T) {
	bench := &chartBoard().Benchmark
	var points []leaderboard.DevelopmentPoint
	for i := range MaxDevelopmentEditions + 20 {
		points = append(points, leaderboard.DevelopmentPoint{Edition: fmt.Sprintf("e%03d", i), Entries: 3, Best: float64(100 - i%50), Median: 120})
	}
	c := DevelopmentChart(bench, points)
	if len(c.Table.Rows) != MaxDevelopmentEditions || c.Table.Rows[0][0] != "e020" || c.Table.Rows[len(c.Table.Rows)-1][0] != "e119" {
		t.Fatalf("%d rows, %v to %v; want the latest %d, e020 to e119", len(c.Table.Rows), c.Table.Rows[0][0], c.Table.Rows[len(c.Table.Rows)-1][0], MaxDevelopmentEditions)
	}
	if want := fmt.Sprintf("the latest %d of %d editions", MaxDevelopmentEditions, MaxDevelopmentEditions+20); !strings.Contains(c.Table.Caption, want) {
		t.Errorf("caption %q does not say %q", c.Table.Caption, want)
	}
	c.Chart.Validate()
	raw, err := json.Marshal(c.Chart.JSON())
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Contains(raw, []byte(`"e019"`)) || !bytes.Contains(raw, []byte(`"e020"`)) {
		t.Error("the chart's options are not of the latest editions")
	}
	if few := DevelopmentChart(bench, points[:5]); len(few.Table.Rows) != 5 || few.Table.Caption != "Development across editions" {
		t.Errorf("five editions: %d rows, caption %q", len(few.Table.Rows), few.Table.Caption)
	}
}
