package web_test

import (
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/deep500/d5list/web"
)

// Every request gets an id of its own, and the access log counts the
// bytes that http.ServeContent copied through the connection's ReadFrom,
// which the middleware's recorder passes on: a ReadFrom that forgot to
// count would log none.
func TestRequestIDsAndLoggedBytes(t *testing.T) {
	logs := &syncBuffer{}
	srv := httptest.NewServer(web.New(web.Config{}, newFake(), slog.New(slog.NewJSONHandler(logs, nil))))
	defer srv.Close()
	seen := map[string]bool{}
	var size int
	for range 3 {
		a := fetch(t, srv.URL+"/static/css/site.css")
		id := a.hd.Get("X-Request-Id")
		if a.code != http.StatusOK || id == "" || seen[id] || strings.Trim(id, "0123456789abcdefghijklmnopqrstuvwxyz-") != "" {
			t.Fatalf("request id %q (status %d), want a new one of letters, digits and '-'", id, a.code)
		}
		seen[id] = true
		size = len(a.body)
	}
	var line struct {
		Path  string
		Bytes int
	}
	for _, l := range strings.Split(strings.TrimSpace(logs.String()), "\n") {
		if err := json.Unmarshal([]byte(l), &line); err != nil {
			t.Fatal(err)
		}
		if line.Path != "/static/css/site.css" || line.Bytes != size {
			t.Fatalf("access log %s: want /static/css/site.css with %d bytes", l, size)
		}
	}
}

// The request histogram's method label is one of HTTP's methods or
// "other": a client's made-up method is no series of its own.
func TestMetricsMethodLabelBounded(t *testing.T) {
	m := web.NewMetrics(nil, nil)
	srv := httptest.NewServer(web.New(web.Config{Metrics: m}, newFake(), nil))
	defer srv.Close()
	for _, method := range []string{"BREW", "WHEN", http.MethodGet} {
		req, _ := http.NewRequest(method, srv.URL+"/healthz", nil)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
	}
	resp, err := http.Get(srv.URL + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	text := string(body)
	if strings.Contains(text, `method="BREW"`) || strings.Contains(text, `method="WHEN"`) {
		t.Fatal("a made-up method became a label")
	}
	// chi answers them 405 without a route.
	if n, ok := sample(t, text, "d5list_http_request_duration_seconds_count", "route", "unmatched", "method", "other", "code", "4xx"); !ok || n != 2 {
		t.Fatalf("requests with other methods: %v (found %v), want 2", n, ok)
	}
	if n, ok := sample(t, text, "d5list_http_request_duration_seconds_count", "route", "/healthz", "method", "GET", "code", "2xx"); !ok || n != 1 {
		t.Fatalf("GET requests: %v (found %v), want 1", n, ok)
	}
}

// Cached answers and the security headers share their header values
// between answers; what one answer adds to its own (the page's Vary:
// Cookie) never shows on another.
func TestSharedHeaderValuesStayApart(t *testing.T) {
	s := newListServer(t)
	const board, api = "/benchmarks/l2-digits-mlp-cpu", "/api/v1/leaderboards/l2-digits-mlp-cpu"
	for range 2 {
		for _, c := range []struct{ path, vary string }{{board, "Cookie, Accept-Encoding"}, {api, "Accept-Encoding"}, {api + ".csv", "Accept-Encoding"}} {
			for _, enc := range []string{"", "gzip"} {
				a := fetch(t, s.url+c.path, "Accept-Encoding", enc)
				vary := strings.Join(a.hd.Values("Vary"), ", ")
				etag := a.hd.Get("ETag")
				if a.code != http.StatusOK || vary != c.vary || a.hd.Get("Content-Encoding") != enc || a.hd.Get("X-Frame-Options") != "DENY" ||
					strings.HasSuffix(etag, `-gz"`) != (enc == "gzip") || !strings.HasPrefix(etag, `"`) {
					t.Fatalf("GET %s (%q): %d, Vary %q, Content-Encoding %q, ETag %s, X-Frame-Options %q", c.path, enc, a.code, vary,
						a.hd.Get("Content-Encoding"), etag, a.hd.Get("X-Frame-Options"))
				}
			}
		}
	}
}
