package store

import (
	"context"
	"strings"
	"testing"
	"time"

	d5list "github.com/deep500/d5list"
)

// completeWith ends the next job with a verdict of status st and reasons,
// and returns its lease.
func completeWith(t *testing.T, db *DB, st d5list.Status, reasons ...d5list.Reason) *d5list.Lease {
	t.Helper()
	l := mustLease(t, db, "r1", nil, time.Minute)
	measured := &d5list.Result{Runs: []d5list.RunMetrics{{Index: 0, Seed: 11}}}
	if err := db.CompleteJob(context.Background(), l.Job.ID, l.Secret, measured, st, reasons); err != nil {
		t.Fatal(err)
	}
	return l
}

// A verdict with a failed audit is filed with it, under the account and
// organisation; one makes the account's next lease of the benchmark a
// full audit, two hold its uploads of the benchmark (and nothing is
// stored) until an organiser clears them.
func TestAuditFailuresRecordHoldAndClear(t *testing.T) {
	ctx := context.Background()
	db, clk := newTestDB(t)
	if err := db.UpsertBenchmarks(ctx, []d5list.Benchmark{testBenchmark("l2-other", nil)}); err != nil {
		t.Fatal(err)
	}
	alice, _ := db.EnsureUser(ctx, "alice", d5list.RoleCompetitor)
	bob, _ := db.EnsureUser(ctx, "bob", d5list.RoleCompetitor)
	org, _ := db.EnsureUser(ctx, "olga", d5list.RoleOrganiser)
	mismatch := d5list.Reason{Code: d5list.AuditMismatch, Message: "training, call 4: over the tolerance"}
	missing := d5list.Reason{Code: d5list.AuditMissing, Message: "training: no commitment"}

	first := mustCreate(t, db, withOwner(testSubmission("l2-digits", 11), alice.ID))
	if l := completeWith(t, db, d5list.StatusDiscrepancy, mismatch, d5list.Reason{Code: "time_to_train", Message: "slower"}); l.Spec.FullAudit {
		t.Fatal("the first lease of an account with no failed audit asks for a full audit")
	}
	// A verdict without an audit failure, or with the runner's missing
	// audit only (not the competitor's doing), costs nothing.
	mustCreate(t, db, withOwner(testSubmission("l2-digits", 12), bob.ID))
	completeWith(t, db, d5list.StatusNeedsReview, d5list.Reason{Code: d5list.AuditNotRun, Message: "no audit"})
	if n, err := db.UnclearedAuditFailures(ctx, alice.ID, "l2-digits"); err != nil || n != 1 {
		t.Fatalf("alice's uncleared failures: %d, %v; want 1", n, err)
	}
	if n, _ := db.UnclearedAuditFailures(ctx, bob.ID, "l2-digits"); n != 0 {
		t.Fatalf("bob's uncleared failures: %d, want 0 (audit_not_run is not a failure)", n)
	}

	clk.Advance(time.Minute)
	mustCreate(t, db, withOwner(testSubmission("l2-digits", 13), alice.ID))
	l := completeWith(t, db, d5list.StatusDiscrepancy, missing)
	if !l.Spec.FullAudit {
		t.Fatal("the lease after a failed audit does not ask for a full audit")
	}
	// A report repeated after the verdict files nothing again.
	if err := db.CompleteJob(ctx, l.Job.ID, l.Secret, nil, d5list.StatusDiscrepancy, []d5list.Reason{missing}); err != nil {
		t.Fatal(err)
	}
	if n, _ := db.UnclearedAuditFailures(ctx, alice.ID, "l2-digits"); n != 2 {
		t.Fatalf("alice's uncleared failures: %d, want 2", n)
	}

	var before int
	db.read.QueryRow(`SELECT count(*) FROM submissions`).Scan(&before)
	err := db.CreateSubmission(ctx, withOwner(testSubmission("l2-digits", 14), alice.ID))
	wantCode(t, "an upload held by two failed audits", err, d5list.EFORBIDDEN)
	if msg := d5list.ErrorMessage(err); !strings.Contains(msg, "l2-digits") || !strings.Contains(msg, "organiser must clear") {
		t.Fatalf("refusal %q does not name the benchmark and say an organiser must clear it", msg)
	}
	var after int
	db.read.QueryRow(`SELECT count(*) FROM submissions`).Scan(&after)
	if after != before {
		t.Fatalf("a held upload stored a submission: %d rows, %d before", after, before)
	}
	// The hold is the account's and the benchmark's only.
	other := mustCreate(t, db, withOwner(testSubmission("l2-other", 15), alice.ID))
	if l := completeWith(t, db, d5list.StatusVerified); l.Spec.FullAudit || l.Job.SubmissionID != other.ID {
		t.Fatalf("alice's lease of another benchmark: %+v, want no full audit", l.Spec)
	}
	mustCreate(t, db, withOwner(testSubmission("l2-digits", 16), bob.ID))
	if l := completeWith(t, db, d5list.StatusVerified); l.Spec.FullAudit {
		t.Fatal("bob's lease asks for a full audit after alice's failures")
	}

	fs, err := db.AuditFailures(ctx)
	if err != nil || len(fs) != 2 {
		t.Fatalf("AuditFailures: %+v, %v; want 2", fs, err)
	}
	if fs[0].Reasons[0].Code != d5list.AuditMissing || fs[1].SubmissionID != first.ID || fs[1].Owner != "alice" ||
		fs[1].OwnerID != alice.ID || fs[1].Organisation != "ETH" || fs[1].BenchmarkID != "l2-digits" ||
		len(fs[1].Reasons) != 1 || fs[1].Reasons[0] != mismatch || !fs[0].CreatedAt.After(fs[1].CreatedAt) || fs[0].ClearedAt != nil {
		t.Fatalf("AuditFailures, newest first: %+v", fs)
	}

	_, err = db.ClearAuditFailures(ctx, bob, alice.ID, "l2-digits")
	wantCode(t, "a competitor clearing", err, d5list.EFORBIDDEN)
	if n, err := db.ClearAuditFailures(ctx, org, alice.ID, "l2-digits"); err != nil || n != 2 {
		t.Fatalf("ClearAuditFailures: %d, %v; want 2", n, err)
	}
	_, err = db.ClearAuditFailures(ctx, org, alice.ID, "l2-digits")
	wantCode(t, "clearing again", err, d5list.ENOTFOUND)
	if n, _ := db.UnclearedAuditFailures(ctx, alice.ID, "l2-digits"); n != 0 {
		t.Fatalf("uncleared failures after clearing: %d", n)
	}
	fs, _ = db.AuditFailures(ctx)
	if fs[0].ClearedAt == nil || fs[0].ClearedBy != "olga" {
		t.Fatalf("a cleared failure: %+v, want cleared by olga", fs[0])
	}
	mustCreate(t, db, withOwner(testSubmission("l2-digits", 17), alice.ID))
	if l := completeWith(t, db, d5list.StatusVerified); l.Spec.FullAudit {
		t.Fatal("a lease after the failures were cleared asks for a full audit")
	}
}

// A failed audit is its competitor's and the organisers' to see until the
// organisers show failed audits to everyone; a discrepancy of another kind
// stays hidden either way.
func TestShowFailedAuditsSetting(t *testing.T) {
	ctx := context.Background()
	db, _ := newTestDB(t)
	alice, _ := db.EnsureUser(ctx, "alice", d5list.RoleCompetitor)
	org, _ := db.EnsureUser(ctx, "olga", d5list.RoleOrganiser)
	failed := mustCreate(t, db, withOwner(testSubmission("l2-digits", 11), alice.ID))
	completeWith(t, db, d5list.StatusDiscrepancy, d5list.Reason{Code: d5list.AuditMismatch, Message: "off"})
	slow := mustCreate(t, db, withOwner(testSubmission("l2-digits", 12), alice.ID))
	completeWith(t, db, d5list.StatusDiscrepancy, d5list.Reason{Code: "time_to_train", Message: "slower"})

	hidden := func(id int64) bool {
		t.Helper()
		s, err := db.Submission(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		return s.Hidden()
	}
	if v, err := db.Setting(ctx, d5list.SettingShowFailedAudits); err != nil || v != "" {
		t.Fatalf("the setting before any: %q, %v; want the default", v, err)
	}
	if !hidden(failed.ID) || !hidden(slow.ID) {
		t.Fatal("a discrepancy is public with the setting off")
	}
	wantCode(t, "a competitor's setting", db.SetSetting(ctx, alice, d5list.SettingShowFailedAudits, "on"), d5list.EFORBIDDEN)
	if err := db.SetSetting(ctx, org, d5list.SettingShowFailedAudits, "on"); err != nil {
		t.Fatal(err)
	}
	if hidden(failed.ID) || !hidden(slow.ID) {
		t.Fatalf("with the setting on: failed audit hidden %t, other discrepancy hidden %t; want false, true", hidden(failed.ID), hidden(slow.ID))
	}
	subs, err := db.Submissions(ctx, d5list.SubmissionFilter{BenchmarkID: "l2-digits"})
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range subs {
		if s.Hidden() != (s.ID == slow.ID) {
			t.Fatalf("listed submission %d hidden %t with the setting on", s.ID, s.Hidden())
		}
	}
	if err := db.SetSetting(ctx, org, d5list.SettingShowFailedAudits, "off"); err != nil {
		t.Fatal(err)
	}
	if !hidden(failed.ID) {
		t.Fatal("a failed audit is public after the setting was turned off")
	}
}
