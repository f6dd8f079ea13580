package main

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/PuerkitoBio/goquery"

	d5list "github.com/deep500/d5list"
	"github.com/deep500/d5list/catalog"
	"github.com/deep500/d5list/portal"
	"github.com/deep500/d5list/store"
	"github.com/deep500/d5list/verifier"
	"github.com/deep500/d5list/web"
)

// `submit --wait` prints a finding with the entry page's words and
// figures, wrapped: the per-epoch times it quotes are the page's (0.0575 s
// measured, not another rounding or another of the verifier's numbers),
// and no line runs past the width.
func TestSubmitWaitPrintsTheFindingAsThePageShowsIt(t *testing.T) {
	ctx := context.Background()
	db, err := store.Open(ctx, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	bs, err := catalog.Benchmarks()
	if err != nil {
		t.Fatal(err)
	}
	if err := db.UpsertBenchmarks(ctx, bs); err != nil {
		t.Fatal(err)
	}
	owner, err := db.EnsureUser(ctx, "carl", d5list.RoleCompetitor)
	if err != nil {
		t.Fatal(err)
	}
	token, err := db.CreateToken(ctx, owner.ID, "test")
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(web.New(web.Config{}, portal.New(store.Quota{DB: db}, nil, portal.Config{}, nil), nil))
	t.Cleanup(srv.Close)

	sub := &d5list.Submission{BenchmarkID: "l2-digits-mlp-cpu", OwnerID: owner.ID, Status: d5list.StatusQueued,
		Division: d5list.DivisionClosed, Availability: d5list.AvailabilityAvailable, Submitter: "Carl", SystemName: "box",
		Framework: "numpy", BundleSHA256: strings.Repeat("ab", 32), Recipe: &d5list.Recipe{}, Claimed: &d5list.Result{}, Reasons: []d5list.Reason{}}
	if err := db.CreateSubmission(ctx, sub); err != nil {
		t.Fatal(err)
	}
	lease, err := db.LeaseJob(ctx, "pool/r-0", map[string]string{}, time.Minute)
	if err != nil || lease == nil {
		t.Fatalf("lease: %v %v", lease, err)
	}
	run, own, measured := 2, 0.039, 0.0575
	reason := d5list.Reason{Code: verifier.CodeEpochTimeMismatch, Run: &run, File: "results/result_2.txt", Claimed: &own, Measured: &measured,
		Message: "run 2: the log's evaluations are a median 0.0390 s an epoch apart, 0.678 of the 0.0575 s the portal's re-run measured as the median epoch of its runs; " +
			"one run may be down to 0.72 of it (drift 25 % + precision 10 % + the re-run's own spread 1.9 %, 1.0 % over the runs its olympic mean keeps, the precision and the spread counted twice for one run)"}
	if err := db.CompleteJob(ctx, lease.Job.ID, lease.Secret, &d5list.Result{}, d5list.StatusNeedsReview, []d5list.Reason{reason}); err != nil {
		t.Fatal(err)
	}

	followed, err := getSubmission(ctx, fmt.Sprintf("%s/api/v1/submissions/%d", srv.URL, sub.ID), token)
	if err != nil {
		t.Fatal(err)
	}
	var out strings.Builder
	printFindings(&out, followed)
	printed := out.String()
	t.Logf("submit --wait prints:\n%s", printed)
	for _, line := range strings.Split(strings.TrimRight(printed, "\n"), "\n") {
		if n := len([]rune(line)); n > findingWidth {
			t.Errorf("a line of %d characters, over %d: %q", n, findingWidth, line)
		}
	}

	resp, err := http.Get(fmt.Sprintf("%s/submissions/%d", srv.URL, sub.ID))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	doc, err := goquery.NewDocumentFromReader(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	item := doc.Find(`[data-testid="reason"]`)
	if item.Length() != 1 {
		t.Fatalf("the page lists %d findings, want 1", item.Length())
	}
	flat := func(s string) string { return strings.Join(strings.Fields(s), " ") }
	values := flat(item.Find(`[data-testid="reason-values"]`).Text())
	if values != "median time between evaluations: claimed 0.0390 s, measured 0.0575 s" {
		t.Errorf("the page's values %q, want the per-epoch times as the page prints them", values)
	}
	cli := flat(printed)
	for _, id := range []string{"reason-code", "reason-message", "reason-where", "reason-values"} {
		if want := flat(item.Find(`[data-testid="` + id + `"]`).Text()); want == "" || !strings.Contains(cli, strings.Trim(want, "()")) {
			t.Errorf("the CLI printed\n%s\nwithout the page's %s %q", printed, id, want)
		}
	}
	if working := flat(item.Find(`[data-testid="reason-working"] p`).Text()); !strings.Contains(cli, "How the portal judged it: "+working) {
		t.Errorf("the CLI printed\n%s\nwithout the page's working %q", printed, working)
	}
	// Every figure, in order: the CLI's are the page's.
	number := regexp.MustCompile(`\d+(\.\d+)?`)
	if got, want := number.FindAllString(cli, -1), number.FindAllString(flat(item.Text()), -1); strings.Join(got, " ") != strings.Join(want, " ") {
		t.Errorf("the CLI's figures %v, the page's %v", got, want)
	}
	if !strings.Contains(printed, "  "+verifier.CodeEpochTimeMismatch+": the log's evaluations come faster than the re-run's") {
		t.Errorf("the CLI printed\n%s\nwithout the finding's plain words first", printed)
	}
}
