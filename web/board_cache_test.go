package web_test

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/PuerkitoBio/goquery"

	d5list "github.com/deep500/d5list"
	"github.com/deep500/d5list/handlers"
	"github.com/deep500/d5list/leaderboard"
	"github.com/deep500/d5list/portal"
	"github.com/deep500/d5list/store"
	"github.com/deep500/d5list/web"
)

type answer struct {
	code int
	hd   http.Header
	body []byte
}

// fetch GETs path without the transport's transparent gzip, so that the
// encoding the server chose is what the test sees.
func fetch(t *testing.T, url string, hdr ...string) answer {
	t.Helper()
	req, _ := http.NewRequest(http.MethodGet, url, nil)
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	resp, err := (&http.Client{Transport: &http.Transport{DisableCompression: true}}).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return answer{resp.StatusCode, resp.Header, body}
}

// current GETs url: every answer holds every change committed before the
// request began, so there is nothing to wait for.
func current(t *testing.T, url string, hdr ...string) answer {
	t.Helper()
	return fetch(t, url, hdr...)
}

func (s *listServer) review(t *testing.T, id int64, action d5list.ReviewAction, reason string) {
	t.Helper()
	body, _ := json.Marshal(d5list.ReviewRequest{Action: action, Reason: reason})
	req, _ := http.NewRequest(http.MethodPost, s.url+"/api/v1/submissions/"+strconv.FormatInt(id, 10)+"/review", bytes.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+s.organiser)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	msg, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("review %s of %d: %d %s", action, id, resp.StatusCode, msg)
	}
}

// The board's page, JSON and CSV are served as cached bytes, and a verdict
// (an organiser's review here; a runner's Complete and a rescore mark the
// same cache), or a frozen edition, shows in the first answer of every
// view after it: rendered again for that request (miss), then kept (hit).
func TestBoardCacheFollowsVerdicts(t *testing.T) {
	s := newListServer(t)
	const board = "/benchmarks/l2-digits-mlp-cpu"
	const api = "/api/v1/leaderboards/l2-digits-mlp-cpu"
	paths := []string{board, api, api + ".csv", board + "?framework=torch"}
	first := map[string]answer{}
	for _, p := range paths {
		a := fetch(t, s.url+p)
		if a.code != http.StatusOK || a.hd.Get("ETag") == "" {
			t.Fatalf("GET %s: %d, ETag %q", p, a.code, a.hd.Get("ETag"))
		}
		first[p] = a
		// Served again: the same bytes, and a revalidation costs nothing.
		if b := fetch(t, s.url+p); !bytes.Equal(a.body, b.body) || a.hd.Get("ETag") != b.hd.Get("ETag") {
			t.Errorf("GET %s twice gave different answers", p)
		}
		if nm := fetch(t, s.url+p, "If-None-Match", a.hd.Get("ETag")); nm.code != http.StatusNotModified {
			t.Errorf("GET %s with its ETag: %d, want 304", p, nm.code)
		}
	}
	// The gzip encoding is the same bytes, under its own ETag.
	gz := fetch(t, s.url+board, "Accept-Encoding", "gzip")
	if gz.hd.Get("Content-Encoding") != "gzip" || gz.hd.Get("ETag") == first[board].hd.Get("ETag") {
		t.Fatalf("gzip answer: encoding %q, ETag %q", gz.hd.Get("Content-Encoding"), gz.hd.Get("ETag"))
	}
	zr, err := gzip.NewReader(bytes.NewReader(gz.body))
	if err != nil {
		t.Fatal(err)
	}
	if plain, _ := io.ReadAll(zr); !bytes.Equal(plain, first[board].body) {
		t.Error("the gzip encoding is not the page")
	}
	if vary := strings.Join(first[board].hd.Values("Vary"), ","); !strings.Contains(vary, "Cookie") || !strings.Contains(vary, "Accept-Encoding") {
		t.Errorf("the cached page varies by %q, want Cookie and Accept-Encoding", vary)
	}
	if strings.Contains(string(first[board].body), "box-p") || strings.Contains(string(first[api].body), "box-p") {
		t.Fatal("box-p (needs review) is on the public board before its review")
	}

	// Accepting box-p, the fastest, puts it first in the first answer of
	// every view after the review (the torch-only page does not list it,
	// a jax system).
	s.review(t, s.ids["box-p"], d5list.ActionAccept, "")
	for _, p := range paths {
		a := fetch(t, s.url+p)
		listed := strings.Contains(string(a.body), "box-p")
		if strings.HasPrefix(p, board) {
			listed = slices.Contains(rowSystems(parseDoc(t, a.body)), "box-p")
		}
		if a.hd.Get("X-D5-Board-Cache") != "miss" || listed == strings.Contains(p, "framework") {
			t.Fatalf("the first GET %s after accepting box-p: %q, box-p listed: %v", p, a.hd.Get("X-D5-Board-Cache"), listed)
		}
		if b := fetch(t, s.url+p); b.hd.Get("X-D5-Board-Cache") != "hit" || !bytes.Equal(a.body, b.body) {
			t.Fatalf("the second GET %s after accepting box-p: %q, want the first's answer, kept", p, b.hd.Get("X-D5-Board-Cache"))
		}
	}
	var live d5list.Leaderboard
	if err := json.Unmarshal(current(t, s.url+api).body, &live); err != nil {
		t.Fatal(err)
	}
	if len(live.Entries) != 4 || live.Entries[0].SystemName != "box-p" {
		t.Fatalf("JSON after accepting box-p: %+v", live.Entries)
	}
	if got := rowSystems(s.currentDoc(t, board)); len(got) != 4 || got[0] != "box-p" {
		t.Errorf("page after accepting box-p lists %v", got)
	}
	if csv := string(current(t, s.url+api+".csv").body); !strings.Contains(csv, "box-p") {
		t.Errorf("CSV after accepting box-p:\n%s", csv)
	}
	// (The torch-only page does not list box-p, a jax system: it is the
	// same page, and its old ETag still matches.)
	for _, p := range paths[:3] {
		if a := fetch(t, s.url+p, "If-None-Match", first[p].hd.Get("ETag")); a.code != http.StatusOK {
			t.Errorf("GET %s with the old ETag after the verdict: %d, want 200", p, a.code)
		}
	}

	// Rejecting box-a takes it off.
	s.review(t, s.ids["box-a"], d5list.ActionReject, "the re-run did not converge")
	if got := rowSystems(s.currentDoc(t, board)); len(got) != 3 || got[0] != "box-p" || got[1] != "box-b" {
		t.Errorf("page after rejecting box-a lists %v", got)
	}
	if strings.Contains(string(current(t, s.url+board+"?framework=torch").body), "box-a") {
		t.Error("a filtered page still lists the rejected box-a")
	}

	// Freezing an edition changes the live page (its edition link).
	if strings.Contains(string(current(t, s.url+board).body), `data-testid="edition-link"`) {
		t.Fatal("edition link before any edition")
	}
	if code := s.freeze(t, "2026-11", s.organiser); code != http.StatusCreated {
		t.Fatalf("freezing: %d", code)
	}
	if !strings.Contains(string(current(t, s.url+board).body), `data-testid="edition-link"`) {
		t.Error("the live page has no edition link once rendered again after the freeze")
	}
}

// A session's page carries its name and CSRF token; the cached page is for
// visitors only, so neither reaches anyone else.
func TestBoardCacheKeepsSessionsApart(t *testing.T) {
	p := startReal(t)
	const board = "/benchmarks/l2-digits-mlp-cpu"
	anon := p.login(t, "")
	before := anon.get(t, board)
	comp, org := p.login(t, "competitor"), p.login(t, "organiser")
	for _, c := range []struct {
		c    *client
		name string
	}{{comp, "competitor-user"}, {org, "organiser-user"}, {comp, "competitor-user"}} {
		page := c.c.get(t, board)
		m := csrfMeta.FindStringSubmatch(page)
		if m == nil || m[1] != c.c.csrf || !strings.Contains(page, c.name) {
			t.Errorf("%s's page lacks its own name or CSRF token", c.name)
		}
		for _, other := range []*client{comp, org} {
			if other != c.c && strings.Contains(page, other.csrf) {
				t.Errorf("%s's page carries another session's CSRF token", c.name)
			}
		}
	}
	after := anon.get(t, board)
	if after != before {
		t.Error("the visitors' page changed after sessions looked at it")
	}
	for _, leak := range []string{"csrf-token", "competitor-user", "organiser-user", comp.csrf, org.csrf} {
		if strings.Contains(after, leak) {
			t.Errorf("the visitors' page contains %q", leak)
		}
	}
}

// changeMidRender is the portal with a change committed in the middle of
// the next rendering of a board page once armed: after the page's rows
// are read and before its summary (charts, filter choices) is.
type changeMidRender struct {
	*portal.Service
	change atomic.Pointer[func()]
}

func (s *changeMidRender) BoardSummary(ctx context.Context, benchmarkID string, unverified bool) (*leaderboard.Summary, error) {
	if change := s.change.Swap(nil); change != nil {
		(*change)()
	}
	return s.Service.BoardSummary(ctx, benchmarkID, unverified)
}

// A page whose rendering a change overtakes (a verdict, an edition
// frozen) is all of before the change, not rows of before and charts or
// edition link of after; it is answered to the request it was rendered
// for, which began before the change, and not kept: the first request
// after the change gets a page all of after.
func TestBoardAnswerIsOfOneMoment(t *testing.T) {
	const board = "/benchmarks/l2-digits-mlp-cpu"
	for _, c := range []struct {
		name   string
		change func(t *testing.T, s *listServer)
		shows  string // in the page once it shows the change, nowhere before
		rows   []string
	}{
		{"verdict", func(t *testing.T, s *listServer) { s.review(t, s.ids["box-p"], d5list.ActionAccept, "") },
			"box-p", []string{"box-p", "box-a", "box-b", "box-c"}},
		{"edition", func(t *testing.T, s *listServer) {
			if code := s.freeze(t, "2026-11", s.organiser); code != http.StatusCreated {
				t.Fatalf("freezing: %d", code)
			}
		}, `data-testid="edition-link"`, []string{"box-a", "box-b", "box-c"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			var svc *changeMidRender
			s := newListServerWith(t, func(p *portal.Service) handlers.Service {
				svc = &changeMidRender{Service: p}
				return svc
			})
			change := func() { c.change(t, s) }
			svc.change.Store(&change)

			first := fetch(t, s.url+board)
			if svc.change.Load() != nil {
				t.Fatal("the page was rendered without its summary")
			}
			if cache := first.hd.Get("X-D5-Board-Cache"); first.code != http.StatusOK || cache != "miss" {
				t.Fatalf("first GET: %d, %q; want 200, miss", first.code, cache)
			}
			if got := rowSystems(parseDoc(t, first.body)); !reflect.DeepEqual(got, []string{"box-a", "box-b", "box-c"}) {
				t.Fatalf("the page rendered across the change lists %v, want box-a, box-b, box-c", got)
			}
			if strings.Contains(string(first.body), c.shows) {
				t.Fatalf("the page rendered across the change has %s, from after it", c.shows)
			}

			after := fetch(t, s.url+board)
			if after.hd.Get("X-D5-Board-Cache") != "miss" {
				t.Fatalf("the first GET after the change: %q, want a new rendering", after.hd.Get("X-D5-Board-Cache"))
			}
			if got := rowSystems(parseDoc(t, after.body)); !reflect.DeepEqual(got, c.rows) {
				t.Errorf("the page rendered after the change lists %v, want %v", got, c.rows)
			}
			if !strings.Contains(string(after.body), c.shows) {
				t.Errorf("the page rendered after the change has no %s", c.shows)
			}
		})
	}
}

// summaryCounter is the portal counting the board summaries it reads.
type summaryCounter struct {
	*portal.Service
	summaries atomic.Int64
}

func (s *summaryCounter) BoardSummary(ctx context.Context, benchmarkID string, unverified bool) (*leaderboard.Summary, error) {
	s.summaries.Add(1)
	return s.Service.BoardSummary(ctx, benchmarkID, unverified)
}

// The views of one board (filters, orders, pages) share its charts, made
// by the first view rendered after a change and by no other; the first
// view rendered after the next change, whichever, shows that change in
// its charts too.
func TestBoardViewsShareTheirChartsUntilAChange(t *testing.T) {
	const board = "/benchmarks/l2-digits-mlp-cpu"
	var svc *summaryCounter
	s := newListServerWith(t, func(p *portal.Service) handlers.Service {
		svc = &summaryCounter{Service: p}
		return svc
	})
	charts := func(path string) string {
		t.Helper()
		a := fetch(t, s.url+path)
		if a.code != http.StatusOK || a.hd.Get("X-D5-Board-Cache") != "miss" {
			t.Fatalf("GET %s: %d, %q; want 200, a new rendering", path, a.code, a.hd.Get("X-D5-Board-Cache"))
		}
		html, err := parseDoc(t, a.body).Find(`[data-testid="charts"]`).Html()
		if err != nil || html == "" {
			t.Fatalf("GET %s: no charts (%v)", path, err)
		}
		return html
	}
	first := charts(board)
	if n := svc.summaries.Load(); n != 1 {
		t.Fatalf("the first view read %d summaries, want 1", n)
	}
	for _, view := range []string{"?division=closed", "?sort=date", "?q=box"} {
		if got := charts(board + view); got != first {
			t.Errorf("%s has other charts than the board:\n%s\nagainst\n%s", view, got, first)
		}
	}
	if n := svc.summaries.Load(); n != 1 {
		t.Errorf("four views of one moment read %d summaries, want 1", n)
	}
	if strings.Contains(first, "box-p") {
		t.Fatal("the charts show box-p before it was accepted")
	}
	s.review(t, s.ids["box-p"], d5list.ActionAccept, "")
	after := charts(board + "?framework=torch")
	if !strings.Contains(after, "box-p") {
		t.Error("the first view after box-p was accepted has charts without it")
	}
	if n := svc.summaries.Load(); n != 2 {
		t.Errorf("the first view after a change read %d summaries in all, want 2", n)
	}
}

// A commit by another process on the data folder (d5list admin, a script,
// a second portal) tells this portal nothing, yet every request that
// starts after it holds it: the warmed boards are kept (the first GET is
// a hit), then an organiser's accept written through a store of its own
// is on the next GET of the page and the export, and so is an edition
// that other process froze, on the board page's edition link.
func TestAnotherProcessesCommitsAreSeen(t *testing.T) {
	const board = "/benchmarks/l2-digits-mlp-cpu"
	ctx := context.Background()
	s := newListServer(t)
	if err := web.WarmBoards(ctx, web.Config{}, s.svc, nil, []string{"l2-digits-mlp-cpu"}); err != nil {
		t.Fatal(err)
	}
	for _, path := range []string{board, "/api/v1/leaderboards/l2-digits-mlp-cpu"} {
		if warm := fetch(t, s.url+path); warm.code != http.StatusOK || warm.hd.Get("X-D5-Board-Cache") != "hit" {
			t.Fatalf("the first GET of %s after the warming: %d, %q; want 200, the warming's answer", path, warm.code, warm.hd.Get("X-D5-Board-Cache"))
		}
	}
	other, err := store.Open(ctx, s.db.Dir())
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	olga := &d5list.User{Name: "olga", Role: d5list.RoleOrganiser}
	if _, err := other.ApplyReview(ctx, d5list.ReviewChange{SubmissionID: s.ids["box-p"], Actor: olga, Action: d5list.ActionAccept,
		FromStatus: d5list.StatusNeedsReview, ToStatus: d5list.StatusVerified}); err != nil {
		t.Fatal(err)
	}
	for _, path := range []string{board, "/api/v1/leaderboards/l2-digits-mlp-cpu"} {
		first := fetch(t, s.url+path)
		if first.code != http.StatusOK || first.hd.Get("X-D5-Board-Cache") != "miss" || !strings.Contains(string(first.body), "box-p") {
			t.Errorf("the first GET of %s after another process accepted box-p: %d, %q, box-p shown %t; want 200, a rendering that shows it",
				path, first.code, first.hd.Get("X-D5-Board-Cache"), strings.Contains(string(first.body), "box-p"))
		}
	}
	if _, err := portal.New(other, nil, portal.Config{}, nil).FreezeEdition(ctx, olga, "2026-12"); err != nil {
		t.Fatal(err)
	}
	page := fetch(t, s.url+board)
	doc, err := goquery.NewDocumentFromReader(bytes.NewReader(page.body))
	if err != nil {
		t.Fatal(err)
	}
	if link := doc.Find(`[data-testid="edition-link"]`).Text(); link != "2026-12" {
		t.Errorf("the board page after another process froze 2026-12 links edition %q", link)
	}
	if err := web.WarmBoards(ctx, web.Config{}, s.svc, nil, []string{"no-such-benchmark"}); err == nil {
		t.Error("warming a board that does not exist succeeded")
	}
}
