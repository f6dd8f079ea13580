package web_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"testing"

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
