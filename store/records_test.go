package store

import (
	"context"
	"fmt"
	"testing"

	d5list "github.com/deep500/d5list"
	"github.com/deep500/d5list/leaderboard"
)

// The best result over time that a board's summary reads from the index
// is the one leaderboard.Records finds in the in-memory ranking of every
// entry of the view, with and without the unverified ones.
func TestSummaryRecordsMatchTheRanking(t *testing.T) {
	db, stored, _, scored := scoredRandomBoard(t, 11)
	ctx := context.Background()
	ids := func(es []d5list.Entry) string {
		var out []int64
		for _, e := range es {
			out = append(out, e.SubmissionID)
		}
		return fmt.Sprint(out)
	}
	for _, unverified := range []bool{false, true} {
		want := leaderboard.Records(stored, scored.Rank(leaderboard.Options{AllPerSystem: true, IncludeUnverified: unverified}))
		sum, err := db.BoardSummary(ctx, stored.ID, unverified)
		if err != nil {
			t.Fatal(err)
		}
		if ids(sum.Records) != ids(want) {
			t.Errorf("unverified %v: records %s, want %s", unverified, ids(sum.Records), ids(want))
		}
		if len(want) < 2 {
			t.Errorf("unverified %v: %d records; the random board should make several", unverified, len(want))
		}
	}
}
