package web_test

import (
	"context"
	"net/http"
	"strconv"
	"strings"
	"testing"

	"github.com/PuerkitoBio/goquery"

	d5list "github.com/deep500/d5list"
)

// seedCompared stores two verified entries of one competitor, whose
// recipes differ in batch size only, and a third left a discrepancy.
func seedCompared(t *testing.T, p *realPortal) (a, b, hidden int64) {
	t.Helper()
	ctx := context.Background()
	var ids []int64
	for i, batch := range []int{32, 64, 128} {
		claimed := &d5list.Result{Score: d5list.Score{Metric: d5list.MetricTimeToTrain, Value: float64(10 + i), Valid: true}}
		for r := range 5 {
			claimed.Runs = append(claimed.Runs, d5list.RunMetrics{Index: r, Seed: int64(r), Converged: true,
				TimeToTrain: float64(10 + i), EpochsToTarget: 3, FinalAccuracy: 0.97,
				Evals: []d5list.EvalPoint{{Epoch: 1, Seconds: 3, Accuracy: 0.9}, {Epoch: 2, Seconds: 6, Accuracy: 0.95}, {Epoch: 3, Seconds: 9, Accuracy: 0.97}}})
		}
		s := &d5list.Submission{BenchmarkID: "l2-digits-mlp-cpu", OwnerID: p.users["competitor"].ID, Division: d5list.DivisionClosed,
			Availability: d5list.AvailabilityAvailable, Submitter: "Compare Lab", SystemName: "box-" + strconv.Itoa(i), Framework: "go",
			Claimed: claimed, HostCPU: testCPU,
			Recipe: &d5list.Recipe{Fixed: map[string]any{"dataset": "digits"}, Mutable: map[string]any{"batch_size": batch, "lr": 0.1}}}
		if err := p.db.CreateSubmission(ctx, s); err != nil {
			t.Fatal(err)
		}
		status := d5list.StatusVerified
		if i == 2 {
			status = d5list.StatusDiscrepancy
		}
		completeOnDeclaredHardware(t, p.db, claimed, status)
		ids = append(ids, s.ID)
	}
	return ids[0], ids[1], ids[2]
}

// Two entries side by side: their facts, the recipe line that differs
// marked, the level's measurements and one chart of their curves; the
// board's checkboxes lead there (issue 16).
func TestComparePage(t *testing.T) {
	p := startReal(t)
	a, b, hidden := seedCompared(t, p)
	visitor := p.login(t, "")
	doc := visitor.doc(t, "/compare?ids="+strconv.FormatInt(a, 10)+","+strconv.FormatInt(b, 10))

	if n := doc.Find(testid("compare-facts") + " " + testid("compare-entry")).Length(); n != 2 {
		t.Fatalf("%d entries side by side, want 2", n)
	}
	row := func(table, label string) (values []string, differs string) {
		sel := doc.Find(testid(table) + ` [data-testid="compare-row"][data-label="` + label + `"]`)
		if sel.Length() != 1 {
			t.Fatalf("%s has %d rows %q, want 1", table, sel.Length(), label)
		}
		sel.Find(testid("compare-value")).Each(func(_ int, v *goquery.Selection) { values = append(values, v.Text()) })
		differs, _ = sel.Attr("data-differs")
		return values, differs
	}
	if v, d := row("compare-recipe", "batch_size"); strings.Join(v, ",") != "32,64" || d != "true" {
		t.Errorf("batch_size %v differs=%s, want 32,64 marked as differing", v, d)
	}
	if v, d := row("compare-recipe", "lr"); strings.Join(v, ",") != "0.1,0.1" || d != "false" {
		t.Errorf("lr %v differs=%s, want the same value unmarked", v, d)
	}
	if v, _ := row("compare-facts", "Measured"); len(v) != 2 || !strings.HasPrefix(v[0], "10") || !strings.HasPrefix(v[1], "11") {
		t.Errorf("measured scores %v, want 10 s and 11 s", v)
	}
	if v, _ := row("compare-measures", "Final accuracy"); len(v) != 2 || !strings.HasPrefix(v[0], "0.97") || v[0] != v[1] {
		t.Errorf("final accuracy %v, want 0.97 twice", v)
	}
	if doc.Find(`[data-testid="chart"][id="compare-curves"]`).Length() != 1 {
		t.Error("no chart of the compared curves")
	}

	for _, tc := range []struct {
		query string
		code  int
	}{
		{"ids=" + strconv.FormatInt(a, 10), http.StatusBadRequest},
		{"ids=1,x", http.StatusBadRequest},
		{"ids=1,2,3,4,5,6,7", http.StatusBadRequest},
		{"ids=" + strconv.FormatInt(a, 10) + "," + strconv.FormatInt(hidden, 10), http.StatusNotFound},
	} {
		resp, err := visitor.Get(p.url + "/compare?" + tc.query)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != tc.code {
			t.Errorf("/compare?%s: %d, want %d", tc.query, resp.StatusCode, tc.code)
		}
	}
	// The competitor sees their own discrepancy beside another entry.
	own := p.login(t, "competitor").doc(t, "/compare?id="+strconv.FormatInt(a, 10)+"&id="+strconv.FormatInt(hidden, 10))
	if own.Find(testid("compare-facts")+" "+testid("compare-entry")).Length() != 2 {
		t.Error("the competitor cannot compare their own hidden entry")
	}

	board := visitor.doc(t, "/benchmarks/l2-digits-mlp-cpu?rows=all")
	if action, _ := board.Find(testid("compare-form")).Attr("action"); action != "/compare" {
		t.Errorf("the board's compare form goes to %q", action)
	}
	if n := board.Find(`input[data-testid="entry-compare"][form="compare-form"][name="id"]`).Length(); n != 2 {
		t.Errorf("%d compare checkboxes on the board, want one per ranked row (2)", n)
	}
}
