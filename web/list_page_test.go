package web_test

import (
	"strings"
	"testing"
)

// /list keeps its promise of "every benchmark's current ranking": each
// benchmark's line has its level, its leader with the score and unit, how
// many entries its board ranks and a link to the board (issue 16).
func TestListPageShowsEachBenchmarksRanking(t *testing.T) {
	s := newServer(t, 0)
	doc := page(t, s, "/list")
	row := doc.Find(`[data-testid="nav-row"][data-benchmark="l2-digits-mlp-cpu"]`)
	if row.Length() != 1 {
		t.Fatalf("%d rows for l2-digits-mlp-cpu, want 1", row.Length())
	}
	if got := strings.TrimSpace(row.Find(testid("nav-benchmark-level")).Text()); got != "L2" {
		t.Errorf("level %q, want L2", got)
	}
	leader := row.Find(testid("nav-benchmark-leader"))
	if !strings.Contains(leader.Text(), "First Lab · box-a") || leader.Find(`a[href="/submissions/7"]`).Length() != 1 {
		t.Errorf("leader %q, want First Lab's box-a, linked to its entry", leader.Text())
	}
	if score := leader.Find(testid("nav-benchmark-score")).Text(); !strings.HasPrefix(score, "12.5 s") || !strings.Contains(score, "time to train (s)") {
		t.Errorf("leader's score %q, want 12.5 s and what it measures", score)
	}
	if n := row.Find(testid("nav-benchmark-ranked")).Text(); n != "3" {
		t.Errorf("ranked %q, want 3", n)
	}
	if href := row.Find(testid("nav-board-link")).AttrOr("href", ""); href != "/benchmarks/l2-digits-mlp-cpu" {
		t.Errorf("board link %q", href)
	}
	// A benchmark with no board yet says so.
	empty := doc.Find(`[data-testid="nav-row"][data-benchmark="l0-conv"]`)
	if !strings.Contains(empty.Find(testid("nav-benchmark-leader")).Text(), "no verified entry yet") || empty.Find(testid("nav-benchmark-ranked")).Text() != "0" {
		t.Errorf("an empty benchmark's line %q", empty.Text())
	}
	// A level's page lists only its benchmarks.
	if n := page(t, s, "/list?level=2").Find(testid("nav-row")).Length(); n != 1 {
		t.Errorf("/list?level=2 has %d rows, want 1", n)
	}
}
