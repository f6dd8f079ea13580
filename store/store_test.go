package store

import (
	"context"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"testing/fstest"
	"time"

	d5list "github.com/deep500/d5list"
)

// fakeClock lets tests move time instead of sleeping.
type fakeClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *fakeClock) Advance(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

func openTestDB(t *testing.T, dir string) *DB {
	t.Helper()
	db, err := Open(context.Background(), dir)
	if err != nil {
		t.Fatalf("Open(%s): %v", dir, err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

// newTestDB opens a fresh store on a fake clock with one benchmark.
func newTestDB(t *testing.T) (*DB, *fakeClock) {
	t.Helper()
	db := openTestDB(t, t.TempDir())
	clk := &fakeClock{t: time.Date(2025, 6, 1, 12, 0, 0, 0, time.UTC)}
	db.Now = clk.Now
	if err := db.UpsertBenchmarks(context.Background(), []d5list.Benchmark{testBenchmark("l2-digits", nil)}); err != nil {
		t.Fatal(err)
	}
	return db, clk
}

func testBenchmark(id string, requires map[string]string) d5list.Benchmark {
	return d5list.Benchmark{
		ID: id, Name: "Digits " + id, Level: 2, Category: "training", Workload: "digits-mlp", Runs: 3,
		Division: d5list.DivisionRules{Fixed: map[string]any{"model": "mlp"}, Mutable: map[string]any{"batch_size": 32.0}},
		Quality:  d5list.QualityTarget{Metric: "eval_accuracy", Target: 0.9, Mode: "first", Direction: d5list.HigherIsBetter},
		Ranking:  d5list.RankingRule{Metric: d5list.MetricTimeToTrain, Direction: d5list.LowerIsBetter, Unit: "s"},
		Requires: requires,
	}
}

func testSubmission(benchmarkID string, seeds ...int64) *d5list.Submission {
	claimed := &d5list.Result{Score: d5list.Score{Metric: d5list.MetricTimeToTrain, Value: 12.5, Valid: true}}
	for i, s := range seeds {
		claimed.Runs = append(claimed.Runs, d5list.RunMetrics{Index: i, Seed: s, Converged: true, TimeToTrain: 10 + float64(i)})
	}
	return &d5list.Submission{
		BenchmarkID: benchmarkID, Division: d5list.DivisionClosed, Availability: d5list.AvailabilityAvailable,
		Submitter: "ETH", SystemName: "laptop", Framework: "go",
		BundleSHA256: strings.Repeat("ab", 32), BundleSize: 1234,
		Recipe:  &d5list.Recipe{Fixed: map[string]any{"model": "mlp"}, Mutable: map[string]any{"batch_size": 64.0}},
		Claimed: claimed,
	}
}

func mustCreate(t *testing.T, db *DB, s *d5list.Submission) *d5list.Submission {
	t.Helper()
	if err := db.CreateSubmission(context.Background(), s); err != nil {
		t.Fatalf("CreateSubmission: %v", err)
	}
	return s
}

func mustLease(t *testing.T, db *DB, runner string, labels map[string]string, ttl time.Duration) *d5list.Lease {
	t.Helper()
	l, err := db.LeaseJob(context.Background(), runner, labels, ttl)
	if err != nil {
		t.Fatalf("LeaseJob(%s): %v", runner, err)
	}
	if l == nil {
		t.Fatalf("LeaseJob(%s): no job, want one", runner)
	}
	return l
}

func wantCode(t *testing.T, what string, err error, code string) {
	t.Helper()
	if got := d5list.ErrorCode(err); got != code {
		t.Fatalf("%s: error %v (code %q), want code %q", what, err, got, code)
	}
}

func TestOpenMigratesOnceAcrossReopen(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir() + "/data" // Open creates it
	ms, err := loadMigrations(migrationFS)
	if err != nil || len(ms) == 0 {
		t.Fatalf("embedded migrations: %v (%d)", err, len(ms))
	}
	for round := 0; round < 3; round++ {
		db, err := Open(ctx, dir)
		if err != nil {
			t.Fatalf("round %d: %v", round, err)
		}
		if _, err := db.EnsureUser(ctx, "alice", d5list.RoleCompetitor); err != nil {
			t.Fatalf("round %d: %v", round, err)
		}
		var applied, users int
		if err := db.read.QueryRow(`SELECT count(*) FROM schema_migrations`).Scan(&applied); err != nil {
			t.Fatal(err)
		}
		if err := db.read.QueryRow(`SELECT count(*) FROM users`).Scan(&users); err != nil {
			t.Fatal(err)
		}
		if applied != len(ms) || users != 1 {
			t.Fatalf("round %d: %d migrations recorded, %d users; want %d and 1", round, applied, users, len(ms))
		}
		var mode string
		var fk int
		db.write.QueryRow(`PRAGMA journal_mode`).Scan(&mode)
		db.write.QueryRow(`PRAGMA foreign_keys`).Scan(&fk)
		if mode != "wal" || fk != 1 {
			t.Fatalf("journal_mode=%q foreign_keys=%d, want wal and 1", mode, fk)
		}
		if err := db.Close(); err != nil {
			t.Fatal(err)
		}
	}
}

func TestLoadMigrationsRejectsBadNames(t *testing.T) {
	tests := []struct {
		name  string
		files fstest.MapFS
		want  string
	}{
		{"no number", fstest.MapFS{"migrations/init.sql": {Data: []byte("SELECT 1")}}, "migrations/init.sql"},
		{"duplicate version", fstest.MapFS{
			"migrations/0001_a.sql": {Data: []byte("SELECT 1")},
			"migrations/01_b.sql":   {Data: []byte("SELECT 1")},
		}, "version 1 already used"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := loadMigrations(tt.files)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("error %v, want one mentioning %q", err, tt.want)
			}
		})
	}
	ms, err := loadMigrations(fstest.MapFS{
		"migrations/0010_later.sql": {Data: []byte("SELECT 10")},
		"migrations/0002_early.sql": {Data: []byte("SELECT 2")},
	})
	if err != nil || len(ms) != 2 || ms[0].version != 2 || ms[1].version != 10 {
		t.Fatalf("got %+v, %v; want versions 2 then 10", ms, err)
	}
}

func TestBenchmarksUpsertAndOrder(t *testing.T) {
	ctx := context.Background()
	db, _ := newTestDB(t)
	b1 := testBenchmark("z-first", map[string]string{"accelerator": "H100"})
	b1.Level = 1
	b2 := testBenchmark("a-second", nil)
	b2.Category = "inference"
	b3 := testBenchmark("b-third", nil)
	b3.Category = "inference"
	for i := 0; i < 2; i++ { // seeding twice is harmless
		if err := db.UpsertBenchmarks(ctx, []d5list.Benchmark{b3, b1, b2}); err != nil {
			t.Fatal(err)
		}
	}
	bs, err := db.Benchmarks(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, b := range bs {
		ids = append(ids, b.ID)
	}
	// Level 1 first; at level 2 "inference" before "training".
	if got, want := strings.Join(ids, ","), "z-first,a-second,b-third,l2-digits"; got != want {
		t.Fatalf("order %s, want %s", got, want)
	}
	b1.Name = "renamed"
	if err := db.UpsertBenchmarks(ctx, []d5list.Benchmark{b1}); err != nil {
		t.Fatal(err)
	}
	got, err := db.Benchmark(ctx, "z-first")
	if err != nil || got.Name != "renamed" || got.Requires["accelerator"] != "H100" || got.Division.Fixed["model"] != "mlp" {
		t.Fatalf("Benchmark: %+v, %v", got, err)
	}
	_, err = db.Benchmark(ctx, "nope")
	wantCode(t, "unknown benchmark", err, d5list.ENOTFOUND)
	if !strings.Contains(err.Error(), `"nope"`) {
		t.Fatalf("error %q does not name the id", err)
	}
	wantCode(t, "empty id", db.UpsertBenchmarks(ctx, []d5list.Benchmark{{Name: "x"}}), d5list.EINVALID)
}

func TestUsersAndTokens(t *testing.T) {
	ctx := context.Background()
	db, _ := newTestDB(t)
	u, err := db.EnsureUser(ctx, "alice", d5list.RoleCompetitor)
	if err != nil {
		t.Fatal(err)
	}
	again, err := db.EnsureUser(ctx, "alice", d5list.RoleOrganiser)
	if err != nil || again.ID != u.ID || again.Role != d5list.RoleOrganiser {
		t.Fatalf("EnsureUser again: %+v, %v; want id %d with role organiser", again, err, u.ID)
	}
	if got, err := db.User(ctx, "alice"); err != nil || got.Role != d5list.RoleOrganiser || !got.CreatedAt.Equal(u.CreatedAt) {
		t.Fatalf("User: %+v, %v", got, err)
	}
	_, err = db.User(ctx, "bob")
	wantCode(t, "unknown user", err, d5list.ENOTFOUND)
	_, err = db.EnsureUser(ctx, "carol", "wizard")
	wantCode(t, "bad role", err, d5list.EINVALID)

	token, err := db.CreateToken(ctx, u.ID, "laptop")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(token, TokenPrefix) || len(token) < 40 {
		t.Fatalf("token %q: want %s and 32 random bytes", token, TokenPrefix)
	}
	other, _ := db.CreateToken(ctx, u.ID, "ci")
	if other == token {
		t.Fatal("two tokens are equal")
	}
	var stored []string
	rows, err := db.read.Query(`SELECT hash FROM tokens`)
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		var h string
		rows.Scan(&h)
		stored = append(stored, h)
	}
	rows.Close()
	joined := strings.Join(stored, " ")
	if len(stored) != 2 || strings.Contains(joined, token) || !strings.Contains(joined, hashSecret(token)) {
		t.Fatalf("tokens table holds %q; want the sha256 of each token and never the token", stored)
	}

	got, err := db.UserByToken(ctx, token)
	if err != nil || got.ID != u.ID {
		t.Fatalf("UserByToken: %+v, %v", got, err)
	}
	if err := db.RevokeToken(ctx, token); err != nil {
		t.Fatal(err)
	}
	_, err = db.UserByToken(ctx, token)
	wantCode(t, "revoked token", err, d5list.EUNAUTHORIZED)
	if _, err := db.UserByToken(ctx, other); err != nil {
		t.Fatalf("revoking one token ended the other: %v", err)
	}
	_, err = db.UserByToken(ctx, "d5_unknown")
	wantCode(t, "unknown token", err, d5list.EUNAUTHORIZED)
	wantCode(t, "revoke unknown", db.RevokeToken(ctx, "d5_unknown"), d5list.ENOTFOUND)
	_, err = db.CreateToken(ctx, 999, "x")
	wantCode(t, "token for unknown user", err, d5list.ENOTFOUND)
}

func TestSubmissionRoundTrip(t *testing.T) {
	ctx := context.Background()
	db, clk := newTestDB(t)
	if err := db.UpsertBenchmarks(ctx, []d5list.Benchmark{testBenchmark("other", nil)}); err != nil {
		t.Fatal(err)
	}
	alice, _ := db.EnsureUser(ctx, "alice", d5list.RoleCompetitor)
	bob, _ := db.EnsureUser(ctx, "bob", d5list.RoleCompetitor)

	acc := 0.9
	s := testSubmission("l2-digits", 7, 8, 9)
	s.OwnerID = alice.ID
	s.Accelerator, s.Accelerators, s.HostCPU = "H100", 8, "EPYC"
	s.Claimed.Score = d5list.Score{Metric: d5list.MetricTimeToTrain, Value: math.Inf(1), Min: math.Inf(1), Max: math.Inf(-1),
		Note: "more than one run did not converge"}
	s.Recipe.Metrics = []d5list.MetricSpec{{Name: "accuracy", Acceptable: &acc}}
	s.Status = d5list.StatusChecking // CreateSubmission queues it regardless
	mustCreate(t, db, s)
	if s.ID == 0 || s.Status != d5list.StatusQueued || !s.CreatedAt.Equal(clk.Now()) || s.Reasons == nil {
		t.Fatalf("after create: id %d status %s created %v reasons %v", s.ID, s.Status, s.CreatedAt, s.Reasons)
	}

	got, err := db.Submission(ctx, s.ID)
	if err != nil {
		t.Fatal(err)
	}
	if got.Owner != "alice" || got.OwnerID != alice.ID || got.Accelerators != 8 || got.HostCPU != "EPYC" ||
		got.BundleSHA256 != s.BundleSHA256 || got.BundleSize != 1234 || got.Status != d5list.StatusQueued {
		t.Fatalf("columns did not round-trip: %+v", got)
	}
	if got.Recipe == nil || got.Recipe.Mutable["batch_size"] != 64.0 || *got.Recipe.Metrics[0].Acceptable != 0.9 {
		t.Fatalf("recipe did not round-trip: %+v", got.Recipe)
	}
	if got.Claimed == nil || len(got.Claimed.Runs) != 3 || got.Claimed.Runs[2].Seed != 9 ||
		!math.IsInf(got.Claimed.Score.Value, 1) || !math.IsInf(got.Claimed.Score.Max, -1) {
		t.Fatalf("claimed result did not round-trip: %+v", got.Claimed)
	}
	if got.Measured != nil || got.Reasons == nil || len(got.Reasons) != 0 {
		t.Fatalf("measured %v reasons %#v; want nil and an empty slice", got.Measured, got.Reasons)
	}
	jobs, err := db.Jobs(ctx, s.ID)
	if err != nil || len(jobs) != 1 || jobs[0].State != d5list.JobQueued || jobs[0].MaxAttempts != DefaultMaxAttempts {
		t.Fatalf("jobs of a new submission: %+v, %v; want one queued", jobs, err)
	}

	run := 1
	reasons := []d5list.Reason{{Code: "slow", Message: "too slow", File: "result_1.txt", Line: 4, Run: &run}}
	if err := db.SetSubmissionStatus(ctx, s.ID, d5list.StatusNeedsReview, reasons); err != nil {
		t.Fatal(err)
	}
	got, _ = db.Submission(ctx, s.ID)
	if got.Status != d5list.StatusNeedsReview || len(got.Reasons) != 1 || *got.Reasons[0].Run != 1 || got.Reasons[0].Line != 4 {
		t.Fatalf("after SetSubmissionStatus: %s %+v", got.Status, got.Reasons)
	}
	wantCode(t, "status of unknown submission", db.SetSubmissionStatus(ctx, 999, d5list.StatusVerified, nil), d5list.ENOTFOUND)
	_, err = db.Submission(ctx, 999)
	wantCode(t, "unknown submission", err, d5list.ENOTFOUND)
	wantCode(t, "unknown benchmark", db.CreateSubmission(ctx, testSubmission("nope")), d5list.ENOTFOUND)

	s2 := mustCreate(t, db, withOwner(testSubmission("l2-digits", 1), bob.ID))
	s3 := mustCreate(t, db, withOwner(testSubmission("other", 1), alice.ID))
	tests := []struct {
		name string
		f    SubmissionFilter
		want []int64
	}{
		{"all, newest first", SubmissionFilter{}, []int64{s3.ID, s2.ID, s.ID}},
		{"by benchmark", SubmissionFilter{BenchmarkID: "l2-digits"}, []int64{s2.ID, s.ID}},
		{"by owner", SubmissionFilter{OwnerID: alice.ID}, []int64{s3.ID, s.ID}},
		{"by statuses", SubmissionFilter{Statuses: []d5list.Status{d5list.StatusNeedsReview, d5list.StatusVerified}}, []int64{s.ID}},
		{"limit", SubmissionFilter{Limit: 1}, []int64{s3.ID}},
		{"nothing", SubmissionFilter{BenchmarkID: "other", OwnerID: bob.ID}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			subs, err := db.Submissions(ctx, tt.f)
			if err != nil {
				t.Fatal(err)
			}
			var ids []int64
			for _, x := range subs {
				ids = append(ids, x.ID)
				if x.Reasons == nil {
					t.Fatalf("submission %d: nil reasons", x.ID)
				}
			}
			if len(ids) != len(tt.want) {
				t.Fatalf("ids %v, want %v", ids, tt.want)
			}
			for i := range ids {
				if ids[i] != tt.want[i] {
					t.Fatalf("ids %v, want %v", ids, tt.want)
				}
			}
		})
	}
}

func withOwner(s *d5list.Submission, id int64) *d5list.Submission {
	s.OwnerID = id
	return s
}

func TestLeaseHeartbeatComplete(t *testing.T) {
	ctx := context.Background()
	db, clk := newTestDB(t)
	s := mustCreate(t, db, testSubmission("l2-digits", 11, 22, 33))

	l := mustLease(t, db, "r1", nil, time.Minute)
	if l.Secret == "" || l.Job.State != d5list.JobLeased || l.Job.Attempts != 1 || l.Job.RunnerID != "r1" ||
		!l.Job.LeaseExpires.Equal(clk.Now().Add(time.Minute)) {
		t.Fatalf("lease job: %+v", l.Job)
	}
	sp := l.Spec
	if sp.JobID != l.Job.ID || sp.SubmissionID != s.ID || sp.Benchmark.ID != "l2-digits" || sp.Benchmark.Workload != "digits-mlp" ||
		sp.BundleSHA256 != s.BundleSHA256 || sp.Recipe.Mutable["batch_size"] != 64.0 ||
		len(sp.Seeds) != 3 || sp.Seeds[0] != 11 || sp.Seeds[2] != 33 {
		t.Fatalf("spec: %+v", sp)
	}
	if sub, _ := db.Submission(ctx, s.ID); sub.Status != d5list.StatusRunning {
		t.Fatalf("submission %s while leased, want running", sub.Status)
	}
	var stored string
	db.read.QueryRow(`SELECT secret_hash FROM jobs WHERE id = ?`, l.Job.ID).Scan(&stored)
	if stored == l.Secret || stored != hashSecret(l.Secret) {
		t.Fatalf("jobs.secret_hash = %q; want the sha256 of the secret", stored)
	}
	if again, err := db.LeaseJob(ctx, "r2", nil, time.Minute); err != nil || again != nil {
		t.Fatalf("second lease of the only job: %+v, %v; want nil, nil", again, err)
	}
	if j, err := db.CheckLease(ctx, l.Job.ID, l.Secret); err != nil || j.SubmissionID != s.ID {
		t.Fatalf("CheckLease: %+v, %v", j, err)
	}

	clk.Advance(50 * time.Second)
	if err := db.HeartbeatJob(ctx, l.Job.ID, l.Secret, time.Minute); err != nil {
		t.Fatal(err)
	}
	clk.Advance(50 * time.Second) // past the first expiry, within the extended one
	if j, _ := db.Job(ctx, l.Job.ID); !j.LeaseExpires.After(clk.Now()) {
		t.Fatalf("heartbeat did not extend the lease: expires %v, now %v", j.LeaseExpires, clk.Now())
	}
	if again, _ := db.LeaseJob(ctx, "r2", nil, time.Minute); again != nil {
		t.Fatal("a heartbeated lease was taken by another runner")
	}

	measured := &d5list.Result{Runs: []d5list.RunMetrics{{Index: 0, Seed: 11, Converged: true}},
		Score: d5list.Score{Metric: d5list.MetricTimeToTrain, Value: 9.5, Valid: true}, Runner: map[string]string{"cpu": "x"}}
	reasons := []d5list.Reason{{Code: "ok", Message: "fine"}}
	if err := db.CompleteJob(ctx, l.Job.ID, l.Secret, measured, d5list.StatusVerified, reasons); err != nil {
		t.Fatal(err)
	}
	sub, _ := db.Submission(ctx, s.ID)
	if sub.Status != d5list.StatusVerified || sub.Measured == nil || sub.Measured.Score.Value != 9.5 ||
		sub.Measured.Runner["cpu"] != "x" || len(sub.Reasons) != 1 || sub.Reasons[0].Code != "ok" {
		t.Fatalf("after completion: %+v", sub)
	}
	if j, _ := db.Job(ctx, l.Job.ID); j.State != d5list.JobDone {
		t.Fatalf("job %s, want done", j.State)
	}

	// The runner retries its report (lost response): accepted, nothing changes.
	if err := db.CompleteJob(ctx, l.Job.ID, l.Secret, nil, d5list.StatusDiscrepancy, nil); err != nil {
		t.Fatalf("repeated completion: %v", err)
	}
	if sub, _ := db.Submission(ctx, s.ID); sub.Status != d5list.StatusVerified || sub.Measured == nil {
		t.Fatalf("a repeated report changed the submission: %+v", sub)
	}
	if _, err := db.CheckLease(ctx, l.Job.ID, l.Secret); err != nil {
		t.Fatalf("CheckLease after completion by the holder: %v", err)
	}
	wantCode(t, "completion with another secret", db.CompleteJob(ctx, l.Job.ID, "other", measured, d5list.StatusVerified, nil), d5list.EFORBIDDEN)
	wantCode(t, "heartbeat after completion", db.HeartbeatJob(ctx, l.Job.ID, l.Secret, time.Minute), d5list.ECONFLICT)
	wantCode(t, "non-final status", db.CompleteJob(ctx, l.Job.ID, l.Secret, nil, d5list.StatusRunning, nil), d5list.EINVALID)
}

func TestWrongSecretIsForbidden(t *testing.T) {
	ctx := context.Background()
	db, _ := newTestDB(t)
	mustCreate(t, db, testSubmission("l2-digits", 1))
	l := mustLease(t, db, "r1", nil, time.Minute)
	bad := l.Secret[:len(l.Secret)-1] + "x"
	calls := map[string]error{
		"heartbeat": db.HeartbeatJob(ctx, l.Job.ID, bad, time.Minute),
		"complete":  db.CompleteJob(ctx, l.Job.ID, bad, nil, d5list.StatusVerified, nil),
		"fail":      db.FailJob(ctx, l.Job.ID, bad, "boom"),
		"empty":     db.HeartbeatJob(ctx, l.Job.ID, "", time.Minute),
	}
	_, calls["check"] = db.CheckLease(ctx, l.Job.ID, bad)
	for name, err := range calls {
		wantCode(t, name, err, d5list.EFORBIDDEN)
	}
	wantCode(t, "unknown job", db.HeartbeatJob(ctx, 999, l.Secret, time.Minute), d5list.ENOTFOUND)
	if j, _ := db.Job(ctx, l.Job.ID); j.State != d5list.JobLeased {
		t.Fatalf("refused calls changed the job to %s", j.State)
	}
}

func TestExpiredLeaseIsRequeuedAndLateReportRefused(t *testing.T) {
	ctx := context.Background()
	db, clk := newTestDB(t)
	s := mustCreate(t, db, testSubmission("l2-digits", 1))
	old := mustLease(t, db, "slow", nil, time.Minute)

	clk.Advance(61 * time.Second)
	// Nobody took the job yet, but the lease is over: the report is late.
	err := db.CompleteJob(ctx, old.Job.ID, old.Secret, &d5list.Result{}, d5list.StatusVerified, nil)
	wantCode(t, "report after expiry", err, d5list.EFORBIDDEN)
	if !strings.Contains(err.Error(), "lease expired") {
		t.Fatalf("error %q does not say the lease expired", err)
	}
	if n, _, _ := db.QueueStats(ctx); n != 1 {
		t.Fatalf("QueueStats counts %d waiting, want the expired job", n)
	}

	fresh := mustLease(t, db, "fast", nil, time.Minute)
	if fresh.Job.ID != old.Job.ID || fresh.Job.Attempts != 2 || fresh.Secret == old.Secret ||
		!strings.Contains(fresh.Job.Error, `"slow"`) {
		t.Fatalf("re-lease: %+v", fresh.Job)
	}
	wantCode(t, "old holder heartbeat", db.HeartbeatJob(ctx, old.Job.ID, old.Secret, time.Minute), d5list.EFORBIDDEN)
	wantCode(t, "old holder completes", db.CompleteJob(ctx, old.Job.ID, old.Secret, &d5list.Result{}, d5list.StatusDiscrepancy, nil), d5list.EFORBIDDEN)
	wantCode(t, "old holder fails", db.FailJob(ctx, old.Job.ID, old.Secret, "x"), d5list.EFORBIDDEN)
	if err := db.CompleteJob(ctx, fresh.Job.ID, fresh.Secret, &d5list.Result{}, d5list.StatusVerified, nil); err != nil {
		t.Fatal(err)
	}
	if sub, _ := db.Submission(ctx, s.ID); sub.Status != d5list.StatusVerified {
		t.Fatalf("submission %s, want verified from the current holder", sub.Status)
	}
}

func TestAttemptsAreBounded(t *testing.T) {
	ctx := context.Background()
	t.Run("runner failures", func(t *testing.T) {
		db, _ := newTestDB(t)
		s := mustCreate(t, db, testSubmission("l2-digits", 1))
		var l *d5list.Lease
		for attempt := 1; attempt <= DefaultMaxAttempts; attempt++ {
			if l != nil {
				// The requeue ended the previous lease.
				wantCode(t, "report on a requeued job", db.FailJob(ctx, l.Job.ID, l.Secret, "again"), d5list.EFORBIDDEN)
			}
			l = mustLease(t, db, "r", nil, time.Minute)
			if l.Job.Attempts != attempt {
				t.Fatalf("attempt %d: job says %d", attempt, l.Job.Attempts)
			}
			if err := db.FailJob(ctx, l.Job.ID, l.Secret, "out of memory"); err != nil {
				t.Fatal(err)
			}
			sub, _ := db.Submission(ctx, s.ID)
			j, _ := db.Job(ctx, l.Job.ID)
			if attempt < DefaultMaxAttempts && (j.State != d5list.JobQueued || sub.Status != d5list.StatusQueued || j.Error != "out of memory") {
				t.Fatalf("attempt %d: job %s (%q), submission %s; want both queued again", attempt, j.State, j.Error, sub.Status)
			}
		}
		if l, _ := db.LeaseJob(ctx, "r", nil, time.Minute); l != nil {
			t.Fatalf("a job was leased after its last attempt: %+v", l.Job)
		}
		sub, _ := db.Submission(ctx, s.ID)
		jobs, _ := db.Jobs(ctx, s.ID)
		if jobs[0].State != d5list.JobFailed || sub.Status != d5list.StatusFailed ||
			len(sub.Reasons) != 1 || sub.Reasons[0].Code != "rerun_failed" || sub.Reasons[0].Message != "out of memory" {
			t.Fatalf("after the last failure: job %s, submission %s %+v", jobs[0].State, sub.Status, sub.Reasons)
		}
		wantCode(t, "completion of a failed job", db.CompleteJob(ctx, l.Job.ID, l.Secret, nil, d5list.StatusVerified, nil), d5list.ECONFLICT)
	})
	t.Run("expired leases", func(t *testing.T) {
		db, clk := newTestDB(t)
		s := mustCreate(t, db, testSubmission("l2-digits", 1))
		for attempt := 1; attempt <= DefaultMaxAttempts; attempt++ {
			mustLease(t, db, "crashy", nil, time.Minute)
			clk.Advance(2 * time.Minute)
		}
		if l, err := db.LeaseJob(ctx, "r", nil, time.Minute); l != nil || err != nil {
			t.Fatalf("lease after the last attempt expired: %+v, %v; want nil, nil", l, err)
		}
		sub, _ := db.Submission(ctx, s.ID)
		jobs, _ := db.Jobs(ctx, s.ID)
		want := "gave up after 3 attempts: "
		if jobs[0].State != d5list.JobFailed || !strings.HasPrefix(jobs[0].Error, want) || sub.Status != d5list.StatusFailed ||
			len(sub.Reasons) != 1 || !strings.HasPrefix(sub.Reasons[0].Message, want) {
			t.Fatalf("job %s %q, submission %s %+v; want both failed with %q", jobs[0].State, jobs[0].Error, sub.Status, sub.Reasons, want)
		}
		if n, _, _ := db.QueueStats(ctx); n != 0 {
			t.Fatalf("QueueStats counts %d waiting after the job was given up", n)
		}
	})
}

func TestLeaseMatchesRunnerLabels(t *testing.T) {
	ctx := context.Background()
	requires := map[string]string{"accelerator": "H100", "dataset.cifar10": "*"}
	tests := []struct {
		name   string
		labels map[string]string
		match  bool
	}{
		{"exact and present", map[string]string{"accelerator": "H100", "dataset.cifar10": "/data/c10", "os": "linux"}, true},
		{"wildcard needs presence", map[string]string{"accelerator": "H100"}, false},
		{"wrong value", map[string]string{"accelerator": "A100", "dataset.cifar10": "yes"}, false},
		{"no labels", nil, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			db, _ := newTestDB(t)
			if err := db.UpsertBenchmarks(ctx, []d5list.Benchmark{testBenchmark("gpu", requires)}); err != nil {
				t.Fatal(err)
			}
			gpu := mustCreate(t, db, testSubmission("gpu", 1))
			l, err := db.LeaseJob(ctx, "r", tt.labels, time.Minute)
			if err != nil {
				t.Fatal(err)
			}
			if got := l != nil; got != tt.match {
				t.Fatalf("leased %v, want %v", got, tt.match)
			}
			if !tt.match {
				// A later job the runner can do is not blocked by the older one.
				cpu := mustCreate(t, db, testSubmission("l2-digits", 1))
				l := mustLease(t, db, "r", tt.labels, time.Minute)
				if l.Spec.SubmissionID != cpu.ID {
					t.Fatalf("leased submission %d, want %d", l.Spec.SubmissionID, cpu.ID)
				}
				if sub, _ := db.Submission(ctx, gpu.ID); sub.Status != d5list.StatusQueued {
					t.Fatalf("unmatched submission is %s, want queued", sub.Status)
				}
			}
		})
	}
}

// A runner leases only what its executor runs (issue 14): the builtin
// executor a workload's jobs, the process and Slurm executors a bundle's
// own entrypoint; a runner that does not say takes either.
func TestLeaseMatchesTheExecutor(t *testing.T) {
	ctx := context.Background()
	entrypoint := testBenchmark("l2-torch", nil)
	entrypoint.Workload = ""
	for _, tt := range []struct {
		runs string
		want []string // benchmarks leased, oldest job first
	}{
		{d5list.RunsBuiltin, []string{"l2-digits"}},
		{d5list.RunsEntrypoint, []string{"l2-torch"}},
		{"", []string{"l2-torch", "l2-digits"}},
	} {
		t.Run("runs="+tt.runs, func(t *testing.T) {
			db, _ := newTestDB(t)
			if err := db.UpsertBenchmarks(ctx, []d5list.Benchmark{entrypoint}); err != nil {
				t.Fatal(err)
			}
			mustCreate(t, db, testSubmission("l2-torch", 1))
			mustCreate(t, db, testSubmission("l2-digits", 1))
			labels := map[string]string{"cpu_model": "AMD EPYC"}
			if tt.runs != "" {
				labels[d5list.LabelRuns] = tt.runs
			}
			var got []string
			for {
				l, err := db.LeaseJob(ctx, "r", labels, time.Minute)
				if err != nil {
					t.Fatal(err)
				}
				if l == nil {
					break
				}
				got = append(got, l.Spec.Benchmark.ID)
			}
			if !slices.Equal(got, tt.want) {
				t.Fatalf("leased %v, want %v", got, tt.want)
			}
		})
	}
}

// A submission whose recipe names a registry image needs a runner that
// pulls from that registry, besides what its benchmark requires (issue
// 14); its re-run, asked by an organiser, needs the same.
func TestLeaseMatchesTheImagesRegistry(t *testing.T) {
	ctx := context.Background()
	db, _ := newTestDB(t)
	entrypoint := testBenchmark("l2-torch", nil)
	entrypoint.Workload = ""
	if err := db.UpsertBenchmarks(ctx, []d5list.Benchmark{entrypoint}); err != nil {
		t.Fatal(err)
	}
	sub := testSubmission("l2-torch", 1)
	sub.Recipe = &d5list.Recipe{Entrypoint: "code/run.sh", Image: "images.site:5000/team/trainer@sha256:" + strings.Repeat("ab", 32)}
	sub = mustCreate(t, db, sub)
	plain := map[string]string{d5list.LabelRuns: d5list.RunsEntrypoint, d5list.LabelImages: "yes"}
	pulls := map[string]string{d5list.LabelRuns: d5list.RunsEntrypoint, d5list.LabelImages: "yes", "registry.images.site:5000": "yes"}
	for round := range 2 {
		if l, err := db.LeaseJob(ctx, "plain", plain, time.Minute); err != nil || l != nil {
			t.Fatalf("round %d: a runner without the registry leased %+v (%v)", round, l, err)
		}
		jobs, err := db.Jobs(ctx, sub.ID)
		if err != nil || len(jobs) != round+1 || jobs[round].Requires["registry.images.site:5000"] != "yes" {
			t.Fatalf("round %d: jobs %+v (%v), want the last to require the registry", round, jobs, err)
		}
		l := mustLease(t, db, "pulls", pulls, time.Minute)
		if l.Spec.SubmissionID != sub.ID || l.Spec.Recipe.Image != sub.Recipe.Image {
			t.Fatalf("round %d: leased %+v", round, l.Spec)
		}
		if err := db.CompleteJob(ctx, l.Job.ID, l.Secret, sub.Claimed, d5list.StatusDiscrepancy, nil); err != nil {
			t.Fatal(err)
		}
		if round == 0 {
			org := &d5list.User{Name: "olga", Role: d5list.RoleOrganiser}
			if _, err := db.ApplyReview(ctx, d5list.ReviewChange{SubmissionID: sub.ID, Actor: org, Action: d5list.ActionRerun,
				FromStatus: d5list.StatusDiscrepancy, ToStatus: d5list.StatusQueued, Rerun: true}); err != nil {
				t.Fatal(err)
			}
		}
	}
}

func TestCancelJob(t *testing.T) {
	ctx := context.Background()
	db, _ := newTestDB(t)
	running := mustCreate(t, db, testSubmission("l2-digits", 1))
	waiting := mustCreate(t, db, testSubmission("l2-digits", 2))
	l := mustLease(t, db, "r", nil, time.Minute)
	if l.Spec.SubmissionID != running.ID {
		t.Fatalf("leased %d, want the oldest %d", l.Spec.SubmissionID, running.ID)
	}
	if err := db.CancelJob(ctx, l.Job.ID); err != nil {
		t.Fatal(err)
	}
	wantCode(t, "heartbeat of a cancelled job", db.HeartbeatJob(ctx, l.Job.ID, l.Secret, time.Minute), d5list.ECONFLICT)
	wantCode(t, "completion of a cancelled job", db.CompleteJob(ctx, l.Job.ID, l.Secret, nil, d5list.StatusVerified, nil), d5list.ECONFLICT)
	sub, _ := db.Submission(ctx, running.ID)
	if sub.Status != d5list.StatusFailed || len(sub.Reasons) != 1 || sub.Reasons[0].Message != "cancelled by an organiser" {
		t.Fatalf("cancelled submission: %s %+v", sub.Status, sub.Reasons)
	}
	if err := db.CancelJob(ctx, l.Job.ID); err != nil {
		t.Fatalf("cancelling twice: %v", err)
	}

	jobs, _ := db.Jobs(ctx, waiting.ID)
	if err := db.CancelJob(ctx, jobs[0].ID); err != nil {
		t.Fatal(err)
	}
	if l, _ := db.LeaseJob(ctx, "r", nil, time.Minute); l != nil {
		t.Fatalf("a cancelled job was leased: %+v", l.Job)
	}
	done := mustCreate(t, db, testSubmission("l2-digits", 3))
	l = mustLease(t, db, "r", nil, time.Minute)
	if err := db.CompleteJob(ctx, l.Job.ID, l.Secret, nil, d5list.StatusVerified, nil); err != nil {
		t.Fatal(err)
	}
	wantCode(t, "cancel a finished job", db.CancelJob(ctx, l.Job.ID), d5list.ECONFLICT)
	if sub, _ := db.Submission(ctx, done.ID); sub.Status != d5list.StatusVerified {
		t.Fatalf("refused cancel changed the submission to %s", sub.Status)
	}
	wantCode(t, "cancel unknown", db.CancelJob(ctx, 999), d5list.ENOTFOUND)
}

func TestQueueStats(t *testing.T) {
	ctx := context.Background()
	db, clk := newTestDB(t)
	if n, oldest, err := db.QueueStats(ctx); err != nil || n != 0 || !oldest.IsZero() {
		t.Fatalf("empty queue: %d %v %v", n, oldest, err)
	}
	first := clk.Now()
	mustCreate(t, db, testSubmission("l2-digits", 1))
	clk.Advance(time.Minute)
	mustCreate(t, db, testSubmission("l2-digits", 2))
	mustCreate(t, db, testSubmission("l2-digits", 3))
	mustLease(t, db, "r", nil, time.Hour)
	n, oldest, err := db.QueueStats(ctx)
	if err != nil || n != 2 || !oldest.Equal(first.Add(time.Minute)) {
		t.Fatalf("QueueStats = %d, %v, %v; want 2 waiting since the second submission", n, oldest, err)
	}
}

// TestConcurrentRunners leases and completes jobs from four handles on one
// file, as four processes would: each job is completed exactly once and
// no SQLITE_BUSY reaches a caller.
func TestConcurrentRunners(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	setup := openTestDB(t, dir)
	if err := setup.UpsertBenchmarks(ctx, []d5list.Benchmark{testBenchmark("l2-digits", nil)}); err != nil {
		t.Fatal(err)
	}
	const jobs, runners = 30, 4
	for i := 0; i < jobs; i++ {
		mustCreate(t, setup, testSubmission("l2-digits", int64(i)))
	}
	handles := make([]*DB, runners)
	for i := range handles {
		handles[i] = openTestDB(t, dir)
	}

	var mu sync.Mutex
	completed := map[int64]int{}
	var wg sync.WaitGroup
	errs := make(chan error, runners)
	for i, db := range handles {
		wg.Add(1)
		go func(runner string, db *DB) {
			defer wg.Done()
			for {
				l, err := db.LeaseJob(ctx, runner, nil, time.Minute)
				if err != nil {
					errs <- err
					return
				}
				if l == nil {
					return
				}
				if err := db.HeartbeatJob(ctx, l.Job.ID, l.Secret, time.Minute); err != nil {
					errs <- err
					return
				}
				res := &d5list.Result{Runner: map[string]string{"id": runner}}
				if err := db.CompleteJob(ctx, l.Job.ID, l.Secret, res, d5list.StatusVerified, nil); err != nil {
					errs <- err
					return
				}
				mu.Lock()
				completed[l.Job.ID]++
				mu.Unlock()
			}
		}(string(rune('a'+i)), db)
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Errorf("runner error: %v", err)
	}
	if len(completed) != jobs {
		t.Fatalf("%d jobs completed, want %d", len(completed), jobs)
	}
	for id, n := range completed {
		if n != 1 {
			t.Errorf("job %d completed %d times", id, n)
		}
	}
	var notDone, wrongAttempts int
	setup.read.QueryRow(`SELECT count(*) FROM jobs WHERE state != 'done'`).Scan(&notDone)
	setup.read.QueryRow(`SELECT count(*) FROM jobs WHERE attempts != 1`).Scan(&wrongAttempts)
	verified, _ := setup.Submissions(ctx, SubmissionFilter{Statuses: []d5list.Status{d5list.StatusVerified}})
	if notDone != 0 || wrongAttempts != 0 || len(verified) != jobs {
		t.Fatalf("%d jobs not done, %d leased more than once, %d verified submissions of %d", notDone, wrongAttempts, len(verified), jobs)
	}
}

// TestConcurrentOpenOfFreshFolder starts four handles on a new folder at
// once, as a server and its admin command might: the migrations run once
// and nobody sees a half-made schema.
func TestConcurrentOpenOfFreshFolder(t *testing.T) {
	dir := t.TempDir()
	const n = 4
	dbs := make([]*DB, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range dbs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			dbs[i], errs[i] = Open(context.Background(), dir)
		}()
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Fatalf("handle %d: %v", i, err)
		}
		defer dbs[i].Close()
	}
	ms, _ := loadMigrations(migrationFS)
	var applied int
	if err := dbs[0].read.QueryRow(`SELECT count(*) FROM schema_migrations`).Scan(&applied); err != nil || applied != len(ms) {
		t.Fatalf("%d migrations recorded (%v), want %d", applied, err, len(ms))
	}
	for i, db := range dbs {
		if _, err := db.EnsureUser(context.Background(), "u"+strconv.Itoa(i), d5list.RoleCompetitor); err != nil {
			t.Fatalf("handle %d: %v", i, err)
		}
	}
}

// The database and its WAL files are the owner's only: they hold password,
// session and token hashes. An older file made readable by all is fixed.
func TestDatabaseFilesAreOwnerOnly(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "d5list.db")
	if err := os.WriteFile(path, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	db, err := Open(context.Background(), dir)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if _, err := db.EnsureUser(context.Background(), "alice", d5list.RoleCompetitor); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{path, path + "-wal", path + "-shm"} {
		st, err := os.Stat(p)
		if err != nil {
			t.Fatal(err)
		}
		if mode := st.Mode().Perm(); mode&0o077 != 0 {
			t.Errorf("%s is %v, want no access for group and others", filepath.Base(p), mode)
		}
	}
}

// The in-process runners' jobs end with the portal process: at the next
// start they are queued again without counting the attempt (issue 19),
// and a remote runner's lease, still running elsewhere, is left alone.
func TestRequeueLeasesOfTheInProcessRunners(t *testing.T) {
	ctx := context.Background()
	db, _ := newTestDB(t)
	local := mustCreate(t, db, testSubmission("l2-digits", 1))
	remote := mustCreate(t, db, testSubmission("l2-digits", 2))
	localLease := mustLease(t, db, "local-0", nil, time.Minute)
	remoteLease := mustLease(t, db, "gpu-box-0", nil, time.Minute)
	if localLease.Spec.SubmissionID != local.ID || remoteLease.Spec.SubmissionID != remote.ID {
		t.Fatal("leases went to the wrong runners")
	}
	n, err := db.RequeueLeasesOf(ctx, "local-", "the portal stopped")
	if err != nil || n != 1 {
		t.Fatalf("requeued %d (%v), want 1", n, err)
	}
	jobs, _ := db.Jobs(ctx, local.ID)
	if jobs[0].State != d5list.JobQueued || jobs[0].Attempts != 0 || jobs[0].RunnerID != "" {
		t.Fatalf("the local runner's job: %+v, want queued with no attempt counted", jobs[0])
	}
	if sub, _ := db.Submission(ctx, local.ID); sub.Status != d5list.StatusQueued {
		t.Fatalf("its submission is %s, want queued", sub.Status)
	}
	jobs, _ = db.Jobs(ctx, remote.ID)
	if jobs[0].State != d5list.JobLeased || jobs[0].Attempts != 1 {
		t.Fatalf("the remote runner's job: %+v, want still leased", jobs[0])
	}
	if err := db.HeartbeatJob(ctx, remoteLease.Job.ID, remoteLease.Secret, time.Minute); err != nil {
		t.Fatalf("the remote lease no longer holds: %v", err)
	}
	wantCode(t, "a report on the requeued lease", db.HeartbeatJob(ctx, localLease.Job.ID, localLease.Secret, time.Minute), d5list.EFORBIDDEN)
}
