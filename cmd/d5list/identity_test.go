package main

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"testing"
	"time"

	d5list "github.com/deep500/d5list"
	"github.com/deep500/d5list/store"
)

// withSubmitter returns the bundle with submission.json's submitter set to
// name, every other byte of every file kept.
func withSubmitter(t *testing.T, bundle []byte, name string) []byte {
	t.Helper()
	return withManifestField(t, bundle, "submitter", name)
}

// withManifestField returns the bundle with submission.json's field set to
// value, every other byte of every file kept.
func withManifestField(t *testing.T, bundle []byte, field, value string) []byte {
	t.Helper()
	return rewriteBundle(t, bundle, func(file string, body []byte) []byte {
		if !strings.HasSuffix(file, "submission.json") {
			return body
		}
		var m map[string]any
		if err := json.Unmarshal(body, &m); err != nil {
			t.Fatal(err)
		}
		m[field] = value
		body, err := json.MarshalIndent(m, "", "  ")
		if err != nil {
			t.Fatal(err)
		}
		return body
	})
}

// rewriteBundle returns the tar.gz bundle with each file's body replaced
// by what change returns for it.
func rewriteBundle(t *testing.T, bundle []byte, change func(file string, body []byte) []byte) []byte {
	t.Helper()
	zr, err := gzip.NewReader(bytes.NewReader(bundle))
	if err != nil {
		t.Fatal(err)
	}
	tr := tar.NewReader(zr)
	var out bytes.Buffer
	zw := gzip.NewWriter(&out)
	tw := tar.NewWriter(zw)
	for {
		h, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		body, err := io.ReadAll(tr)
		if err != nil {
			t.Fatal(err)
		}
		body = change(h.Name, body)
		h.Size = int64(len(body))
		if err := tw.WriteHeader(h); err != nil {
			t.Fatal(err)
		}
		if _, err := tw.Write(body); err != nil {
			t.Fatal(err)
		}
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return out.Bytes()
}

func refusal(t *testing.T, what string, code int, answer map[string]any, err error) d5list.Reason {
	t.Helper()
	if err != nil || code != http.StatusBadRequest {
		t.Fatalf("%s: %d %v %v, want 400", what, code, answer, err)
	}
	errObj, _ := answer["error"].(map[string]any)
	raw, _ := json.Marshal(errObj["reasons"])
	var reasons []d5list.Reason
	if err := json.Unmarshal(raw, &reasons); err != nil || len(reasons) == 0 {
		t.Fatalf("%s: answer %v has no reasons", what, answer)
	}
	return reasons[0]
}

// An account submits for one organisation, named by its first upload or
// at sign-up and confirmed by an organiser; the board shows it, marked
// until confirmed; a submission.json naming another organisation is
// refused with the field and file named, and nothing is stored (issue 16).
func TestOrganisationIdentity(t *testing.T) {
	p := startPortal(t, 0) // no runner: entries stay queued, shown with ?status=all
	bundle := faultBundle(t)
	labBundle := withSubmitter(t, bundle, "Newcomer Lab")

	code, answer, err := postBundle(p.url, p.token, bytes.NewReader(labBundle))
	if err != nil || code != http.StatusCreated {
		t.Fatalf("first upload: %d %v %v", code, answer, err)
	}
	first := int64(answer["id"].(float64))
	// Its page shows the system.json that came with it, as read (issue 16).
	entry := p.page(t, "/submissions/"+strconv.FormatInt(first, 10)).Find(testid("system-description"))
	if entry.Find(`dd[data-field="system_name"]`).Text() != "cpu-vm" || entry.Find(`dd[data-field="host_processor_model_name"]`).Text() == "" {
		t.Errorf("the entry page's system description: %q", entry.Text())
	}

	before := len(submissionIDs(t, p.data))
	code, answer, err = postBundle(p.url, p.token, bytes.NewReader(withSubmitter(t, bundle, "Speedy Cheaters")))
	r := refusal(t, "posting as another organisation", code, answer, err)
	if r.Code != "submitter_not_your_organisation" || r.File != "submission.json" ||
		!strings.Contains(r.Message, `"Speedy Cheaters"`) || !strings.Contains(r.Message, `"Newcomer Lab"`) {
		t.Errorf("refusal %+v, want submitter_not_your_organisation naming both organisations and submission.json", r)
	}
	if n := len(submissionIDs(t, p.data)); n != before {
		t.Errorf("a refused upload left %d submissions, want %d", n, before)
	}

	// NVIDIA's own account, confirmed by an admin; a stranger may not post
	// as NVIDIA in any spelling, nor as a name drawn like it (a Cyrillic
	// А, a zero-width space, a fullwidth Ｎ).
	adminToken(t, "user", "--data", p.data, "--user", "nv", "--role", "competitor", "--organisation", "NVIDIA")
	stranger := adminToken(t, "token", "--data", p.data, "--user", "mallory", "--role", "competitor")
	for _, name := range []string{"nvidia ", "NVIDI\u0410", "NV\u200bIDIA", "\uff2eVIDIA"} {
		code, answer, err = postBundle(p.url, stranger, bytes.NewReader(withSubmitter(t, bundle, name)))
		if r := refusal(t, fmt.Sprintf("a stranger posting as %+q", name), code, answer, err); r.Code != "submitter_taken" || !strings.Contains(r.Message, "ask an organiser") {
			t.Errorf("posting as %+q: refusal %+v, want submitter_taken with what to do", name, r)
		}
	}

	board := "/benchmarks/l2-digits-mlp-cpu?status=all"
	row := p.page(t, board).Find(`[data-testid="leaderboard-row"][data-submission="` + strconv.FormatInt(first, 10) + `"]`)
	if got := strings.TrimSpace(row.Find(testid("entry-submitter")).Text()); got != "Newcomer Lab" {
		t.Fatalf("board organisation %q, want Newcomer Lab", got)
	}
	if row.Find(testid("entry-org-unconfirmed")).Length() != 1 {
		t.Error("an unconfirmed organisation is not marked on the board")
	}

	// Confirmed in the console of the running portal, which drops the
	// cached boards.
	var aliceID int
	if _, err := fmt.Sscanf(adminToken(t, "user", "--data", p.data, "--user", "alice", "--role", "competitor"), "user alice (id %d)", &aliceID); err != nil {
		t.Fatal(err)
	}
	req, _ := http.NewRequest(http.MethodPost, p.url+"/console/users/"+strconv.Itoa(aliceID)+"/organisation",
		strings.NewReader(url.Values{"organisation": {"newcomer  lab"}}.Encode()))
	req.Header.Set("Authorization", "Bearer "+p.orgToken)
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	resp, err := (&http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusSeeOther {
		t.Fatalf("confirming alice in the console: %d", resp.StatusCode)
	}
	row = p.page(t, board).Find(`[data-testid="leaderboard-row"][data-submission="` + strconv.FormatInt(first, 10) + `"]`)
	if row.Find(testid("entry-org-unconfirmed")).Length() != 0 {
		t.Error("the board still marks a confirmed organisation")
	}
	org := p.page(t, "/submitters/Newcomer%20Lab")
	if org.Find(testid("org-confirmed")).Length() != 1 || org.Find(`[data-testid="entity-entry"][data-submission="`+strconv.FormatInt(first, 10)+`"]`).Length() != 1 {
		t.Errorf("the organisation page does not list entry %d as confirmed: %q", first, org.Find("main").Text())
	}
	sys := p.page(t, "/submitters/Newcomer%20Lab/systems/"+pathEscape(t, p, first))
	if sys.Find(testid("system-facts")).Length() != 1 || sys.Find(testid("entity-entry")).Length() != 1 {
		t.Errorf("the system page lacks its facts or entry: %q", sys.Find("main").Text())
	}
}

// pathEscape is the system name of submission id, as its page's link has it.
func pathEscape(t *testing.T, p *portalUnderTest, id int64) string {
	t.Helper()
	href, ok := p.page(t, "/submissions/"+strconv.FormatInt(id, 10)).Find(testid("system")).Attr("href")
	if !ok {
		t.Fatal("the entry page does not link its system")
	}
	return href[strings.LastIndex(href, "/")+1:]
}

// A verdict against an entry is its competitor's and the organisers' to
// see until an organiser publishes it; the competitor can ask for a review
// with a message that reaches the organisers' queue (issue 16).
func TestHiddenVerdictsAndAppeals(t *testing.T) {
	p := startPortal(t, 0)
	code, answer, err := postBundle(p.url, p.token, bytes.NewReader(faultBundle(t)))
	if err != nil || code != http.StatusCreated {
		t.Fatalf("upload: %d %v %v", code, answer, err)
	}
	id := int64(answer["id"].(float64))
	sid := strconv.FormatInt(id, 10)

	// The verdict, written as a runner's would be.
	ctx := context.Background()
	db, err := store.Open(ctx, p.data)
	if err != nil {
		t.Fatal(err)
	}
	lease, err := db.LeaseJob(ctx, "test-runner", nil, time.Minute)
	if err != nil || lease == nil {
		t.Fatalf("lease: %v %v", lease, err)
	}
	measured := &d5list.Result{Score: d5list.Score{Metric: d5list.MetricTimeToTrain, Value: 40, Valid: true}}
	err = db.CompleteJob(ctx, lease.Job.ID, lease.Secret, measured, d5list.StatusDiscrepancy,
		[]d5list.Reason{{Code: "accuracy_mismatch", Message: "run 1: final accuracy 0.95 claimed, 0.91 measured"}})
	db.Close()
	if err != nil {
		t.Fatal(err)
	}

	for _, path := range []string{"/submissions/" + sid, "/api/v1/submissions/" + sid, "/submissions/" + sid + "/badge.svg",
		"/api/v1/submissions/" + sid + "/audit", "/submissions/" + sid + "/events", "/submissions/" + sid + "/bundle"} {
		if code := httpStatus(t, p.url+path, ""); code != http.StatusNotFound {
			t.Errorf("a visitor GET %s: %d, want 404 for a hidden verdict", path, code)
		}
	}
	owner := getDoc(t, p.url+"/submissions/"+sid, p.token)
	if owner.Find(testid("hidden-note")).Length() != 1 || owner.Find(testid("appeal-form")).Length() != 1 {
		t.Fatalf("the competitor's page lacks the hidden note or the appeal form: %q", owner.Find("main").Text())
	}

	appeal := func(token, message string) int {
		body := strings.NewReader(`{"message": ` + strconv.Quote(message) + `}`)
		req, _ := http.NewRequest(http.MethodPost, p.url+"/api/v1/submissions/"+sid+"/appeal", body)
		req.Header.Set("Authorization", "Bearer "+token)
		req.Header.Set("Content-Type", "application/json")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	if code := appeal(p.token, "  "); code != http.StatusBadRequest {
		t.Errorf("an empty appeal: %d, want 400", code)
	}
	stranger := adminToken(t, "token", "--data", p.data, "--user", "mallory", "--role", "competitor")
	if code := appeal(stranger, "let me in"); code != http.StatusNotFound {
		t.Errorf("a stranger's appeal on a hidden entry: %d, want 404", code)
	}
	const message = "Our BLAS picks another kernel on the runner; please look at run 1."
	if code := appeal(p.token, message); code != http.StatusCreated {
		t.Fatalf("the competitor's appeal: %d, want 201", code)
	}
	if code := appeal(p.token, "again"); code != http.StatusConflict {
		t.Errorf("a second appeal while the first waits: %d, want 409", code)
	}
	if getDoc(t, p.url+"/submissions/"+sid, p.token).Find(testid("appeal-sent")).Length() != 1 {
		t.Error("the competitor's page does not say the message waits")
	}
	console := getDoc(t, p.url+"/console/", p.orgToken)
	got := console.Find(`[data-testid="review-row"][data-id="` + sid + `"] ` + testid("review-appeal")).Text()
	if !strings.Contains(got, message) {
		t.Errorf("the review queue shows appeal %q, want the competitor's message", got)
	}

	// Published, the verdict is public; the message stays between the
	// competitor and the organisers.
	req, _ := http.NewRequest(http.MethodPost, p.url+"/api/v1/submissions/"+sid+"/review", strings.NewReader(`{"action": "publish"}`))
	req.Header.Set("Authorization", "Bearer "+p.orgToken)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("publish: %d", resp.StatusCode)
	}
	public := p.page(t, "/submissions/"+sid)
	if public.Find(testid("hidden-note")).Length() != 0 || public.Find(testid("status-badge")).Text() == "" {
		t.Error("a published verdict still reads as hidden")
	}
	var audit struct {
		Entries []d5list.AuditEntry `json:"entries"`
	}
	if code := p.getJSON(t, "/api/v1/submissions/"+sid+"/audit", &audit); code != http.StatusOK {
		t.Fatalf("public audit: %d", code)
	}
	for _, e := range audit.Entries {
		if e.Action == d5list.ActionAppeal && e.Note != "" {
			t.Errorf("the public audit log shows the appeal's message %q", e.Note)
		}
	}
}

func httpStatus(t *testing.T, url, token string) int {
	t.Helper()
	req, _ := http.NewRequest(http.MethodGet, url, nil)
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	return resp.StatusCode
}

func testid(id string) string { return `[data-testid="` + id + `"]` }

// A re-run moves the verdict into the entry's history, where it stays as
// visible as it was when written: an unpublished verdict's findings stay
// the competitor's and the organisers' while the entry, queued again, is
// public; and a published verdict does not publish the next one (issue 16).
func TestHiddenVerdictStaysHiddenAcrossReruns(t *testing.T) {
	p := startPortal(t, 0)
	code, answer, err := postBundle(p.url, p.token, bytes.NewReader(faultBundle(t)))
	if err != nil || code != http.StatusCreated {
		t.Fatalf("upload: %d %v %v", code, answer, err)
	}
	sid := strconv.FormatInt(int64(answer["id"].(float64)), 10)
	ctx := context.Background()
	verdict := func(finding string) {
		t.Helper()
		db, err := store.Open(ctx, p.data)
		if err != nil {
			t.Fatal(err)
		}
		defer db.Close()
		lease, err := db.LeaseJob(ctx, "test-runner", nil, time.Minute)
		if err != nil || lease == nil {
			t.Fatalf("lease: %v %v", lease, err)
		}
		measured := &d5list.Result{Score: d5list.Score{Metric: d5list.MetricTimeToTrain, Value: 40.125, Valid: true}}
		if err := db.CompleteJob(ctx, lease.Job.ID, lease.Secret, measured, d5list.StatusDiscrepancy,
			[]d5list.Reason{{Code: "accuracy_mismatch", Message: finding}}); err != nil {
			t.Fatal(err)
		}
	}
	review := func(action string) {
		t.Helper()
		req, _ := http.NewRequest(http.MethodPost, p.url+"/api/v1/submissions/"+sid+"/review", strings.NewReader(`{"action": "`+action+`"}`))
		req.Header.Set("Authorization", "Bearer "+p.orgToken)
		req.Header.Set("Content-Type", "application/json")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("%s: %d", action, resp.StatusCode)
		}
	}
	// visitorSees is everything a visitor can read about the entry.
	visitorSees := func() string {
		t.Helper()
		var all strings.Builder
		for _, path := range []string{"/api/v1/submissions/" + sid, "/api/v1/submissions/" + sid + "/audit", "/submissions/" + sid} {
			req, _ := http.NewRequest(http.MethodGet, p.url+path, nil)
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != http.StatusOK {
				t.Fatalf("a visitor GET %s: %d, want 200", path, resp.StatusCode)
			}
			all.Write(body)
		}
		return all.String()
	}

	verdict("SECRET-FIRST run 1: final accuracy 0.95 claimed, 0.91 measured")
	review("rerun")
	seen := visitorSees()
	for _, secret := range []string{"SECRET-FIRST", "40.125", "40.13", "discrepancy"} {
		if strings.Contains(seen, secret) {
			t.Errorf("after a re-run a visitor reads %q of the unpublished verdict", secret)
		}
	}
	var audit struct {
		Attempts []d5list.Attempt `json:"attempts"`
	}
	if code := p.getJSONAs(t, "/api/v1/submissions/"+sid+"/audit", p.token, &audit); code != http.StatusOK ||
		len(audit.Attempts) != 2 || len(audit.Attempts[0].Reasons) != 1 || audit.Attempts[0].Status != d5list.StatusDiscrepancy {
		t.Errorf("the competitor's audit: %d %+v, want the first attempt's discrepancy kept", code, audit.Attempts)
	}

	verdict("PUBLISHED-SECOND run 1: final accuracy 0.95 claimed, 0.90 measured")
	review("publish")
	review("rerun")
	seen = visitorSees()
	if !strings.Contains(seen, "PUBLISHED-SECOND") || strings.Contains(seen, "SECRET-FIRST") {
		t.Errorf("after a re-run of a published verdict a visitor should read it in the history (%v), and still not the unpublished one (%v)",
			strings.Contains(seen, "PUBLISHED-SECOND"), !strings.Contains(seen, "SECRET-FIRST"))
	}

	verdict("SECRET-THIRD run 1: final accuracy 0.95 claimed, 0.89 measured")
	for _, path := range []string{"/submissions/" + sid, "/api/v1/submissions/" + sid, "/api/v1/submissions/" + sid + "/audit"} {
		if code := httpStatus(t, p.url+path, ""); code != http.StatusNotFound {
			t.Errorf("a visitor GET %s after a re-run failed again: %d, want 404 until an organiser publishes the new verdict", path, code)
		}
	}
}
