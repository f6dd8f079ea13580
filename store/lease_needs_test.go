package store

import (
	"context"
	"testing"
	"time"

	d5list "github.com/deep500/d5list"
)

// A job's recipe needs were stored in its row at upload; one queued before
// a need was added (images=yes for an image archive, before 0d238ef) has
// none there. Leasing holds it to today's rule, read from its recipe, so a
// runner that cannot run images never leases it only to refuse it.
func TestLeaseHoldsOldJobsToTheRecipesNeedsOfToday(t *testing.T) {
	ctx := context.Background()
	db, _ := newTestDB(t)
	entrypoint := testBenchmark("l2-torch", nil)
	entrypoint.Workload = ""
	if err := db.UpsertBenchmarks(ctx, []d5list.Benchmark{entrypoint}); err != nil {
		t.Fatal(err)
	}
	sub := testSubmission("l2-torch", 1)
	sub.Recipe = &d5list.Recipe{Entrypoint: "code/run.sh", Image: "code/image.tar"}
	sub = mustCreate(t, db, sub)
	// As a job queued before the rule was stored.
	if _, err := db.write.ExecContext(ctx, `UPDATE jobs SET requires = '' WHERE submission_id = ?`, sub.ID); err != nil {
		t.Fatal(err)
	}
	noImages := map[string]string{d5list.LabelRuns: d5list.RunsEntrypoint}
	if l, err := db.LeaseJob(ctx, "slurm", noImages, time.Minute); err != nil || l != nil {
		t.Fatalf("a runner without images=yes leased an old image job: %+v (%v)", l, err)
	}
	images := map[string]string{d5list.LabelRuns: d5list.RunsEntrypoint, d5list.LabelImages: "yes"}
	if l := mustLease(t, db, "bwrap", images, time.Minute); l.Spec.SubmissionID != sub.ID || l.Spec.Recipe.Image != "code/image.tar" || l.Job.Attempts != 1 {
		t.Fatalf("leased %+v, want the image job's first attempt", l)
	}
}
