package main

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	d5list "github.com/deep500/d5list"
	"github.com/deep500/d5list/store"
	"github.com/deep500/d5list/verifier"
)

// organiserToken makes an organiser account on the portal's data folder
// through the same command an operator uses.
func (p *portalUnderTest) organiserToken(t *testing.T, name string) string {
	t.Helper()
	var out bytes.Buffer
	if err := run(context.Background(), []string{"admin", "token", "--data", p.data, "--user", name, "--role", "organiser"}, &out, io.Discard); err != nil {
		t.Fatalf("admin token: %v", err)
	}
	return strings.TrimSpace(out.String())
}

type reviewAPIError struct {
	Error struct {
		Code    string          `json:"code"`
		Message string          `json:"message"`
		Reasons []d5list.Reason `json:"reasons"`
	} `json:"error"`
}

// call sends a JSON request and decodes the answer into v (an error body
// into reviewAPIError when v is nil or the status is not 2xx).
func (p *portalUnderTest) call(t *testing.T, method, path, token string, body any, v any) (int, reviewAPIError) {
	t.Helper()
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			t.Fatal(err)
		}
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequest(method, p.url+path, rd)
	if err != nil {
		t.Fatal(err)
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp := doCurrent(t, req)
	defer resp.Body.Close()
	data, _ := io.ReadAll(resp.Body)
	var e reviewAPIError
	if resp.StatusCode/100 != 2 || v == nil {
		_ = json.Unmarshal(data, &e)
		return resp.StatusCode, e
	}
	if err := json.Unmarshal(data, v); err != nil {
		t.Fatalf("%s %s: decoding %q: %v", method, path, data, err)
	}
	return resp.StatusCode, e
}

type auditResponse struct {
	SubmissionID int64               `json:"submission_id"`
	Status       d5list.Status       `json:"status"`
	Division     string              `json:"division"`
	Flag         string              `json:"flag"`
	Entries      []d5list.AuditEntry `json:"entries"`
	Attempts     []d5list.Attempt    `json:"attempts"`
}

func (p *portalUnderTest) audit(t *testing.T, id int64) auditResponse {
	t.Helper()
	var a auditResponse
	// As an organiser: a discrepancy's log is hidden from visitors.
	if code, e := p.call(t, http.MethodGet, "/api/v1/submissions/"+strconv.FormatInt(id, 10)+"/audit", p.orgToken, nil, &a); code != 200 {
		t.Fatalf("GET audit of %d: %d %+v", id, code, e)
	}
	return a
}

// seedVerdict stores a submission and gives it a verdict through the real
// queue (lease, complete), as a runner would, without training anything.
func seedVerdict(t *testing.T, db *store.DB, st d5list.Status) int64 {
	t.Helper()
	var reasons []d5list.Reason
	if st != d5list.StatusVerified {
		run := 2
		reasons = []d5list.Reason{{Code: "seeded", Message: "run 2: seeded finding", Run: &run}}
	}
	return seedFindings(t, db, st, reasons)
}

// muchFaster is the review of a re-run whose olympic mean, measured, was
// faster than the claimed one.
func muchFaster(claimed, measured float64) d5list.Reason {
	return d5list.Reason{Code: verifier.CodeRerunMuchFaster, Claimed: &claimed, Measured: &measured,
		Message: fmt.Sprintf("time to train: the re-run's olympic mean is %g s as measured, %.3g times better than the logs' %g s", measured, claimed/measured, claimed)}
}

// seedFindings is seedVerdict with the findings the verdict names.
func seedFindings(t *testing.T, db *store.DB, st d5list.Status, reasons []d5list.Reason) int64 {
	t.Helper()
	ctx := context.Background()
	claimed := &d5list.Result{}
	for i := range 5 {
		claimed.Runs = append(claimed.Runs, d5list.RunMetrics{Index: i, Seed: int64(100 + i), Converged: true,
			TimeToTrain: 10 + float64(i), EpochsToTarget: 20, FinalAccuracy: 0.95, BestAccuracy: 0.95})
	}
	claimed.Score = d5list.OlympicScore(claimed.Runs, d5list.MetricTimeToTrain, d5list.LowerIsBetter)
	sub := &d5list.Submission{BenchmarkID: "l2-digits-mlp-cpu", Division: d5list.DivisionClosed,
		Availability: d5list.AvailabilityAvailable, Submitter: "Lab " + string(st), SystemName: "box-" + string(st),
		Framework: "go", Claimed: claimed, HostCPU: "AMD EPYC 9654"}
	if err := db.CreateSubmission(ctx, sub); err != nil {
		t.Fatal(err)
	}
	lease, err := db.LeaseJob(ctx, "seeder", map[string]string{}, time.Minute)
	if err != nil || lease == nil || lease.Spec.SubmissionID != sub.ID {
		t.Fatalf("lease for submission %d: %+v, %v", sub.ID, lease, err)
	}
	// Re-run on the declared CPU, measuring what was claimed.
	measured := *claimed
	measured.Runner = map[string]string{"cpu_model": sub.HostCPU}
	if err := db.CompleteJob(ctx, lease.Job.ID, lease.Secret, &measured, st, reasons); err != nil {
		t.Fatal(err)
	}
	return sub.ID
}

func TestReviewAPI(t *testing.T) {
	p := startPortal(t, 0)
	org := p.organiserToken(t, "olga")
	db, err := store.Open(context.Background(), p.data)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	accepted := seedVerdict(t, db, d5list.StatusDiscrepancy)
	rejected := seedVerdict(t, db, d5list.StatusNeedsReview)
	moved := seedVerdict(t, db, d5list.StatusDiscrepancy)
	flagged := seedVerdict(t, db, d5list.StatusVerified)
	rerun := seedVerdict(t, db, d5list.StatusDiscrepancy)
	path := func(id int64) string { return "/api/v1/submissions/" + strconv.FormatInt(id, 10) + "/review" }

	t.Run("queue", func(t *testing.T) {
		if code, _ := p.call(t, http.MethodGet, "/api/v1/review", "", nil, nil); code != 401 {
			t.Fatalf("queue without a token: %d, want 401", code)
		}
		if code, e := p.call(t, http.MethodGet, "/api/v1/review", p.token, nil, nil); code != 403 || e.Error.Code != d5list.EFORBIDDEN {
			t.Fatalf("queue with a competitor token: %d %+v, want 403", code, e)
		}
		var q struct {
			Submissions []struct {
				ID     int64         `json:"id"`
				Status d5list.Status `json:"status"`
			} `json:"submissions"`
		}
		if code, e := p.call(t, http.MethodGet, "/api/v1/review", org, nil, &q); code != 200 {
			t.Fatalf("queue: %d %+v", code, e)
		}
		got := map[int64]d5list.Status{}
		for _, s := range q.Submissions {
			got[s.ID] = s.Status
		}
		want := map[int64]d5list.Status{accepted: d5list.StatusDiscrepancy, rejected: d5list.StatusNeedsReview,
			moved: d5list.StatusDiscrepancy, rerun: d5list.StatusDiscrepancy}
		if len(got) != len(want) {
			t.Fatalf("queue holds %v, want %v (the verified one left out)", got, want)
		}
		for id, st := range want {
			if got[id] != st {
				t.Fatalf("queue holds %v, want %v", got, want)
			}
		}
	})

	// Refused requests change nothing and write no audit entry.
	refusals := []struct {
		name   string
		id     int64
		token  string
		body   any
		status int
		field  string // the error message must start with it
	}{
		{"competitor may not review", accepted, p.token, d5list.ReviewRequest{Action: d5list.ActionAccept}, 403, ""},
		{"no token", accepted, "", d5list.ReviewRequest{Action: d5list.ActionAccept}, 401, ""},
		{"reject without a reason", rejected, org, d5list.ReviewRequest{Action: d5list.ActionReject, Reason: "  "}, 400, "reason"},
		{"unknown action", accepted, org, d5list.ReviewRequest{Action: "approve"}, 400, "action"},
		{"missing action", accepted, org, map[string]string{"reason": "x"}, 400, "action"},
		{"flag without a note", flagged, org, d5list.ReviewRequest{Action: d5list.ActionFlag}, 400, "note"},
		{"unknown field", accepted, org, map[string]string{"action": "accept", "why": "x"}, 400, "why"},
		{"accept a verified submission", flagged, org, d5list.ReviewRequest{Action: d5list.ActionAccept}, 409, ""},
		{"unknown submission", 999, org, d5list.ReviewRequest{Action: d5list.ActionAccept}, 404, ""},
	}
	for _, tt := range refusals {
		t.Run(tt.name, func(t *testing.T) {
			before, _ := db.Submission(context.Background(), tt.id)
			code, e := p.call(t, http.MethodPost, path(tt.id), tt.token, tt.body, nil)
			if code != tt.status {
				t.Fatalf("got %d %+v, want %d", code, e, tt.status)
			}
			if tt.field != "" && !strings.HasPrefix(e.Error.Message, tt.field+": ") {
				t.Fatalf("error %q does not name the field %q", e.Error.Message, tt.field)
			}
			if before == nil {
				return
			}
			after, _ := db.Submission(context.Background(), tt.id)
			if after.Status != before.Status || after.Flag != before.Flag {
				t.Fatalf("a refused review changed the submission: %s %q -> %s %q", before.Status, before.Flag, after.Status, after.Flag)
			}
			if a := p.audit(t, tt.id); len(a.Entries) != 0 {
				t.Fatalf("a refused review left audit entries: %+v", a.Entries)
			}
		})
	}

	// The public board lists the verified submission before it is flagged;
	// asking now also fills the cache that the flag must invalidate.
	board := func() map[int64]bool {
		var b d5list.Leaderboard
		if code := p.getJSON(t, "/api/v1/leaderboards/l2-digits-mlp-cpu", &b); code != 200 {
			t.Fatalf("leaderboard: %d", code)
		}
		ids := map[int64]bool{}
		for _, e := range b.Entries {
			ids[e.SubmissionID] = true
		}
		return ids
	}
	if ids := board(); !ids[flagged] || len(ids) != 1 {
		t.Fatalf("board before review lists %v, want only %d", ids, flagged)
	}

	actions := []struct {
		name         string
		id           int64
		req          d5list.ReviewRequest
		from, to     d5list.Status
		division     string
		flag         string
		listedBefore bool
		listedAfter  bool
	}{
		{"accept", accepted, d5list.ReviewRequest{Action: d5list.ActionAccept, Reason: "run 2's difference is a logging bug, confirmed by mail"},
			d5list.StatusDiscrepancy, d5list.StatusVerified, d5list.DivisionClosed, "", false, true},
		{"reject", rejected, d5list.ReviewRequest{Action: d5list.ActionReject, Reason: "run 2 cannot be reproduced on any runner"},
			d5list.StatusNeedsReview, d5list.StatusRejected, d5list.DivisionClosed, "", false, false},
		{"move to open", moved, d5list.ReviewRequest{Action: d5list.ActionMoveOpen, Reason: "the optimizer is not the reference one"},
			d5list.StatusDiscrepancy, d5list.StatusDiscrepancy, d5list.DivisionOpen, "", false, false},
		{"flag", flagged, d5list.ReviewRequest{Action: d5list.ActionFlag, Reason: "complaint #12", Note: "Timing disputed; see the discussion"},
			d5list.StatusVerified, d5list.StatusVerified, d5list.DivisionClosed, "Timing disputed; see the discussion", true, false},
		{"rerun", rerun, d5list.ReviewRequest{Action: d5list.ActionRerun, Reason: "the runner was overloaded"},
			d5list.StatusDiscrepancy, d5list.StatusQueued, d5list.DivisionClosed, "", false, false},
	}
	for _, tt := range actions {
		t.Run(tt.name, func(t *testing.T) {
			if got := board()[tt.id]; got != tt.listedBefore {
				t.Fatalf("listed before: %v, want %v", got, tt.listedBefore)
			}
			var resp struct {
				Submission struct {
					Status   d5list.Status `json:"status"`
					Division string        `json:"division"`
					Flag     string        `json:"flag"`
				} `json:"submission"`
				Audit d5list.AuditEntry `json:"audit"`
			}
			if code, e := p.call(t, http.MethodPost, path(tt.id), org, tt.req, &resp); code != 200 {
				t.Fatalf("review: %d %+v", code, e)
			}
			s := resp.Submission
			if s.Status != tt.to || s.Division != tt.division || s.Flag != tt.flag {
				t.Fatalf("after %s: status %s division %s flag %q, want %s %s %q", tt.name, s.Status, s.Division, s.Flag, tt.to, tt.division, tt.flag)
			}
			a := p.audit(t, tt.id)
			if len(a.Entries) != 1 {
				t.Fatalf("audit entries %+v, want one", a.Entries)
			}
			e := a.Entries[0]
			if e.Actor != "olga" || e.Action != tt.req.Action || e.Reason != tt.req.Reason || e.Note != tt.req.Note ||
				e.FromStatus != tt.from || e.ToStatus != tt.to || e.CreatedAt.IsZero() || e.ID != resp.Audit.ID {
				t.Fatalf("audit entry %+v, want olga %s %q %q %s->%s", e, tt.req.Action, tt.req.Reason, tt.req.Note, tt.from, tt.to)
			}
			if got := board()[tt.id]; got != tt.listedAfter {
				t.Fatalf("listed after: %v, want %v", got, tt.listedAfter)
			}
			// The same action again is refused where the new status does
			// not allow it, and records nothing.
			if tt.req.Action == d5list.ActionAccept || tt.req.Action == d5list.ActionReject ||
				tt.req.Action == d5list.ActionMoveOpen || tt.req.Action == d5list.ActionRerun {
				if code, e := p.call(t, http.MethodPost, path(tt.id), org, tt.req, nil); code != 409 {
					t.Fatalf("repeating %s: %d %+v, want 409", tt.name, code, e)
				}
				if a := p.audit(t, tt.id); len(a.Entries) != 1 {
					t.Fatalf("a refused repeat was audited: %+v", a.Entries)
				}
			}
		})
	}

	t.Run("rerun keeps the old attempt", func(t *testing.T) {
		a := p.audit(t, rerun)
		if len(a.Attempts) != 2 {
			t.Fatalf("attempts %+v, want the old job and the new one", a.Attempts)
		}
		old, cur := a.Attempts[0], a.Attempts[1]
		if old.Job.State != d5list.JobDone || old.Status != d5list.StatusDiscrepancy || old.Measured == nil ||
			len(old.Measured.ClaimedSeedRuns()) != 5 || len(old.Reasons) != 1 || old.Reasons[0].Code != "seeded" {
			t.Fatalf("old attempt %+v, want the done job with its discrepancy verdict and measured runs", old)
		}
		if cur.Job.State != d5list.JobQueued || cur.Job.ID != a.Entries[0].JobID || cur.Status != "" {
			t.Fatalf("new attempt %+v, want a queued job %d", cur, a.Entries[0].JobID)
		}
		// The new job is really on the queue, for the same submission.
		lease, err := db.LeaseJob(context.Background(), "test-runner", map[string]string{}, time.Minute)
		if err != nil || lease == nil || lease.Job.ID != cur.Job.ID || lease.Spec.SubmissionID != rerun || len(lease.Spec.Seeds) != 5 {
			t.Fatalf("lease after a re-run: %+v, %v", lease, err)
		}
	})

	t.Run("submission page shows the audit log and the flag", func(t *testing.T) {
		doc := p.page(t, "/submissions/"+strconv.FormatInt(flagged, 10))
		if doc.Find(`[data-testid="flag-badge"]`).Length() != 1 {
			t.Fatal("no flag badge on a flagged submission's page")
		}
		rows := doc.Find(`[data-testid="audit-log"] [data-testid="audit-entry"]`)
		if rows.Length() != 1 || !strings.Contains(rows.Text(), "olga") || !strings.Contains(rows.Text(), "complaint #12") {
			t.Fatalf("audit log on the page: %d rows %q", rows.Length(), rows.Text())
		}
	})

	t.Run("audit rows cannot be changed", func(t *testing.T) {
		raw, err := sql.Open("sqlite", "file:"+filepath.Join(p.data, "d5list.db")+"?_pragma=busy_timeout(10000)")
		if err != nil {
			t.Fatal(err)
		}
		defer raw.Close()
		count := func() int {
			var n int
			if err := raw.QueryRow(`SELECT count(*) FROM audit_log`).Scan(&n); err != nil {
				t.Fatal(err)
			}
			return n
		}
		n := count()
		if n != len(actions) {
			t.Fatalf("%d audit rows, want %d", n, len(actions))
		}
		for _, stmt := range []string{
			`UPDATE audit_log SET reason = 'nothing happened'`,
			`UPDATE audit_log SET to_status = 'verified' WHERE action = 'reject'`,
			`DELETE FROM audit_log`,
			`DELETE FROM audit_log WHERE action = 'flag'`,
		} {
			_, err := raw.Exec(stmt)
			if err == nil || !strings.Contains(err.Error(), "append-only") {
				t.Fatalf("%s: err %v, want the append-only trigger to abort it", stmt, err)
			}
		}
		if count() != n {
			t.Fatal("audit rows changed")
		}
		var reason string
		if err := raw.QueryRow(`SELECT reason FROM audit_log WHERE action = 'reject'`).Scan(&reason); err != nil || reason != actions[1].req.Reason {
			t.Fatalf("reject reason %q, %v", reason, err)
		}
	})
}

// The end-to-end tests re-run once an honest entry whose times alone were
// called forged, and accept one for which a noisy host left no other
// question than its times; anything else must reach them as it is.
func TestHonestVerdictActsOnlyOnTimingFindings(t *testing.T) {
	p, db := reviewedPortal(t)
	ctx := context.Background()
	noisy := d5list.Reason{Code: verifier.CodeTimingTooNoisy, Message: "op_time_ms: the re-run was too noisy to judge the claimed times"}
	gap := d5list.Reason{Code: verifier.CodeTimingMismatch, Message: "0.7 of the re-run"}
	cases := []struct {
		name    string
		status  d5list.Status
		reasons []d5list.Reason
		rerun   d5list.Status // what the re-run finds, where there is one
		want    d5list.Status
		actions []d5list.ReviewAction
	}{
		{"too noisy, and nothing else", d5list.StatusNeedsReview, []d5list.Reason{noisy}, "", d5list.StatusVerified, []d5list.ReviewAction{d5list.ActionAccept}},
		{"too noisy, and near the target", d5list.StatusNeedsReview,
			[]d5list.Reason{noisy, {Code: verifier.CodeConvergenceBorder, Message: "run 1 reached the target in the last epoch"}}, "", d5list.StatusNeedsReview, nil},
		{"a re-run 2.2 times as fast as a claim made in a slow spell", d5list.StatusNeedsReview,
			[]d5list.Reason{noisy, muchFaster(3.3, 1.5)}, "", d5list.StatusVerified, []d5list.ReviewAction{d5list.ActionAccept}},
		{"a re-run that measured almost nothing", d5list.StatusNeedsReview,
			[]d5list.Reason{muchFaster(3.3, 0.001)}, "", d5list.StatusNeedsReview, nil},
		{"a re-run much faster, with no values to weigh", d5list.StatusNeedsReview,
			[]d5list.Reason{{Code: verifier.CodeRerunMuchFaster, Message: "the re-run is 3 times better"}}, "", d5list.StatusNeedsReview, nil},
		{"a review for another reason", d5list.StatusNeedsReview,
			[]d5list.Reason{{Code: verifier.CodeWorkersNotSeen, Message: "the runner saw one process compute"}}, "", d5list.StatusNeedsReview, nil},
		{"a timing gap, gone on the re-run", d5list.StatusDiscrepancy, []d5list.Reason{gap}, d5list.StatusVerified, d5list.StatusVerified, []d5list.ReviewAction{d5list.ActionRerun}},
		{"a timing gap, again on the re-run", d5list.StatusDiscrepancy, []d5list.Reason{gap}, d5list.StatusDiscrepancy, d5list.StatusDiscrepancy, []d5list.ReviewAction{d5list.ActionRerun}},
		{"a timing gap and a wrong accuracy", d5list.StatusDiscrepancy,
			[]d5list.Reason{gap, {Code: verifier.CodeMetricMismatch, Message: "run 1's accuracy differs"}}, "", d5list.StatusDiscrepancy, nil},
	}
	for _, tt := range cases {
		t.Run(tt.name, func(t *testing.T) {
			id := seedFindings(t, db, tt.status, tt.reasons)
			rerun := make(chan error, 1)
			if tt.rerun != "" {
				go func() { rerun <- completeRerun(ctx, db, id, tt.rerun, gap) }()
			}
			if got := p.honestVerdict(t, id); got.Status != tt.want {
				t.Fatalf("honestVerdict left %s, want %s", got.Status, tt.want)
			}
			if tt.rerun != "" {
				if err := <-rerun; err != nil {
					t.Fatal(err)
				}
			}
			var actions []d5list.ReviewAction
			for _, e := range p.audit(t, id).Entries {
				actions = append(actions, e.Action)
			}
			if !slices.Equal(actions, tt.actions) {
				t.Fatalf("organiser's actions %v, want %v", actions, tt.actions)
			}
		})
	}
}

// A forgery left to an organiser because the host was too noisy is run
// again once; still too noisy, its test is skipped, never passed; any
// finding reaches the test as it is.
func TestForgedVerdictRerunsOnlyWhatNoiseLeftOpen(t *testing.T) {
	// The skip this test provokes is no noise of the host's: it is noted
	// apart from CI's list of those.
	t.Setenv("D5LIST_NOISE_SKIPS", filepath.Join(t.TempDir(), "skips"))
	p, db := reviewedPortal(t)
	ctx := context.Background()
	noisy := d5list.Reason{Code: verifier.CodeTimingTooNoisy, Message: "time to train: the re-run was too noisy to judge the claimed times"}
	gap := d5list.Reason{Code: verifier.CodeTimingMismatch, Message: "0.5 of the re-run"}
	cases := []struct {
		name    string
		status  d5list.Status
		reasons []d5list.Reason
		rerun   d5list.Status
		finding d5list.Reason // the re-run's
		want    d5list.Status
		skipped bool
		actions []d5list.ReviewAction
	}{
		{"caught", d5list.StatusDiscrepancy, []d5list.Reason{gap}, "", gap, d5list.StatusDiscrepancy, false, nil},
		{"too noisy, caught on the re-run", d5list.StatusNeedsReview, []d5list.Reason{noisy}, d5list.StatusDiscrepancy, gap, d5list.StatusDiscrepancy, false, []d5list.ReviewAction{d5list.ActionRerun}},
		{"too noisy twice", d5list.StatusNeedsReview, []d5list.Reason{noisy}, d5list.StatusNeedsReview, noisy, d5list.StatusNeedsReview, true, []d5list.ReviewAction{d5list.ActionRerun}},
		{"too noisy, and near the target", d5list.StatusNeedsReview,
			[]d5list.Reason{noisy, {Code: verifier.CodeConvergenceBorder, Message: "run 1 reached the target in the last epoch"}}, "", gap, d5list.StatusNeedsReview, false, nil},
	}
	for _, tt := range cases {
		t.Run(tt.name, func(t *testing.T) {
			id := seedFindings(t, db, tt.status, tt.reasons)
			rerun := make(chan error, 1)
			if tt.rerun != "" {
				go func() { rerun <- completeRerun(ctx, db, id, tt.rerun, tt.finding) }()
			}
			var got submissionJSON
			var inner *testing.T
			t.Run("verdict", func(t *testing.T) {
				inner = t
				got = p.forgedVerdict(t, id)
			})
			if tt.rerun != "" {
				if err := <-rerun; err != nil {
					t.Fatal(err)
				}
			}
			if inner.Skipped() != tt.skipped {
				t.Fatalf("skipped %v, want %v", inner.Skipped(), tt.skipped)
			}
			if !tt.skipped && got.Status != tt.want {
				t.Fatalf("forgedVerdict left %s, want %s", got.Status, tt.want)
			}
			var actions []d5list.ReviewAction
			for _, e := range p.audit(t, id).Entries {
				actions = append(actions, e.Action)
			}
			if !slices.Equal(actions, tt.actions) {
				t.Fatalf("organiser's actions %v, want %v", actions, tt.actions)
			}
		})
	}
}

// reviewedPortal is a portal with no runner and no spell to wait out, and
// its store, for seeding the verdicts the organiser helpers act on.
func reviewedPortal(t *testing.T) (*portalUnderTest, *store.DB) {
	t.Helper()
	p := startPortal(t, 0)
	p.spell = 0
	db, err := store.Open(context.Background(), p.data)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return p, db
}

// completeRerun takes the re-run job of submission id when it is queued,
// as a runner would, and gives it status st (with finding where it is not
// verified), measuring what was claimed.
func completeRerun(ctx context.Context, db *store.DB, id int64, st d5list.Status, finding d5list.Reason) error {
	for deadline := time.Now().Add(time.Minute); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		lease, err := db.LeaseJob(ctx, "seeder", map[string]string{}, time.Minute)
		if err != nil {
			return err
		}
		if lease == nil {
			continue
		}
		if lease.Spec.SubmissionID != id {
			return fmt.Errorf("leased a job of submission %d, want %d's re-run", lease.Spec.SubmissionID, id)
		}
		sub, err := db.Submission(ctx, id)
		if err != nil {
			return err
		}
		measured := *sub.Claimed
		measured.Runner = map[string]string{"cpu_model": sub.HostCPU}
		var reasons []d5list.Reason
		if st != d5list.StatusVerified {
			reasons = []d5list.Reason{finding}
		}
		return db.CompleteJob(ctx, lease.Job.ID, lease.Secret, &measured, st, reasons)
	}
	return fmt.Errorf("submission %d was not queued for a re-run within a minute", id)
}

// A test skipped for the host's noise says so where CI looks: the test's
// name and reason are added to the file D5LIST_NOISE_SKIPS names.
func TestSkipForNoiseIsNoted(t *testing.T) {
	notes := filepath.Join(t.TempDir(), "skips")
	t.Setenv("D5LIST_NOISE_SKIPS", notes)
	var inner *testing.T
	t.Run("noisy", func(t *testing.T) {
		inner = t
		skipForNoise(t, "submission %d: too noisy", 7)
	})
	if !inner.Skipped() {
		t.Fatal("the subtest was not skipped")
	}
	data, err := os.ReadFile(notes)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := string(data), "TestSkipForNoiseIsNoted/noisy: submission 7: too noisy\n"; got != want {
		t.Fatalf("noted %q, want %q", got, want)
	}
}
