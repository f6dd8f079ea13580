package store

import (
	"context"
	"encoding/json"
	"slices"
	"strings"
	"testing"
	"time"
)

// Every lease draws fresh seeds, as many as the benchmark asks, none of
// them a claimed seed, new at every lease (a runner killed mid-job has
// shown its code the last ones), kept with the job for the portal to check
// the report against, and in no JSON the job is published in.
func TestLeaseDrawsFreshSeedsNoOneKnew(t *testing.T) {
	ctx := context.Background()
	db, clk := newTestDB(t)
	bench, err := db.Benchmark(ctx, "l2-digits")
	if err != nil {
		t.Fatal(err)
	}
	claimed := []int64{11, 22, 33}
	mustCreate(t, db, testSubmission("l2-digits", claimed...))

	first := mustLease(t, db, "r1", nil, time.Minute)
	fresh := first.Spec.FreshSeeds
	if len(fresh) != bench.FreshRunCount() || len(fresh) == 0 {
		t.Fatalf("lease drew %d fresh seeds, want the benchmark's %d", len(fresh), bench.FreshRunCount())
	}
	for i, s := range fresh {
		if s <= 0 || s >= 1<<31 || slices.Contains(claimed, s) || slices.Contains(fresh[:i], s) {
			t.Fatalf("fresh seeds %v: each must be positive, below 2^31, distinct and not a claimed seed %v", fresh, claimed)
		}
	}
	runs := first.Spec.Runs()
	if len(runs) != len(claimed)+len(fresh) || runs[0].Fresh || !runs[len(claimed)].Fresh || runs[len(claimed)].Seed != fresh[0] || runs[len(runs)-1].Index != len(runs)-1 {
		t.Fatalf("spec runs %+v: want the claimed seeds, then the fresh ones", runs)
	}
	job, err := db.CheckLease(ctx, first.Job.ID, first.Secret)
	if err != nil || !slices.Equal(job.FreshSeeds, fresh) {
		t.Fatalf("CheckLease: fresh seeds %v, %v; want the lease's %v", job.FreshSeeds, err, fresh)
	}
	if published, _ := json.Marshal(job); strings.Contains(string(published), "fresh") {
		t.Fatalf("the job's JSON %s names its fresh seeds", published)
	}

	clk.Advance(2 * time.Minute) // the lease expires; the next lease draws again
	second := mustLease(t, db, "r2", nil, time.Minute)
	if second.Job.ID != first.Job.ID {
		t.Fatalf("leased job %d, want the expired %d", second.Job.ID, first.Job.ID)
	}
	if slices.Equal(second.Spec.FreshSeeds, fresh) {
		t.Fatalf("a new lease reused the fresh seeds %v of the lost one", fresh)
	}
}
