package store

import (
	"context"
	"slices"
	"testing"

	d5list "github.com/deep500/d5list"
	"github.com/deep500/d5list/leaderboard"
)

// The newest entries of a default board carry the ranks the board gives
// them, as the front page's latest results show them beside the board.
func TestLatestOnBoardCarriesTheBoardsRanks(t *testing.T) {
	db, stored, _, scored := scoredRandomBoard(t, 5)
	board := scored.Rank(leaderboard.Options{})
	newest := slices.Clone(board)
	slices.SortStableFunc(newest, func(a, b d5list.Entry) int {
		if c := b.CreatedAt.Compare(a.CreatedAt); c != 0 {
			return c
		}
		return int(b.SubmissionID - a.SubmissionID)
	})
	got, err := db.LatestOnBoard(context.Background(), stored.ID, 8)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 8 {
		t.Fatalf("%d newest entries, want 8", len(got))
	}
	deep := false
	for i, e := range got {
		if e.SubmissionID != newest[i].SubmissionID || e.Rank != newest[i].Rank || e.Value != newest[i].Value {
			t.Errorf("newest %d: submission %d rank %d value %v, want submission %d rank %d value %v",
				i, e.SubmissionID, e.Rank, e.Value, newest[i].SubmissionID, newest[i].Rank, newest[i].Value)
		}
		deep = deep || e.Rank > 1
	}
	if !deep {
		t.Fatal("every newest entry ranks first: the random board should rank some lower")
	}
}
