package store

import (
	"context"
	"strings"
	"testing"
	"time"

	d5list "github.com/deep500/d5list"
)

func TestRunnerTokens(t *testing.T) {
	db, _ := newTestDB(t)
	ctx := context.Background()
	tok, err := db.CreateRunnerToken(ctx, "gpu-box-1")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(tok, RunnerTokenPrefix) || len(tok) < 40 {
		t.Fatalf("token %q: want the %s prefix and 256 random bits", tok, RunnerTokenPrefix)
	}
	other, err := db.CreateRunnerToken(ctx, "gpu-box-1")
	if err != nil || other == tok {
		t.Fatalf("second token %q (%v): want a distinct one", other, err)
	}
	rt, err := db.RunnerByToken(ctx, tok)
	if err != nil || rt.Name != "gpu-box-1" {
		t.Fatalf("RunnerByToken = %+v, %v", rt, err)
	}
	// Only the hash is stored.
	var n int
	if err := db.read.QueryRowContext(ctx, `SELECT count(*) FROM runner_tokens WHERE hash = ? OR hash = ?`, tok, hashSecret(tok)).Scan(&n); err != nil {
		t.Fatal(err)
	}
	if n != 1 {
		t.Fatalf("found %d rows by token or hash, want exactly the hash", n)
	}

	// An API token, a stranger and a tampered token are all refused.
	for _, bad := range []string{"d5_" + tok[4:], tok + "x", "", "d5r_nothing"} {
		_, err := db.RunnerByToken(ctx, bad)
		wantCode(t, "RunnerByToken("+bad+")", err, d5list.EUNAUTHORIZED)
	}

	if err := db.RevokeRunnerToken(ctx, "gpu-box-1"); err != nil {
		t.Fatal(err)
	}
	for _, revoked := range []string{tok, other} {
		_, err := db.RunnerByToken(ctx, revoked)
		wantCode(t, "RunnerByToken after revoke", err, d5list.EUNAUTHORIZED)
	}
	wantCode(t, "revoke unknown", db.RevokeRunnerToken(ctx, "nobody"), d5list.ENOTFOUND)
	_, err = db.CreateRunnerToken(ctx, "bad name!")
	wantCode(t, "bad name", err, d5list.EINVALID)
}

func TestTouchRunnerAndOnline(t *testing.T) {
	db, clk := newTestDB(t)
	ctx := context.Background()
	labels := map[string]string{"cpu_cores": "8"}
	if err := db.TouchRunner(ctx, "a/0", labels, 0); err != nil {
		t.Fatal(err)
	}
	clk.Advance(RunnerOnlineWindow)
	// A heartbeat carries no labels: the advertised ones stay.
	if err := db.TouchRunner(ctx, "b/0", labels, 0); err != nil {
		t.Fatal(err)
	}
	if err := db.TouchRunner(ctx, "b/0", nil, 7); err != nil {
		t.Fatal(err)
	}
	rs, err := db.Runners(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(rs) != 2 {
		t.Fatalf("runners %+v, want 2", rs)
	}
	b, a := rs[0], rs[1]
	if b.Name != "b/0" || !b.Online || b.CurrentJob != 7 || b.Labels["cpu_cores"] != "8" {
		t.Errorf("runner b = %+v, want online, job 7, labels kept", b)
	}
	if a.Name != "a/0" || a.Online || !a.LastSeen.Equal(clk.Now().Add(-RunnerOnlineWindow)) {
		t.Errorf("runner a = %+v, want offline since its last call", a)
	}
}

func TestActiveJobsPositions(t *testing.T) {
	db, clk := newTestDB(t)
	ctx := context.Background()
	var ids []int64
	for i := range 4 {
		s := mustCreate(t, db, testSubmission("l2-digits", int64(i)))
		jobs, err := db.Jobs(ctx, s.ID)
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, jobs[0].ID)
	}
	short := mustLease(t, db, "r1", nil, time.Second) // job 0, expires first
	long := mustLease(t, db, "r2", nil, time.Minute)  // job 1
	if err := db.CancelJob(ctx, ids[3]); err != nil { // finished jobs leave the queue
		t.Fatal(err)
	}
	clk.Advance(2 * time.Second)
	got, err := db.ActiveJobs(ctx)
	if err != nil {
		t.Fatal(err)
	}
	want := map[int64]int{short.Job.ID: 1, long.Job.ID: 0, ids[2]: 2}
	if len(got) != len(want) {
		t.Fatalf("active jobs %+v, want %d", got, len(want))
	}
	for _, j := range got {
		if p, ok := want[j.ID]; !ok || p != j.Position {
			t.Errorf("job %d (%s): position %d, want %d (present %v)", j.ID, j.State, j.Position, p, ok)
		}
	}
}
