package web_test

import (
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/go-chi/chi/v5"
	"gopkg.in/yaml.v3"

	"github.com/deep500/d5list/handlers"
)

// The API reference documents every route of the JSON API and the non-HTML
// answers, and nothing the router does not have; /api shows one entry per
// operation and /api/openapi.yaml is the document (issue 16).
func TestAPIReferenceCoversTheRoutes(t *testing.T) {
	p := startReal(t)
	routes, ok := p.handler.(chi.Routes)
	if !ok {
		t.Fatalf("web.New returned %T, not a chi router", p.handler)
	}
	ref, err := handlers.APIReference()
	if err != nil {
		t.Fatal(err)
	}
	documented := map[string]bool{}
	for _, o := range ref.Operations {
		documented[o.Method+" "+o.Path] = true
	}
	// The JSON API, and the answers tools fetch that are not pages.
	mustDocument := func(pattern string) bool {
		if strings.HasPrefix(pattern, "/api/v1/") {
			return true
		}
		for _, s := range []string{"/feed.atom", "/badge.svg", "/bundle", "/log", "/events", "/healthz"} {
			if strings.HasSuffix(pattern, s) {
				return true
			}
		}
		return false
	}
	routed := map[string]bool{}
	_ = chi.Walk(routes, func(method, pattern string, _ http.Handler, _ ...func(http.Handler) http.Handler) error {
		if method == http.MethodHead {
			return nil
		}
		key := method + " " + pattern
		routed[key] = true
		if mustDocument(pattern) && !documented[key] {
			t.Errorf("%s is not in handlers/openapi.yaml", key)
		}
		return nil
	})
	for key := range documented {
		if !routed[key] {
			t.Errorf("handlers/openapi.yaml documents %s, which the router does not have", key)
		}
	}

	visitor := p.login(t, "")
	doc := visitor.doc(t, "/api")
	if n := doc.Find(testid("api-endpoint")).Length(); n != len(ref.Operations) {
		t.Errorf("/api shows %d endpoints, want %d", n, len(ref.Operations))
	}
	upload := doc.Find(`[data-testid="api-endpoint"][data-method="POST"][data-path="/api/v1/submissions"]`)
	if upload.Length() != 1 || !strings.Contains(upload.Text(), "API token") || !strings.Contains(upload.Text(), "413") {
		t.Errorf("/api on POST /api/v1/submissions: %q", upload.Text())
	}
	if href, _ := visitor.doc(t, "/").Find(`header nav a[href="/api"]`).Attr("href"); href != "/api" {
		t.Error("the header's API link does not lead to /api")
	}

	resp, err := http.Get(p.url + "/api/openapi.yaml")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	var spec struct {
		OpenAPI string         `yaml:"openapi"`
		Paths   map[string]any `yaml:"paths"`
	}
	if err := yaml.Unmarshal(body, &spec); err != nil || resp.StatusCode != 200 ||
		!strings.HasPrefix(resp.Header.Get("Content-Type"), "application/yaml") || !strings.HasPrefix(spec.OpenAPI, "3.1.") || len(spec.Paths) == 0 {
		t.Fatalf("/api/openapi.yaml: %d %s, openapi %q, %d paths (%v)", resp.StatusCode, resp.Header.Get("Content-Type"), spec.OpenAPI, len(spec.Paths), err)
	}
}
