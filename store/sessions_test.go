package store

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	d5list "github.com/deep500/d5list"
)

func init() { ArgonMemoryKiB = 1024 } // keep the tests' hashing cheap

func TestPasswordHashRoundTrip(t *testing.T) {
	h := HashPassword("correct horse battery")
	if !strings.HasPrefix(h, "$argon2id$v=19$m=1024,t=3,p=1$") {
		t.Fatalf("hash %q is not an encoded argon2id hash", h)
	}
	if h == HashPassword("correct horse battery") {
		t.Fatal("two hashes of one password are equal: the salt is not random")
	}
	tests := []struct {
		encoded, password string
		ok                bool
	}{
		{h, "correct horse battery", true},
		{h, "correct horse batterY", false},
		{h, "", false},
		{strings.Replace(h, "argon2id", "argon2i", 1), "correct horse battery", false},
		{"plain", "plain", false},
		{"$argon2id$v=19$m=1024,t=0,p=1$AAAA$AAAA", "x", false},
	}
	for _, tt := range tests {
		if got := CheckPassword(tt.encoded, tt.password); got != tt.ok {
			t.Errorf("CheckPassword(%q, %q) = %v, want %v", tt.encoded, tt.password, got, tt.ok)
		}
	}
}

func TestSignUpLoginSessions(t *testing.T) {
	db, clk := newTestDB(t)
	ctx := context.Background()
	if _, err := db.SignUp(ctx, "bad name!", "", "long enough password", true); d5list.ErrorCode(err) != d5list.EINVALID || !strings.Contains(err.Error(), "name") {
		t.Fatalf("bad name: %v", err)
	}
	if _, err := db.SignUp(ctx, "alice", "", "short", true); d5list.ErrorCode(err) != d5list.EINVALID || !strings.Contains(err.Error(), "password") {
		t.Fatalf("short password: %v", err)
	}
	alice, err := db.SignUp(ctx, "alice", "", "long enough password", true)
	if err != nil || alice.Role != d5list.RoleCompetitor {
		t.Fatalf("sign-up: %+v %v", alice, err)
	}
	_, err = db.SignUp(ctx, "alice", "", "another long password", true)
	wantCode(t, "taken name", err, d5list.ECONFLICT)

	_, err = db.Login(ctx, "alice", "wrong password!!")
	wantCode(t, "wrong password", err, d5list.EUNAUTHORIZED)
	_, err = db.Login(ctx, "nobody", "long enough password")
	wantCode(t, "unknown name", err, d5list.EUNAUTHORIZED)
	u, err := db.Login(ctx, "alice", "long enough password")
	if err != nil || u.ID != alice.ID {
		t.Fatalf("login: %+v %v", u, err)
	}

	bob, err := db.SignUp(ctx, "bob", "", "long enough password", false)
	if err != nil {
		t.Fatal(err)
	}
	_, err = db.Login(ctx, "bob", "long enough password")
	wantCode(t, "unapproved", err, d5list.EFORBIDDEN)
	if err := db.Approve(ctx, bob.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := db.Login(ctx, "bob", "long enough password"); err != nil {
		t.Fatalf("approved login: %v", err)
	}

	cookie, csrf, err := db.CreateSession(ctx, alice.ID, time.Hour)
	if err != nil || cookie == "" || csrf == "" || cookie == csrf {
		t.Fatalf("session %q %q %v", cookie, csrf, err)
	}
	var stored int
	_ = db.read.QueryRow(`SELECT count(*) FROM sessions WHERE hash = ?`, cookie).Scan(&stored)
	if stored != 0 {
		t.Fatal("the session's cookie value is stored in clear")
	}
	u, gotCSRF, err := db.SessionUser(ctx, cookie)
	if err != nil || u.ID != alice.ID || gotCSRF != csrf {
		t.Fatalf("session user %+v %q %v", u, gotCSRF, err)
	}
	clk.Advance(2 * time.Hour)
	_, _, err = db.SessionUser(ctx, cookie)
	wantCode(t, "expired session", err, d5list.EUNAUTHORIZED)

	cookie, _, _ = db.CreateSession(ctx, alice.ID, time.Hour)
	if err := db.DeleteSession(ctx, cookie); err != nil {
		t.Fatal(err)
	}
	_, _, err = db.SessionUser(ctx, cookie)
	wantCode(t, "logged out session", err, d5list.EUNAUTHORIZED)

	if err := db.SetRole(ctx, bob.ID, "king"); d5list.ErrorCode(err) != d5list.EINVALID {
		t.Fatalf("bad role: %v", err)
	}
	if err := db.SetRole(ctx, bob.ID, d5list.RoleOrganiser); err != nil {
		t.Fatal(err)
	}
	accounts, err := db.Accounts(ctx)
	if err != nil || len(accounts) != 2 || accounts[1].Name != "bob" || accounts[1].Role != d5list.RoleOrganiser || !accounts[1].Approved {
		t.Fatalf("accounts %+v %v", accounts, err)
	}
}

func TestTokensOfAUser(t *testing.T) {
	db, _ := newTestDB(t)
	ctx := context.Background()
	alice, _ := db.EnsureUser(ctx, "alice", d5list.RoleCompetitor)
	bob, _ := db.EnsureUser(ctx, "bob", d5list.RoleCompetitor)
	tok, err := db.CreateToken(ctx, alice.ID, "laptop")
	if err != nil {
		t.Fatal(err)
	}
	list, err := db.Tokens(ctx, alice.ID)
	if err != nil || len(list) != 1 || list[0].Label != "laptop" || list[0].RevokedAt != nil {
		t.Fatalf("tokens %+v %v", list, err)
	}
	wantCode(t, "revoking another user's token", db.RevokeTokenOf(ctx, bob.ID, list[0].ID), d5list.ENOTFOUND)
	if _, err := db.UserByToken(ctx, tok); err != nil {
		t.Fatalf("token died of another user's attempt: %v", err)
	}
	if err := db.RevokeTokenOf(ctx, alice.ID, list[0].ID); err != nil {
		t.Fatal(err)
	}
	_, err = db.UserByToken(ctx, tok)
	wantCode(t, "revoked token", err, d5list.EUNAUTHORIZED)
}

func TestQuotaHoldsUnderConcurrentUploads(t *testing.T) {
	db, clk := newTestDB(t)
	ctx := context.Background()
	q := Quota{db}
	alice, _ := db.EnsureUser(ctx, "alice", d5list.RoleCompetitor)
	bob, _ := db.EnsureUser(ctx, "bob", d5list.RoleCompetitor)
	const quota = 3
	if err := db.SetDailyQuota(ctx, quota); err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	var mu sync.Mutex
	created, limited := 0, 0
	for range 12 {
		wg.Go(func() {
			err := q.CreateSubmission(ctx, withOwner(testSubmission("l2-digits", 1), alice.ID))
			mu.Lock()
			defer mu.Unlock()
			switch d5list.ErrorCode(err) {
			case "":
				created++
			case d5list.ELIMIT:
				limited++
			default:
				t.Errorf("upload: %v", err)
			}
		})
	}
	wg.Wait()
	if created != quota || limited != 12-quota {
		t.Fatalf("%d created and %d refused, want %d and %d", created, limited, quota, 12-quota)
	}
	// Another user has their own quota.
	if err := q.CreateSubmission(ctx, withOwner(testSubmission("l2-digits", 1), bob.ID)); err != nil {
		t.Fatalf("bob: %v", err)
	}
	// A cancelled (failed) submission gives its slot back.
	mine, _ := db.Submissions(ctx, d5list.SubmissionFilter{OwnerID: alice.ID})
	jobs, err := db.Jobs(ctx, mine[0].ID)
	if err != nil || len(jobs) == 0 {
		t.Fatalf("jobs %v %v", jobs, err)
	}
	if err := db.CancelJob(ctx, jobs[0].ID); err != nil {
		t.Fatal(err)
	}
	if err := q.CreateSubmission(ctx, withOwner(testSubmission("l2-digits", 1), alice.ID)); err != nil {
		t.Fatalf("after a cancel: %v", err)
	}
	err = q.CreateSubmission(ctx, withOwner(testSubmission("l2-digits", 1), alice.ID))
	wantCode(t, "over the quota again", err, d5list.ELIMIT)
	// The next UTC day starts afresh.
	clk.Advance(24 * time.Hour)
	if err := q.CreateSubmission(ctx, withOwner(testSubmission("l2-digits", 1), alice.ID)); err != nil {
		t.Fatalf("next day: %v", err)
	}
	// 0 lifts the limit.
	clk.Advance(-24 * time.Hour)
	_ = db.SetDailyQuota(ctx, 0)
	if err := q.CreateSubmission(ctx, withOwner(testSubmission("l2-digits", 1), alice.ID)); err != nil {
		t.Fatalf("unlimited: %v", err)
	}
}

// A benchmark's daily_quota overrides the portal-wide quota, both ways, and
// still holds under concurrent uploads.
func TestBenchmarkQuotaOverridesThePortals(t *testing.T) {
	db, _ := newTestDB(t)
	ctx := context.Background()
	q := Quota{db}
	alice, _ := db.EnsureUser(ctx, "alice", d5list.RoleCompetitor)
	gpu := testBenchmark("l2-gpu", nil)
	gpu.DailyQuota = 2
	if err := db.UpsertBenchmarks(ctx, []d5list.Benchmark{gpu}); err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	var mu sync.Mutex
	created := 0
	var refusal error
	for range 8 {
		wg.Go(func() {
			err := q.CreateSubmission(ctx, withOwner(testSubmission("l2-gpu", 1), alice.ID))
			mu.Lock()
			defer mu.Unlock()
			switch d5list.ErrorCode(err) {
			case "":
				created++
			case d5list.ELIMIT:
				refusal = err
			default:
				t.Errorf("upload: %v", err)
			}
		})
	}
	wg.Wait()
	if created != 2 {
		t.Fatalf("%d created with no portal quota and daily_quota 2, want 2", created)
	}
	if refusal == nil || !strings.Contains(refusal.Error(), "2 submissions to l2-gpu per day") {
		t.Errorf("refusal %v: want the benchmark's own limit named", refusal)
	}
	// The portal-wide quota applies where the benchmark sets none, and the
	// benchmark's lower cap wins where it sets one.
	if err := db.SetDailyQuota(ctx, 5); err != nil {
		t.Fatal(err)
	}
	for i := range 5 {
		if err := q.CreateSubmission(ctx, withOwner(testSubmission("l2-digits", 1), alice.ID)); err != nil {
			t.Fatalf("l2-digits upload %d of the portal's 5: %v", i+1, err)
		}
	}
	err := q.CreateSubmission(ctx, withOwner(testSubmission("l2-digits", 1), alice.ID))
	wantCode(t, "sixth l2-digits upload", err, d5list.ELIMIT)
	err = q.CreateSubmission(ctx, withOwner(testSubmission("l2-gpu", 1), alice.ID))
	wantCode(t, "third l2-gpu upload", err, d5list.ELIMIT)
}
