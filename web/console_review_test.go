package web_test

import (
	"context"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/PuerkitoBio/goquery"

	d5list "github.com/deep500/d5list"
)

// The console's review queue shows each entry's claimed and measured
// score with its unit and the finding its verdict turns on, labels its
// actions in words and preselects none; a refused review and a refused
// edition re-show the console with the reason beside the form, not a bare
// error page; an edition is frozen from the console once confirmed on a
// second page (issue 16).
func TestConsoleReviewAndEditions(t *testing.T) {
	p := startReal(t)
	ctx := context.Background()
	sub := &d5list.Submission{
		BenchmarkID: "l2-digits-mlp-cpu", OwnerID: p.users["competitor"].ID, Status: d5list.StatusQueued,
		Division: d5list.DivisionClosed, Availability: d5list.AvailabilityAvailable,
		Submitter: "Carl", SystemName: "box", Framework: "go", BundleSHA256: strings.Repeat("ab", 32),
		Recipe: &d5list.Recipe{}, Reasons: []d5list.Reason{},
		Claimed: &d5list.Result{Score: d5list.Score{Metric: d5list.MetricTimeToTrain, Value: 12.5, Valid: true}},
	}
	if err := p.db.CreateSubmission(ctx, sub); err != nil {
		t.Fatal(err)
	}
	id := sub.ID
	lease, err := p.db.LeaseJob(ctx, "r-0", nil, time.Minute)
	if err != nil || lease == nil {
		t.Fatalf("lease: %v", err)
	}
	measured := &d5list.Result{Score: d5list.Score{Metric: d5list.MetricTimeToTrain, Value: 20.25, Valid: true}}
	if err := p.db.CompleteJob(ctx, lease.Job.ID, lease.Secret, measured, d5list.StatusNeedsReview, []d5list.Reason{{Code: "timing_too_noisy", Message: "noisy"}}); err != nil {
		t.Fatal(err)
	}
	org := p.login(t, "organiser")
	row := org.doc(t, "/console/").Find(`[data-testid="review-row"][data-id="` + strconv.FormatInt(id, 10) + `"]`)
	if row.Find(testid("review-claimed")).Text() != "12.5 s" || row.Find(testid("review-measured")).Text() != "20.2 s" {
		t.Errorf("review row figures %q / %q, want 12.5 s and 20.2 s", row.Find(testid("review-claimed")).Text(), row.Find(testid("review-measured")).Text())
	}
	if f := row.Find(testid("review-finding")).Text(); !strings.Contains(f, "varied too much") {
		t.Errorf("review row's finding %q, want the timing's noise in plain words", f)
	}
	for _, o := range row.Find(testid("review-action") + " option").Nodes[1:] {
		if label := goquery.NewDocumentFromNode(o).Text(); strings.Contains(label, "_") || !strings.Contains(label, " ") {
			t.Errorf("review action labelled %q, want words", label)
		}
	}
	selected := row.Find(testid("review-action") + " option[selected]")
	if v, _ := selected.Attr("value"); selected.Length() != 1 || v != "" {
		t.Errorf("the review action preselects %q, want no action", v)
	}

	post := func(path string, form url.Values) (int, *goquery.Document) {
		t.Helper()
		form.Set("csrf", org.csrf)
		resp, err := org.PostForm(p.url+path, form)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		doc, err := goquery.NewDocumentFromReader(resp.Body)
		if err != nil {
			t.Fatal(err)
		}
		return resp.StatusCode, doc
	}
	code, doc := post("/console/review/"+strconv.FormatInt(id, 10), url.Values{"action": {"reject"}})
	if code != http.StatusBadRequest || doc.Find(testid("review-error")).Length() != 1 || doc.Find(testid("review-queue")).Length() != 1 {
		t.Fatalf("a rejection without a reason: %d, error %q, want the console again with the reason", code, doc.Find(testid("review-error")).Text())
	}

	// A rejection with its reason is asked again, and nothing changes
	// until it is confirmed; the confirmation carries the reason.
	sid := strconv.FormatInt(id, 10)
	code, doc = post("/console/review/"+sid, url.Values{"action": {"reject"}, "reason": {"the re-run did not converge"}})
	confirmReject := doc.Find(testid("confirm-form"))
	if code != http.StatusOK || confirmReject.Find(`input[name="reason"]`).AttrOr("value", "") != "the re-run did not converge" || !strings.Contains(doc.Find(testid("confirm-text")).Text(), "only a re-run undoes it") {
		t.Fatalf("rejecting: %d %q, want a page that asks to confirm, with the reason", code, doc.Find("main").Text())
	}
	if st := org.doc(t, "/submissions/"+sid).Find(testid("submission")).AttrOr("data-status", ""); st == string(d5list.StatusRejected) {
		t.Fatal("the entry was rejected before the rejection was confirmed")
	}
	resp, err := org.PostForm(p.url+"/console/review/"+sid, url.Values{"action": {"reject"}, "reason": {"the re-run did not converge"}, "confirm": {"yes"}, "csrf": {org.csrf}})
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if st := org.doc(t, "/submissions/"+sid).Find(testid("submission")).AttrOr("data-status", ""); resp.StatusCode != http.StatusSeeOther || st != string(d5list.StatusRejected) {
		t.Fatalf("a confirmed rejection: %d, the entry is %q", resp.StatusCode, st)
	}
	// The console it leads back to says what changed, and links the entry.
	notice := org.doc(t, resp.Header.Get("Location"))
	if href, _ := notice.Find(testid("console-notice-entry")).Attr("href"); href != "/submissions/"+sid {
		t.Errorf("the console's notice links %q, want the entry", href)
	}
	// And it lists the decision among the latest, with who made it, the
	// change of status and the reason, linked to the entry.
	decision := notice.Find(testid("decision")).First()
	if decision.AttrOr("data-id", "") != sid || decision.AttrOr("data-action", "") != string(d5list.ActionReject) ||
		decision.Find(testid("decision-entry")).AttrOr("href", "") != "/submissions/"+sid ||
		!strings.Contains(decision.Text(), "the re-run did not converge") || !strings.Contains(decision.Text(), "organiser") ||
		!strings.Contains(decision.Find(testid("decision-status")).Text(), "→") {
		t.Errorf("the console's latest decision reads %q (%v), want the rejection of submission %s with its reason", decision.Text(), decision.Nodes, sid)
	}

	// Making an account an organiser is asked again too.
	comp := p.users["competitor"]
	rolePath := "/console/users/" + strconv.FormatInt(comp.ID, 10) + "/role"
	code, doc = post(rolePath, url.Values{"role": {"organiser"}})
	if code != http.StatusOK || doc.Find(testid("confirm-form")).Find(`input[name="role"]`).AttrOr("value", "") != "organiser" {
		t.Fatalf("promoting: %d %q, want a page that asks to confirm", code, doc.Find("main").Text())
	}
	if u, err := p.db.User(ctx, comp.Name); err != nil || u.Role != d5list.RoleCompetitor {
		t.Fatalf("the competitor is %v (%v) before the promotion was confirmed", u, err)
	}
	if code, _ = post(rolePath, url.Values{"role": {"organiser"}, "confirm": {"yes"}}); code != http.StatusSeeOther {
		t.Fatalf("a confirmed promotion: %d", code)
	}
	if u, err := p.db.User(ctx, comp.Name); err != nil || u.Role != d5list.RoleOrganiser {
		t.Fatalf("after the confirmed promotion the account is %v (%v)", u, err)
	}

	// The console's form asks to confirm first, and freezes nothing.
	code, doc = post("/console/editions", url.Values{"name": {"2026-11"}})
	confirm := doc.Find(testid("edition-confirm-form"))
	if code != http.StatusOK || confirm.Length() != 1 || confirm.Find(`input[name="confirm"]`).AttrOr("value", "") != "yes" {
		t.Fatalf("freezing an edition: %d %q, want a page that asks to confirm", code, doc.Find("main").Text())
	}
	if org.doc(t, "/console/").Find(testid("edition-item")).Length() != 0 {
		t.Fatal("an edition was frozen before it was confirmed")
	}
	code, doc = post("/console/editions", url.Values{"name": {"2026-11"}, "confirm": {"yes"}})
	if code != http.StatusSeeOther {
		t.Fatalf("freezing a confirmed edition: %d %q", code, doc.Text())
	}
	console := org.doc(t, "/console/")
	if !strings.Contains(console.Find(testid("edition-item")).Text(), "2026-11") {
		t.Fatalf("the console lists editions %q, want 2026-11", console.Find(testid("edition-item")).Text())
	}
	code, doc = post("/console/editions", url.Values{"name": {"2026-11"}})
	if code == http.StatusSeeOther || doc.Find(testid("edition-error")).Length() != 1 {
		t.Fatalf("freezing 2026-11 again: %d, want the console with the reason", code)
	}
	if v, _ := doc.Find(testid("edition-name")).Attr("value"); v != "2026-11" {
		t.Errorf("the edition form lost what was typed: %q", v)
	}
}
