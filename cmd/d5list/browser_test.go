package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto/input"
	"github.com/chromedp/chromedp"

	"github.com/deep500/d5list/internal/browsertest"
	"github.com/deep500/d5list/internal/slowtest"

	d5list "github.com/deep500/d5list"
	"github.com/deep500/d5list/store"
)

// browser is a headless Chromium with a fresh profile; shot saves a
// screenshot under dir.
type browser struct {
	t   *testing.T
	ctx context.Context
	dir string
}

func newBrowser(t *testing.T, timeout time.Duration) *browser {
	t.Helper()
	ctx := browsertest.Start(t, timeout, chromedp.WindowSize(1200, 900))
	dir := os.Getenv("D5LIST_ARTEFACTS")
	if dir == "" {
		var err error
		if dir, err = os.MkdirTemp("", "d5list-browser-"); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	return &browser{t: t, ctx: ctx, dir: dir}
}

// shot saves a full-page screenshot named name.png and returns its path.
func (b *browser) shot(name string) string {
	var png []byte
	ctx, cancel := context.WithTimeout(b.ctx, 10*time.Second)
	defer cancel()
	if err := chromedp.Run(ctx, chromedp.FullScreenshot(&png, 100)); err != nil {
		b.t.Logf("screenshot %s: %v", name, err)
		return ""
	}
	path := filepath.Join(b.dir, name+".png")
	if err := os.WriteFile(path, png, 0o644); err != nil {
		b.t.Logf("screenshot %s: %v", name, err)
		return ""
	}
	return path
}

// step runs actions and, when they fail, saves a screenshot and fails
// the test naming it. With D5LIST_SCREENSHOTS set, every step is kept.
func (b *browser) step(name string, actions ...chromedp.Action) {
	b.t.Helper()
	if err := chromedp.Run(b.ctx, actions...); err != nil {
		var url string
		_ = chromedp.Run(b.ctx, chromedp.Location(&url))
		b.t.Fatalf("browser step %q failed at %s: %v; screenshot %s", name, url, err, b.shot("failed-"+name))
	}
	if os.Getenv("D5LIST_SCREENSHOTS") != "" {
		b.shot(name)
	}
}

// packBundle writes dir as a tar.gz with the pack command.
func packBundle(t *testing.T, dir, out string) {
	t.Helper()
	if err := run(context.Background(), []string{"pack", dir, "-o", out}, io.Discard, io.Discard); err != nil {
		t.Fatalf("pack %s: %v", dir, err)
	}
}

// TestBrowser drives a real headless Chromium through the portal: sign up
// and log in, upload a bundle with the progress bar, watch the verdict
// arrive without a reload, see the entry and its drawn chart on the
// leaderboard, and, as an organiser, accept a discrepancy.
func TestBrowser(t *testing.T) {
	slowtest.Require(t, "a minute and more of both cores: a browser walks sign-up, uploads, two re-runs and every page")
	b := newBrowser(t, 150*time.Second)
	p := startPortal(t, 1)
	ctx := context.Background()

	// One honest digits submission and a copy with a raised accuracy,
	// which the re-run finds out.
	work := t.TempDir()
	honest := filepath.Join(work, "honest")
	if err := run(ctx, []string{"init", "l2-digits-mlp-cpu", honest, "--submitter", "Carol Lab"}, io.Discard, io.Discard); err != nil {
		t.Fatalf("init: %v", err)
	}
	if err := run(ctx, []string{"run", honest}, io.Discard, io.Discard); err != nil {
		t.Fatalf("run: %v", err)
	}
	tampered := filepath.Join(work, "tampered")
	copyDir(t, honest, tampered)
	raiseFirstAccuracy(t, filepath.Join(tampered, "results", "result_2.txt"))
	bundlePath := filepath.Join(work, "honest.tar.gz")
	packBundle(t, honest, bundlePath)

	// An organiser with a password, made the way an operator would.
	db, err := store.Open(ctx, p.data)
	if err != nil {
		t.Fatal(err)
	}
	olga, err := db.EnsureUser(ctx, "olga", d5list.RoleOrganiser)
	if err == nil {
		err = db.SetPassword(ctx, olga.ID, "organiser password")
	}
	db.Close()
	if err != nil {
		t.Fatal(err)
	}

	// 1. Sign up, log out, log in.
	var who string
	b.step("signup",
		chromedp.Navigate(p.url+"/signup"),
		chromedp.SendKeys(`[data-testid="signup-name"]`, "carol", chromedp.ByQuery),
		chromedp.SendKeys(`[data-testid="signup-password"]`, "carol's long password", chromedp.ByQuery),
		chromedp.Click(`[data-testid="signup-submit"]`, chromedp.ByQuery),
		chromedp.WaitVisible(`[data-testid="upload-form"]`, chromedp.ByQuery),
		chromedp.Click(`[data-testid="logout"]`, chromedp.ByQuery),
		chromedp.WaitVisible(`[data-testid="nav-login"]`, chromedp.ByQuery),
	)
	b.step("login",
		chromedp.Navigate(p.url+"/upload"),
		chromedp.WaitVisible(`[data-testid="login-form"]`, chromedp.ByQuery),
		chromedp.SendKeys(`[data-testid="login-name"]`, "carol", chromedp.ByQuery),
		chromedp.SendKeys(`[data-testid="login-password"]`, "carol's long password", chromedp.ByQuery),
		chromedp.Click(`[data-testid="login-submit"]`, chromedp.ByQuery),
		chromedp.WaitVisible(`[data-testid="upload-form"]`, chromedp.ByQuery),
		chromedp.Text(`[data-testid="nav-account"]`, &who, chromedp.ByQuery),
	)
	if who != "carol" {
		t.Fatalf("after log-in the header names %q, want carol", who)
	}

	// 1b. An MLPerf result folder checked in the browser gets the answer
	// of check --mlperf: accepted, with the score MLPerf publishes.
	if folder := "../../../shared/peer-data/mlperf-rounds/v4.1-cisco-ssd"; dirExists(folder) {
		archive := filepath.Join(work, "v4.1-cisco-ssd.tar.gz")
		if err := os.WriteFile(archive, tarGzFolder(t, folder, "v4.1-cisco-ssd"), 0o644); err != nil {
			t.Fatal(err)
		}
		var accepted, score string
		var compliant int
		b.step("mlperf-check",
			chromedp.Click(`[data-testid="nav-mlperf"]`, chromedp.ByQuery),
			chromedp.WaitVisible(`[data-testid="mlperf-form"]`, chromedp.ByQuery),
			chromedp.SetUploadFiles(`#mlperf-file`, []string{archive}, chromedp.ByQuery),
			chromedp.WaitEnabled(`[data-testid="mlperf-submit"]`, chromedp.ByQuery),
			chromedp.Click(`[data-testid="mlperf-submit"]`, chromedp.ByQuery),
			chromedp.WaitVisible(`[data-testid="mlperf-verdict"]`, chromedp.ByQuery),
			chromedp.AttributeValue(`[data-testid="mlperf-verdict"]`, "data-accepted", &accepted, nil, chromedp.ByQuery),
			chromedp.Text(`[data-testid="mlperf-score"]`, &score, chromedp.ByQuery),
			chromedp.Evaluate(`document.querySelectorAll('[data-testid="mlperf-run"][data-compliant="true"]').length`, &compliant),
		)
		if accepted != "true" || !strings.Contains(score, "36.271 minutes") || compliant != 5 {
			t.Fatalf("the MLPerf check page shows accepted=%q, %q, %d compliant runs; check --mlperf says accepted, 36.271 minutes, 5", accepted, score, compliant)
		}
	}

	// 1c. A whole submission tree of a real round (v1.0 Graphcore: three
	// systems, one of whose folders the round's package checker refuses)
	// uploaded as one archive gets the answer of check --mlperf on the
	// tree: its verdict, each benchmark folder's with its score, and the
	// summary table, where the refused folder's score is marked.
	{
		tree := filepath.Join(mlperfTestdata, "v1.0", "Graphcore")
		var cli bytes.Buffer
		_ = run(ctx, []string{"check", "--mlperf", "--json", tree}, &cli, io.Discard)
		var want struct {
			Accepted   bool `json:"accepted"`
			Benchmarks []struct {
				Folder   string   `json:"folder"`
				Accepted bool     `json:"accepted"`
				Minutes  *float64 `json:"minutes"`
			} `json:"benchmarks"`
			Summary []struct {
				System  string   `json:"system"`
				Refused []string `json:"refused"`
			} `json:"summary"`
		}
		if err := json.Unmarshal(cli.Bytes(), &want); err != nil || len(want.Benchmarks) == 0 {
			t.Fatalf("check --mlperf --json %s: %v\n%s", tree, err, cli.String())
		}
		archive := filepath.Join(work, "Graphcore.tar.gz")
		if err := os.WriteFile(archive, tarGzFolder(t, tree, "Graphcore"), 0o644); err != nil {
			t.Fatal(err)
		}
		var accepted, refusedNote string
		var rows, summary [][]string
		b.step("mlperf-tree",
			chromedp.Navigate(p.url+"/mlperf"),
			chromedp.WaitVisible(`[data-testid="mlperf-form"]`, chromedp.ByQuery),
			chromedp.SetValue(`#mlperf-round`, "1.0", chromedp.ByQuery),
			chromedp.SetUploadFiles(`#mlperf-file`, []string{archive}, chromedp.ByQuery),
			chromedp.WaitEnabled(`[data-testid="mlperf-submit"]`, chromedp.ByQuery),
			chromedp.Click(`[data-testid="mlperf-submit"]`, chromedp.ByQuery),
			chromedp.WaitVisible(`[data-testid="mlperf-summary"]`, chromedp.ByQuery),
			chromedp.AttributeValue(`[data-testid="mlperf-verdict"]`, "data-accepted", &accepted, nil, chromedp.ByQuery),
			chromedp.Evaluate(`Array.from(document.querySelectorAll('[data-testid="mlperf-benchmark"]')).map(function (r) { return [r.dataset.folder, r.dataset.accepted, r.cells[4].textContent]; })`, &rows),
			chromedp.Evaluate(`Array.from(document.querySelectorAll('[data-testid="mlperf-summary-row"]')).map(function (r) { return [r.dataset.system, r.cells[3].textContent]; })`, &summary),
			chromedp.Evaluate(`(document.querySelector('[data-testid="mlperf-refused-scores"]') || {}).textContent || ''`, &refusedNote),
		)
		if accepted != strconv.FormatBool(want.Accepted) || len(rows) != len(want.Benchmarks) || len(summary) != len(want.Summary) {
			t.Fatalf("the MLPerf page shows a tree accepted=%q with %d benchmark rows and %d summary rows; check --mlperf says %v, %d, %d", accepted, len(rows), len(summary), want.Accepted, len(want.Benchmarks), len(want.Summary))
		}
		for i, w := range want.Benchmarks {
			minutes := "-"
			if w.Minutes != nil {
				minutes = fmt.Sprintf("%.3f", *w.Minutes)
			}
			if got := rows[i]; got[0] != w.Folder || got[1] != strconv.FormatBool(w.Accepted) || got[2] != minutes {
				t.Errorf("benchmark row %v; check --mlperf: %s accepted=%v %s minutes", got, w.Folder, w.Accepted, minutes)
			}
		}
		marked := 0
		for i, w := range want.Summary {
			if got := summary[i]; got[0] != w.System || strings.HasSuffix(got[1], " (refused)") != (len(w.Refused) > 0) {
				t.Errorf("summary row %v; check --mlperf: %s, refused %v", got, w.System, w.Refused)
			}
			marked += len(w.Refused)
		}
		if marked != 1 || !strings.Contains(refusedNote, "not a compliant result") {
			t.Errorf("%d refused scores in the summary (want 1, IPU-POD64's closed bert), note %q", marked, refusedNote)
		}
	}

	// 2. Upload through the page; every progress text is recorded in
	// sessionStorage, which outlives the move to the submission page.
	var progress []string
	var subURL string
	b.step("upload",
		chromedp.Navigate(p.url+"/upload"),
		chromedp.WaitVisible(`[data-testid="upload-form"]`, chromedp.ByQuery),
		chromedp.Evaluate(`(function(){
			sessionStorage.setItem('progress', '[]');
			var t = document.getElementById('progress-text');
			new MutationObserver(function(){
				var a = JSON.parse(sessionStorage.getItem('progress')); a.push(t.textContent);
				sessionStorage.setItem('progress', JSON.stringify(a));
			}).observe(t, {childList: true, characterData: true, subtree: true});
		})()`, nil),
		chromedp.SetUploadFiles(`#bundle-file`, []string{bundlePath}, chromedp.ByQuery),
		chromedp.WaitEnabled(`[data-testid="upload-submit"]`, chromedp.ByQuery),
		chromedp.Click(`[data-testid="upload-submit"]`, chromedp.ByQuery),
		chromedp.WaitVisible(`[data-testid="submission"]`, chromedp.ByQuery),
		chromedp.Evaluate(`JSON.parse(sessionStorage.getItem('progress'))`, &progress),
		chromedp.Location(&subURL),
	)
	info, _ := os.Stat(bundlePath)
	if len(progress) == 0 || !strings.HasSuffix(progress[len(progress)-1], "(100%)") || !strings.Contains(progress[len(progress)-1], " / ") {
		t.Fatalf("progress texts %q, want bytes and a percentage ending at 100%% (bundle %d bytes)", progress, info.Size())
	}
	t.Logf("progress texts: %q; submission at %s", progress, subURL)
	var id int64
	if _, err := fmt.Sscanf(subURL[strings.LastIndex(subURL, "/")+1:], "%d", &id); err != nil {
		t.Fatalf("submission URL %q: %v", subURL, err)
	}

	// 3. The verdict arrives without a reload: a mark left on the window
	// survives only if the page was never loaded again.
	// While it runs, the re-run's log tail grows in place (the event
	// stream): lines are counted whenever the page changes before the
	// verdict.
	var mark string
	var status string
	var liveLines int
	b.step("verdict",
		chromedp.Evaluate(`window.d5mark = 'same page'; window.d5live = 0;
			new MutationObserver(function(){
				var s = document.querySelector('[data-testid="submission"]');
				if (s && !/verified|discrepancy|rejected|failed|needs_review/.test(s.getAttribute('data-status'))) {
					window.d5live = Math.max(window.d5live, document.querySelectorAll('[data-testid="log-tail"] [data-testid="log-line"]').length);
				}
			}).observe(document.body, {childList: true, subtree: true, attributes: true});`, nil),
		chromedp.WaitVisible(`[data-testid="status-badge"].status-verified`, chromedp.ByQuery),
		chromedp.Evaluate(`window.d5live`, &liveLines),
		chromedp.Evaluate(`window.d5mark || 'reloaded'`, &mark),
		// One script: the live update may replace the badge's node between
		// finding it and reading it.
		chromedp.Evaluate(`document.querySelector('[data-testid="status-badge"]').textContent`, &status),
		chromedp.WaitVisible(`[data-testid="score-measured"]`, chromedp.ByQuery),
	)
	if mark != "same page" {
		t.Fatalf("the submission page reloaded (%q) instead of updating in place", mark)
	}
	if liveLines == 0 {
		t.Errorf("no log line appeared on the submission page before the verdict")
	}
	t.Logf("%d log lines shown live before the verdict", liveLines)
	if !strings.EqualFold(strings.TrimSpace(status), "verified") {
		t.Fatalf("status badge %q, want verified", status)
	}

	// 3b. The same bundle uploaded again lands on the entry it made, which
	// says so, instead of making a second one.
	var againURL string
	b.step("upload-again",
		chromedp.Navigate(p.url+"/upload"),
		chromedp.WaitVisible(`[data-testid="upload-form"]`, chromedp.ByQuery),
		chromedp.SetUploadFiles(`#bundle-file`, []string{bundlePath}, chromedp.ByQuery),
		chromedp.WaitEnabled(`[data-testid="upload-submit"]`, chromedp.ByQuery),
		chromedp.Click(`[data-testid="upload-submit"]`, chromedp.ByQuery),
		chromedp.WaitVisible(`[data-testid="repeated-upload"]`, chromedp.ByQuery),
		chromedp.Location(&againURL),
	)
	if againURL != subURL+"?repeated=1" {
		t.Fatalf("the same bundle uploaded again landed on %s, want %s?repeated=1", againURL, subURL)
	}

	// 4. The tampered copy goes in as a folder. Dropped on the drop zone,
	// the page walks the folder's entries; through the folder picker,
	// Chromium expands a directory set on a webkitdirectory input into its
	// files, with their paths, as a user's pick would. Both must name the
	// folder and count its files; the picked one is uploaded.
	wantChosen := fmt.Sprintf("tampered: %d files", countFiles(t, tampered))
	var dropped string
	var x, y float64
	zoneCentre := `(function(axis){var r = document.getElementById('dropzone').getBoundingClientRect();
		return axis === 'x' ? r.x + r.width/2 : r.y + r.height/2;})`
	drag := &input.DragData{Files: []string{tampered}, DragOperationsMask: 1}
	b.step("drop-folder",
		chromedp.Navigate(p.url+"/upload"),
		chromedp.WaitVisible(`[data-testid="upload-form"]`, chromedp.ByQuery),
		chromedp.Evaluate(zoneCentre+`('x')`, &x),
		chromedp.Evaluate(zoneCentre+`('y')`, &y),
		chromedp.ActionFunc(func(ctx context.Context) error {
			for _, typ := range []input.DispatchDragEventType{input.DragEnter, input.DragOver, input.Drop} {
				if err := input.DispatchDragEvent(typ, x, y, drag).Do(ctx); err != nil {
					return err
				}
			}
			return nil
		}),
		chromedp.WaitEnabled(`[data-testid="upload-submit"]`, chromedp.ByQuery),
		chromedp.Text(`#chosen`, &dropped, chromedp.ByQuery),
	)
	if !strings.HasPrefix(dropped, wantChosen) {
		t.Fatalf("the page shows %q for the dropped folder, want it to start with %q", dropped, wantChosen)
	}
	var chosenFolder, folderURL string
	b.step("upload-folder",
		chromedp.Navigate(p.url+"/upload"),
		chromedp.WaitVisible(`[data-testid="upload-form"]`, chromedp.ByQuery),
		chromedp.SetUploadFiles(`[data-testid="folder-files"]`, []string{tampered}, chromedp.ByQuery),
		chromedp.WaitEnabled(`[data-testid="upload-submit"]`, chromedp.ByQuery),
		chromedp.Text(`#chosen`, &chosenFolder, chromedp.ByQuery),
		chromedp.Click(`[data-testid="upload-submit"]`, chromedp.ByQuery),
		chromedp.WaitVisible(`[data-testid="submission"]`, chromedp.ByQuery),
		chromedp.Location(&folderURL),
	)
	if !strings.HasPrefix(chosenFolder, wantChosen) {
		t.Fatalf("the page shows %q for the chosen folder, want it to start with %q", chosenFolder, wantChosen)
	}
	var tamperedID int64
	if _, err := fmt.Sscanf(folderURL[strings.LastIndex(folderURL, "/")+1:], "%d", &tamperedID); err != nil || tamperedID == id {
		t.Fatalf("folder upload landed on %q (%v), want a new submission", folderURL, err)
	}

	// 5. The leaderboard lists Carol Lab; its charts are the other tab,
	// hidden until it is chosen, and then drawn to their size.
	var board string
	var inked int
	var chartsHidden, rankingHidden bool
	b.step("leaderboard",
		chromedp.Navigate(p.url+"/benchmarks/l2-digits-mlp-cpu"),
		chromedp.WaitVisible(`[data-testid="tab-charts"]`, chromedp.ByQuery),
		chromedp.Text(`body`, &board, chromedp.ByQuery),
		chromedp.Evaluate(`document.getElementById('charts').hidden`, &chartsHidden),
	)
	if !chartsHidden {
		t.Fatal("the board opens with its charts shown beside the ranking, want the ranking tab alone")
	}
	b.step("leaderboard-charts",
		chromedp.Click(`[data-testid="tab-charts"]`, chromedp.ByQuery),
		chromedp.WaitVisible(`[data-chart] canvas`, chromedp.ByQuery),
		chromedp.Evaluate(`document.getElementById('ranking').hidden`, &rankingHidden),
		chromedp.Poll(`(function(){
			var c = document.querySelector('[data-chart] canvas');
			var d = c.getContext('2d').getImageData(0, 0, c.width, c.height).data, n = 0;
			for (var i = 3; i < d.length; i += 4) { if (d[i] !== 0) { n++; } }
			return n > 500 ? n : false;
		})()`, &inked, chromedp.WithPollingTimeout(15*time.Second)),
	)
	if !strings.Contains(board, "Carol Lab") {
		t.Fatalf("leaderboard does not list Carol Lab:\n%s", board)
	}
	if !rankingHidden {
		t.Error("the charts tab shows the ranking too")
	}
	t.Logf("chart canvas has %d painted pixels", inked)

	// 6. The organiser accepts the discrepancy of the folder upload from
	// the console.
	p.waitFinal(t, tamperedID)
	row := fmt.Sprintf(`[data-testid="review-row"][data-id="%d"]`, tamperedID)
	var notice string
	b.step("accept",
		chromedp.Click(`[data-testid="logout"]`, chromedp.ByQuery),
		chromedp.WaitVisible(`[data-testid="nav-login"]`, chromedp.ByQuery),
		chromedp.Navigate(p.url+"/console"),
		chromedp.WaitVisible(`[data-testid="login-form"]`, chromedp.ByQuery),
		chromedp.SendKeys(`[data-testid="login-name"]`, "olga", chromedp.ByQuery),
		chromedp.SendKeys(`[data-testid="login-password"]`, "organiser password", chromedp.ByQuery),
		chromedp.Click(`[data-testid="login-submit"]`, chromedp.ByQuery),
		chromedp.WaitVisible(row, chromedp.ByQuery),
		chromedp.SetValue(row+` [data-testid="review-action"]`, "accept", chromedp.ByQuery),
		chromedp.SendKeys(row+` [data-testid="review-reason"]`, "checked the logs by hand", chromedp.ByQuery),
		chromedp.Click(row+` [data-testid="review-submit"]`, chromedp.ByQuery),
		chromedp.WaitVisible(`[data-testid="console-notice"]`, chromedp.ByQuery),
		chromedp.Text(`[data-testid="console-notice"]`, &notice, chromedp.ByQuery),
	)
	if !strings.Contains(notice, "is now verified") {
		t.Fatalf("console says %q after accepting, want the submission verified", notice)
	}
	var after submissionJSON
	p.getJSON(t, fmt.Sprintf("/api/v1/submissions/%d", tamperedID), &after)
	if after.Status != d5list.StatusVerified {
		t.Fatalf("accepted submission is %s, want verified", after.Status)
	}

	// 6b. Carol Lab's ranked entry (one of her two, the system's best)
	// reads the same wherever a newcomer meets it: its page, its row on
	// the board, the front page's latest results and the search, each
	// with one rank and one value.
	read := func(page, script string) [3]string {
		t.Helper()
		var got [3]string
		b.step("same place: "+page, chromedp.Navigate(p.url+page), chromedp.WaitReady(`main`, chromedp.ByQuery),
			chromedp.Evaluate(script, &got))
		return got
	}
	ranked := read("/benchmarks/l2-digits-mlp-cpu", `(function(){
		var row = document.querySelector('[data-testid="leaderboard-row"]');
		return row ? [row.dataset.rank, row.querySelector('[data-testid="entry-score"]').textContent.trim(), row.dataset.submission] : ['', '', ''];
	})()`)
	sid := ranked[2]
	if sid != strconv.FormatInt(id, 10) && sid != strconv.FormatInt(tamperedID, 10) {
		t.Fatalf("the board's first row is submission %q, want one of Carol Lab's (%d, %d)", sid, id, tamperedID)
	}
	places := map[string][3]string{
		"board": ranked,
		"entry page": read("/submissions/"+sid, `(function(){
			var r = document.querySelector('[data-testid="place-rank"] strong'), v = document.querySelector('[data-testid="score-measured"]');
			return [r ? r.textContent.replace('#', '').trim() : '', v ? v.textContent.trim() : '', '`+sid+`'];
		})()`),
		"front page": read("/", `(function(){
			var a = document.querySelector('[data-testid="latest-result"] a[href="/submissions/`+sid+`"]');
			if (!a) { return ['', '', '']; }
			var m = a.parentElement.textContent.match(/: (.+?) on .*rank #(\d+)/);
			return m ? [m[2], m[1].trim(), '`+sid+`'] : ['', a.parentElement.textContent, ''];
		})()`),
		"search": read("/search?q=Carol", `(function(){
			var row = document.querySelector('[data-testid="search-result"][data-submission="`+sid+`"]');
			return row ? [row.dataset.rank, row.querySelector('[data-testid="search-score"]').textContent.trim(), row.dataset.submission] : ['', '', ''];
		})()`),
	}
	for where, got := range places {
		if got != ranked || got[0] == "" || got[1] == "" {
			t.Errorf("submission %s on the %s: rank %q, value %q; want rank %q and value %q, as on the board", sid, where, got[0], got[1], ranked[0], ranked[1])
		}
	}

	// 7. The board, an entry and the comparison of two entries fit a phone
	// and a desktop: nothing wider than the window (issue 16). Each is kept
	// as a screenshot.
	for _, width := range []int64{390, 1400} {
		for _, page := range []struct{ name, path string }{
			{"board", "/benchmarks/l2-digits-mlp-cpu"},
			{"entry", fmt.Sprintf("/submissions/%d", id)},
			{"compare", fmt.Sprintf("/compare?ids=%d,%d", id, tamperedID)},
		} {
			var fits bool
			var widths string
			b.step(fmt.Sprintf("%s-%d", page.name, width),
				chromedp.EmulateViewport(width, 900),
				chromedp.Navigate(p.url+page.path),
				chromedp.WaitVisible(`[data-testid="site-header"]`, chromedp.ByQuery),
				chromedp.Evaluate(`document.documentElement.scrollWidth <= window.innerWidth`, &fits),
				chromedp.Evaluate(`document.documentElement.scrollWidth + " > " + window.innerWidth + ": " +
					Array.from(document.querySelectorAll('body *')).filter(function (e) { return e.getBoundingClientRect().right > window.innerWidth + 1; })
						.slice(0, 5).map(function (e) { return e.tagName + (e.dataset.testid ? '[' + e.dataset.testid + ']' : '') + '.' + e.className; }).join(', ')`, &widths),
			)
			if page.name == "compare" {
				// The series ECharts holds, not a canvas, which it makes
				// even for an empty option: both entries' curves are drawn.
				var series int
				b.step(fmt.Sprintf("compare-chart-%d", width),
					chromedp.WaitVisible(`#compare-curves canvas`, chromedp.ByQuery),
					chromedp.Evaluate(`(function () {
						var c = echarts.getInstanceByDom(document.getElementById('compare-curves'));
						return c ? c.getOption().series.filter(function (s) { return s.data && s.data.length > 0; }).length : -1;
					})()`, &series))
				if series != 2 {
					t.Errorf("the comparison's chart draws %d curves with points at %d px, want 2 (one per entry)", series, width)
				}
			}
			shot := b.shot(fmt.Sprintf("%s-%dpx", page.name, width))
			if !fits {
				t.Errorf("the %s page overflows a %d px window (%s); screenshot %s", page.name, width, widths, shot)
			}
		}
	}
	t.Logf("screenshots (on failure, or every step with D5LIST_SCREENSHOTS=1) in %s", b.dir)
}
