package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/PuerkitoBio/goquery"

	d5list "github.com/deep500/d5list"
)

// A failed audit costs its account something, through the real server: the
// account's next lease of the benchmark asks the runner for a full audit; a
// second failure holds its uploads of the benchmark, refused with the reason
// and nothing stored, until an organiser clears them from the console,
// which lists each failure under the account and organisation. The
// competitor sees the finding on the entry's page; a visitor sees nothing
// of it until the organisers show failed audits publicly.
func TestAFailedAuditCostsSomething(t *testing.T) {
	p, db := reviewedPortal(t)
	ctx := context.Background()
	dir := filepath.Join(t.TempDir(), "gemm")
	for _, args := range [][]string{{"init", "l0-gemm-cpu", dir, "--submitter", "Rita Lab"}, {"run", dir}} {
		if err := run(ctx, args, io.Discard, io.Discard); err != nil {
			t.Fatalf("%s: %v", args[0], err)
		}
	}
	files := map[string]string{}
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		data, err := os.ReadFile(path)
		rel, _ := filepath.Rel(dir, path)
		files["gemm/"+filepath.ToSlash(rel)] = string(data)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	uploads := 0
	upload := func() (int, map[string]any) {
		t.Helper()
		uploads++
		body := tarGz(t, withFile(files, "gemm/README.md", fmt.Sprintf("upload %d\n", uploads)))
		code, answer, err := postBundle(p.url, p.token, bytes.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		return code, answer
	}
	var out bytes.Buffer
	if err := run(ctx, []string{"admin", "runner-token", "--data", p.data, "--name", "auditor"}, &out, io.Discard); err != nil {
		t.Fatal(err)
	}
	runnerToken := strings.TrimSpace(out.String())
	lease := func(want int64) d5list.Lease {
		t.Helper()
		req, _ := http.NewRequest(http.MethodPost, p.url+"/api/v1/runner/lease", strings.NewReader(`{"runner_id":"a"}`))
		req.Header.Set("Authorization", "Bearer "+runnerToken)
		req.Header.Set("Content-Type", "application/json")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var l d5list.Lease
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("lease: %d, want a job", resp.StatusCode)
		}
		if err := json.NewDecoder(resp.Body).Decode(&l); err != nil {
			t.Fatal(err)
		}
		if l.Spec.SubmissionID != want {
			t.Fatalf("leased submission %d's job, want %d's", l.Spec.SubmissionID, want)
		}
		return l
	}
	finding := "gemm 128x128x128, call 117: the output is 0.31 (relative) from the runner's own computation of the call, over the benchmark's tolerance"
	failAudit := func(l d5list.Lease) {
		t.Helper()
		sub, err := db.Submission(ctx, l.Spec.SubmissionID)
		if err != nil {
			t.Fatal(err)
		}
		measured := *sub.Claimed
		reasons := []d5list.Reason{{Code: d5list.AuditMismatch, Message: "re-run 3: " + finding}}
		if err := db.CompleteJob(ctx, l.Job.ID, l.Secret, &measured, d5list.StatusDiscrepancy, reasons); err != nil {
			t.Fatal(err)
		}
	}
	status := func(path, token string) int {
		t.Helper()
		req, _ := http.NewRequest(http.MethodGet, p.url+path, nil)
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

	code, answer := upload()
	if code != http.StatusCreated {
		t.Fatalf("first upload: %d %v", code, answer)
	}
	first := int64(answer["id"].(float64))
	l := lease(first)
	if l.Spec.FullAudit {
		t.Fatal("the first lease of an account that never failed an audit asks for a full audit")
	}
	failAudit(l)

	// The competitor reads the finding on the entry's page; a visitor finds
	// no entry at all.
	entry := "/submissions/" + strconv.FormatInt(first, 10)
	if text := getDoc(t, p.url+entry, p.token).Find("main").Text(); !strings.Contains(text, "call 117") {
		t.Errorf("the competitor's entry page does not show the audit's finding: %q", text)
	}
	hiddenPaths := []string{entry, "/api/v1" + entry, "/api/v1" + entry + "/audit"}
	for _, path := range hiddenPaths {
		if c := status(path, ""); c != http.StatusNotFound {
			t.Errorf("a visitor's GET %s: %d, want 404 while failed audits are not public", path, c)
		}
	}
	for _, path := range []string{"/api/v1/leaderboards/l0-gemm-cpu", "/benchmarks/l0-gemm-cpu", "/feed.atom", "/api/v1/queue"} {
		req, _ := http.NewRequest(http.MethodGet, p.url+path, nil)
		resp := doCurrent(t, req)
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if bytes.Contains(body, []byte("call 117")) || bytes.Contains(body, []byte(entry+`"`)) || bytes.Contains(body, []byte(`"submission_id":`+strconv.FormatInt(first, 10)+`,`)) {
			t.Errorf("a visitor's GET %s shows the failed entry: %.300q", path, body)
		}
	}
	// The organisation has no entry a visitor may see: no page either.
	if c := status("/submitters/Rita%20Lab", ""); c != http.StatusNotFound {
		t.Errorf("a visitor's GET of the organisation's page: %d, want 404 while its only entry is a hidden failed audit", c)
	}

	code, answer = upload()
	if code != http.StatusCreated {
		t.Fatalf("upload after one failed audit: %d %v, want it accepted", code, answer)
	}
	second := int64(answer["id"].(float64))
	l = lease(second)
	if !l.Spec.FullAudit {
		t.Fatal("the lease after a failed audit does not ask for a full audit")
	}
	failAudit(l)

	before, err := db.Submissions(ctx, d5list.SubmissionFilter{})
	if err != nil {
		t.Fatal(err)
	}
	code, answer = upload()
	msg, _ := answer["error"].(map[string]any)["message"].(string)
	if code != http.StatusForbidden || !strings.Contains(msg, "l0-gemm-cpu") || !strings.Contains(msg, "organiser must clear") {
		t.Fatalf("an upload after two failed audits: %d %v, want 403 naming the benchmark and the organiser", code, answer)
	}
	if after, _ := db.Submissions(ctx, d5list.SubmissionFilter{}); len(after) != len(before) {
		t.Fatalf("a held upload stored an entry: %d entries, %d before", len(after), len(before))
	}

	// The console lists both under the account and its organisation, newest
	// first, each linked to its entry, with the hold to clear.
	console := getDoc(t, p.url+"/console/", p.orgToken)
	group := console.Find(`[data-testid="audit-group"][data-owner="alice"]`)
	if group.Length() != 1 || group.AttrOr("data-organisation", "") != "Rita Lab" {
		t.Fatalf("console's failed audits: %q, want alice's under Rita Lab", console.Find(`[data-testid="console-audits"]`).Text())
	}
	rows := group.Find(`[data-testid="audit-failure"]`)
	if rows.Length() != 2 || rows.First().AttrOr("data-id", "") != strconv.FormatInt(second, 10) ||
		rows.First().Find(`[data-testid="audit-failure-link"]`).AttrOr("href", "") != "/submissions/"+strconv.FormatInt(second, 10) {
		t.Fatalf("console lists %d failures, first %q; want 2, the newest (%d) first and linked", rows.Length(), rows.First().AttrOr("data-id", ""), second)
	}
	hold := group.Find(`[data-testid="audit-hold"][data-benchmark="l0-gemm-cpu"]`)
	if !strings.Contains(hold.Text(), "uploads held") {
		t.Fatalf("console's hold: %q, want uploads held", hold.Text())
	}

	noRedirects := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	var asked *goquery.Document
	post := func(token, path string, form url.Values) int {
		t.Helper()
		req, _ := http.NewRequest(http.MethodPost, p.url+path, strings.NewReader(form.Encode()))
		req.Header.Set("Authorization", "Bearer "+token)
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		resp, err := noRedirects.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		if asked, err = goquery.NewDocumentFromReader(resp.Body); err != nil {
			t.Fatal(err)
		}
		return resp.StatusCode
	}
	clear := url.Values{"owner_id": {hold.Find(`input[name="owner_id"]`).AttrOr("value", "")}, "benchmark": {"l0-gemm-cpu"}}
	if c := post(p.token, "/console/audit-failures/clear", clear); c != http.StatusForbidden {
		t.Fatalf("a competitor clearing its own hold: %d, want 403", c)
	}
	// The form asks to confirm first, and clears nothing.
	if c := post(p.orgToken, "/console/audit-failures/clear", clear); c != http.StatusOK {
		t.Fatalf("clearing without confirming: %d, want the page that asks", c)
	}
	if f := asked.Find(`[data-testid="confirm-form"]`); f.Find(`input[name="owner_id"]`).AttrOr("value", "") != clear.Get("owner_id") ||
		f.Find(`input[name="benchmark"]`).AttrOr("value", "") != "l0-gemm-cpu" || f.Find(`input[name="confirm"]`).AttrOr("value", "") != "yes" ||
		!strings.Contains(asked.Find(`[data-testid="confirm-text"]`).Text(), "2 failed audits of l0-gemm-cpu") {
		t.Fatalf("the page that asks to clear: %q, want the account's 2 failures of l0-gemm-cpu and a form that confirms them", asked.Find("main").Text())
	}
	if code, _ = upload(); code != http.StatusForbidden {
		t.Fatalf("an upload after an unconfirmed clearing: %d, want still held", code)
	}
	clear.Set("confirm", "yes")
	if c := post(p.orgToken, "/console/audit-failures/clear", clear); c != http.StatusSeeOther {
		t.Fatalf("clearing, confirmed: %d", c)
	}
	code, answer = upload()
	if code != http.StatusCreated {
		t.Fatalf("an upload after an organiser cleared the hold: %d %v, want it accepted", code, answer)
	}
	if l := lease(int64(answer["id"].(float64))); l.Spec.FullAudit {
		t.Fatal("the lease after the failures were cleared asks for a full audit")
	}
	if text := getDoc(t, p.url+"/console/", p.orgToken).Find(`[data-testid="audit-failure"]`).Text(); !strings.Contains(text, "by olga") {
		t.Errorf("the console's cleared failures: %q, want them marked cleared by olga", text)
	}

	// With the organisers' setting on, a visitor sees the failed entries.
	if c := post(p.orgToken, "/console/settings/show-failed-audits", url.Values{"show": {"on"}}); c != http.StatusSeeOther {
		t.Fatalf("showing failed audits publicly: %d", c)
	}
	for _, path := range hiddenPaths {
		if c := status(path, ""); c != http.StatusOK {
			t.Errorf("a visitor's GET %s with failed audits public: %d, want 200", path, c)
		}
	}
	if text := p.page(t, entry).Find("main").Text(); !strings.Contains(text, "call 117") {
		t.Errorf("a visitor's entry page with failed audits public does not show the finding: %q", text)
	}
	if c := post(p.orgToken, "/console/settings/show-failed-audits", url.Values{"show": {"off"}}); c != http.StatusSeeOther {
		t.Fatalf("hiding failed audits again: %d", c)
	}
	if c := status(entry, ""); c != http.StatusNotFound {
		t.Errorf("a visitor's entry page after failed audits were hidden again: %d, want 404", c)
	}
}
