package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// In the browser, an archive whose round cannot be told is answered with
// the round select narrowed to the rounds that fit it; chosen, the round
// judges it, and the rules chosen (the round's own release or today's)
// are named with the verdict.
func TestBrowserMLPerfAsksForTheRoundAndTheRules(t *testing.T) {
	src := "../../../shared/peer-data/mlperf/v4.0-asustek-resnet"
	if !dirExists(src) {
		t.Skip("shared/peer-data not beside the repository")
	}
	b := newBrowser(t, 60*time.Second)
	p := startPortal(t, 0)
	archive := filepath.Join(t.TempDir(), "resnet.tar.gz")
	if err := os.WriteFile(archive, tarGzFolder(t, src, "resnet"), 0o644); err != nil {
		t.Fatal(err)
	}
	var offered []string
	var asked string
	b.step("signup",
		chromedp.Navigate(p.url+"/signup"),
		chromedp.SendKeys(`[data-testid="signup-name"]`, "carol", chromedp.ByQuery),
		chromedp.SendKeys(`[data-testid="signup-password"]`, "carol's long password", chromedp.ByQuery),
		chromedp.Click(`[data-testid="signup-submit"]`, chromedp.ByQuery),
		chromedp.WaitVisible(`[data-testid="upload-form"]`, chromedp.ByQuery),
	)
	b.step("no-round",
		chromedp.Navigate(p.url+"/mlperf"),
		chromedp.WaitVisible(`[data-testid="mlperf-form"]`, chromedp.ByQuery),
		chromedp.SetUploadFiles(`#mlperf-file`, []string{archive}, chromedp.ByQuery),
		chromedp.WaitEnabled(`[data-testid="mlperf-submit"]`, chromedp.ByQuery),
		chromedp.Click(`[data-testid="mlperf-submit"]`, chromedp.ByQuery),
		chromedp.WaitVisible(`[data-testid="mlperf-error"]`, chromedp.ByQuery),
		chromedp.Text(`[data-testid="mlperf-error"]`, &asked, chromedp.ByQuery),
		chromedp.Evaluate(`Array.from(document.querySelectorAll('#mlperf-round option')).filter(function (o) { return o.value && !o.disabled; }).map(function (o) { return o.value; })`, &offered),
	)
	if want := "0.6 0.7 1.0 1.1 2.0 2.1 3.0 3.1 4.0"; strings.Join(offered, " ") != want || !strings.Contains(asked, "choose it above") {
		t.Fatalf("the form asks %q and offers %v, want %s", asked, offered, want)
	}
	for _, c := range []struct{ rules, accepted, judged string }{
		{"release", "true", "mlcommons/logging 4.0.0-rc3-rcp-prunning, the round's own release"},
		{"today", "true", "today's mlcommons/logging (7bbf792)"},
	} {
		var accepted, judged string
		b.step("round-"+c.rules,
			chromedp.SetValue(`#mlperf-round`, "4.0", chromedp.ByQuery),
			chromedp.SetValue(`#mlperf-rules`, c.rules, chromedp.ByQuery),
			chromedp.Click(`[data-testid="mlperf-submit"]`, chromedp.ByQuery),
			chromedp.WaitVisible(`[data-testid="mlperf-judged-by"]`, chromedp.ByQuery),
			chromedp.AttributeValue(`[data-testid="mlperf-verdict"]`, "data-accepted", &accepted, nil, chromedp.ByQuery),
			chromedp.Text(`[data-testid="mlperf-judged-by"]`, &judged, chromedp.ByQuery),
		)
		if accepted != c.accepted || !strings.Contains(judged, c.judged) {
			t.Errorf("rules %s: accepted %q, %q; want %s, %q", c.rules, accepted, judged, c.accepted, c.judged)
		}
	}
}
