package store

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	d5list "github.com/deep500/d5list"
)

// submitAs uploads a test submission for owner naming submitter.
func submitAs(db *DB, owner int64, submitter string) (*d5list.Submission, error) {
	s := withOwner(testSubmission("l2-digits", 1, 2, 3), owner)
	s.Submitter = submitter
	return s, db.CreateSubmission(context.Background(), s)
}

func reasonCode(err error) string {
	if rs := d5list.ErrorReasons(err); len(rs) > 0 {
		return rs[0].Code
	}
	return ""
}

// Naming an organisation at sign-up is a request to join it: once an
// organiser confirmed any account for it, an unconfirmed one naming it
// (in any case or spacing) is refused at upload; before that, the
// accounts that named it may use it (issue 16).
func TestSubmitterNeedsConfirmationOnceOrganisationIsConfirmed(t *testing.T) {
	db, _ := newTestDB(t)
	ctx := context.Background()
	nv, err := db.SignUp(ctx, "nv", "NVIDIA", "long enough password", true)
	if err != nil {
		t.Fatal(err)
	}
	early, err := db.SignUp(ctx, "early", "nvidia", "long enough password", true)
	if err != nil {
		t.Fatal(err)
	}
	// No account is confirmed for it yet: those that named it may use it.
	if _, err := submitAs(db, early.ID, "Nvidia"); err != nil {
		t.Fatalf("an upload before any confirmation: %v", err)
	}
	if err := db.SetOrganisation(ctx, nv.ID, "NVIDIA"); err != nil {
		t.Fatal(err)
	}
	if _, err := submitAs(db, nv.ID, "NVIDIA"); err != nil {
		t.Fatalf("the confirmed member: %v", err)
	}

	mallory, err := db.SignUp(ctx, "mallory", "NVIDIA", "long enough password", true)
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"NVIDIA", " nvidia ", "Nvidia"} {
		_, err := submitAs(db, mallory.ID, name)
		if reasonCode(err) != "submitter_unconfirmed" || !strings.Contains(err.Error(), `awaiting confirmation by an organiser as a member of "NVIDIA"`) {
			t.Errorf("an unconfirmed account naming %q at sign-up: %v, want submitter_unconfirmed", name, err)
		}
	}
	if _, err := submitAs(db, early.ID, "nvidia"); reasonCode(err) != "submitter_unconfirmed" {
		t.Errorf("the early account once another is confirmed: %v, want submitter_unconfirmed", err)
	}
	subs, err := db.Submissions(ctx, d5list.SubmissionFilter{OwnerID: mallory.ID})
	if err != nil || len(subs) != 0 {
		t.Errorf("refused uploads left %d submissions (%v)", len(subs), err)
	}

	// Confirmed, the same account may; the names are compared with Unicode
	// case folding, as organisationKey does, not SQLite's ASCII NOCASE.
	if err := db.SetOrganisation(ctx, mallory.ID, "nvidia"); err != nil {
		t.Fatal(err)
	}
	if _, err := submitAs(db, mallory.ID, "NVIDIA"); err != nil {
		t.Errorf("after confirmation: %v", err)
	}
	ecole, err := db.SignUp(ctx, "ecole", "École Lab", "long enough password", true)
	if err != nil {
		t.Fatal(err)
	}
	if err := db.SetOrganisation(ctx, ecole.ID, "École Lab"); err != nil {
		t.Fatal(err)
	}
	stranger, err := db.EnsureUser(ctx, "stranger", d5list.RoleCompetitor)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := submitAs(db, stranger.ID, "éCOLE  lab"); reasonCode(err) != "submitter_taken" {
		t.Errorf("a stranger posting as éCOLE lab: %v, want submitter_taken", err)
	}
}

// The stored submitter is the organisation's name as the account holds
// it, so that the board's confirmed mark and the organisation's page find
// an upload that spelled it with other spacing or case (issue 16).
func TestSubmitterIsStoredAsTheAccountsOrganisation(t *testing.T) {
	db, _ := newTestDB(t)
	ctx := context.Background()
	u, err := db.SignUp(ctx, "lab", "Newcomer Lab", "long enough password", true)
	if err != nil {
		t.Fatal(err)
	}
	if err := db.SetOrganisation(ctx, u.ID, "Newcomer Lab"); err != nil {
		t.Fatal(err)
	}
	s, err := submitAs(db, u.ID, "newcomer  Lab ")
	if err != nil {
		t.Fatal(err)
	}
	got, err := db.Submission(ctx, s.ID)
	if err != nil {
		t.Fatal(err)
	}
	if got.Submitter != "Newcomer Lab" || !got.SubmitterConfirmed {
		t.Errorf("stored submitter %q (confirmed %v), want Newcomer Lab, confirmed", got.Submitter, got.SubmitterConfirmed)
	}
	subs, err := db.Submissions(ctx, d5list.SubmissionFilter{Submitter: "Newcomer Lab"})
	if err != nil || len(subs) != 1 {
		t.Errorf("the organisation's entries: %d (%v), want 1", len(subs), err)
	}
	// An upload without an account is kept with its spacing collapsed.
	anon := testSubmission("l2-digits", 1, 2, 3)
	anon.Submitter = "  Seed   Lab "
	mustCreate(t, db, anon)
	if anon.Submitter != "Seed Lab" {
		t.Errorf("an account-less upload's submitter %q, want Seed Lab", anon.Submitter)
	}
}

// The same files from the same account are one entry: storing them again
// answers RepeatedUpload naming it and stores nothing, until that entry
// failed (a re-run broke), when they may be uploaded again. Another
// account's upload of them is its own entry.
func TestRepeatedUploadIsTheEntryItRepeats(t *testing.T) {
	db, _ := newTestDB(t)
	ctx := context.Background()
	var users []*d5list.User
	for _, name := range []string{"rita", "bob"} {
		u, err := db.EnsureUser(ctx, name, d5list.RoleCompetitor)
		if err != nil {
			t.Fatal(err)
		}
		users = append(users, u)
	}
	upload := func(owner *d5list.User) (*d5list.Submission, error) {
		s := withOwner(testSubmission("l2-digits", 1), owner.ID)
		s.ContentSHA256 = strings.Repeat("c0", 32)
		return s, db.CreateSubmission(ctx, s)
	}
	first, err := upload(users[0])
	if err != nil {
		t.Fatal(err)
	}
	var again *d5list.RepeatedUpload
	if _, err := upload(users[0]); !errors.As(err, &again) || again.Existing != first.ID {
		t.Fatalf("the same files again: %v, want RepeatedUpload of submission %d", err, first.ID)
	}
	if subs, _ := db.Submissions(ctx, d5list.SubmissionFilter{OwnerID: users[0].ID}); len(subs) != 1 {
		t.Fatalf("%d submissions stored, want the first only", len(subs))
	}
	for range DefaultMaxAttempts {
		l := mustLease(t, db, "r", nil, time.Minute)
		if err := db.FailJob(ctx, l.Job.ID, l.Secret, "out of memory"); err != nil {
			t.Fatal(err)
		}
	}
	if s, _ := db.Submission(ctx, first.ID); s.Status != d5list.StatusFailed {
		t.Fatalf("the first entry is %s, want failed", s.Status)
	}
	if s, err := upload(users[0]); err != nil || s.ID == first.ID {
		t.Fatalf("the files of an entry that failed, uploaded again: %v, want a new entry", err)
	}
	if _, err := upload(users[1]); err != nil {
		t.Fatalf("another account's upload of the same files: %v", err)
	}
}

// A verdict names the blobs of its re-run's logs in rerun_logs, in its
// own transaction, so that a blob a measured result refers to is found by
// an index as a bundle's is.
func TestCompleteJobNamesTheRerunLogs(t *testing.T) {
	db, _ := newTestDB(t)
	ctx := context.Background()
	s := mustCreate(t, db, testSubmission("l2-digits", 1, 2))
	l := mustLease(t, db, "r", nil, time.Minute)
	measured := *s.Claimed
	measured.Runs = append([]d5list.RunMetrics(nil), s.Claimed.Runs...)
	for i := range measured.Runs {
		measured.Runs[i].LogSHA256 = strings.Repeat(string(rune('a'+i)), 64)
	}
	if err := db.CompleteJob(ctx, l.Job.ID, l.Secret, &measured, d5list.StatusVerified, nil); err != nil {
		t.Fatal(err)
	}
	for i, r := range measured.Runs {
		var sub int64
		var run int
		err := db.read.QueryRowContext(ctx, `SELECT submission_id, run FROM rerun_logs WHERE sha256 = ?`, r.LogSHA256).Scan(&sub, &run)
		if err != nil || sub != s.ID || run != i {
			t.Errorf("re-run log %d: submission %d run %d (%v), want submission %d run %d", i, sub, run, err, s.ID, i)
		}
	}
}
