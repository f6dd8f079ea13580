package web_test

import (
	"context"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"testing"

	"github.com/PuerkitoBio/goquery"

	d5list "github.com/deep500/d5list"
	"github.com/deep500/d5list/templates"
)

// The benchmarks the cross-benchmark fixture lists entries on.
const (
	l2Digits = "l2-digits-mlp-cpu"
	l3Digits = "l3-digits-mlp-dp-cpu"
)

// acmeRack is the system the cross-benchmark pages are read for.
var acmeRack = struct{ submitter, system string }{"Acme Lab", "rack-1"}

// crossBenchmarkList stores verified entries of three systems on two
// benchmarks, freezes edition 2026-06, and then makes Acme Lab's rack-1
// the best on the L2 board. The L2 board then reads rack-1 (8 s), box
// (11 s), rack-2 (12 s), and read box, rack-2, rack-1 (13 s) in the
// edition; the L3 board reads box (25 s), rack-1 (30 s), in both. It
// returns the entries by "system benchmark value".
func crossBenchmarkList(t *testing.T, p *realPortal) map[string]int64 {
	t.Helper()
	ctx := context.Background()
	ids := map[string]int64{}
	owners := map[string]int64{}
	for _, org := range []string{"Acme Lab", "Beta Org"} {
		u, err := p.db.EnsureUser(ctx, strings.ToLower(strings.Fields(org)[0]), d5list.RoleCompetitor)
		if err != nil {
			t.Fatal(err)
		}
		owners[org] = u.ID
	}
	add := func(submitter, system, framework, accelerator, bench string, value float64) {
		t.Helper()
		res := result(value, 5)
		sub := &d5list.Submission{BenchmarkID: bench, OwnerID: owners[submitter], Division: d5list.DivisionClosed,
			Availability: d5list.AvailabilityAvailable, Submitter: submitter, SystemName: system, Framework: framework,
			Accelerator: accelerator, Accelerators: 8, HostCPU: testCPU, Recipe: &d5list.Recipe{}, Claimed: res, Reasons: []d5list.Reason{}}
		if err := p.db.CreateSubmission(ctx, sub); err != nil {
			t.Fatal(err)
		}
		completeOnDeclaredHardware(t, p.db, res, d5list.StatusVerified)
		ids[system+" "+bench+" "+strconv.FormatFloat(value, 'f', -1, 64)] = sub.ID
	}
	add("Acme Lab", "rack-1", "torch", "NVIDIA H100", l2Digits, 13)
	add("Acme Lab", "rack-2", "jax", "NVIDIA H100", l2Digits, 12)
	add("Beta Org", "box", "numpy", "AMD MI300X", l2Digits, 11)
	add("Acme Lab", "rack-1", "torch", "NVIDIA H100", l3Digits, 30)
	add("Beta Org", "box", "numpy", "AMD MI300X", l3Digits, 25)
	if _, err := p.svc.FreezeEdition(ctx, p.users["organiser"], "2026-06"); err != nil {
		t.Fatal(err)
	}
	add("Acme Lab", "rack-1", "torch", "NVIDIA H100", l2Digits, 8)
	return ids
}

func systemPath(submitter, system string) string {
	return "/submitters/" + url.PathEscape(submitter) + "/systems/" + url.PathEscape(system)
}

// standingTexts reads a system page's results by benchmark: per benchmark,
// its place now and in each edition, as "#rank of n".
func standingTexts(doc *goquery.Document) map[string][]string {
	out := map[string][]string{}
	doc.Find(testid("system-standing")).Each(func(_ int, row *goquery.Selection) {
		bench := row.AttrOr("data-benchmark", "")
		live := "not ranked"
		if p := row.Find(testid("standing-live") + " " + testid("place")); p.Length() > 0 {
			live = placeText(p)
		}
		out[bench] = append(out[bench], "now "+live)
		row.Find(testid("standing-edition")).Each(func(_ int, ed *goquery.Selection) {
			out[bench] = append(out[bench], ed.AttrOr("data-edition", "")+" "+placeText(ed.Find(testid("place"))))
		})
	})
	return out
}

// placeText is a place as "#3 of 40 · 12.5 s", spaces collapsed.
func placeText(s *goquery.Selection) string { return strings.Join(strings.Fields(s.Text()), " ") }

// A system's page lists its place on every benchmark it has entries on,
// on the list now and in each frozen edition, and its entries; the board
// and each entry link it.
func TestSystemPageAcrossBenchmarksAndEditions(t *testing.T) {
	p := startReal(t)
	ids := crossBenchmarkList(t, p)
	path := systemPath(acmeRack.submitter, acmeRack.system)
	visitor := p.login(t, "")
	doc := visitor.doc(t, path)
	got := standingTexts(doc)
	// result(v, 5)'s olympic mean is v + 2.
	s := func(v float64) string { return templates.FormatValue(v+2, "s") }
	want := map[string][]string{
		l2Digits: {"now #1 of 3 · " + s(8), "2026-06 #3 of 3 · " + s(13)},
		l3Digits: {"now #2 of 2 · " + s(30), "2026-06 #2 of 2 · " + s(30)},
	}
	if len(got) != len(want) {
		t.Errorf("the system page lists results on %v, want %s and %s", got, l2Digits, l3Digits)
	}
	for bench, places := range want {
		if strings.Join(got[bench], " | ") != strings.Join(places, " | ") {
			t.Errorf("%s: %q, want %q", bench, got[bench], places)
		}
	}
	if href := doc.Find(testid("standing-live")+" a").First().AttrOr("href", ""); href != "/submissions/"+strconv.FormatInt(ids["rack-1 "+l2Digits+" 8"], 10) {
		t.Errorf("the L2 place links %q, want the 8 s entry", href)
	}
	if n := doc.Find(testid("entity-entry")).Length(); n != 3 {
		t.Errorf("the system page lists %d entries, want rack-1's 3", n)
	}

	board := visitor.doc(t, "/benchmarks/"+l3Digits)
	var linked []string
	board.Find(testid("entry-system") + " a").Each(func(_ int, a *goquery.Selection) { linked = append(linked, a.AttrOr("href", "")) })
	if !contains(linked, path) {
		t.Errorf("the L3 board links the systems %q, want %s among them", linked, path)
	}
	entry := visitor.doc(t, "/submissions/"+strconv.FormatInt(ids["rack-1 "+l3Digits+" 30"], 10))
	if href := entry.Find(testid("system")).AttrOr("href", ""); href != path {
		t.Errorf("the entry page links the system %q, want %s", href, path)
	}
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// searchResults reads the search page: per benchmark, each result as
// "rank organisation system".
func searchResults(doc *goquery.Document) map[string][]string {
	out := map[string][]string{}
	doc.Find(testid("search-group")).Each(func(_ int, g *goquery.Selection) {
		bench := g.AttrOr("data-benchmark", "")
		out[bench] = []string{}
		g.Find(testid("search-result")).Each(func(_ int, r *goquery.Selection) {
			out[bench] = append(out[bench], r.AttrOr("data-rank", "")+" "+r.Find(testid("search-submitter")).Text()+" "+r.Find(testid("search-system")).Text())
		})
	})
	return out
}

// The search across the list finds an organisation, a system, a
// framework or an accelerator on every benchmark, grouped by benchmark
// with each system's best entry and its rank there, and links each
// benchmark's board searched for the same text; every page has the box.
func TestSearchAcrossBenchmarks(t *testing.T) {
	p := startReal(t)
	crossBenchmarkList(t, p)
	visitor := p.login(t, "")
	for _, tc := range []struct {
		text string
		want map[string][]string
	}{
		{"acme", map[string][]string{l2Digits: {"1 Acme Lab rack-1", "3 Acme Lab rack-2"}, l3Digits: {"2 Acme Lab rack-1"}}},
		{"RACK-2", map[string][]string{l2Digits: {"3 Acme Lab rack-2"}}},
		{"mi300", map[string][]string{l2Digits: {"2 Beta Org box"}, l3Digits: {"1 Beta Org box"}}},
		{"h100", map[string][]string{l2Digits: {"1 Acme Lab rack-1", "3 Acme Lab rack-2"}, l3Digits: {"2 Acme Lab rack-1"}}},
		{"numpy", map[string][]string{l2Digits: {"2 Beta Org box"}, l3Digits: {"1 Beta Org box"}}},
		{"be", map[string][]string{l2Digits: {"2 Beta Org box"}, l3Digits: {"1 Beta Org box"}}},
		{"nowhere", map[string][]string{}},
	} {
		doc := visitor.doc(t, "/search?q="+url.QueryEscape(tc.text))
		got := searchResults(doc)
		if len(got) != len(tc.want) {
			t.Errorf("search %q: %v, want %v", tc.text, got, tc.want)
			continue
		}
		for bench, rows := range tc.want {
			if strings.Join(got[bench], " | ") != strings.Join(rows, " | ") {
				t.Errorf("search %q on %s: %q, want %q", tc.text, bench, got[bench], rows)
			}
		}
		if len(tc.want) == 0 && doc.Find(testid("search-empty")).Length() != 1 {
			t.Errorf("search %q finds nothing but does not say so", tc.text)
		}
		if link := doc.Find(testid("search-board-link")).First().AttrOr("href", ""); len(tc.want) > 0 && !strings.HasSuffix(link, "?q="+url.QueryEscape(tc.text)) {
			t.Errorf("search %q links the board %q, want it searched for the same text", tc.text, link)
		}
	}
	home := visitor.doc(t, "/")
	if form := home.Find(testid("site-header") + ` form[role="search"]`); form.AttrOr("action", "") != "/search" || form.Find(`input[name="q"]`).Length() != 1 {
		t.Error("the header has no search box posting q to /search")
	}
	resp, err := visitor.Get(p.url + "/search?q=" + strings.Repeat("a", 101))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusBadRequest {
		t.Errorf("a search of 101 characters: %d, want 400", resp.StatusCode)
	}
}
