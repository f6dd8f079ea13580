package web_test

import (
	"context"
	"strconv"
	"strings"
	"testing"

	"github.com/PuerkitoBio/goquery"

	d5list "github.com/deep500/d5list"
)

// The board page shows what the portal measured, the claim beside it, and
// an accepted entry that no runner of its hardware re-measured only in the
// unverified view, marked.
func TestBoardShowsMeasuredValueAndMarksUnmeasured(t *testing.T) {
	s := newListServer(t)
	ctx := context.Background()
	add := func(system string, claimedBase, measuredBase float64, runnerCPU string, status d5list.Status) int64 {
		claimed := result(claimedBase, 5)
		sub := &d5list.Submission{BenchmarkID: "l2-digits-mlp-cpu", Division: "closed", Availability: "available",
			Submitter: "Clock Lab", SystemName: system, Framework: "numpy", Claimed: claimed, HostCPU: testCPU}
		if err := s.db.CreateSubmission(ctx, sub); err != nil {
			t.Fatal(err)
		}
		completeOn(t, s.db, *result(measuredBase, 5), runnerCPU, status)
		return sub.ID
	}
	// Claims 6 s, the re-run on its CPU took 15 s: ranked at 15 s, after
	// box-a (12 s), not first.
	fast := add("box-clock", 4, 13, testCPU, d5list.StatusVerified)
	// Re-run on another CPU; an organiser accepted the claim of 2 s.
	far := add("box-far", 0, 50, "Intel Xeon", d5list.StatusNeedsReview)
	s.review(t, far, d5list.ActionAccept, "the vendor's own system; no runner of it in the pool")

	doc := s.doc(t, "/benchmarks/l2-digits-mlp-cpu")
	if doc.Find(testid("measured-rule")).Length() != 1 {
		t.Error("the board does not state that it ranks measured values")
	}
	var order []string
	doc.Find(testid("leaderboard-row")).Each(func(_ int, row *goquery.Selection) {
		order = append(order, row.Find(testid("entry-system")).Text())
	})
	joined := strings.Join(order, "|")
	if strings.Contains(joined, "box-far") {
		t.Errorf("an entry not re-measured is on the default board: %q", joined)
	}
	if a, c := strings.Index(joined, "box-a"), strings.Index(joined, "box-clock"); a < 0 || c < 0 || c < a {
		t.Errorf("board order %q: box-clock (claimed 6 s, measured 15 s) must follow box-a (12 s)", joined)
	}
	row := doc.Find(`[data-testid="leaderboard-row"][data-submission="` + strconv.FormatInt(fast, 10) + `"]`)
	if got := strings.TrimSpace(row.Find(testid("entry-score")).Text()); got != "15.0 s" {
		t.Errorf("box-clock's value %q, want the measured 15.0 s", got)
	}
	if got := strings.TrimSpace(row.Find(testid("entry-claimed")).Text()); got != "claimed 6.00 s, 60% lower than measured" {
		t.Errorf("box-clock's claim %q, want \"claimed 6.00 s, 60%% lower than measured\"", got)
	}

	all := s.doc(t, "/benchmarks/l2-digits-mlp-cpu?status=all")
	farRow := all.Find(`[data-testid="leaderboard-row"][data-submission="` + strconv.FormatInt(far, 10) + `"]`)
	if farRow.Length() != 1 {
		t.Fatal("the accepted, unmeasured entry is missing from the view with unverified entries")
	}
	if got := farRow.Find(testid("entry-badge")).Text(); got != "claimed, not re-measured" {
		t.Errorf("its badge %q, want \"claimed, not re-measured\"", got)
	}
	if farRow.Find(testid("entry-claimed")).Length() != 0 {
		t.Error("an unmeasured entry shows a claimed-versus-measured ratio")
	}
}
