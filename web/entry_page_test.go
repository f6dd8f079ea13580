package web_test

import (
	"context"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/PuerkitoBio/goquery"

	d5list "github.com/deep500/d5list"
)

// discrepantEntry queues a submission of the competitor, streams a log
// line of its re-run and ends it in a discrepancy with a timing finding.
func discrepantEntry(t *testing.T, p *realPortal) int64 {
	t.Helper()
	ctx := context.Background()
	id := p.queueSubmission(t, p.users["competitor"])
	lease, err := p.db.LeaseJob(ctx, "pool/r-0", map[string]string{}, time.Minute)
	if err != nil || lease == nil {
		t.Fatalf("lease: %v %v", lease, err)
	}
	if err := p.db.AppendJobLog(ctx, lease.Job.ID, lease.Secret, []d5list.LogLine{{Stream: d5list.StreamStdout, Text: ":::MLLOG run_stop"}}); err != nil {
		t.Fatal(err)
	}
	claimed, measured := 12.5, 15.1
	if err := p.db.CompleteJob(ctx, lease.Job.ID, lease.Secret, &d5list.Result{}, d5list.StatusDiscrepancy, []d5list.Reason{{
		Code: "timing_mismatch", Message: "time to train: the logs' olympic mean is 12.5 s", Claimed: &claimed, Measured: &measured,
	}}); err != nil {
		t.Fatal(err)
	}
	return id
}

// testidOrder is the order in which the page shows the data-testids asked
// for, each by its first element.
func testidOrder(doc *goquery.Document, ids ...string) []string {
	want := map[string]bool{}
	for _, id := range ids {
		want[id] = true
	}
	var order []string
	doc.Find("[data-testid]").Each(func(_ int, s *goquery.Selection) {
		id := s.AttrOr("data-testid", "")
		if want[id] {
			order = append(order, id)
			delete(want, id)
		}
	})
	return order
}

// The entry page reads as a competitor needs it: the verdict in a
// sentence, the findings with their units, one step to take, the form to
// ask for a review, and only then the re-run's raw log tail (issue 16).
// The step is the reader's: an organiser is pointed at the review queue,
// and a visitor gets none, nor a pointer to a form only the competitor
// sees.
func TestEntryPageShowsFindingsBeforeTheLog(t *testing.T) {
	p := startReal(t)
	id := discrepantEntry(t, p)
	path := "/submissions/" + strconv.FormatInt(id, 10)
	doc := p.login(t, "competitor").doc(t, path)

	want := []string{"verdict-summary", "reasons", "next-step", "appeal-form", "log-tail"}
	if got := testidOrder(doc, want...); strings.Join(got, " ") != strings.Join(want, " ") {
		t.Errorf("the page shows %v in this order, want %v", got, want)
	}
	if v := doc.Find(testid("reason-values")).Text(); v != "time to train: claimed 12.5 s, measured 15.1 s" {
		t.Errorf("the finding's values %q, want them named and in seconds", v)
	}
	next := doc.Find(testid("next-step"))
	if !strings.Contains(next.Text(), "Measure again on that hardware") || strings.Contains(next.Text(), "review") {
		t.Errorf("next step %q, want the one thing to fix", next.Text())
	}
	if doc.Find("#appeal").AttrOr("data-testid", "") != "appeal-form" {
		t.Error("the competitor has no form to ask for a review")
	}

	organiser := p.login(t, "organiser")
	next = organiser.doc(t, path).Find(testid("next-step"))
	link := next.Find(testid("next-step-link")).AttrOr("href", "")
	if !strings.Contains(next.Text(), "review queue") || link != "/console#review-"+strconv.FormatInt(id, 10) {
		t.Errorf("an organiser's next step %q (link %q), want the entry's row in the review queue", next.Text(), link)
	}
	if _, _, err := p.svc.Review(context.Background(), p.users["organiser"], id, d5list.ReviewRequest{Action: d5list.ActionPublish}); err != nil {
		t.Fatal(err)
	}
	visitor := p.login(t, "").doc(t, path)
	if visitor.Find(testid("next-step")).Length() != 0 || visitor.Find(`a[href="#appeal"]`).Length() != 0 {
		t.Errorf("a visitor reads a next step meant for the competitor: %q", visitor.Find(testid("next-step")).Text())
	}
	if !strings.Contains(visitor.Find(testid("verdict-summary")).Text(), "does not support the claim") {
		t.Error("a visitor of a published discrepancy does not read its verdict")
	}
}

// The entry page shows the whole system description as read from
// system.json, with MLPerf's field names in MLPerf's order, and the
// framework and software stack (issue 16).
func TestEntryPageShowsTheSystemDescription(t *testing.T) {
	p := startReal(t)
	s := &d5list.Submission{
		BenchmarkID: "l2-digits-mlp-cpu", OwnerID: p.users["competitor"].ID,
		Division: d5list.DivisionClosed, Availability: d5list.AvailabilityAvailable,
		Submitter: "Carl", SystemName: "box", Framework: "PyTorch 2.3", BundleSHA256: strings.Repeat("ab", 32),
		Recipe: &d5list.Recipe{}, Claimed: &d5list.Result{}, Reasons: []d5list.Reason{},
		System: map[string]any{
			"submitter": "Carl", "system_name": "box", "number_of_nodes": "1",
			"host_processor_model_name": "AMD EPYC 9654", "host_memory_capacity": "1.5 TB",
			"accelerators_per_node": "8", "accelerator_model_name": "NVIDIA H100-SXM5-80GB",
			"framework": "PyTorch NVIDIA Release 24.04", "operating_system": "Ubuntu 22.04",
			"other_software_stack": map[string]any{"cuda_version": "12.4", "nccl_version": "2.21"},
			"rack_position":        "B7",
		},
	}
	if err := p.db.CreateSubmission(context.Background(), s); err != nil {
		t.Fatal(err)
	}
	doc := p.login(t, "").doc(t, "/submissions/"+strconv.FormatInt(s.ID, 10))

	desc := doc.Find(testid("system-description"))
	var names []string
	desc.Find("dt").Each(func(_ int, dt *goquery.Selection) { names = append(names, dt.Text()) })
	want := []string{"submitter", "system_name", "number_of_nodes", "host_processor_model_name", "host_memory_capacity",
		"accelerators_per_node", "accelerator_model_name", "framework", "other_software_stack", "operating_system", "rack_position"}
	if strings.Join(names, " ") != strings.Join(want, " ") {
		t.Errorf("system description fields %v, want %v", names, want)
	}
	for field, value := range map[string]string{"host_memory_capacity": "1.5 TB", "accelerator_model_name": "NVIDIA H100-SXM5-80GB", "rack_position": "B7"} {
		if got := desc.Find(`dd[data-field="` + field + `"]`).Text(); got != value {
			t.Errorf("%s = %q, want %q", field, got, value)
		}
	}
	stack := doc.Find(testid("software-stack"))
	for field, value := range map[string]string{"framework (submission.json)": "PyTorch 2.3", "framework": "PyTorch NVIDIA Release 24.04",
		"operating_system": "Ubuntu 22.04", "cuda_version": "12.4", "nccl_version": "2.21"} {
		if got := stack.Find(`dd[data-field="` + field + `"]`).Text(); got != value {
			t.Errorf("software stack %s = %q, want %q", field, got, value)
		}
	}
}
