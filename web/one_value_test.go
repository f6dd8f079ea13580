package web_test

import (
	"context"
	"encoding/csv"
	"encoding/json"
	"encoding/xml"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	d5list "github.com/deep500/d5list"
)

// remeasuredEntry uploads an entry of l2-digits-mlp-cpu that claims an
// olympic mean of 12.92 s, which the portal re-measures on the declared
// CPU at 6.383333 s, with a verdict of status that turns on reasons.
func remeasuredEntry(t *testing.T, p *realPortal, status d5list.Status, reasons []d5list.Reason) int64 {
	t.Helper()
	ctx := context.Background()
	sub := &d5list.Submission{
		BenchmarkID: "l2-digits-mlp-cpu", OwnerID: p.users["competitor"].ID, Status: d5list.StatusQueued,
		Division: d5list.DivisionClosed, Availability: d5list.AvailabilityAvailable, HostCPU: testCPU,
		Submitter: "Truth Lab", SystemName: "box-one", Framework: "numpy", BundleSHA256: strings.Repeat("cd", 32),
		Recipe: &d5list.Recipe{}, Reasons: []d5list.Reason{}, Claimed: result(10.92, 5),
	}
	if err := p.db.CreateSubmission(ctx, sub); err != nil {
		t.Fatal(err)
	}
	lease, err := p.db.LeaseJob(ctx, "r-0", nil, time.Minute)
	if err != nil || lease == nil {
		t.Fatalf("lease: %v %v", lease, err)
	}
	measured := result(4.383333333333333, 5)
	measured.Runner = map[string]string{"cpu_model": testCPU}
	if err := p.db.CompleteJob(ctx, lease.Job.ID, lease.Secret, measured, status, reasons); err != nil {
		t.Fatal(err)
	}
	return sub.ID
}

// feedEntry is what a feed reader reads of an Atom entry.
type feedEntry struct {
	Title   string `xml:"title"`
	ID      string `xml:"id"`
	Summary string `xml:"summary"`
}

// An entry whose claim (12.92 s) is not what the portal measured (6.38 s)
// reads the same measured value, the same string, wherever the list shows
// it: the console's review row, then, accepted, the board, its page, the
// search across the list, its system's page, the feed, the CSV and JSON
// exports and its badge; the lists mark it accepted.
func TestOneMeasuredValueEverywhere(t *testing.T) {
	p := startReal(t)
	id := remeasuredEntry(t, p, d5list.StatusNeedsReview, []d5list.Reason{{Code: "timing_too_noisy", Message: "the re-run was too noisy"}})
	sid := strconv.FormatInt(id, 10)
	const want = "6.38 s"

	org := p.login(t, "organiser")
	row := org.doc(t, "/console").Find(`[data-testid="review-row"][data-id="` + sid + `"]`)
	if got := row.Find(testid("review-measured")).Text(); got != want {
		t.Errorf("console review row: %q, want %q", got, want)
	}
	resp, err := org.PostForm(p.url+"/console/review/"+sid, url.Values{"action": {"accept"}, "csrf": {org.csrf}})
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusSeeOther {
		t.Fatalf("accepting: %d", resp.StatusCode)
	}

	visitor := p.login(t, "")
	board := visitor.doc(t, "/benchmarks/l2-digits-mlp-cpu").Find(`[data-testid="leaderboard-row"][data-submission="` + sid + `"]`)
	if got := board.Find(testid("entry-score")).Text(); got != want {
		t.Errorf("board: %q, want %q", got, want)
	}
	if got := board.Find(testid("entry-badge")).Text(); got != "accepted by an organiser" {
		t.Errorf("board badge %q, want the entry marked accepted", got)
	}
	if got := visitor.doc(t, "/submissions/"+sid).Find(testid("score-measured")).Text(); got != want {
		t.Errorf("entry page: %q, want %q", got, want)
	}
	found := visitor.doc(t, "/search?q=truth").Find(testid("search-result") + `[data-submission="` + sid + `"]`)
	if got := found.Find(testid("search-score")).Text(); got != want || found.Find(testid("entry-badge")).Text() != "accepted by an organiser" {
		t.Errorf("search: %q, badge %q; want %q, accepted", got, found.Find(testid("entry-badge")).Text(), want)
	}
	place := visitor.doc(t, systemPath("Truth Lab", "box-one")).Find(testid("standing-live"))
	if got := place.Find(testid("place-value")).Text(); got != want || place.Find(testid("entry-badge")).Text() != "accepted by an organiser" {
		t.Errorf("system page: %q, badge %q; want %q, accepted", got, place.Find(testid("entry-badge")).Text(), want)
	}

	var feed struct {
		Entries []feedEntry `xml:"entry"`
	}
	if err := xml.Unmarshal([]byte(visitor.get(t, "/feed.atom")), &feed); err != nil {
		t.Fatal(err)
	}
	i := slices.IndexFunc(feed.Entries, func(e feedEntry) bool { return strings.HasSuffix(e.ID, "/submissions/"+sid) })
	if i < 0 {
		t.Fatalf("the feed has no entry %s: %+v", sid, feed.Entries)
	}
	if e := feed.Entries[i]; !strings.HasSuffix(e.Title, ": "+want) || !strings.Contains(e.Summary, "time to train: "+want+", as the portal measured it (claimed 12.9 s)") {
		t.Errorf("feed entry %q / %q, want %q as measured, the claim beside it", e.Title, e.Summary, want)
	}

	rows, err := csv.NewReader(strings.NewReader(visitor.get(t, "/api/v1/leaderboards/l2-digits-mlp-cpu.csv"))).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	col := func(name string) int { return slices.Index(rows[0], name) }
	if len(rows) != 2 || rows[1][col("value_text")] != want || rows[1][col("accepted")] != "true" {
		t.Errorf("CSV export %q, want one row whose value_text is %q, accepted", rows, want)
	}

	var exported struct {
		Entries []struct {
			ValueText string `json:"value_text"`
			Accepted  bool   `json:"accepted"`
		} `json:"entries"`
	}
	if err := json.Unmarshal([]byte(visitor.get(t, "/api/v1/leaderboards/l2-digits-mlp-cpu")), &exported); err != nil {
		t.Fatal(err)
	}
	if len(exported.Entries) != 1 || exported.Entries[0].ValueText != want || !exported.Entries[0].Accepted {
		t.Errorf("JSON export %+v, want one entry whose value_text is %q, accepted", exported.Entries, want)
	}

	if svg := visitor.get(t, "/submissions/"+sid+"/badge.svg"); !strings.Contains(svg, "#1 · "+want+"<") {
		t.Errorf("badge %s, want %q", svg, "#1 · "+want)
	}
}
