package web_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	cdppage "github.com/chromedp/cdproto/page"
	"github.com/chromedp/chromedp"

	d5list "github.com/deep500/d5list"
	"github.com/deep500/d5list/handlers"
	"github.com/deep500/d5list/internal/browsertest"
)

// A visitor follows an entry on its way; its verdict, a discrepancy no
// organiser has published, is not the visitor's to see. The page then
// says so and stops: through the event stream's neutral "ended" event,
// and, where the browser has no EventSource, through the API's 404, which
// the poller must not retry forever.
func TestLivePageStopsAtHiddenVerdict(t *testing.T) {
	defer func(poll, refresh time.Duration) {
		handlers.EventsPoll, handlers.EventsRefresh = poll, refresh
	}(handlers.EventsPoll, handlers.EventsRefresh)
	handlers.EventsPoll, handlers.EventsRefresh = 20*time.Millisecond, 50*time.Millisecond

	for _, mode := range []string{"events", "polling"} {
		t.Run(mode, func(t *testing.T) {
			p := startReal(t)
			ctx := context.Background()
			id := p.queueSubmission(t, p.users["competitor"])
			apiPath := "/api/v1/submissions/" + strconv.FormatInt(id, 10)
			var polls atomic.Int64
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if r.URL.Path == apiPath {
					polls.Add(1)
				}
				p.handler.ServeHTTP(w, r)
			}))
			t.Cleanup(srv.Close)

			bctx := browsertest.Start(t, 60*time.Second)

			var setup []chromedp.Action
			if mode == "polling" {
				// A browser without EventSource: the script polls the API.
				setup = append(setup, chromedp.ActionFunc(func(ctx context.Context) error {
					_, err := cdppage.AddScriptToEvaluateOnNewDocument(`delete window.EventSource;`).Do(ctx)
					return err
				}))
			}
			setup = append(setup,
				chromedp.Navigate(srv.URL+"/submissions/"+strconv.FormatInt(id, 10)),
				chromedp.WaitVisible(`[data-testid="pending"]`, chromedp.ByQuery))
			if err := chromedp.Run(bctx, setup...); err != nil {
				t.Fatal(err)
			}
			if mode == "polling" {
				// Wait for the poller to have asked at least once.
				deadline := time.Now().Add(10 * time.Second)
				for polls.Load() == 0 && time.Now().Before(deadline) {
					time.Sleep(50 * time.Millisecond)
				}
			}

			lease, err := p.db.LeaseJob(ctx, "test-runner", nil, time.Minute)
			if err != nil || lease == nil {
				t.Fatalf("lease: %v %v", lease, err)
			}
			if err := p.db.CompleteJob(ctx, lease.Job.ID, lease.Secret, &d5list.Result{}, d5list.StatusDiscrepancy,
				[]d5list.Reason{{Code: "accuracy_mismatch", Message: "SECRET finding"}}); err != nil {
				t.Fatal(err)
			}

			var pending, badge string
			err = chromedp.Run(bctx,
				chromedp.WaitVisible(`[data-testid="status-badge"].status-ended`, chromedp.ByQuery),
				chromedp.Text(`[data-testid="pending"]`, &pending, chromedp.ByQuery),
				chromedp.TextContent(`[data-testid="status-badge"]`, &badge, chromedp.ByQuery))
			if err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(pending, "verdict is not public") || !strings.HasPrefix(pending, "The ") || badge != "verdict not public" {
				t.Errorf("the page says %q with badge %q, want that the verdict is not public", pending, badge)
			}
			// Nothing more is asked: the poller stopped at the 404 (the
			// event stream's page never polls the API).
			if mode == "polling" {
				settled := polls.Load()
				time.Sleep(4 * time.Second)
				if n := polls.Load(); n != settled {
					t.Errorf("the page asked the API %d more times after the verdict turned out hidden", n-settled)
				}
			}
			var html string
			if err := chromedp.Run(bctx, chromedp.OuterHTML("body", &html, chromedp.ByQuery)); err != nil {
				t.Fatal(err)
			}
			if strings.Contains(html, "SECRET") || strings.Contains(html, "discrepancy") {
				t.Error("the visitor's page shows the hidden verdict")
			}
		})
	}
}
