package store

import (
	"context"
	"testing"
	"time"

	d5list "github.com/deep500/d5list"
)

// A re-run moves the verdict into the history with whether it was public,
// and leaves the queued entry with no findings, no measurement and not
// published (issue 16).
func TestRerunArchivesTheVerdictAndClearsIt(t *testing.T) {
	db, _ := newTestDB(t)
	ctx := context.Background()
	organiser := &d5list.User{ID: 0, Name: "olga", Role: d5list.RoleOrganiser}
	sub := mustCreate(t, db, testSubmission("l2-digits", 1, 2, 3))
	verdict := func(published bool) {
		t.Helper()
		l := mustLease(t, db, "r", nil, time.Minute)
		measured := &d5list.Result{Score: d5list.Score{Metric: d5list.MetricTimeToTrain, Value: 40, Valid: true}}
		if err := db.CompleteJob(ctx, l.Job.ID, l.Secret, measured, d5list.StatusDiscrepancy,
			[]d5list.Reason{{Code: "accuracy_mismatch", Message: "run 1"}}); err != nil {
			t.Fatal(err)
		}
		if published {
			yes := true
			if _, err := db.ApplyReview(ctx, d5list.ReviewChange{SubmissionID: sub.ID, Actor: organiser, Action: d5list.ActionPublish,
				FromStatus: d5list.StatusDiscrepancy, ToStatus: d5list.StatusDiscrepancy, Published: &yes}); err != nil {
				t.Fatal(err)
			}
		}
		if _, err := db.ApplyReview(ctx, d5list.ReviewChange{SubmissionID: sub.ID, Actor: organiser, Action: d5list.ActionRerun,
			FromStatus: d5list.StatusDiscrepancy, ToStatus: d5list.StatusQueued, Rerun: true}); err != nil {
			t.Fatal(err)
		}
	}
	verdict(false)
	verdict(true)
	got, err := db.Submission(ctx, sub.ID)
	if err != nil {
		t.Fatal(err)
	}
	if got.Status != d5list.StatusQueued || got.Measured != nil || len(got.Reasons) != 0 || got.Published {
		t.Errorf("after a re-run: status %s, measured %v, reasons %v, published %v; want queued with none of them",
			got.Status, got.Measured, got.Reasons, got.Published)
	}
	attempts, err := db.Attempts(ctx, sub.ID)
	if err != nil || len(attempts) != 3 {
		t.Fatalf("attempts: %d %v, want 3", len(attempts), err)
	}
	for i, want := range []bool{true, false} {
		a := attempts[i]
		if a.Status != d5list.StatusDiscrepancy || len(a.Reasons) != 1 || a.Measured == nil || a.Hidden != want {
			t.Errorf("attempt %d: %s %v %v hidden %v, want the discrepancy kept, hidden %v", i, a.Status, a.Reasons, a.Measured, a.Hidden, want)
		}
	}
}
