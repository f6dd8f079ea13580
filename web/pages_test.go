package web_test

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/PuerkitoBio/goquery"

	d5list "github.com/deep500/d5list"
	"github.com/deep500/d5list/templates"
)

func parseHTML(t *testing.T, rec *httptest.ResponseRecorder) *goquery.Document {
	t.Helper()
	if ct := rec.Header().Get("Content-Type"); !strings.HasPrefix(ct, "text/html") {
		t.Fatalf("Content-Type %q, want HTML", ct)
	}
	doc, err := goquery.NewDocumentFromReader(rec.Body)
	if err != nil {
		t.Fatal(err)
	}
	return doc
}

func page(t *testing.T, s *server, path string) *goquery.Document {
	t.Helper()
	rec := s.get(path)
	if rec.Code != http.StatusOK {
		t.Fatalf("GET %s: %d\n%s", path, rec.Code, rec.Body)
	}
	return parseHTML(t, rec)
}

func testid(id string) string { return `[data-testid="` + id + `"]` }

func TestHomePageListsLevels(t *testing.T) {
	s := newServer(t, 0)
	doc := page(t, s, "/")
	if strings.TrimSpace(doc.Find(testid("explanation")).Text()) == "" {
		t.Error("home page has no explanation of the list")
	}
	levels := doc.Find(testid("level"))
	wantNames := []string{"Operators", "Network processing", "Training", "Distributed training"}
	if levels.Length() != len(wantNames) {
		t.Fatalf("%d levels, want 4", levels.Length())
	}
	levels.Each(func(i int, l *goquery.Selection) {
		h := l.Find("h2").Text()
		if !strings.Contains(h, "L"+strconv.Itoa(i)) || !strings.Contains(h, wantNames[i]) {
			t.Errorf("level %d heading %q", i, h)
		}
	})
	l2 := levels.Eq(2).Find(testid("benchmark"))
	if l2.Length() != 1 {
		t.Fatalf("L2 lists %d benchmarks, want 1", l2.Length())
	}
	if href, _ := l2.Find(testid("benchmark-link")).Attr("href"); href != "/benchmarks/l2-digits-mlp-cpu" {
		t.Errorf("benchmark link %q", href)
	}
	if c := l2.Find(testid("benchmark-category")).Text(); c != "image-classification" {
		t.Errorf("category %q", c)
	}
	if m := l2.Find(testid("benchmark-metric")).Text(); !strings.Contains(m, "time to train (s)") || !strings.Contains(m, "lower is better") {
		t.Errorf("ranking metric %q", m)
	}
	if levels.Eq(0).Find(testid("benchmark")).Length() != 1 || levels.Eq(1).Find(testid("level-empty")).Length() != 1 {
		t.Error("L0 should list the convolution benchmark and L1 say it is empty")
	}
	// Each benchmark with its leader and how many it ranks, and the newest
	// ranked results (issue 16).
	leader := l2.Find(testid("benchmark-leader"))
	if !strings.Contains(leader.Text(), "First Lab · box-a") || !strings.Contains(leader.Text(), "12.5 s") || leader.Find(`a[href="/submissions/7"]`).Length() != 1 {
		t.Errorf("L2's leader %q, want First Lab's box-a at 12.5 s, linked", leader.Text())
	}
	if n := l2.Find(testid("benchmark-ranked")).Text(); n != "3" {
		t.Errorf("L2 ranks %q entries, want 3", n)
	}
	if l0 := levels.Eq(0).Find(testid("benchmark-leader")).Text(); !strings.Contains(l0, "none yet") {
		t.Errorf("an empty board's leader %q, want none yet", l0)
	}
	if latest := doc.Find(testid("latest-result")); latest.Length() != 3 || !strings.Contains(latest.First().Text(), "rank #1") {
		t.Errorf("%d latest results (%q), want the 3 ranked", latest.Length(), latest.First().Text())
	}
	// The page leads with the boards' leaders and the latest results,
	// before the levels' tables, and lists only boards that have one.
	leaders := doc.Find(testid("leader"))
	if leaders.Length() != 1 || !strings.Contains(leaders.Text(), "First Lab · box-a") || !strings.Contains(leaders.Text(), "12.5 s") {
		t.Errorf("leaders %q, want L2's First Lab box-a at 12.5 s alone", leaders.Text())
	}
	order := doc.Find(`[data-testid="leaders"], [data-testid="latest"], #levels`).Map(func(_ int, s *goquery.Selection) string {
		if id, ok := s.Attr("data-testid"); ok {
			return id
		}
		return "levels"
	})
	if !slices.Equal(order, []string{"leaders", "latest", "levels"}) {
		t.Errorf("the home page's sections in the order %v, want leaders, latest, levels", order)
	}
}

// chartOptions finds a chart container and parses its JSON options block.
func chartOptions(t *testing.T, doc *goquery.Document, id string) map[string]any {
	t.Helper()
	el := doc.Find("#" + id + `[data-chart]`)
	if el.Length() != 1 {
		t.Fatalf("no chart container #%s", id)
	}
	blockID, _ := el.Attr("data-chart")
	block := doc.Find(`script[type="application/json"]#` + blockID)
	if block.Length() != 1 {
		t.Fatalf("chart %s names data block %q, which is not a JSON script", id, blockID)
	}
	var opts map[string]any
	if err := json.Unmarshal([]byte(block.Text()), &opts); err != nil {
		t.Fatalf("chart %s options are not JSON: %v\n%s", id, err, block.Text())
	}
	return opts
}

func axis(t *testing.T, opts map[string]any, key string) map[string]any {
	t.Helper()
	list, ok := opts[key].([]any)
	if !ok || len(list) == 0 {
		t.Fatalf("options have no %s: %v", key, opts[key])
	}
	return list[0].(map[string]any)
}

func TestBenchmarkPage(t *testing.T) {
	s := newServer(t, 0)
	doc := page(t, s, "/benchmarks/l2-digits-mlp-cpu")

	rules := doc.Find(testid("rules"))
	for id, want := range map[string]string{
		"rule-quality":  "accuracy ≥ 0.97:",
		"rule-runs":     "5 runs",
		"rule-ranking":  "time to train (s), lower is better",
		"rule-division": "dataset",
	} {
		if got := rules.Find(testid(id)).Text(); !strings.Contains(got, want) {
			t.Errorf("%s = %q, want it to contain %q", id, got, want)
		}
	}
	if rules.Find(testid("rule-mutable")).Length() != 2 {
		t.Errorf("want the 2 mutable keys listed")
	}

	rows := doc.Find(testid("leaderboard-row"))
	want := rankedEntries()
	if rows.Length() != len(want) {
		t.Fatalf("%d rows, want %d", rows.Length(), len(want))
	}
	rows.Each(func(i int, row *goquery.Selection) {
		e := want[i]
		if got := row.Find(testid("entry-rank")).Text(); got != strconv.Itoa(e.Rank) {
			t.Errorf("row %d rank %q, want %d", i, got, e.Rank)
		}
		if got := row.Find(testid("entry-submitter")).Text(); got != e.Submitter {
			t.Errorf("row %d submitter %q, want %q", i, got, e.Submitter)
		}
		if href, _ := row.Find(testid("entry-link")).Attr("href"); href != "/submissions/"+strconv.FormatInt(e.SubmissionID, 10) {
			t.Errorf("row %d links to %q", i, href)
		}
		if got := row.Find(testid("entry-score")).Text(); !strings.HasSuffix(got, " s") {
			t.Errorf("row %d value %q has no unit", i, got)
		}
	})
	if got := rows.Eq(0).Find(testid("entry-range")).Text(); got != "5 runs: 11.0–14.0 s" {
		t.Errorf("runs range %q", got)
	}
	// The submitter's markup is text, not HTML.
	if rows.Eq(1).Find("b").Length() != 0 {
		t.Error("a submitter name was rendered as HTML")
	}

	opts := chartOptions(t, doc, "leaderboard-chart")
	x, y := axis(t, opts, "xAxis"), axis(t, opts, "yAxis")
	if x["name"] != "time to train (s)" || x["type"] != "value" {
		t.Errorf("value axis %v", x)
	}
	labels, _ := y["data"].([]any)
	if y["type"] != "category" || len(labels) != 3 || !strings.HasPrefix(labels[0].(string), "#1 First Lab") {
		t.Errorf("category axis %v, want the entries best first", y)
	}
	series := opts["series"].([]any)
	data := series[0].(map[string]any)["data"].([]any)
	if len(data) != 3 || data[0].(map[string]any)["value"] != 12.5 {
		t.Errorf("bar data %v", data)
	}
	if tip, _ := opts["tooltip"].(map[string]any); tip == nil || !strings.Contains(tip["formatter"].(string), "{c} s") {
		t.Errorf("tooltip %v, want values with their unit", opts["tooltip"])
	}
}

func TestBenchmarkPageWithoutEntries(t *testing.T) {
	s := newServer(t, 0)
	s.fake.boards["l2-digits-mlp-cpu"].Entries = nil
	doc := page(t, s, "/benchmarks/l2-digits-mlp-cpu")
	if doc.Find(testid("leaderboard-empty")).Length() != 1 || doc.Find(testid("leaderboard-row")).Length() != 0 || doc.Find("[data-chart]").Length() != 0 {
		t.Fatal("an empty board should say so, with no rows and no chart")
	}
}

func TestSubmissionPage(t *testing.T) {
	s := newServer(t, 0)
	sub := verifiedSubmission()
	doc := page(t, s, "/submissions/7")

	badge := doc.Find(testid("status-badge"))
	if badge.Text() != "verified" || !badge.HasClass("status-verified") {
		t.Errorf("badge %q", badge.Text())
	}
	if v := doc.Find(testid("verdict-summary")).Text(); !strings.Contains(v, "5 runs with the submitted seeds") || !strings.Contains(v, templates.FormatValue(sub.Claimed.Score.Value, "s")) {
		t.Errorf("verdict summary %q: want the re-run and the claimed score explained", v)
	}
	if doc.Find("[data-poll-url]").Length() != 0 || doc.Find(`script[src="/static/js/submission.js"]`).Length() != 0 {
		t.Error("a final submission must not poll")
	}
	reason := doc.Find(testid("reason"))
	if reason.Length() != 1 || reason.Find(testid("reason-code")).Text() != "accuracy_mismatch" ||
		!strings.Contains(reason.Find(testid("reason-where")).Text(), "results/result_2.txt, run 2") ||
		!strings.Contains(reason.Find(testid("reason-values")).Text(), "claimed 0.9300, measured 0.9100") {
		t.Errorf("reason %q", reason.Text())
	}

	if on := doc.Find(testid("measured-on")).Text(); !strings.Contains(on, "cpu_model=AMD EPYC, runs=builtin") {
		t.Errorf("measured-on %q: want the labels of the runner that measured it", on)
	}
	claimed, measured := doc.Find(testid("score-claimed")).Text(), doc.Find(testid("score-measured")).Text()
	wantClaimed, wantMeasured := templates.FormatValue(sub.Claimed.Score.Value, "s"), templates.FormatValue(sub.Measured.Score.Value, "s")
	if claimed != wantClaimed || measured != wantMeasured {
		t.Errorf("score claimed %q measured %q, want %q and %q", claimed, measured, wantClaimed, wantMeasured)
	}

	rows := doc.Find(testid("run-row"))
	if rows.Length() != 5 {
		t.Fatalf("%d run rows, want 5", rows.Length())
	}
	row := rows.Eq(1)
	for id, want := range map[string]string{
		"ttt-claimed": "11.0 s", "ttt-measured": "21.0 s",
		"epochs-claimed": "4", "epochs-measured": "4",
		"accuracy-claimed": "0.9760", "accuracy-measured": "0.9760",
	} {
		if got := row.Find(testid(id)).Text(); got != want {
			t.Errorf("run 1 %s = %q, want %q", id, got, want)
		}
	}

	opts := chartOptions(t, doc, "accuracy-chart")
	if name := axis(t, opts, "xAxis")["name"]; name != "time since run start (s)" {
		t.Errorf("x axis %v", name)
	}
	if name := axis(t, opts, "yAxis")["name"]; name != "accuracy (fraction)" {
		t.Errorf("y axis %v", name)
	}
	series := opts["series"].([]any)
	if len(series) != 10 {
		t.Fatalf("%d series, want 5 submitted and 5 re-run", len(series))
	}
	styles := map[string]int{}
	for _, sr := range series {
		m := sr.(map[string]any)
		style := m["lineStyle"].(map[string]any)["type"].(string)
		styles[style]++
		pts := m["data"].([]any)
		if len(pts) != 3 {
			t.Errorf("series %q has %d points", m["name"], len(pts))
			continue
		}
		// A run's two curves share its legend item; each point says whose.
		if whose := pts[0].(map[string]any)["name"]; (whose == "submitted") != (style == "dashed") || !strings.HasPrefix(m["name"].(string), "run ") {
			t.Errorf("series %q of %v points is %s", m["name"], whose, style)
		}
	}
	if styles["dashed"] != 5 || styles["solid"] != 5 {
		t.Errorf("line styles %v", styles)
	}
}

func TestPendingSubmissionPolls(t *testing.T) {
	s := newServer(t, 0)
	doc := page(t, s, "/submissions/8")
	poll := doc.Find("[data-poll-url]")
	if url, _ := poll.Attr("data-poll-url"); url != "/api/v1/submissions/8" {
		t.Fatalf("poll url %q", url)
	}
	if st, _ := poll.Attr("data-status"); st != "queued" {
		t.Errorf("data-status %q", st)
	}
	if doc.Find(`script[src="/static/js/submission.js"]`).Length() != 1 {
		t.Error("pending page does not load the poller")
	}
	if got := doc.Find(testid("score-measured")).Text(); got != "—" {
		t.Errorf("measured score %q before any re-run", got)
	}
	if got := doc.Find(testid("run-row")).First().Find(testid("ttt-measured")).Text(); got != "—" {
		t.Errorf("measured run cell %q before any re-run", got)
	}
}

// TestPagesLoadOnlyLocalScripts is what lets the CSP forbid inline and
// foreign scripts: every script is a /static/ file or a JSON data block.
func TestPagesLoadOnlyLocalScripts(t *testing.T) {
	s := newServer(t, 0)
	for _, path := range []string{"/", "/benchmarks/l2-digits-mlp-cpu", "/submissions/7", "/submissions/8", "/no/such/page"} {
		t.Run(path, func(t *testing.T) {
			rec := s.get(path)
			doc := parseHTML(t, rec)
			doc.Find("script").Each(func(_ int, sc *goquery.Selection) {
				src, hasSrc := sc.Attr("src")
				typ, _ := sc.Attr("type")
				switch {
				case hasSrc && !strings.HasPrefix(src, "/static/"):
					t.Errorf("script from %q", src)
				case hasSrc && strings.TrimSpace(sc.Text()) != "":
					t.Errorf("script %q with inline code", src)
				case !hasSrc && typ != "application/json":
					t.Errorf("inline script of type %q: %.80s", typ, sc.Text())
				}
			})
			doc.Find("[href], [src]").Each(func(_ int, el *goquery.Selection) {
				for _, a := range []string{"href", "src"} {
					if v, ok := el.Attr(a); ok && (strings.Contains(v, "//") || strings.HasPrefix(v, "javascript:")) {
						t.Errorf("%s=%q leaves the portal", a, v)
					}
				}
			})
			doc.Find("*").Each(func(_ int, el *goquery.Selection) {
				if _, ok := el.Attr("style"); ok {
					t.Errorf("inline style on <%s>, which style-src 'self' blocks", goquery.NodeName(el))
				}
			})
			if doc.Find(`link[rel="stylesheet"][href="/static/css/site.css"]`).Length() != 1 {
				t.Error("page does not load /static/css/site.css")
			}
		})
	}
	doc := page(t, s, "/benchmarks/l2-digits-mlp-cpu")
	for _, src := range []string{"/static/vendor/echarts.min.js", "/static/js/charts.js"} {
		if doc.Find(`script[src="`+src+`"]`).Length() != 1 {
			t.Errorf("chart page does not load %s", src)
		}
	}
}

// Each kind of failed verdict tells the competitor what to do next, below
// the findings; a verified entry has no such line (issue 16), nor has any
// entry for a visitor.
func TestSubmissionPageSaysWhatToDoNext(t *testing.T) {
	for _, tt := range []struct {
		name   string
		status d5list.Status
		code   string
		want   string
	}{
		{"re-run failed", d5list.StatusFailed, "rerun_failed", "could not re-run your recipe"},
		{"accuracies", d5list.StatusDiscrepancy, "accuracy_mismatch", "Make each run deterministic"},
		{"seeds", d5list.StatusDiscrepancy, "seed_mismatch", "$D5_GATE hands over"},
		{"timing", d5list.StatusDiscrepancy, "timing_mismatch", "Measure again on that hardware"},
		{"hardware", d5list.StatusNeedsReview, "timing_not_reproduced", "Declare the hardware you ran on"},
		{"rejected", d5list.StatusRejected, "accuracy_mismatch", "An organiser rejected it"},
		{"verified", d5list.StatusVerified, "accuracy_mismatch", ""},
	} {
		t.Run(tt.name, func(t *testing.T) {
			s := newServer(t, 0)
			sub := verifiedSubmission()
			sub.Status, sub.Reasons = tt.status, []d5list.Reason{{Code: tt.code, Message: "a finding"}}
			sub.Published = true // a visitor sees a failed verdict only once published (TestHiddenVerdicts)
			s.fake.submissions[sub.ID] = sub
			if visitor := page(t, s, "/submissions/7").Find(testid("next-step")); visitor.Length() != 0 {
				t.Errorf("a visitor reads %q", visitor.Text())
			}
			req := httptest.NewRequest(http.MethodGet, "/submissions/7", nil)
			req.Header.Set("Authorization", "Bearer d5_alice") // the owner
			next := parseHTML(t, s.do(req)).Find(testid("next-step"))
			if tt.want == "" {
				if next.Length() != 0 {
					t.Fatalf("a verified entry says %q", next.Text())
				}
				return
			}
			if !strings.Contains(next.Text(), "What to do next:") || !strings.Contains(next.Text(), tt.want) {
				t.Fatalf("next step %q, want %q", next.Text(), tt.want)
			}
		})
	}
}
