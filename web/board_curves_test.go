package web_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	d5list "github.com/deep500/d5list"
)

// On a board that ranks measured values, the accuracy-versus-time chart
// draws each entry's re-run, as the board ranks it: an entry whose logs
// claim 2 s but whose re-run took 32 s (median run) ends its curve after
// one that claims 20 s and re-ran in 7 s, not before it.
func TestBoardCurvesComeFromWhatTheBoardRanks(t *testing.T) {
	s := newListServer(t)
	ctx := context.Background()
	add := func(system string, claimedBase, measuredBase float64) {
		sub := &d5list.Submission{BenchmarkID: "l2-digits-mlp-cpu", Division: "closed", Availability: "available",
			Submitter: "Curve Lab", SystemName: system, Framework: "numpy", Claimed: result(claimedBase, 5), HostCPU: testCPU}
		if err := s.db.CreateSubmission(ctx, sub); err != nil {
			t.Fatal(err)
		}
		completeOn(t, s.db, *result(measuredBase, 5), testCPU, d5list.StatusVerified)
	}
	add("box-slow", 0, 30)  // claims 2 s (median run), measured 32 s
	add("box-quick", 18, 5) // claims 20 s, measured 7 s

	doc := s.doc(t, "/benchmarks/l2-digits-mlp-cpu")
	block := doc.Find("#accuracy-top10-chart-options")
	if block.Length() != 1 {
		t.Fatal("the board has no accuracy-versus-time chart")
	}
	var option struct {
		Series []struct {
			Data []struct {
				Name  string    `json:"name"`
				Value []float64 `json:"value"`
			} `json:"data"`
		} `json:"series"`
	}
	if err := json.Unmarshal([]byte(block.Text()), &option); err != nil {
		t.Fatalf("the chart's option: %v", err)
	}
	ends := map[string]float64{}
	for _, s := range option.Series {
		if len(s.Data) == 0 {
			continue
		}
		last := s.Data[len(s.Data)-1]
		for _, sys := range []string{"box-slow", "box-quick"} {
			if strings.Contains(last.Name, sys) && len(last.Value) == 2 {
				ends[sys] = last.Value[0]
			}
		}
	}
	slow, okSlow := ends["box-slow"]
	quick, okQuick := ends["box-quick"]
	if !okSlow || !okQuick {
		t.Fatalf("the chart draws no curve of box-slow or box-quick: %v", ends)
	}
	if slow != 32 || quick != 7 {
		t.Errorf("box-slow's curve ends at %g s and box-quick's at %g s; want their measured median runs, 32 s and 7 s", slow, quick)
	}
	if slow <= quick {
		t.Errorf("the slower measured entry's curve ends at %g s, before the faster one's at %g s", slow, quick)
	}
}
