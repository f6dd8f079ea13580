package web_test

import (
	"net/http"
	"testing"
)

// /benchmarks, what is left of a board's address without its id, is the
// list of benchmarks (the live list's navigation), query and all, not a
// 404.
func TestBenchmarksLeadsToTheListOfBenchmarks(t *testing.T) {
	s := newListServer(t)
	noFollow := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	for path, want := range map[string]string{
		"/benchmarks":         "/list",
		"/benchmarks/":        "/list",
		"/benchmarks?level=2": "/list?level=2",
	} {
		resp, err := noFollow.Get(s.url + path)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusMovedPermanently || resp.Header.Get("Location") != want {
			t.Errorf("GET %s: %d to %q, want %d to %q", path, resp.StatusCode, resp.Header.Get("Location"), http.StatusMovedPermanently, want)
		}
	}
	doc := s.doc(t, "/benchmarks") // followed
	bench := digitsBenchmark()
	if link := doc.Find(`a[href="/benchmarks/` + bench.ID + `"]`); link.Length() == 0 {
		t.Errorf("/benchmarks leads to a page without a link to the board of %s", bench.ID)
	}
}
