package web_test

import (
	"context"
	"encoding/json"
	"strconv"
	"strings"
	"testing"

	d5list "github.com/deep500/d5list"
)

// timedRuns are converged runs that took the given times, the first
// fresh ones flagged as the portal's own seeds.
func timedRuns(fresh int, times ...float64) *d5list.Result {
	res := &d5list.Result{}
	for i, ttt := range times {
		res.Runs = append(res.Runs, d5list.RunMetrics{
			Index: i, Seed: int64(2000 + i), Converged: true, TimeToTrain: ttt, EpochsToTarget: 3, FinalAccuracy: 0.975,
			Fresh: i >= len(times)-fresh,
			Evals: []d5list.EvalPoint{{Epoch: 1, Seconds: ttt / 3, Accuracy: 0.8}, {Epoch: 3, Seconds: ttt, Accuracy: 0.975}},
		})
	}
	res.Score = d5list.OlympicScore(res.Runs, d5list.MetricTimeToTrain, d5list.LowerIsBetter)
	return res
}

// A first-time visitor reads what the board's numbers beside a value are:
// a re-run that counts more runs than the claim says that the portal
// added runs with seeds it drew, and the claim beside the measured value
// says how far it is from it, in words, with a tooltip. Every value of the
// ranked metric reads with the same three significant digits on the
// board, the entry page and the API (0.825–2.79 s, not 0.8250–2.79 s).
func TestBoardSaysWhatItsRunsAndClaimAre(t *testing.T) {
	s := newListServer(t)
	ctx := context.Background()
	sub := &d5list.Submission{BenchmarkID: "l2-digits-mlp-cpu", Division: "closed", Availability: "available",
		Submitter: "Seed Lab", SystemName: "box-seeds", Framework: "numpy", HostCPU: testCPU,
		Claimed: timedRuns(0, 0.7, 0.74, 0.776, 0.8, 0.9)}
	if err := s.db.CreateSubmission(ctx, sub); err != nil {
		t.Fatal(err)
	}
	// Olympic means: claimed (0.74+0.776+0.8)/3 = 0.772 s, measured
	// (0.97+1.2+1.39+1.6+2.1)/5 = 1.452 s.
	completeOn(t, s.db, *timedRuns(2, 0.825, 0.97, 1.2, 1.39, 1.6, 2.1, 2.79), testCPU, d5list.StatusVerified)

	doc := s.doc(t, "/benchmarks/l2-digits-mlp-cpu")
	row := doc.Find(`[data-testid="leaderboard-row"][data-submission="` + strconv.FormatInt(sub.ID, 10) + `"]`)
	if row.Length() != 1 {
		t.Fatal("the entry is not on the board")
	}
	text := func(id string) string { return strings.Join(strings.Fields(row.Find(testid(id)).Text()), " ") }
	if got := text("entry-score"); got != "1.45 s" {
		t.Errorf("board value %q, want 1.45 s", got)
	}
	if got := text("entry-range"); got != "5 runs claimed, re-run 7 (2 with seeds the portal drew): 0.825–2.79 s" {
		t.Errorf("board runs %q, want the claim's 5 runs, the re-run's 7 and its 2 fresh seeds, then the range", got)
	}
	if title := row.Find(testid("entry-range")).AttrOr("title", ""); !strings.Contains(title, "5 runs with the submitted seeds and 2 runs with seeds it drew") ||
		!strings.Contains(title, "olympic mean") {
		t.Errorf("board runs' tooltip %q does not explain the runs", title)
	}
	if got := text("entry-claimed"); got != "claimed 0.772 s, 47% lower than measured" {
		t.Errorf("board claim %q, want \"claimed 0.772 s, 47%% lower than measured\"", got)
	}
	if title := row.Find(testid("entry-claimed")).AttrOr("title", ""); !strings.Contains(title, "claimed 0.772 s") ||
		!strings.Contains(title, "measured 1.45 s") || !strings.Contains(title, "ranks the measured value") {
		t.Errorf("board claim's tooltip %q does not say which is which", title)
	}

	entry := s.doc(t, "/submissions/"+strconv.FormatInt(sub.ID, 10))
	if got := entry.Find(testid("score-measured")).Text(); got != "1.45 s" {
		t.Errorf("entry page measured %q, want the board's 1.45 s", got)
	}
	if got := entry.Find(testid("score-claimed")).Text(); got != "0.772 s" {
		t.Errorf("entry page claimed %q, want the board's 0.772 s", got)
	}
	if claimed, measured := entry.Find(testid("runs-claimed")).Text(), entry.Find(testid("runs-measured")).Text(); claimed != "5" || measured != "7 (2 with seeds the portal drew)" {
		t.Errorf("entry page runs %q claimed, %q measured; want the board's 5 and 7 (2 with seeds the portal drew)", claimed, measured)
	}
	if got := entry.Find(testid("score")).Text(); !strings.Contains(got, "0.825–2.79 s") || strings.Contains(got, "0.8250") {
		t.Errorf("entry page's score table %q: want the range as the board prints it, 0.825–2.79 s", strings.Join(strings.Fields(got), " "))
	}
	if got := entry.Find(testid("verdict-summary")).Text(); !strings.Contains(got, "5 runs with the submitted seeds and 2 with seeds it drew") ||
		!strings.Contains(got, "1.45 s") || !strings.Contains(got, "0.772 s") {
		t.Errorf("verdict %q: want the runs and the values in the board's words and digits", got)
	}

	var api struct {
		ValueText string `json:"value_text"`
	}
	if err := json.Unmarshal(s.get(t, "/api/v1/submissions/"+strconv.FormatInt(sub.ID, 10)), &api); err != nil {
		t.Fatal(err)
	}
	if api.ValueText != "1.45 s" {
		t.Errorf("API value_text %q, want the board's 1.45 s", api.ValueText)
	}
}
