package web_test

import (
	"context"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/PuerkitoBio/goquery"

	d5list "github.com/deep500/d5list"
	"github.com/deep500/d5list/leaderboard"
	"github.com/deep500/d5list/portal"
	"github.com/deep500/d5list/store"
	"github.com/deep500/d5list/web"
)

// Each level's board shows the measurements its runs carry besides the
// score (d5list.LevelColumns), headed with their units, and every board a
// hardware and a date column: latency at L1, operator error at L0, and at
// L3 the workers, scaling efficiency and bytes communicated (issue 16).
func TestBoardShowsLevelColumns(t *testing.T) {
	ctx := context.Background()
	db, err := store.Open(ctx, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	type level struct {
		bench    d5list.Benchmark
		measures map[string]float64 // what each run logs
		// want is each level column's header, in order; cell is the text
		// of each column's cell, the same in every row.
		want, cell []string
	}
	levels := []level{
		{
			bench: d5list.Benchmark{ID: "l1-test", Name: "L1 test", Level: 1, Runs: 3,
				Ranking: d5list.RankingRule{Metric: d5list.MetricThroughput, Direction: d5list.HigherIsBetter, Unit: "samples/s"}},
			measures: map[string]float64{d5list.MetricLatencyP50: 1.25, d5list.MetricLatencyP99: 2.5},
			// Throughput is the score column, not a level column again.
			want: []string{"p50 latency (ms)", "p99 latency (ms)"},
			cell: []string{"1.25 ms", "2.50 ms"},
		},
		{
			bench: d5list.Benchmark{ID: "l0-test", Name: "L0 test", Level: 0, Runs: 3,
				Ranking: d5list.RankingRule{Metric: d5list.MetricOpTime, Direction: d5list.LowerIsBetter, Unit: "ms"}},
			measures: map[string]float64{d5list.MetricOpRelL2Error: 2e-16, d5list.MetricOpMaxError: 3e-14},
			want:     []string{"Rel. L2 error", "Max error"},
			cell:     []string{"2.00e-16", "3.00e-14"},
		},
		{
			bench: d5list.Benchmark{ID: "l3-test", Name: "L3 test", Level: 3, Runs: 3,
				Ranking: d5list.RankingRule{Metric: d5list.MetricTimeToTrain, Direction: d5list.LowerIsBetter, Unit: "s"}},
			measures: map[string]float64{d5list.MetricNumberOfWorkers: 4, "scaling_efficiency": 0.875, "communication_bytes": 1.5e6},
			want:     []string{"Workers", "Scaling efficiency", "Communicated", "Final accuracy"},
			cell:     []string{"4", "0.875", "1.4 MB", "0.9750"},
		},
	}
	var benches []d5list.Benchmark
	for _, l := range levels {
		benches = append(benches, l.bench)
	}
	if err := db.UpsertBenchmarks(ctx, benches); err != nil {
		t.Fatal(err)
	}
	for i, l := range levels {
		subs := leaderboard.Synthetic(&levels[i].bench, 6, 3, store.SyntheticSubmitter, uint64(i))
		for j := range subs {
			for _, res := range []*d5list.Result{subs[j].Claimed, subs[j].Measured} {
				if res == nil {
					continue
				}
				for r := range res.Runs {
					for k, v := range l.measures {
						res.Runs[r].Extra[k] = v
					}
				}
			}
		}
		if err := db.InsertSynthetic(ctx, subs); err != nil {
			t.Fatal(err)
		}
	}
	srv := httptest.NewServer(web.New(web.Config{}, portal.New(db, nil, portal.Config{}, nil), nil))
	t.Cleanup(srv.Close)

	for _, l := range levels {
		t.Run(l.bench.ID, func(t *testing.T) {
			a := fetch(t, srv.URL+"/benchmarks/"+l.bench.ID)
			if a.code != 200 {
				t.Fatalf("GET the board: %d", a.code)
			}
			doc, err := goquery.NewDocumentFromReader(strings.NewReader(string(a.body)))
			if err != nil {
				t.Fatal(err)
			}
			var headers, metrics []string
			doc.Find(testid("level-column")).Each(func(_ int, th *goquery.Selection) {
				headers = append(headers, strings.TrimSpace(th.Text()))
				metrics = append(metrics, th.AttrOr("data-metric", ""))
			})
			if strings.Join(headers, "|") != strings.Join(l.want, "|") {
				t.Errorf("level columns %q, want %q", headers, l.want)
			}
			if doc.Find(testid("column-hardware")).Length() != 1 || doc.Find(testid("sort-date")).Length() != 1 {
				t.Error("the board has no hardware or date column")
			}
			rows := doc.Find(testid("leaderboard-row"))
			if rows.Length() != 3 {
				t.Fatalf("%d rows, want each of the 3 systems", rows.Length())
			}
			rows.Each(func(_ int, row *goquery.Selection) {
				var cells []string
				row.Find(testid("entry-measure")).Each(func(i int, td *goquery.Selection) {
					cells = append(cells, strings.TrimSpace(td.Text()))
					if m := td.AttrOr("data-metric", ""); i < len(metrics) && m != metrics[i] {
						t.Errorf("cell %d is of %q under the header of %q", i, m, metrics[i])
					}
				})
				if strings.Join(cells, "|") != strings.Join(l.cell, "|") {
					t.Errorf("row cells %q, want %q", cells, l.cell)
				}
				if hw := strings.TrimSpace(row.Find(testid("entry-hardware")).Text()); hw == "" || hw == "—" {
					t.Errorf("a row's hardware is %q", hw)
				}
				if d := strings.TrimSpace(row.Find(testid("entry-date")).Text()); len(d) != len("2006-01-02") {
					t.Errorf("a row's date is %q", d)
				}
			})
		})
	}
}
