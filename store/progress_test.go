package store

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	d5list "github.com/deep500/d5list"
)

func logBatch(from, n int) []d5list.LogLine {
	lines := make([]d5list.LogLine, n)
	for i := range lines {
		lines[i] = d5list.LogLine{Run: 0, Stream: d5list.StreamStdout, Text: fmt.Sprintf("line %d", from+i)}
	}
	return lines
}

// Only the holder of a live lease adds lines, each stamped with its
// attempt, and a job keeps only its latest MaxLogLinesPerJob lines.
func TestJobLogKeepsTheLatestLinesOfEachJob(t *testing.T) {
	defer func(n int) { MaxLogLinesPerJob = n }(MaxLogLinesPerJob)
	MaxLogLinesPerJob = 50
	ctx := context.Background()
	db, clk := newTestDB(t)
	s := mustCreate(t, db, testSubmission("l2-digits", 1))
	l := mustLease(t, db, "r1", nil, time.Minute)

	wantCode(t, "a wrong secret", db.AppendJobLog(ctx, l.Job.ID, "wrong", logBatch(0, 1)), d5list.EFORBIDDEN)
	for i := range 3 {
		if err := db.AppendJobLog(ctx, l.Job.ID, l.Secret, logBatch(30*i, 30)); err != nil {
			t.Fatal(err)
		}
	}
	all, err := db.JobLog(ctx, s.ID, 0, 1000)
	if err != nil {
		t.Fatal(err)
	}
	if len(all) != 50 || all[0].Text != "line 40" || all[49].Text != "line 89" {
		t.Fatalf("kept %d lines from %q to %q, want the latest 50 (line 40 to line 89)", len(all), all[0].Text, all[len(all)-1].Text)
	}
	for i, line := range all {
		if line.Attempt != 1 || line.JobID != l.Job.ID || line.Stream != d5list.StreamStdout || (i > 0 && line.Seq <= all[i-1].Seq) {
			t.Fatalf("line %d: %+v", i, line)
		}
	}
	var stored int
	db.read.QueryRow(`SELECT count(*) FROM job_log WHERE job_id = ?`, l.Job.ID).Scan(&stored)
	if stored != 50 {
		t.Fatalf("job_log holds %d rows of the job, want 50", stored)
	}
	if tail, _ := db.JobLog(ctx, s.ID, -1, 10); len(tail) != 10 || tail[0].Text != "line 80" || tail[9].Text != "line 89" {
		t.Fatalf("the tail of 10: %+v", tail)
	}
	if after, _ := db.JobLog(ctx, s.ID, all[39].Seq, 100); len(after) != 10 || after[0].Text != "line 80" {
		t.Fatalf("after line 79: %d lines from %+v", len(after), after)
	}

	// The lease expires: its holder may add no more; the next holder's
	// lines carry attempt 2.
	clk.Advance(2 * time.Minute)
	wantCode(t, "an expired lease", db.AppendJobLog(ctx, l.Job.ID, l.Secret, logBatch(90, 1)), d5list.EFORBIDDEN)
	l2 := mustLease(t, db, "r2", nil, time.Minute)
	if err := db.AppendJobLog(ctx, l2.Job.ID, l2.Secret, logBatch(100, 1)); err != nil {
		t.Fatal(err)
	}
	if tail, _ := db.JobLog(ctx, s.ID, -1, 1); len(tail) != 1 || tail[0].Text != "line 100" || tail[0].Attempt != 2 {
		t.Fatalf("the second attempt's line: %+v", tail)
	}
	if err := db.CancelJob(ctx, l2.Job.ID); err != nil {
		t.Fatal(err)
	}
	wantCode(t, "a cancelled job", db.AppendJobLog(ctx, l2.Job.ID, l2.Secret, logBatch(101, 1)), d5list.ECONFLICT)
}

// Every step of a job's life is recorded for the timeline: each lease
// with its runner and attempt, an expired lease, a failure with attempts
// left, and the completion with its verdict.
func TestJobEventsTellTheJobsLife(t *testing.T) {
	ctx := context.Background()
	db, clk := newTestDB(t)
	s := mustCreate(t, db, testSubmission("l2-digits", 1))
	a := mustLease(t, db, "a", nil, time.Minute)
	clk.Advance(2 * time.Minute)
	b := mustLease(t, db, "b", nil, time.Minute)
	if err := db.FailJob(ctx, b.Job.ID, b.Secret, "out of memory"); err != nil {
		t.Fatal(err)
	}
	c := mustLease(t, db, "c", nil, time.Minute)
	if err := db.CompleteJob(ctx, c.Job.ID, c.Secret, &d5list.Result{}, d5list.StatusVerified, nil); err != nil {
		t.Fatal(err)
	}
	events, err := db.JobEvents(ctx, s.ID)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, e := range events {
		if e.JobID != a.Job.ID {
			t.Fatalf("event of job %d, want %d", e.JobID, a.Job.ID)
		}
		got = append(got, fmt.Sprintf("%s/%d/%s/%s", e.Kind, e.Attempt, e.Runner, e.Detail))
	}
	want := []string{"leased/1/a/", "lease_expired/1/a/", "leased/2/b/", "requeued/2/b/out of memory", "leased/3/c/", "completed/3/c/verified"}
	if strings.Join(got, " ") != strings.Join(want, " ") {
		t.Fatalf("events\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if !events[1].Time.Equal(a.Job.LeaseExpires) {
		t.Errorf("lease_expired at %s, want the lease's end %s", events[1].Time, a.Job.LeaseExpires)
	}
}

// Pruning deletes the lines of jobs that ended before the cut, batch after
// batch, and keeps those of later jobs and of jobs still running however
// old their lines are.
func TestPruneJobLogsKeepsRecentAndRunningJobs(t *testing.T) {
	defer func(n int) { pruneBatch = n }(pruneBatch)
	pruneBatch = 7
	ctx := context.Background()
	db, clk := newTestDB(t)
	lineCount := func(s *d5list.Submission) int {
		t.Helper()
		lines, err := db.JobLog(ctx, s.ID, 0, 1000)
		if err != nil {
			t.Fatal(err)
		}
		return len(lines)
	}
	finished := func(lines int) *d5list.Submission {
		t.Helper()
		s := mustCreate(t, db, testSubmission("l2-digits", 1))
		l := mustLease(t, db, "r1", nil, time.Hour)
		if err := db.AppendJobLog(ctx, l.Job.ID, l.Secret, logBatch(0, lines)); err != nil {
			t.Fatal(err)
		}
		if err := db.CompleteJob(ctx, l.Job.ID, l.Secret, &d5list.Result{}, d5list.StatusVerified, nil); err != nil {
			t.Fatal(err)
		}
		return s
	}

	old := finished(30)
	oldCancelled := mustCreate(t, db, testSubmission("l2-digits", 1))
	lc := mustLease(t, db, "r1", nil, time.Hour)
	if err := db.AppendJobLog(ctx, lc.Job.ID, lc.Secret, logBatch(0, 5)); err != nil {
		t.Fatal(err)
	}
	if err := db.CancelJob(ctx, lc.Job.ID); err != nil {
		t.Fatal(err)
	}
	running := mustCreate(t, db, testSubmission("l2-digits", 1))
	lr := mustLease(t, db, "r2", nil, 30*24*time.Hour)
	if err := db.AppendJobLog(ctx, lr.Job.ID, lr.Secret, logBatch(0, 4)); err != nil {
		t.Fatal(err)
	}
	clk.Advance(10 * 24 * time.Hour)
	recent := finished(6)

	n, err := db.PruneJobLogs(ctx, clk.Now().Add(-5*24*time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	if n != 35 {
		t.Fatalf("pruned %d lines, want the 30 + 5 of the jobs that ended 10 days ago", n)
	}
	for _, c := range []struct {
		name string
		sub  *d5list.Submission
		want int
	}{{"old, done", old, 0}, {"old, cancelled", oldCancelled, 0}, {"still leased", running, 4}, {"ended since the cut", recent, 6}} {
		if got := lineCount(c.sub); got != c.want {
			t.Errorf("%s: %d lines left, want %d", c.name, got, c.want)
		}
	}
	if n, err := db.PruneJobLogs(ctx, clk.Now().Add(-5*24*time.Hour)); n != 0 || err != nil {
		t.Fatalf("a second prune deleted %d lines (%v), want none", n, err)
	}
}
