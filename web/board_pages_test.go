package web_test

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/PuerkitoBio/goquery"

	d5list "github.com/deep500/d5list"
	"github.com/deep500/d5list/leaderboard"
	"github.com/deep500/d5list/portal"
	"github.com/deep500/d5list/store"
	"github.com/deep500/d5list/web"
)

// syntheticBoard is the real portal over a real SQLite file holding n
// synthetic submissions (store.InsertSynthetic, as `d5list admin
// seed-synthetic` stores them) over systems systems; every 7th is put back
// to needs_review, so that "include unverified" is a longer board.
type syntheticBoard struct {
	url       string
	svc       *portal.Service
	organiser *d5list.User
	bench     d5list.Benchmark
}

func newSyntheticBoard(t *testing.T, n, systems int) *syntheticBoard {
	t.Helper()
	ctx := context.Background()
	db, err := store.Open(ctx, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	bench := digitsBenchmark()
	if err := db.UpsertBenchmarks(ctx, []d5list.Benchmark{bench}); err != nil {
		t.Fatal(err)
	}
	subs := leaderboard.Synthetic(&bench, n, systems, store.SyntheticSubmitter, 7)
	if err := db.InsertSynthetic(ctx, subs); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < len(subs); i += 7 {
		if err := db.SetSubmissionStatus(ctx, subs[i].ID, d5list.StatusNeedsReview, nil); err != nil {
			t.Fatal(err)
		}
	}
	org, err := db.EnsureUser(ctx, "olga", d5list.RoleOrganiser)
	if err != nil {
		t.Fatal(err)
	}
	svc := portal.New(db, nil, portal.Config{}, nil)
	srv := httptest.NewServer(web.New(web.Config{}, svc, nil))
	t.Cleanup(srv.Close)
	return &syntheticBoard{url: srv.URL, svc: svc, organiser: org, bench: bench}
}

func (b *syntheticBoard) doc(t *testing.T, path string) (*goquery.Document, []byte) {
	t.Helper()
	a := fetch(t, b.url+path)
	if a.code != http.StatusOK {
		t.Fatalf("GET %s: %d %s", path, a.code, a.body)
	}
	doc, err := goquery.NewDocumentFromReader(bytes.NewReader(a.body))
	if err != nil {
		t.Fatal(err)
	}
	return doc, a.body
}

func (b *syntheticBoard) export(t *testing.T, path string) []d5list.Entry {
	t.Helper()
	a := fetch(t, b.url+path)
	var board d5list.Leaderboard
	if a.code != http.StatusOK {
		t.Fatalf("GET %s: %d %s", path, a.code, a.body)
	}
	if err := json.Unmarshal(a.body, &board); err != nil {
		t.Fatal(err)
	}
	return board.Entries
}

type shownRow struct {
	rank int
	id   int64
}

func shownRows(t *testing.T, doc *goquery.Document) []shownRow {
	t.Helper()
	var out []shownRow
	doc.Find(testid("leaderboard-row")).Each(func(_ int, s *goquery.Selection) {
		rank, err := strconv.Atoi(strings.TrimSpace(s.Find(testid("entry-rank")).Text()))
		if err != nil {
			t.Fatalf("row rank: %v", err)
		}
		id, _ := strconv.ParseInt(s.AttrOr("data-submission", ""), 10, 64)
		out = append(out, shownRow{rank, id})
	})
	return out
}

// pageLink reads one pager link's query.
func pageLink(t *testing.T, doc *goquery.Document, id string) url.Values {
	t.Helper()
	href, ok := doc.Find(testid("pager-top") + " " + testid(id)).Attr("href")
	if !ok {
		t.Fatalf("no %s link", id)
	}
	u, err := url.Parse(href)
	if err != nil {
		t.Fatal(err)
	}
	if u.Path != "/benchmarks/l2-digits-mlp-cpu" && !strings.HasPrefix(u.Path, "/editions/") {
		t.Errorf("%s link goes to %s", id, u.Path)
	}
	return u.Query()
}

// Page 2 of a filtered board shows its entries 101 to 200 with their ranks
// in the whole board, as the complete JSON export ranks them; the pager's
// links keep every filter; bad and past-the-end pages are refused.
func TestBoardPagesKeepFiltersAndRanks(t *testing.T) {
	b := newSyntheticBoard(t, 1500, 500)
	const path = "/benchmarks/l2-digits-mlp-cpu"
	const filters = "rows=all&status=all&framework=torch"
	all := b.export(t, "/api/v1/leaderboards/l2-digits-mlp-cpu?"+filters)
	if len(all) < 300 {
		t.Fatalf("the filtered board has %d entries; the test wants more than 3 pages", len(all))
	}
	pages := (len(all) + 99) / 100

	doc, _ := b.doc(t, path+"?"+filters+"&page=2")
	rows := shownRows(t, doc)
	if len(rows) != 100 {
		t.Fatalf("page 2 shows %d rows, want 100", len(rows))
	}
	for i, r := range rows {
		want := all[100+i]
		if r.rank != want.Rank || r.id != want.SubmissionID {
			t.Fatalf("page 2 row %d: rank %d, #%d; the export has rank %d, #%d", i+1, r.rank, r.id, want.Rank, want.SubmissionID)
		}
	}
	if rows[0].rank != 101 || rows[99].rank != 200 {
		t.Errorf("page 2 ranks %d to %d, want 101 to 200", rows[0].rank, rows[99].rank)
	}
	if got, want := doc.Find(testid("pager-top")+" "+testid("page-summary")).Text(), "rows 101–200 of "+strconv.Itoa(len(all)); got != want {
		t.Errorf("summary %q, want %q", got, want)
	}
	if doc.Find(`[data-status="needs_review"]`).Length() == 0 {
		t.Error("no needs_review row on page 2 of the board including unverified entries")
	}

	for link, page := range map[string]string{"page-first": "", "page-prev": "", "page-next": "3", "page-last": strconv.Itoa(pages)} {
		q := pageLink(t, doc, link)
		if q.Get("rows") != "all" || q.Get("status") != "all" || q.Get("framework") != "torch" {
			t.Errorf("%s link drops a filter: %v", link, q)
		}
		if q.Get("page") != page {
			t.Errorf("%s link to page %q, want %q", link, q.Get("page"), page)
		}
	}
	// Exports are of the whole board whatever page is shown.
	if href := doc.Find(testid("export-json")).AttrOr("href", ""); strings.Contains(href, "page=") {
		t.Errorf("the JSON export link is paged: %s", href)
	}

	// The last page is the rest; its links go back, not forward.
	last, _ := b.doc(t, path+"?"+filters+"&page="+strconv.Itoa(pages))
	if n := len(shownRows(t, last)); n != len(all)-100*(pages-1) {
		t.Errorf("last page shows %d rows, want %d", n, len(all)-100*(pages-1))
	}
	if last.Find(testid("page-next")).Length() != 0 || last.Find(testid("page-prev")).Length() == 0 {
		t.Error("the last page links forward, or not back")
	}

	// Another page size is kept by the pager, the toggles and the form.
	small, _ := b.doc(t, path+"?"+filters+"&per=25&page=3")
	rows = shownRows(t, small)
	if len(rows) != 25 || rows[0].rank != all[50].Rank || rows[0].id != all[50].SubmissionID {
		t.Fatalf("per=25 page 3: %d rows from %+v, want 25 from rank %d", len(rows), rows[0], all[50].Rank)
	}
	if q := pageLink(t, small, "page-next"); q.Get("per") != "25" || q.Get("page") != "4" {
		t.Errorf("per=25 next link: %v", q)
	}
	toggle, _ := url.Parse(small.Find(testid("toggle-status")).AttrOr("href", ""))
	if q := toggle.Query(); q.Get("per") != "25" || q.Has("page") || q.Has("status") || q.Get("rows") != "all" {
		t.Errorf("the status toggle links to %s: want per kept, page and status dropped", toggle)
	}
	if v := small.Find(testid("filter-per")).AttrOr("value", ""); v != "25" {
		t.Errorf("the filter form carries per=%q, want 25", v)
	}
	if p, _ := url.Parse(small.Find(testid("permalink")).AttrOr("href", "")); p.Query().Get("page") != "3" || p.Query().Get("per") != "25" {
		t.Errorf("permalink %s does not name the page", p)
	}

	for _, tt := range []struct {
		query string
		code  int
		says  string
	}{
		{"page=" + strconv.Itoa(pages+1), http.StatusNotFound, "page " + strconv.Itoa(pages+1)},
		{"page=0", http.StatusBadRequest, "page"},
		{"page=two", http.StatusBadRequest, "page"},
		{"page=-1", http.StatusBadRequest, "page"},
		{"per=5", http.StatusBadRequest, "per"},
		{"per=100000", http.StatusBadRequest, "per"},
	} {
		a := fetch(t, b.url+path+"?"+filters+"&"+tt.query)
		if a.code != tt.code || !strings.Contains(string(a.body), tt.says) {
			t.Errorf("?%s: %d, want %d naming %q:\n%.300s", tt.query, a.code, tt.code, tt.says, a.body)
		}
	}
	// A page past the end of a short board, even page 2 of an empty one.
	if a := fetch(t, b.url+path+"?division=open&framework=none&page=2"); a.code != http.StatusNotFound {
		t.Errorf("page 2 of an empty board: %d, want 404", a.code)
	}
}

// Pages are cached apart: ?page=1 is the board's first page and ?page=02
// is page 2, byte for byte (the key's normalisation is in
// leaderboard/page_test.go).
func TestBoardPagesCachedByPage(t *testing.T) {
	b := newSyntheticBoard(t, 400, 400)
	const path = "/benchmarks/l2-digits-mlp-cpu"
	etag := func(q string) string {
		a := fetch(t, b.url+path+q)
		if a.code != http.StatusOK {
			t.Fatalf("GET %s: %d", q, a.code)
		}
		return a.hd.Get("ETag")
	}
	p1, p2 := etag(""), etag("?page=2")
	if p1 == p2 {
		t.Fatal("page 1 and page 2 are the same answer")
	}
	for q, want := range map[string]string{"?page=1": p1, "?per=100": p1, "?page=1&per=100": p1, "?page=02": p2, "?per=100&page=2": p2} {
		if got := etag(q); got != want {
			t.Errorf("%s: ETag %s, want that of the same page %s", q, got, want)
		}
	}
}

// The "all entries, include unverified" page does not grow with the board:
// 3 times the entries give about the same page (a full page of rows, the
// charts of the top 50), far below the size of showing every entry.
func TestBoardPageSizeBounded(t *testing.T) {
	if testing.Short() {
		t.Skip("seeds 3,000 submissions; the paging rules are covered by TestBoardPagesKeepFiltersAndRanks")
	}
	b := newSyntheticBoard(t, 3000, 1000)
	const path = "/benchmarks/l2-digits-mlp-cpu"
	perSystem, small := b.doc(t, path)
	full, big := b.doc(t, path+"?rows=all&status=all")
	nSystem, nFull := len(b.export(t, "/api/v1/leaderboards/l2-digits-mlp-cpu")), len(b.export(t, "/api/v1/leaderboards/l2-digits-mlp-cpu?rows=all&status=all"))
	if nFull < 3000 || nSystem > 1000 {
		t.Fatalf("boards of %d and %d entries", nSystem, nFull)
	}
	for _, d := range []*goquery.Document{perSystem, full} {
		if n := d.Find(testid("leaderboard-row")).Length(); n != 100 {
			t.Errorf("%d rows on page 1, want 100", n)
		}
		d.Find(testid("chart-table")).Each(func(_ int, s *goquery.Selection) {
			if n := s.Find("tbody tr").Length(); n > 2*50 {
				t.Errorf("chart table %q has %d rows: it grows with the board", s.Find("summary").Text(), n)
			}
		})
		var ranking struct {
			XAxis []struct{ Data []string } `json:"xAxis"`
		}
		if err := json.Unmarshal([]byte(d.Find("#ranking-chart-options").Text()), &ranking); err != nil {
			t.Fatal(err)
		}
		if len(ranking.XAxis) == 0 || len(ranking.XAxis[0].Data) != 50 {
			t.Errorf("the ranking chart draws %v bars, want the top 50", ranking.XAxis)
		}
		if n := d.Find(`#ranking-chart`).Closest(testid("chart-figure")).Find(testid("chart-table") + " tbody tr").Length(); n != 50 {
			t.Errorf("the ranking chart's table has %d rows, want the chart's 50", n)
		}
	}
	// Three times the entries: at most a few percent more bytes (filter
	// values, numbers), where showing them all would be three times more.
	if float64(len(big)) > 1.25*float64(len(small)) {
		t.Errorf("the page of %d entries is %d bytes, that of %d entries %d: it grows with the board", nFull, len(big), nSystem, len(small))
	}
	// What a row costs, from a page of 1,000 rows against one of 100: the
	// whole board on one page would be at least that times its entries.
	_, big1000 := b.doc(t, path+"?rows=all&status=all&per=1000")
	perRow := (len(big1000) - len(big)) / 900
	if full := perRow * nFull; len(big) > 1<<20 || len(big)*10 > full {
		t.Errorf("the all-entries page is %d bytes for %d entries; all of them on one page would be %d", len(big), nFull, full)
	}
	t.Logf("page 1 of %d entries: %d bytes; of %d entries: %d bytes; %d bytes a row", nSystem, len(small), nFull, len(big), perRow)
}

// A frozen edition's board is paged the same way, its links staying on
// the edition.
func TestEditionBoardPaged(t *testing.T) {
	b := newSyntheticBoard(t, 250, 250)
	if _, err := b.svc.FreezeEdition(context.Background(), b.organiser, "2026-11"); err != nil {
		t.Fatal(err)
	}
	frozen := b.export(t, "/api/v1/editions/2026-11/benchmarks/l2-digits-mlp-cpu")
	const path = "/editions/2026-11/benchmarks/l2-digits-mlp-cpu"
	doc, _ := b.doc(t, path+"?page=2")
	rows := shownRows(t, doc)
	if len(rows) != 100 || rows[0].id != frozen[100].SubmissionID || rows[0].rank != frozen[100].Rank {
		t.Fatalf("edition page 2: %d rows from %+v, want 100 from rank %d", len(rows), rows, frozen[100].Rank)
	}
	href := doc.Find(testid("pager-top")+" "+testid("page-next")).AttrOr("href", "")
	if href != path+"?page=3" {
		t.Errorf("edition next link %q", href)
	}
	if a := fetch(t, b.url+path+"?page=4"); a.code != http.StatusNotFound {
		t.Errorf("edition page 4 of 3: %d, want 404", a.code)
	}
	if a := fetch(t, b.url+path+"?per=abc"); a.code != http.StatusBadRequest {
		t.Errorf("edition per=abc: %d, want 400", a.code)
	}
}

// The board's search box finds rows by submitter or system, each with its
// rank on the whole board, and the filters form keeps the search (issue 16).
func TestBoardPageSearch(t *testing.T) {
	b := newSyntheticBoard(t, 300, 40)
	full, _ := b.doc(t, "/benchmarks/"+b.bench.ID+"?per=100")
	target := full.Find(testid("leaderboard-row")).Eq(7)
	name := strings.TrimSpace(target.Find(testid("entry-submitter")).Text())
	rank := target.AttrOr("data-rank", "")
	doc, _ := b.doc(t, "/benchmarks/"+b.bench.ID+"?q="+url.QueryEscape(strings.ToUpper(name)))
	rows := doc.Find(testid("leaderboard-row"))
	if rows.Length() == 0 {
		t.Fatalf("searching %q found nothing", name)
	}
	found := false
	rows.Each(func(_ int, r *goquery.Selection) {
		if got := strings.TrimSpace(r.Find(testid("entry-submitter")).Text()); !strings.Contains(strings.ToLower(got), strings.ToLower(name)) {
			t.Errorf("searching %q shows %q", name, got)
		}
		if r.AttrOr("data-submission", "") == target.AttrOr("data-submission", "-") {
			found = r.AttrOr("data-rank", "") == rank
		}
	})
	if !found {
		t.Errorf("the searched entry is not shown with its board rank %s", rank)
	}
	if v, _ := doc.Find(testid("filter-search")).Attr("value"); v != strings.ToUpper(name) {
		t.Errorf("the search box holds %q, want the search", v)
	}
}

// The column headers sort the board by submitter, system or date; the
// rows keep their ranks, and rank order is one click back (issue 16).
func TestBoardPageSorting(t *testing.T) {
	b := newSyntheticBoard(t, 200, 30)
	base := "/benchmarks/" + b.bench.ID
	doc, _ := b.doc(t, base+"?per=100")
	href, _ := doc.Find(testid("sort-submitter")).Attr("href")
	if !strings.Contains(href, "sort=submitter") {
		t.Fatalf("the submitter header links %q", href)
	}
	column := func(doc *goquery.Document, id string) []string {
		var out []string
		doc.Find(testid("leaderboard-row")).Each(func(_ int, r *goquery.Selection) {
			out = append(out, strings.ToLower(strings.TrimSpace(r.Find(testid(id)).Text())))
		})
		return out
	}
	sorted, _ := b.doc(t, href)
	names := column(sorted, "entry-submitter")
	if len(names) < 2 || !slices.IsSorted(names) {
		t.Errorf("sorted by submitter: %v", names)
	}
	if v := sorted.Find(`th[aria-sort="ascending"] a`).AttrOr("data-testid", ""); v != "sort-submitter" {
		t.Errorf("aria-sort marks %q, want the submitter column", v)
	}
	byDate, _ := b.doc(t, base+"?sort=date&per=100")
	dates := column(byDate, "entry-date")
	if !slices.IsSortedFunc(dates, func(a, b string) int { return strings.Compare(b, a) }) {
		t.Errorf("sorted by date, newest first: %v", dates)
	}
	ranks := column(byDate, "entry-rank")
	if slices.IsSortedFunc(ranks, func(a, b string) int { x, _ := strconv.Atoi(a); y, _ := strconv.Atoi(b); return x - y }) {
		t.Errorf("sorted by date, the ranks %v still read in rank order: the synthetic dates should mix them", ranks)
	}
	if a := fetch(t, b.url+base+"?sort=cost"); a.code != http.StatusBadRequest {
		t.Errorf("?sort=cost: %d, want 400", a.code)
	}
}

// The score column sorts both ways: worst first (the ranking's reverse)
// and best first, each row keeping its rank, page after page, with
// aria-sort naming the order of the values (a time: best first is
// ascending).
func TestBoardPageSortsByScore(t *testing.T) {
	b := newSyntheticBoard(t, 200, 30)
	base := "/benchmarks/" + b.bench.ID
	ints := func(doc *goquery.Document, id string) []int {
		var out []int
		doc.Find(testid("leaderboard-row")).Each(func(_ int, r *goquery.Selection) {
			n, err := strconv.Atoi(strings.TrimSpace(r.Find(testid(id)).Text()))
			if err != nil {
				t.Fatalf("%s: %v", id, err)
			}
			out = append(out, n)
		})
		return out
	}
	scores := func(doc *goquery.Document) []float64 {
		var out []float64
		doc.Find(testid("entry-score")).Each(func(_ int, s *goquery.Selection) {
			v, err := strconv.ParseFloat(strings.Fields(s.Text())[0], 64)
			if err != nil {
				t.Fatalf("score %q: %v", s.Text(), err)
			}
			out = append(out, v)
		})
		return out
	}
	scoreHeader := func(doc *goquery.Document) (href, ariaSort string) {
		a := doc.Find(testid("sort-score"))
		href, _ = a.Attr("href")
		ariaSort, _ = a.Closest("th").Attr("aria-sort")
		return href, ariaSort
	}

	doc, _ := b.doc(t, base+"?rows=all&per=50")
	href, aria := scoreHeader(doc)
	if !strings.Contains(href, "sort=score-reverse") || aria != "none" {
		t.Fatalf("by rank, the score header links %q with aria-sort %q, want worst first and none", href, aria)
	}
	worst, _ := b.doc(t, href)
	ranks := ints(worst, "entry-rank")
	// 200 entries less every 7th, sent back to review: the last is 171.
	if len(ranks) != 50 || ranks[0] != 171 || !slices.IsSortedFunc(ranks, func(a, b int) int { return b - a }) {
		t.Fatalf("worst first, ranks %v, want 171 down", ranks)
	}
	if vals := scores(worst); !slices.IsSortedFunc(vals, func(a, b float64) int { return cmp.Compare(b, a) }) {
		t.Errorf("worst first, the times %v do not fall", vals)
	}
	href, aria = scoreHeader(worst)
	if !strings.Contains(href, "sort=score") || strings.Contains(href, "score-reverse") || aria != "descending" {
		t.Errorf("worst first, the score header links %q with aria-sort %q, want best first and descending", href, aria)
	}
	if v := worst.Find(testid("sort-rank")).Closest("th").AttrOr("aria-sort", ""); v != "none" {
		t.Errorf("worst first, the rank column's aria-sort is %q", v)
	}
	next, _ := worst.Find(testid("page-next")).First().Attr("href")
	page2, _ := b.doc(t, next)
	if r := ints(page2, "entry-rank"); len(r) == 0 || r[0] != 121 {
		t.Errorf("worst first, page 2 starts at rank %v, want 121", r)
	}
	last, _ := worst.Find(testid("page-last")).First().Attr("href")
	lastPage, _ := b.doc(t, last)
	if r := ints(lastPage, "entry-rank"); len(r) == 0 || r[len(r)-1] != 1 {
		t.Errorf("worst first, the last page ends at rank %v, want 1", r)
	}

	best, _ := b.doc(t, href)
	if r := ints(best, "entry-rank"); len(r) != 50 || r[0] != 1 || !slices.IsSorted(r) {
		t.Errorf("best first, ranks %v, want 1 up", r)
	}
	if _, aria := scoreHeader(best); aria != "ascending" {
		t.Errorf("best first, aria-sort %q, want ascending (a time)", aria)
	}
	// A filtered board sorts through the window query, not the index.
	filtered, _ := b.doc(t, base+"?rows=all&per=50&framework=torch&sort=score-reverse")
	if r := ints(filtered, "entry-rank"); len(r) < 2 || !slices.IsSortedFunc(r, func(a, b int) int { return b - a }) {
		t.Errorf("filtered, worst first, ranks %v", r)
	}
}
