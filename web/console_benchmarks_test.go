package web_test

import (
	"context"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/PuerkitoBio/goquery"
)

// The console's benchmark editor takes the shapes its help text names,
// and refuses a change to a built-in benchmark with the reason, since the
// next start would undo it (issue 14).
func TestConsoleBenchmarkEditor(t *testing.T) {
	p := startReal(t)
	c := p.login(t, "organiser")
	post := func(yaml string) (int, *goquery.Document) {
		t.Helper()
		resp, err := c.PostForm(p.url+"/console/benchmarks", url.Values{"yaml": {yaml}, "csrf": {c.csrf}})
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		doc, err := goquery.NewDocumentFromReader(resp.Body)
		if err != nil {
			t.Fatal(err)
		}
		return resp.StatusCode, doc
	}
	one := "id: l2-ours\nname: Ours\nlevel: 2\ncategory: training\nruns: 3\nranking: {metric: time_to_train_s, direction: lower}\n"
	for _, tt := range []struct{ name, yaml string }{
		{"one benchmark", one},
		{"a list under benchmarks:", "benchmarks:\n  - " + strings.ReplaceAll(strings.TrimSuffix(one, "\n"), "\n", "\n    ") + "\n"},
	} {
		code, doc := post(tt.yaml)
		if code != http.StatusOK || !strings.Contains(doc.Text(), "saved l2-ours") {
			t.Fatalf("%s: %d %q", tt.name, code, doc.Find("main").Text())
		}
	}
	if b, err := p.db.Benchmark(context.Background(), "l2-ours"); err != nil || b.Runs != 3 {
		t.Fatalf("stored: %+v %v", b, err)
	}

	code, doc := post(strings.ReplaceAll(one, "l2-ours", "l2-digits-mlp-cpu"))
	if code != http.StatusBadRequest || !strings.Contains(doc.Text(), "built in") {
		t.Fatalf("a built-in benchmark: %d %q, want 400 with the reason", code, doc.Find("main").Text())
	}
	if b, _ := p.db.Benchmark(context.Background(), "l2-digits-mlp-cpu"); b.Name == "Ours" {
		t.Fatal("the built-in benchmark was replaced")
	}
}
