package web_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/go-chi/chi/v5"

	d5list "github.com/deep500/d5list"
	"github.com/deep500/d5list/catalog"
	"github.com/deep500/d5list/handlers"
	"github.com/deep500/d5list/portal"
	"github.com/deep500/d5list/store"
	"github.com/deep500/d5list/web"
)

func init() { store.ArgonMemoryKiB = 1024 } // cheap hashing in tests

type blobAdapter struct{ b *store.Blobs }

func (s blobAdapter) Create() (portal.BlobWriter, error) { return s.b.Create() }
func (s blobAdapter) Exists(sha string) bool             { return s.b.Exists(sha) }
func (s blobAdapter) Path(sha string) string             { return s.b.Path(sha) }
func (s blobAdapter) Remove(sha string) error            { return s.b.Remove(sha) }

// realPortal is the real server over a real store, with one account per
// role (password "password of NAME").
type realPortal struct {
	url     string
	db      *store.DB
	svc     *portal.Service
	handler http.Handler
	users   map[string]*d5list.User
}

var roleNames = []d5list.Role{d5list.RolePublic, d5list.RoleCompetitor, d5list.RoleOrganiser, d5list.RoleAdmin}

func startReal(t *testing.T, tune ...func(*web.Config)) *realPortal {
	t.Helper()
	return startRealOn(t, func(q store.Quota) portal.Store { return q }, tune...)
}

// startRealOn is startReal with the portal's store made by wrap from the
// real one (a test counts calls through it).
func startRealOn(t *testing.T, wrap func(store.Quota) portal.Store, tune ...func(*web.Config)) *realPortal {
	t.Helper()
	ctx := context.Background()
	db, err := store.Open(ctx, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	bs, err := catalog.Benchmarks()
	if err != nil {
		t.Fatal(err)
	}
	if err := db.UpsertBenchmarks(ctx, bs); err != nil {
		t.Fatal(err)
	}
	svc := portal.New(wrap(store.Quota{DB: db}), blobAdapter{db.Blobs()}, portal.Config{}, nil)
	t.Cleanup(svc.StopWaiting)
	cfg := web.Config{Addr: "127.0.0.1:0", Browser: handlers.BrowserOptions{Accounts: db,
		LoginRate: handlers.RateLimit{Burst: 1000, Every: time.Millisecond}}}
	for _, f := range tune {
		f(&cfg)
	}
	h := web.New(cfg, svc, nil)
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	p := &realPortal{url: srv.URL, db: db, svc: svc, handler: h, users: map[string]*d5list.User{}}
	for _, r := range roleNames {
		u, err := db.EnsureUser(ctx, string(r)+"-user", r)
		if err == nil {
			err = db.SetPassword(ctx, u.ID, "password of "+u.Name)
		}
		if err != nil {
			t.Fatal(err)
		}
		p.users[string(r)] = u
	}
	return p
}

// client is a browser-like client: a cookie jar, no redirects followed,
// and the session's CSRF token read from the page's meta tag.
type client struct {
	*http.Client
	base string
	csrf string
}

var csrfMeta = regexp.MustCompile(`<meta name="csrf-token" content="([^"]+)"`)

func (p *realPortal) login(t *testing.T, role string) *client {
	t.Helper()
	jar, _ := cookiejar.New(nil)
	c := &client{Client: &http.Client{Jar: jar, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}, base: p.url}
	if role == "" {
		return c
	}
	name := role + "-user"
	resp, err := c.PostForm(p.url+"/login", url.Values{"name": {name}, "password": {"password of " + name}})
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusSeeOther {
		t.Fatalf("log-in as %s: %d", name, resp.StatusCode)
	}
	page := c.get(t, "/account")
	m := csrfMeta.FindStringSubmatch(page)
	if m == nil {
		t.Fatalf("no csrf-token meta on /account for %s", name)
	}
	c.csrf = m[1]
	return c
}

func (c *client) get(t *testing.T, path string) string {
	t.Helper()
	resp, err := c.Get(c.base + path)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var b strings.Builder
	_, _ = io_copy(&b, resp)
	return b.String()
}

// minRole is who may use each route: a role, "anyone" (no account
// needed), or "runner" (runner tokens only; no browser session passes).
// A route missing here fails the test, so every new route needs a line.
var minRole = map[string]string{
	"GET /":                                       "anyone",
	"GET /benchmarks/{id}":                        "anyone",
	"GET /submissions/{id}":                       "anyone",
	"GET /login":                                  "anyone",
	"POST /login":                                 "anyone",
	"GET /signup":                                 "anyone",
	"POST /signup":                                "anyone",
	"POST /logout":                                "anyone",
	"GET /account":                                "public",
	"POST /account/tokens":                        "competitor",
	"POST /account/tokens/{id}/revoke":            "competitor",
	"GET /upload":                                 "competitor",
	"GET /mlperf":                                 "competitor",
	"POST /api/v1/mlperf/check":                   "competitor",
	"GET /my/submissions":                         "competitor",
	"GET /console/":                               "organiser",
	"POST /console/users/{id}/role":               "organiser",
	"POST /console/users/{id}/approve":            "organiser",
	"POST /console/benchmarks":                    "organiser",
	"POST /console/runner-tokens":                 "admin",
	"POST /console/editions":                      "organiser",
	"POST /console/review/{id}":                   "organiser",
	"POST /console/audit-failures/clear":          "organiser",
	"POST /console/settings/show-failed-audits":   "organiser",
	"POST /api/v1/submissions":                    "competitor",
	"GET /api/v1/submissions/{id}":                "anyone",
	"GET /api/v1/account":                         "public",
	"GET /api/v1/leaderboards/{benchmark}":        "anyone",
	"GET /api/v1/benchmarks":                      "anyone",
	"POST /api/v1/editions":                       "organiser",
	"GET /api/v1/editions":                        "anyone",
	"GET /api/v1/editions/{name}":                 "anyone",
	"GET /api/v1/editions/{name}/benchmarks/{id}": "anyone",
	"GET /api/v1/review":                          "organiser",
	"POST /api/v1/submissions/{id}/review":        "organiser",
	"GET /api/v1/submissions/{id}/audit":          "anyone",
	"POST /api/v1/benchmarks/{id}/rescore":        "organiser",
	"POST /api/v1/runner/lease":                   "runner",
	"POST /api/v1/runner/jobs/{id}/heartbeat":     "runner",
	"POST /api/v1/runner/jobs/{id}/complete":      "runner",
	"POST /api/v1/runner/jobs/{id}/fail":          "runner",
	"GET /api/v1/runner/jobs/{id}/bundle":         "runner",
	"GET /api/v1/queue":                           "anyone",
	"GET /api/v1/runners":                         "organiser",
	"POST /api/v1/jobs/{id}/cancel":               "organiser",
	"GET /editions":                               "anyone",
	"GET /editions/{name}":                        "anyone",
	"GET /editions/{name}/benchmarks/{id}":        "anyone",
	"GET /feed.atom":                              "anyone",
	"GET /list":                                   "anyone",
	"GET /benchmarks":                             "anyone",
	"GET /benchmarks/":                            "anyone",
	"GET /submissions/{id}/badge.svg":             "anyone",
	// Anyone for a verified entry; its owner and the organisers otherwise
	// (Submission.MayDownload, TestEndToEnd).
	"GET /submissions/{id}/bundle":           "anyone",
	"GET /submissions/{id}/runs/{run}/log":   "anyone",
	"GET /submissions/{id}/reruns/{run}/log": "anyone",
	"GET /submissions/{id}/events":           "anyone", // the log only for the submitter and organisers
	"GET /console/runners":                   "organiser",
	"GET /console/queue":                     "organiser",
	"POST /console/jobs/{id}/cancel":         "organiser",
	"POST /api/v1/runner/jobs/{id}/progress": "runner",
	"GET /healthz":                           "anyone",
	// Identity (issue 16). A hidden verdict's pages answer 404 to all but
	// its competitor and the organisers (TestHiddenVerdicts).
	"GET /submitters/{name}":                  "anyone",
	"GET /api":                                "anyone",
	"GET /api/openapi.yaml":                   "anyone",
	"GET /compare":                            "anyone",
	"GET /submitters/{name}/systems/{system}": "anyone",
	"GET /search":                             "anyone",
	"POST /submissions/{id}/appeal":           "competitor",
	"POST /api/v1/submissions/{id}/appeal":    "competitor",
	"POST /console/users/{id}/organisation":   "organiser",
	"GET /metrics":                            "anyone",
	"GET /static/*":                           "anyone",
	"GET /favicon.ico":                        "anyone",
}

var paramValue = strings.NewReplacer("{id}", "999", "{benchmark}", "l2-digits-mlp-cpu", "{name}", "none", "*", "css/site.css")

// TestRouteRoleMatrix walks the router's own route table and calls every
// route as a visitor and as each role through a browser session.
func TestRouteRoleMatrix(t *testing.T) {
	p := startReal(t)
	routes, ok := p.handler.(chi.Routes)
	if !ok {
		t.Fatalf("web.New returned %T, not a chi router: the matrix cannot list its routes", p.handler)
	}
	type route struct{ method, pattern string }
	var all []route
	_ = chi.Walk(routes, func(method, pattern string, _ http.Handler, _ ...func(http.Handler) http.Handler) error {
		if method == http.MethodHead {
			return nil
		}
		all = append(all, route{method, pattern})
		return nil
	})
	seen := map[string]bool{}
	for _, r := range all {
		key := r.method + " " + r.pattern
		seen[key] = true
		if _, ok := minRole[key]; !ok {
			t.Errorf("route %s has no line in minRole: say who may use it", key)
		}
	}
	for key := range minRole {
		if !seen[key] {
			t.Errorf("minRole names %s, which the router does not have", key)
		}
	}
	rank := map[string]int{"": -1, "public": 0, "competitor": 1, "organiser": 2, "admin": 3}
	clients := map[string]*client{"": p.login(t, "")}
	for _, r := range roleNames {
		clients[string(r)] = p.login(t, string(r))
	}
	for _, r := range all {
		key := r.method + " " + r.pattern
		need := minRole[key]
		if need == "" || key == "POST /logout" {
			continue // logging out would end the sessions the matrix uses
		}
		for _, role := range []string{"", "public", "competitor", "organiser", "admin"} {
			c := clients[role]
			req, _ := http.NewRequest(r.method, p.url+paramValue.Replace(r.pattern), strings.NewReader(""))
			if r.method != http.MethodGet {
				req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
				req.Header.Set("X-CSRF-Token", c.csrf)
			}
			resp, err := c.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			st := resp.StatusCode
			refused := st == 401 || st == 403 || (st == 303 && strings.HasPrefix(resp.Header.Get("Location"), "/login"))
			var allowed bool
			switch need {
			case "anyone":
				allowed = true
			case "runner":
				allowed = false
			default:
				allowed = rank[role] >= rank[need]
			}
			who := role
			if who == "" {
				who = "visitor"
			}
			switch {
			case st >= 500:
				t.Errorf("%s as %s: %d", key, who, st)
			case allowed && refused && !(key == "POST /login"):
				t.Errorf("%s as %s: refused with %d, want it allowed (needs %s)", key, who, st, need)
			case !allowed && !refused:
				t.Errorf("%s as %s: %d, want it refused (needs %s)", key, who, st, need)
			case !allowed && role == "" && st == 403 && need != "runner":
				t.Errorf("%s as a visitor: 403, want 401 or a redirect to /login", key)
			}
		}
	}
}

func io_copy(b *strings.Builder, resp *http.Response) (int64, error) {
	buf := make([]byte, 32<<10)
	var n int64
	for {
		k, err := resp.Body.Read(buf)
		b.Write(buf[:k])
		n += int64(k)
		if err != nil {
			return n, nil
		}
	}
}

// A guesser with many addresses is slowed per account: after the
// account's burst of wrong passwords, even the right one waits (429 with
// Retry-After), while other accounts log in as before.
func TestWrongPasswordsPerAccount(t *testing.T) {
	p := startReal(t, func(c *web.Config) {
		c.Browser.AccountFailRate = handlers.RateLimit{Burst: 3, Every: time.Hour}
	})
	post := func(name, password, forwardedFor string) *http.Response {
		t.Helper()
		req, _ := http.NewRequest(http.MethodPost, p.url+"/login", strings.NewReader(url.Values{"name": {name}, "password": {password}}.Encode()))
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		req.Header.Set("X-Forwarded-For", forwardedFor)
		resp, err := (&http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}).Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp
	}
	for i := range 3 {
		if resp := post("competitor-user", "wrong", fmt.Sprintf("10.0.0.%d", i)); resp.StatusCode != http.StatusUnauthorized {
			t.Fatalf("wrong password %d: %d, want 401", i, resp.StatusCode)
		}
	}
	resp := post("Competitor-User", "password of competitor-user", "10.0.0.9")
	if resp.StatusCode != http.StatusTooManyRequests || resp.Header.Get("Retry-After") == "" {
		t.Fatalf("the right password after the burst: %d, Retry-After %q; want 429 with Retry-After", resp.StatusCode, resp.Header.Get("Retry-After"))
	}
	if resp := post("organiser-user", "password of organiser-user", "10.0.0.9"); resp.StatusCode != http.StatusSeeOther {
		t.Fatalf("another account: %d, want a log-in (303)", resp.StatusCode)
	}
}
