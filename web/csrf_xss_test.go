package web_test

import (
	"context"
	"net/http"
	"net/url"
	"strings"
	"testing"

	d5list "github.com/deep500/d5list"
)

// TestCSRF: cookie-authenticated unsafe requests need the session's
// token; cross-site posts are refused before that; bearer requests are
// exempt.
func TestCSRF(t *testing.T) {
	p := startReal(t)
	c := p.login(t, "competitor")
	post := func(form url.Values, header map[string]string) int {
		req, _ := http.NewRequest(http.MethodPost, p.url+"/account/tokens", strings.NewReader(form.Encode()))
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		for k, v := range header {
			req.Header.Set(k, v)
		}
		resp, err := c.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	tests := []struct {
		name   string
		form   url.Values
		header map[string]string
		want   int
	}{
		{"no token", url.Values{"label": {"x"}}, nil, 403},
		{"wrong field", url.Values{"label": {"x"}, "csrf": {"not-the-token"}}, nil, 403},
		{"wrong header", url.Values{"label": {"x"}}, map[string]string{"X-CSRF-Token": "nope"}, 403},
		{"right token from another site", url.Values{"label": {"x"}, "csrf": {c.csrf}}, map[string]string{"Sec-Fetch-Site": "cross-site"}, 403},
		{"right field", url.Values{"label": {"x"}, "csrf": {c.csrf}}, nil, 201},
		{"right header", url.Values{"label": {"y"}}, map[string]string{"X-CSRF-Token": c.csrf}, 201},
	}
	for _, tt := range tests {
		if got := post(tt.form, tt.header); got != tt.want {
			t.Errorf("%s: %d, want %d", tt.name, got, tt.want)
		}
	}
	tokens, _ := p.db.Tokens(context.Background(), p.users["competitor"].ID)
	if len(tokens) != 2 {
		t.Fatalf("%d tokens made, want 2 (only the posts with the token)", len(tokens))
	}

	// A log-in form posted from another site is refused too.
	req, _ := http.NewRequest(http.MethodPost, p.url+"/login", strings.NewReader("name=competitor-user&password=password+of+competitor-user"))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Origin", "https://evil.example")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 403 {
		t.Fatalf("cross-origin log-in: %d, want 403", resp.StatusCode)
	}

	// A bearer-token API call is not cookie-authenticated: no CSRF token needed.
	tok, _ := p.db.CreateToken(context.Background(), p.users["organiser"].ID, "api")
	req, _ = http.NewRequest(http.MethodPost, p.url+"/api/v1/jobs/999/cancel", nil)
	req.Header.Set("Authorization", "Bearer "+tok)
	resp, err = c.Do(req) // with the competitor's session cookie in the jar
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 404 {
		t.Fatalf("bearer call with a stray cookie: %d, want 404 (the job does not exist)", resp.StatusCode)
	}
}

// TestXSSInNamesIsInert puts script in a submitter and a system name and
// reads every page that shows them.
func TestXSSInNamesIsInert(t *testing.T) {
	p := startReal(t)
	ctx := context.Background()
	const submitter = `<script>alert("s")</script>`
	const system = `"><img src=x onerror=alert(1)>`
	owner := p.users["competitor"]
	claimed := &d5list.Result{Score: d5list.Score{Metric: d5list.MetricTimeToTrain, Value: 12, Valid: true}}
	for i := range 5 {
		claimed.Runs = append(claimed.Runs, d5list.RunMetrics{Index: i, Seed: int64(i), Converged: true, TimeToTrain: 12, EpochsToTarget: 3})
	}
	var ids []int64
	for _, verdict := range []d5list.Status{d5list.StatusVerified, d5list.StatusDiscrepancy} {
		s := &d5list.Submission{BenchmarkID: "l2-digits-mlp-cpu", OwnerID: owner.ID, Division: d5list.DivisionClosed,
			Availability: d5list.AvailabilityAvailable, Submitter: submitter, SystemName: system, Framework: "go",
			Claimed: claimed, Recipe: &d5list.Recipe{}, HostCPU: testCPU}
		if err := p.db.CreateSubmission(ctx, s); err != nil {
			t.Fatal(err)
		}
		completeOnDeclaredHardware(t, p.db, claimed, verdict)
		ids = append(ids, s.ID)
	}
	pages := []struct{ role, path string }{
		{"", "/"},
		{"", "/benchmarks/l2-digits-mlp-cpu"},
		{"", "/submissions/1"},
		{"organiser", "/submissions/2"}, // a discrepancy: hidden from visitors
		{"competitor", "/my/submissions"},
		{"organiser", "/console"},
	}
	for _, pg := range pages {
		body := p.login(t, pg.role).get(t, pg.path)
		for _, raw := range []string{submitter, system, "<img src=x"} {
			if strings.Contains(body, raw) {
				t.Errorf("%s shows %q unescaped", pg.path, raw)
			}
		}
		if !strings.Contains(body, "&lt;script&gt;") && pg.path != "/" {
			t.Errorf("%s does not show the submitter as text", pg.path)
		}
	}
}
