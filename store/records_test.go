package store

import (
	"context"
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

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

// The kept records follow changes of entries anywhere in time, not only of
// the newest: a record re-measured worse, or taken off the default board,
// lets the later rows it alone kept from being records become records, and
// one re-measured better shadows later ones. After each change the kept
// records are those a pass over the whole board makes.
func TestRecordsFollowChangesOfOldEntries(t *testing.T) {
	db, clock := newTestDB(t)
	ctx := context.Background()
	bench := randomBoardChecked(t, db, clock, 21, nil)
	org := &d5list.User{Name: "olga", Role: d5list.RoleOrganiser}
	rng := rand.New(rand.NewPCG(21, 7))
	// The board leaves its last few queued: judged first, so that each
	// re-run below is the next job.
	for {
		l, err := db.LeaseJob(ctx, "r", nil, time.Hour)
		if err != nil {
			t.Fatal(err)
		}
		if l == nil {
			break
		}
		s, err := db.Submission(ctx, l.Job.SubmissionID)
		if err != nil {
			t.Fatal(err)
		}
		if err := db.CompleteJob(ctx, l.Job.ID, l.Secret, s.Claimed, d5list.StatusVerified, nil); err != nil {
			t.Fatal(err)
		}
	}
	subs, err := db.Submissions(ctx, d5list.SubmissionFilter{BenchmarkID: bench.ID})
	if err != nil {
		t.Fatal(err)
	}
	recordIDs := func() []int64 {
		var ids []int64
		rows, err := db.read.Query(`SELECT submission_id FROM board_records WHERE benchmark_id = ? AND view = ?`, bench.ID, viewOnDefault)
		if err != nil {
			t.Fatal(err)
		}
		defer rows.Close()
		for rows.Next() {
			var id int64
			if err := rows.Scan(&id); err != nil {
				t.Fatal(err)
			}
			ids = append(ids, id)
		}
		return ids
	}
	worse, better, flagged := 0, 0, 0
	for i := range 40 {
		// Half the changes are of a current record, the rest of any entry.
		id := subs[rng.IntN(len(subs))].ID
		if recs := recordIDs(); i%2 == 0 && len(recs) > 1 {
			id = recs[rng.IntN(len(recs)-1)] // not the newest record: rows after it
		}
		s, err := db.Submission(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		if s.Status != d5list.StatusVerified || s.Measured == nil {
			continue
		}
		if rng.IntN(3) == 0 {
			note := "checked by hand"
			if _, err := db.ApplyReview(ctx, d5list.ReviewChange{SubmissionID: id, Actor: org, Action: d5list.ActionFlag,
				Note: note, Flag: &note, FromStatus: s.Status, ToStatus: s.Status}); err != nil {
				t.Fatal(err)
			}
			flagged++
		} else {
			if _, err := db.ApplyReview(ctx, d5list.ReviewChange{SubmissionID: id, Actor: org, Action: d5list.ActionRerun,
				FromStatus: s.Status, ToStatus: d5list.StatusQueued, Rerun: true}); err != nil {
				t.Fatal(err)
			}
			compareKeptWithElection(t, db, bench.ID)
			measured := *s.Measured
			measured.Runs = append([]d5list.RunMetrics(nil), s.Measured.Runs...)
			shift := float64(rng.IntN(7) - 3)
			if shift > 0 {
				worse++
			} else if shift < 0 {
				better++
			}
			for r := range measured.Runs {
				measured.Runs[r].TimeToTrain = max(1, measured.Runs[r].TimeToTrain+shift)
			}
			l := mustLease(t, db, "r", nil, time.Hour)
			if l.Job.SubmissionID != id {
				t.Fatalf("leased submission %d, want %d", l.Job.SubmissionID, id)
			}
			if err := db.CompleteJob(ctx, l.Job.ID, l.Secret, &measured, d5list.StatusVerified, nil); err != nil {
				t.Fatal(err)
			}
		}
		compareKeptWithElection(t, db, bench.ID)
	}
	if worse == 0 || better == 0 || flagged == 0 {
		t.Fatalf("%d re-measured worse, %d better, %d flagged: the test should make each", worse, better, flagged)
	}
}
