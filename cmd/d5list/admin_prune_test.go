package main

import (
	"bytes"
	"context"
	"io"
	"log/slog"
	"strings"
	"testing"
	"time"

	d5list "github.com/deep500/d5list"
	"github.com/deep500/d5list/catalog"
	"github.com/deep500/d5list/store"
)

// finishedWithLog stores a submission whose re-run wrote lines and ended at
// the store's clock, and returns the submission's id.
func finishedWithLog(t *testing.T, db *store.DB, lines int) int64 {
	t.Helper()
	ctx := context.Background()
	u, err := db.EnsureUser(ctx, "carol", d5list.RoleCompetitor)
	if err != nil {
		t.Fatal(err)
	}
	sub := &d5list.Submission{BenchmarkID: "l2-digits-mlp-cpu", OwnerID: u.ID, Submitter: "Carol Lab", SystemName: "box",
		Status: d5list.StatusQueued, Recipe: &d5list.Recipe{}, Claimed: &d5list.Result{}}
	if err := db.CreateSubmission(ctx, sub); err != nil {
		t.Fatal(err)
	}
	lease, err := db.LeaseJob(ctx, "r1", nil, time.Hour)
	if err != nil || lease == nil || lease.Job.SubmissionID != sub.ID {
		t.Fatalf("lease: %+v, %v", lease, err)
	}
	batch := make([]d5list.LogLine, lines)
	for i := range batch {
		batch[i] = d5list.LogLine{Stream: d5list.StreamStdout, Text: "epoch"}
	}
	if err := db.AppendJobLog(ctx, lease.Job.ID, lease.Secret, batch); err != nil {
		t.Fatal(err)
	}
	if err := db.CompleteJob(ctx, lease.Job.ID, lease.Secret, &d5list.Result{}, d5list.StatusVerified, nil); err != nil {
		t.Fatal(err)
	}
	return sub.ID
}

// The output lines of old jobs go, by the admin command or by the server's
// hourly sweep; those of recent jobs stay.
func TestPruneLogs(t *testing.T) {
	ctx := context.Background()
	data := t.TempDir()
	db, err := store.Open(ctx, data)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	benchmarks, err := catalog.Benchmarks()
	if err != nil {
		t.Fatal(err)
	}
	if err := db.UpsertBenchmarks(ctx, benchmarks); err != nil {
		t.Fatal(err)
	}
	db.Now = func() time.Time { return time.Now().Add(-3 * 24 * time.Hour) }
	old := finishedWithLog(t, db, 3)
	db.Now = time.Now
	recent := finishedWithLog(t, db, 2)
	count := func(sub int64) int {
		t.Helper()
		lines, err := db.JobLog(ctx, sub, 0, 100)
		if err != nil {
			t.Fatal(err)
		}
		return len(lines)
	}

	var out bytes.Buffer
	if err := run(ctx, []string{"admin", "prune-logs", "--data", data, "--days", "0"}, &out, &out); err == nil || !strings.Contains(err.Error(), "--days") {
		t.Fatalf("--days 0: %v, want an error naming --days", err)
	}
	if err := run(ctx, []string{"admin", "prune-logs", "--data", data, "--days", "2"}, &out, &out); err != nil {
		t.Fatalf("prune-logs: %v\n%s", err, out.String())
	}
	if !strings.Contains(out.String(), "deleted 3 output lines") {
		t.Errorf("output %q, want the 3 lines of the old job counted", out.String())
	}
	if o, r := count(old), count(recent); o != 0 || r != 2 {
		t.Fatalf("after pruning at 2 days: old job %d lines, recent job %d; want 0 and 2", o, r)
	}

	// The server's sweep, kept to one day, prunes at once when it starts.
	db.Now = func() time.Time { return time.Now().Add(-2 * 24 * time.Hour) }
	older := finishedWithLog(t, db, 4)
	db.Now = time.Now
	sweep, stop := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		pruneLogsEvery(sweep, db, 24*time.Hour, time.Hour, slog.New(slog.NewTextHandler(io.Discard, nil)))
		close(done)
	}()
	deadline := time.Now().Add(30 * time.Second)
	for count(older) != 0 {
		if time.Now().After(deadline) {
			t.Fatal("the sweep did not prune the lines of a job that ended two days ago")
		}
		time.Sleep(20 * time.Millisecond)
	}
	stop()
	<-done
	if r := count(recent); r != 2 {
		t.Fatalf("the sweep left %d lines of the recent job, want 2", r)
	}
}
