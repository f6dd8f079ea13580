package web_test

import (
	"encoding/json"
	"encoding/xml"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"testing"

	"github.com/PuerkitoBio/goquery"

	d5list "github.com/deep500/d5list"
	"github.com/deep500/d5list/leaderboard"
)

// placeJSON is the part of GET /api/v1/submissions/{id} that says where
// the entry stands.
type placeJSON struct {
	ID           int64    `json:"id"`
	Status       string   `json:"status"`
	Rank         *int     `json:"rank"`
	RankedOf     int      `json:"ranked_of"`
	BoardURL     string   `json:"board_url"`
	SupersededBy int64    `json:"superseded_by"`
	Value        *float64 `json:"value"`
	ValueText    string   `json:"value_text"`
	Basis        string   `json:"basis"`
	Raw          map[string]json.RawMessage
}

func (b *syntheticBoard) place(t *testing.T, id int64) placeJSON {
	t.Helper()
	path := fmt.Sprintf("/api/v1/submissions/%d", id)
	a := fetch(t, b.url+path)
	if a.code != http.StatusOK {
		t.Fatalf("GET %s: %d %s", path, a.code, a.body)
	}
	var p placeJSON
	if err := json.Unmarshal(a.body, &p); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(a.body, &p.Raw); err != nil {
		t.Fatal(err)
	}
	return p
}

// The API gives an entry's rank on its benchmark's default board, the page
// of the board that lists it and the value as that board prints it; an
// entry its system bettered names the entry listed instead, and an entry
// no board ranks has a null rank. The numbers are the board's own: the
// export's rank, value and value_text, and the row on the linked page.
func TestSubmissionAPIGivesRankOnTheBoard(t *testing.T) {
	b := newSyntheticBoard(t, 300, 150)
	const benchPath = "/api/v1/leaderboards/l2-digits-mlp-cpu"
	var board, all struct {
		Entries []struct {
			d5list.Entry
			ValueText string `json:"value_text"`
		} `json:"entries"`
	}
	for path, out := range map[string]any{benchPath: &board, benchPath + "?rows=all&status=all": &all} {
		a := fetch(t, b.url+path)
		if a.code != http.StatusOK {
			t.Fatalf("GET %s: %d", path, a.code)
		}
		if err := json.Unmarshal(a.body, out); err != nil {
			t.Fatal(err)
		}
	}
	if len(board.Entries) <= leaderboard.DefaultPerPage {
		t.Fatalf("a default board of %d entries: the test needs a second page", len(board.Entries))
	}

	bestOf := map[string]int64{}
	for _, i := range []int{0, 1, leaderboard.DefaultPerPage - 1, leaderboard.DefaultPerPage, len(board.Entries) - 1} {
		e := board.Entries[i]
		p := b.place(t, e.SubmissionID)
		if p.Rank == nil || *p.Rank != e.Rank || p.RankedOf != len(board.Entries) {
			t.Errorf("submission %d: rank %v of %d, the board ranks it %d of %d", e.SubmissionID, p.Rank, p.RankedOf, e.Rank, len(board.Entries))
		}
		if p.Value == nil || *p.Value != e.Value || p.ValueText != e.ValueText || p.Basis != e.Basis {
			t.Errorf("submission %d: value %v %q (%s), the board's %v %q (%s)", e.SubmissionID, p.Value, p.ValueText, p.Basis, e.Value, e.ValueText, e.Basis)
		}
		if strings.Contains(p.ValueText, "00000") || !strings.HasSuffix(p.ValueText, " s") {
			t.Errorf("submission %d: value_text %q is not as the pages print it", e.SubmissionID, p.ValueText)
		}
		want := "/benchmarks/l2-digits-mlp-cpu"
		if e.Rank > leaderboard.DefaultPerPage {
			want += "?page=2"
		}
		if p.BoardURL != want {
			t.Errorf("submission %d at rank %d: board_url %q, want %q", e.SubmissionID, e.Rank, p.BoardURL, want)
		}
		if _, ok := p.Raw["superseded_by"]; ok {
			t.Errorf("submission %d is on the board but superseded by %d", e.SubmissionID, p.SupersededBy)
		}
		doc, _ := b.doc(t, p.BoardURL)
		row := doc.Find(fmt.Sprintf(`[data-testid="leaderboard-row"][data-submission="%d"]`, e.SubmissionID))
		if got := strings.TrimSpace(row.Find(testid("entry-rank")).Text()); got != strconv.Itoa(e.Rank) {
			t.Errorf("submission %d: the page %s ranks it %q, the API %d", e.SubmissionID, p.BoardURL, got, e.Rank)
		}
		// The entry's own page quotes the same rank and links the same page.
		entry, _ := b.doc(t, "/submissions/"+strconv.FormatInt(e.SubmissionID, 10))
		place := entry.Find(testid("place-rank"))
		link, _ := place.Find(testid("place-board-link")).Attr("href")
		if !strings.Contains(place.Text(), "#"+strconv.Itoa(e.Rank)+" of "+strconv.Itoa(len(board.Entries))) || link != p.BoardURL {
			t.Errorf("submission %d's page: %q linking %q, want rank #%d of %d linking %q", e.SubmissionID, strings.Join(strings.Fields(place.Text()), " "), link, e.Rank, len(board.Entries), p.BoardURL)
		}
	}
	for _, e := range board.Entries {
		bestOf[leaderboard.SystemKey(e.Submitter, e.SystemName)] = e.SubmissionID
	}

	var superseded, unranked int
	for _, e := range all.Entries {
		best, listed := bestOf[leaderboard.SystemKey(e.Submitter, e.SystemName)]
		switch {
		case best == e.SubmissionID:
			continue
		case e.Status == d5list.StatusVerified && listed && superseded < 3:
			superseded++
			p := b.place(t, e.SubmissionID)
			if rank, ok := p.Raw["rank"]; !ok || string(rank) != "null" || p.BoardURL != "" {
				t.Errorf("superseded submission %d: rank %s, board_url %q, want null and none", e.SubmissionID, rank, p.BoardURL)
			}
			if p.SupersededBy != best {
				t.Errorf("submission %d: superseded_by %d, want its system's best %d", e.SubmissionID, p.SupersededBy, best)
			}
			if p.Value == nil || p.ValueText == "" {
				t.Errorf("superseded submission %d: no value (%v %q)", e.SubmissionID, p.Value, p.ValueText)
			}
			entry, _ := b.doc(t, "/submissions/"+strconv.FormatInt(e.SubmissionID, 10))
			if got := entry.Find(testid("place-superseded")).Text(); !strings.Contains(got, "submission "+strconv.FormatInt(best, 10)) || entry.Find(testid("place-rank")).Length() != 0 {
				t.Errorf("superseded submission %d's page: %q, want it off the default board for submission %d", e.SubmissionID, strings.Join(strings.Fields(got), " "), best)
			}
		case e.Status == d5list.StatusNeedsReview && unranked < 3:
			unranked++
			p := b.place(t, e.SubmissionID)
			if rank, ok := p.Raw["rank"]; !ok || string(rank) != "null" || p.SupersededBy != 0 || p.BoardURL != "" {
				t.Errorf("submission %d in review: rank %s, superseded_by %d, board_url %q; want null, none, none", e.SubmissionID, rank, p.SupersededBy, p.BoardURL)
			}
		}
	}
	if superseded == 0 || unranked == 0 {
		t.Fatalf("found %d superseded and %d unranked entries to ask about", superseded, unranked)
	}
}

// An entry's number and a rank never look alike: every page, the feed and
// the badge write a rank as "#N" and an entry as "submission N", and the
// rank they quote is the default board's, as the API gives it.
func TestEntryNumbersAndRanksNeverLookAlike(t *testing.T) {
	b := newSyntheticBoard(t, 300, 150)
	board := b.export(t, "/api/v1/leaderboards/l2-digits-mlp-cpu")
	first, second := board[0], board[1]
	entryLink := func(what string, s *goquery.Selection, id int64) {
		t.Helper()
		if got, want := strings.TrimSpace(s.Text()), leaderboard.SubmissionLabel(id); got != want {
			t.Errorf("%s: the entry %d is written %q, want %q", what, id, got, want)
		}
	}

	doc, _ := b.doc(t, "/benchmarks/l2-digits-mlp-cpu")
	rows := doc.Find(testid("leaderboard-row"))
	if rows.Length() == 0 {
		t.Fatal("the board has no rows")
	}
	rows.Each(func(_ int, row *goquery.Selection) {
		id, _ := strconv.ParseInt(row.AttrOr("data-submission", ""), 10, 64)
		entryLink("the board's Details column", row.Find(testid("entry-link")), id)
	})

	doc, _ = b.doc(t, "/search?q="+url.QueryEscape(first.SystemName))
	doc.Find(testid("search-entry")).Each(func(_ int, s *goquery.Selection) {
		id, _ := strconv.ParseInt(strings.TrimPrefix(s.AttrOr("href", ""), "/submissions/"), 10, 64)
		entryLink("the search", s, id)
	})

	doc, _ = b.doc(t, fmt.Sprintf("/compare?ids=%d,%d", first.SubmissionID, second.SubmissionID))
	heads := doc.Find(testid("compare-facts") + " " + testid("compare-entry"))
	if heads.Length() != 2 {
		t.Fatalf("the comparison has %d entries, want 2", heads.Length())
	}
	entryLink("the comparison", heads.Eq(0), first.SubmissionID)
	entryLink("the comparison", heads.Eq(1), second.SubmissionID)

	doc, _ = b.doc(t, leaderboard.SystemPath(first.Submitter, first.SystemName))
	doc.Find(testid("entity-entry")).Each(func(_ int, row *goquery.Selection) {
		id, _ := strconv.ParseInt(row.AttrOr("data-submission", ""), 10, 64)
		entryLink("the system page", row.Find(`td[data-label="Entry"] a`), id)
	})
	if got := strings.Fields(doc.Find(testid("standing-live")).Text()); len(got) == 0 || got[0] != "#1" {
		t.Errorf("the system page places the leader %q, want #1 first", got)
	}

	doc, _ = b.doc(t, fmt.Sprintf("/submissions/%d", first.SubmissionID))
	if h1 := strings.Fields(doc.Find("h1").First().Text()); len(h1) < 2 || h1[0]+" "+h1[1] != fmt.Sprintf("Submission %d", first.SubmissionID) {
		t.Errorf("the entry page's heading %q", h1)
	}

	var feed struct {
		Entries []struct {
			Title string `xml:"title"`
		} `xml:"entry"`
	}
	if err := xml.Unmarshal(fetch(t, b.url+"/feed.atom").body, &feed); err != nil {
		t.Fatal(err)
	}
	if len(feed.Entries) == 0 {
		t.Fatal("the feed is empty")
	}
	for _, e := range feed.Entries {
		if strings.Contains(e.Title, "#") || !strings.HasPrefix(e.Title, "Submission ") {
			t.Errorf("feed title %q: an entry is named \"Submission N\", never \"#N\"", e.Title)
		}
	}

	p := b.place(t, first.SubmissionID)
	if svg := string(fetch(t, fmt.Sprintf("%s/submissions/%d/badge.svg", b.url, first.SubmissionID)).body); !strings.Contains(svg, ">#1 · "+p.ValueText+"<") {
		t.Errorf("the leader's badge %s, want #1 · %s", svg, p.ValueText)
	}
	bestOf := map[string]int64{}
	for _, e := range board {
		bestOf[leaderboard.SystemKey(e.Submitter, e.SystemName)] = e.SubmissionID
	}
	for _, e := range b.export(t, "/api/v1/leaderboards/l2-digits-mlp-cpu?rows=all") {
		best := bestOf[leaderboard.SystemKey(e.Submitter, e.SystemName)]
		if best == e.SubmissionID {
			continue
		}
		svg := string(fetch(t, fmt.Sprintf("%s/submissions/%d/badge.svg", b.url, e.SubmissionID)).body)
		if want := ">superseded by submission " + strconv.FormatInt(best, 10) + "<"; !strings.Contains(svg, want) || strings.Contains(svg, ">#") {
			t.Errorf("the badge of submission %d, which submission %d supersedes: %s, want %q", e.SubmissionID, best, svg, want)
		}
		return
	}
	t.Fatal("no superseded entry to ask the badge of")
}
