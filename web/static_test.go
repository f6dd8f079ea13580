package web_test

import (
	"bytes"
	"compress/gzip"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

func TestStaticFiles(t *testing.T) {
	s := newServer(t, 0)
	tests := []struct {
		path        string
		contentType string
		contains    string
	}{
		{"/static/vendor/echarts.min.js", "text/javascript", "echarts"},
		{"/static/js/charts.js", "text/javascript", "echarts.init"},
		{"/static/js/submission.js", "text/javascript", "data-poll-url"},
		{"/static/css/site.css", "text/css", ".chart"},
		{"/static/vendor/echarts.LICENSE", "text/plain", "Apache License"},
		{"/static/img/favicon.svg", "image/svg+xml", "<svg"},
	}
	for _, tt := range tests {
		t.Run(tt.path, func(t *testing.T) {
			rec := s.get(tt.path)
			if rec.Code != 200 || !strings.HasPrefix(rec.Header().Get("Content-Type"), tt.contentType) {
				t.Fatalf("got %d %q", rec.Code, rec.Header().Get("Content-Type"))
			}
			if !strings.Contains(rec.Body.String(), tt.contains) {
				t.Fatalf("body does not contain %q", tt.contains)
			}
			etag := rec.Header().Get("ETag")
			if etag == "" || !strings.Contains(rec.Header().Get("Cache-Control"), "max-age=") {
				t.Fatalf("no caching headers: ETag %q Cache-Control %q", etag, rec.Header().Get("Cache-Control"))
			}
			req := httptest.NewRequest(http.MethodGet, tt.path, nil)
			req.Header.Set("If-None-Match", etag)
			if again := s.do(req); again.Code != http.StatusNotModified || again.Body.Len() != 0 {
				t.Fatalf("revalidation answered %d with %d bytes", again.Code, again.Body.Len())
			}
		})
	}

	t.Run("/favicon.ico", func(t *testing.T) {
		rec := s.get("/favicon.ico")
		if rec.Code != http.StatusMovedPermanently || rec.Header().Get("Location") != "/static/img/favicon.svg" {
			t.Fatalf("GET /favicon.ico: %d to %q, want the icon every page links", rec.Code, rec.Header().Get("Location"))
		}
		if !strings.Contains(s.get("/").Body.String(), `<link rel="icon" href="/static/img/favicon.svg"`) {
			t.Error("the home page does not link the icon")
		}
	})

	t.Run("directories are not listed", func(t *testing.T) {
		for _, p := range []string{"/static/", "/static/js/", "/static/../static.go"} {
			if rec := s.get(p); rec.Code != http.StatusNotFound {
				t.Errorf("GET %s: %d", p, rec.Code)
			}
		}
	})
}

func TestSecurityHeaders(t *testing.T) {
	s := newServer(t, 0)
	want := map[string]string{
		"Content-Security-Policy": "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; object-src 'none'; frame-ancestors 'none'",
		"X-Content-Type-Options":  "nosniff",
		"X-Frame-Options":         "DENY",
		"Referrer-Policy":         "strict-origin-when-cross-origin",
	}
	for _, path := range []string{"/", "/submissions/7", "/api/v1/benchmarks", "/static/js/charts.js", "/healthz", "/missing"} {
		rec := s.get(path)
		for k, v := range want {
			if got := rec.Header().Get(k); !strings.HasPrefix(got, v) {
				t.Errorf("GET %s: %s = %q, want %q", path, k, got, v)
			}
		}
	}
}

func TestStaticGzip(t *testing.T) {
	s := newServer(t, 0)
	plain := s.get("/static/vendor/echarts.min.js")
	req := httptest.NewRequest(http.MethodGet, "/static/vendor/echarts.min.js", nil)
	req.Header.Set("Accept-Encoding", "br, gzip")
	rec := s.do(req)
	if rec.Code != 200 || rec.Header().Get("Content-Encoding") != "gzip" || !strings.Contains(rec.Header().Get("Vary"), "Accept-Encoding") {
		t.Fatalf("got %d, Content-Encoding %q, Vary %q", rec.Code, rec.Header().Get("Content-Encoding"), rec.Header().Get("Vary"))
	}
	if rec.Header().Get("ETag") == plain.Header().Get("ETag") {
		t.Error("gzip and identity encodings share an ETag")
	}
	if zipped := rec.Body.Len(); zipped*2 > plain.Body.Len() {
		t.Errorf("gzip body is %d bytes of %d", zipped, plain.Body.Len())
	}
	zr, err := gzip.NewReader(rec.Body)
	if err != nil {
		t.Fatal(err)
	}
	unzipped, err := io.ReadAll(zr)
	if err != nil || !bytes.Equal(unzipped, plain.Body.Bytes()) {
		t.Fatalf("gzip body does not unpack to the file (%v)", err)
	}

	req = httptest.NewRequest(http.MethodGet, "/static/css/site.css", nil)
	req.Header.Set("Accept-Encoding", "gzip;q=0")
	if rec := s.do(req); rec.Header().Get("Content-Encoding") != "" {
		t.Error("gzip sent to a client that refused it")
	}
}
