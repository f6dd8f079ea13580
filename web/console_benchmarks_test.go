package web_test

import (
	"context"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/PuerkitoBio/goquery"

	"github.com/deep500/d5list/web"
	"github.com/deep500/d5list/workloads"
)

// The console's benchmark editor starts from a commented skeleton or a
// copy of a benchmark, takes the shapes its help text names, and refuses
// with the reason a change to a built-in benchmark, since the next start
// would undo it (issue 14), and a workload no runner has, whose jobs
// would wait for good.
func TestConsoleBenchmarkEditor(t *testing.T) {
	p := startReal(t, func(c *web.Config) { c.Browser.Workloads = workloads.Names() })
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

	code, doc = post(strings.ReplaceAll(one, "level: 2\n", "level: 2\nworkload: digits-mpl\n"))
	if msg := doc.Find(testid("yaml-error")).Text(); code != http.StatusBadRequest || !strings.Contains(msg, `workload: "digits-mpl"`) || !strings.Contains(msg, "digits-mlp") {
		t.Fatalf("an unknown workload: %d %q, want 400 naming it and the known ones", code, msg)
	}

	skeleton := c.doc(t, "/console").Find(testid("yaml-editor")).Text()
	if !strings.Contains(skeleton, "# A new benchmark") || !strings.Contains(skeleton, "ranking:") {
		t.Errorf("the editor starts from %q, want the commented skeleton", skeleton)
	}
	if code, doc := post(skeleton); code != http.StatusBadRequest || !strings.Contains(doc.Find(testid("yaml-error")).Text(), "id: required") {
		t.Errorf("the skeleton saved unchanged: %d, want it refused for its empty id", code)
	}
	copied := c.doc(t, "/console?from=l0-gemm-torch-cpu").Find(testid("yaml-editor")).Text()
	if code, doc := post(copied); code != http.StatusOK || !strings.Contains(doc.Text(), "saved l0-gemm-torch-cpu-copy") {
		t.Fatalf("the copy of l0-gemm-torch-cpu: %d %q", code, doc.Find(testid("yaml-error")).Text())
	}
	if b, err := p.db.Benchmark(context.Background(), "l0-gemm-torch-cpu-copy"); err != nil || b.Division.Fixed["op"] != "gemm" {
		t.Fatalf("the copy as stored: %+v %v", b, err)
	}
}
