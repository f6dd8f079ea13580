package web_test

import (
	"bytes"
	"context"
	"encoding/json"
	"encoding/xml"
	"io"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/PuerkitoBio/goquery"

	d5list "github.com/deep500/d5list"
	"github.com/deep500/d5list/handlers"
	"github.com/deep500/d5list/leaderboard"
	"github.com/deep500/d5list/portal"
	"github.com/deep500/d5list/store"
	"github.com/deep500/d5list/web"
)

// listServer is the real portal over a real SQLite store behind the real
// router on a loopback port.
type listServer struct {
	url       string
	db        *store.DB
	svc       *portal.Service
	organiser string
	ids       map[string]int64 // by system name
}

func curve(base float64) []d5list.EvalPoint {
	return []d5list.EvalPoint{{Epoch: 1, Seconds: base / 2, Accuracy: 0.8}, {Epoch: 2, Seconds: base, Accuracy: 0.975}}
}

func newListServer(t *testing.T) *listServer {
	t.Helper()
	return newListServerWith(t, nil)
}

// newListServerWith is newListServer serving wrap(the portal) where wrap
// is not nil.
func newListServerWith(t *testing.T, wrap func(*portal.Service) handlers.Service) *listServer {
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
	org, err := db.EnsureUser(ctx, "olga", d5list.RoleOrganiser)
	if err != nil {
		t.Fatal(err)
	}
	token, err := db.CreateToken(ctx, org.ID, "test")
	if err != nil {
		t.Fatal(err)
	}
	svc := portal.New(db, nil, portal.Config{}, nil)
	ls := &listServer{db: db, svc: svc, organiser: token, ids: map[string]int64{}}
	for _, s := range []struct {
		system, submitter, fw, acc string
		count                      int
		cost                       float64
		base                       float64
		status                     d5list.Status
	}{
		{"box-a", "First Lab", "numpy", "NVIDIA H100", 8, 98.5, 10, d5list.StatusVerified},
		{"box-b", "Second Lab", "torch", "AMD MI300X", 4, 40, 20, d5list.StatusVerified},
		{"box-c", "Third Lab", "torch", "", 0, 0, 300, d5list.StatusVerified},
		{"box-p", "Pending Lab", "jax", "", 0, 0, 5, d5list.StatusNeedsReview},
	} {
		res := result(s.base, 5)
		for i := range res.Runs {
			res.Runs[i].Evals = curve(res.Runs[i].TimeToTrain)
		}
		sub := &d5list.Submission{BenchmarkID: bench.ID, Division: "closed", Availability: "available", Submitter: s.submitter,
			SystemName: s.system, Framework: s.fw, Accelerator: s.acc, Accelerators: s.count, CostPerHour: s.cost,
			CodeURL: "https://example.org/" + s.system, Claimed: res, HostCPU: testCPU}
		if err := db.CreateSubmission(ctx, sub); err != nil {
			t.Fatal(err)
		}
		completeOnDeclaredHardware(t, db, res, s.status)
		ls.ids[s.system] = sub.ID
	}
	var served handlers.Service = svc
	if wrap != nil {
		served = wrap(svc)
	}
	srv := httptest.NewServer(web.New(web.Config{}, served, nil))
	t.Cleanup(srv.Close)
	ls.url = srv.URL
	return ls
}

func (s *listServer) get(t *testing.T, path string) []byte {
	t.Helper()
	resp, err := http.Get(s.url + path)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET %s: %d %s", path, resp.StatusCode, body)
	}
	return body
}

func (s *listServer) doc(t *testing.T, path string) *goquery.Document {
	t.Helper()
	return parseDoc(t, s.get(t, path))
}

// currentDoc is the page at path once current (see current).
func (s *listServer) currentDoc(t *testing.T, path string) *goquery.Document {
	t.Helper()
	a := current(t, s.url+path)
	if a.code != http.StatusOK {
		t.Fatalf("GET %s: %d %s", path, a.code, a.body)
	}
	return parseDoc(t, a.body)
}

func parseDoc(t *testing.T, body []byte) *goquery.Document {
	t.Helper()
	doc, err := goquery.NewDocumentFromReader(bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	return doc
}

func (s *listServer) freeze(t *testing.T, name, token string) int {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, s.url+"/api/v1/editions", strings.NewReader(`{"name":"`+name+`"}`))
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	return resp.StatusCode
}

func rowSystems(doc *goquery.Document) []string {
	var out []string
	doc.Find(testid("leaderboard-row")).Each(func(_ int, s *goquery.Selection) {
		out = append(out, strings.TrimSpace(s.Find(testid("entry-system")).Contents().First().Text()))
	})
	return out
}

func TestBoardPageFiltersToggleAndCharts(t *testing.T) {
	s := newListServer(t)
	path := "/benchmarks/l2-digits-mlp-cpu"
	doc := s.doc(t, path)
	if got := rowSystems(doc); !reflect.DeepEqual(got, []string{"box-a", "box-b", "box-c"}) {
		t.Errorf("default board lists %v", got)
	}
	if !strings.Contains(doc.Find(testid("ranking-rules")).Text(), "olympic mean") {
		t.Error("the rules paragraph is missing")
	}
	// Every chart's script is served by this portal, and each chart has
	// its data as a table.
	doc.Find("script[src]").Each(func(_ int, sc *goquery.Selection) {
		src, _ := sc.Attr("src")
		if !strings.HasPrefix(src, "/static/") {
			t.Errorf("script %q is not served locally", src)
		}
		s.get(t, src)
	})
	var srcs []string
	doc.Find("script[src]").Each(func(_ int, sc *goquery.Selection) { v, _ := sc.Attr("src"); srcs = append(srcs, v) })
	if !reflect.DeepEqual(srcs, []string{"/static/vendor/echarts.min.js", "/static/js/charts.js", "/static/js/board_tabs.js"}) {
		t.Errorf("scripts %v", srcs)
	}
	// The ranking and the charts are the two tabs, each with its panel.
	for _, tab := range []string{"ranking", "charts"} {
		if a := doc.Find(testid("tab-" + tab)); a.AttrOr("href", "") != "#"+tab || doc.Find("#"+tab+"[role=tabpanel]").Length() != 1 {
			t.Errorf("tab %s: link %q, want #%s and one panel with that id", tab, a.AttrOr("href", ""), tab)
		}
	}
	var charts []string
	doc.Find(testid("chart-figure")).Each(func(_ int, f *goquery.Selection) {
		id, _ := f.Find("[data-chart]").Attr("id")
		charts = append(charts, id)
		if f.Find(testid("chart-table")+" tbody tr").Length() == 0 {
			t.Errorf("chart %s has no data table", id)
		}
		opt := doc.Find("#" + id + "-options").Text()
		if !json.Valid([]byte(opt)) {
			t.Errorf("chart %s: options are not JSON", id)
		}
	})
	want := []string{"ranking-chart", "records-chart", "accuracy-top10-chart", "pareto-accelerators-chart", "pareto-cost-chart", "vendor-shares-chart", "framework-shares-chart"}
	if !reflect.DeepEqual(charts, want) {
		t.Errorf("charts %v, want %v", charts, want)
	}

	tests := []struct {
		query string
		want  []string
		badge bool
	}{
		{"?framework=torch", []string{"box-b", "box-c"}, false},
		{"?accelerator=amd+mi300x", []string{"box-b"}, false},
		{"?division=open", nil, false},
		{"?status=all", []string{"box-p", "box-a", "box-b", "box-c"}, true},
	}
	for _, tt := range tests {
		doc := s.doc(t, path+tt.query)
		if got := rowSystems(doc); !reflect.DeepEqual(got, tt.want) {
			t.Errorf("%s lists %v, want %v", tt.query, got, tt.want)
		}
		if b := doc.Find(`[data-status="needs_review"] ` + testid("entry-badge")).Text(); tt.badge && b != "needs review" {
			t.Errorf("%s: needs_review entry has badge %q", tt.query, b)
		}
		var board d5list.Leaderboard
		if err := json.Unmarshal(s.get(t, "/api/v1/leaderboards/l2-digits-mlp-cpu"+tt.query), &board); err != nil {
			t.Fatal(err)
		}
		if len(board.Entries) != len(tt.want) {
			t.Errorf("API %s: %d entries, want %d", tt.query, len(board.Entries), len(tt.want))
		}
	}
	resp, err := http.Get(s.url + path + "?rows=some")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusBadRequest {
		t.Errorf("a bad toggle gives %d, want 400", resp.StatusCode)
	}
}

func TestFrozenEditionSurvivesRejection(t *testing.T) {
	s := newListServer(t)
	if code := s.freeze(t, "2026-11", ""); code != http.StatusUnauthorized {
		t.Errorf("freezing without a token: %d", code)
	}
	if code := s.freeze(t, "2026-11", s.organiser); code != http.StatusCreated {
		t.Fatalf("freezing: %d", code)
	}
	if code := s.freeze(t, "2026-11", s.organiser); code != http.StatusConflict {
		t.Errorf("freezing the same name again: %d", code)
	}
	edPath := "/api/v1/editions/2026-11/benchmarks/l2-digits-mlp-cpu"
	before := s.get(t, edPath)
	beforeCSV := s.get(t, edPath+".csv")

	ctx := context.Background()
	if err := s.db.SetSubmissionStatus(ctx, s.ids["box-a"], d5list.StatusRejected, nil); err != nil {
		t.Fatal(err)
	}

	var live d5list.Leaderboard
	if err := json.Unmarshal(s.get(t, "/api/v1/leaderboards/l2-digits-mlp-cpu"), &live); err != nil {
		t.Fatal(err)
	}
	if len(live.Entries) != 2 || live.Entries[0].SubmissionID != s.ids["box-b"] {
		t.Fatalf("live board after the rejection: %+v", live.Entries)
	}
	// box-b moved up from 2 to 1 since the edition.
	if live.Entries[0].PrevRank != 2 || live.Entries[0].New {
		t.Errorf("rank change of box-b: prev %d new %v", live.Entries[0].PrevRank, live.Entries[0].New)
	}
	if after := s.get(t, edPath); !bytes.Equal(before, after) {
		t.Errorf("the edition changed:\nbefore %s\nafter  %s", before, after)
	}
	if after := s.get(t, edPath+".csv"); !bytes.Equal(beforeCSV, after) {
		t.Error("the edition's CSV changed")
	}
	var ed d5list.Leaderboard
	_ = json.Unmarshal(before, &ed)
	if len(ed.Entries) != 3 || ed.Entries[0].SubmissionID != s.ids["box-a"] {
		t.Errorf("edition board: %+v", ed.Entries)
	}
	// The home page stays the live list, led by its leaders, and links the
	// latest edition, saying it is frozen.
	home := s.doc(t, "/")
	if href, _ := home.Find(testid("edition-link")).Attr("href"); href != "/editions/2026-11" || !strings.Contains(home.Find(testid("edition-notice")).Text(), "live list") {
		t.Errorf("home links edition %q: %q", href, home.Find(testid("edition-notice")).Text())
	}
	if home.Find(testid("edition")).Length() != 0 || home.Find(testid("leaders")).Length() != 1 {
		t.Error("home shows the frozen edition, or no leaders, after the freeze")
	}
	page := s.doc(t, "/editions/2026-11/benchmarks/l2-digits-mlp-cpu")
	if got := rowSystems(page); !reflect.DeepEqual(got, []string{"box-a", "box-b", "box-c"}) {
		t.Errorf("edition page lists %v", got)
	}
	if s.doc(t, "/editions").Find(testid("edition")).Length() != 1 {
		t.Error("/editions does not list the edition")
	}
}

func TestExportsRoundTrip(t *testing.T) {
	s := newListServer(t)
	for _, q := range []string{"", "?status=all&rows=all"} {
		var board d5list.Leaderboard
		if err := json.Unmarshal(s.get(t, "/api/v1/leaderboards/l2-digits-mlp-cpu"+q), &board); err != nil {
			t.Fatal(err)
		}
		for _, csvPath := range []string{"/api/v1/leaderboards/l2-digits-mlp-cpu.csv" + q, "/api/v1/leaderboards/l2-digits-mlp-cpu?format=csv" + strings.Replace(q, "?", "&", 1)} {
			body := s.get(t, csvPath)
			entries, err := leaderboard.ReadCSV(bytes.NewReader(body))
			if err != nil {
				t.Fatal(err)
			}
			for i := range board.Entries {
				board.Entries[i].CreatedAt = board.Entries[i].CreatedAt.UTC()
			}
			if !reflect.DeepEqual(entries, board.Entries) {
				t.Errorf("%s: CSV and JSON differ:\ncsv  %+v\njson %+v", csvPath, entries, board.Entries)
			}
			if !strings.Contains(string(body), s.url+"/submissions/") || !strings.Contains(string(body), "https://example.org/box-a") {
				t.Errorf("%s: no submission or code links", csvPath)
			}
		}
	}
}

func TestFeedAndBadge(t *testing.T) {
	s := newListServer(t)
	var feed struct {
		Entries []struct {
			ID    string `xml:"id"`
			Title string `xml:"title"`
		} `xml:"entry"`
	}
	if err := xml.Unmarshal(s.get(t, "/feed.atom"), &feed); err != nil {
		t.Fatal(err)
	}
	if len(feed.Entries) != 3 {
		t.Errorf("feed has %d entries, want the 3 verified ones", len(feed.Entries))
	}
	for _, e := range feed.Entries {
		if strings.Contains(e.Title, "Pending Lab") {
			t.Error("the feed lists a submission that needs review")
		}
	}
	svg := string(s.get(t, "/submissions/"+itoa64(s.ids["box-b"])+"/badge.svg"))
	if !strings.HasPrefix(svg, "<svg") || !strings.Contains(svg, "#2 · 22.0 s") {
		t.Errorf("badge: %s", svg)
	}
	if svg := string(s.get(t, "/submissions/"+itoa64(s.ids["box-p"])+"/badge.svg")); !strings.Contains(svg, "needs_review") {
		t.Errorf("badge of a pending submission: %s", svg)
	}
}

func itoa64(i int64) string { return strconv.FormatInt(i, 10) }

// TestListChartsDrawInECharts hands every chart of a board page to
// static/js/charts.js and the vendored ECharts under Node, as
// TestChartsDrawInECharts does for the other pages.
func TestListChartsDrawInECharts(t *testing.T) {
	draw := newChartDrawer(t)
	s := newListServer(t)
	drawn, onPage := draw(s.doc(t, "/benchmarks/l2-digits-mlp-cpu"))
	if len(drawn) != onPage {
		t.Fatalf("drew %d of %d charts", len(drawn), onPage)
	}
	wants := map[string][]string{
		"ranking-chart":             {"time to train (s)", "#1", "#3", "rank"},
		"pareto-accelerators-chart": {"accelerators (count)"},
		"pareto-cost-chart":         {"price of the system (USD per hour)"},
		"vendor-shares-chart":       {"NVIDIA", "AMD", "CPU only", "share (%)"},
		"framework-shares-chart":    {"torch", "numpy"},
		"accuracy-top10-chart":      {"time since run start (s)"},
	}
	for _, d := range drawn {
		for _, w := range wants[d.ID] {
			if !strings.Contains(d.SVG, w) {
				t.Errorf("%s: the drawing lacks %q", d.ID, w)
			}
		}
		// Entries are named by rank on the axes and legends, in full in
		// tooltips and tables: long names made 50 labels unreadable.
		if (d.ID == "ranking-chart" || d.ID == "accuracy-top10-chart") && strings.Contains(d.SVG, "First Lab") {
			t.Errorf("%s: the drawing writes entry names on the chart", d.ID)
		}
	}
}

// testCPU is the processor the fixtures' systems declare and their runner
// has, so that the re-runs measured their timing.
const testCPU = "AMD EPYC 9654 96-Core Processor"

// completeOnDeclaredHardware gives the next queued job the verdict status,
// as a runner of the declared CPU that measured what was claimed.
func completeOnDeclaredHardware(t *testing.T, db *store.DB, claimed *d5list.Result, status d5list.Status) {
	t.Helper()
	completeOn(t, db, *claimed, testCPU, status)
}

// completeOn gives the next queued job the verdict status, as a runner
// with the CPU cpu that measured measured.
func completeOn(t *testing.T, db *store.DB, measured d5list.Result, cpu string, status d5list.Status) {
	t.Helper()
	ctx := context.Background()
	l, err := db.LeaseJob(ctx, "r1", nil, time.Minute)
	if err != nil || l == nil {
		t.Fatalf("lease: %v %v", l, err)
	}
	measured.Runner = map[string]string{"cpu_model": cpu}
	if err := db.CompleteJob(ctx, l.Job.ID, l.Secret, &measured, status, nil); err != nil {
		t.Fatal(err)
	}
}
