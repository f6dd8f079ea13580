package web_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/PuerkitoBio/goquery"

	d5list "github.com/deep500/d5list"
)

func (c *client) doc(t *testing.T, path string) *goquery.Document {
	t.Helper()
	resp, err := c.Get(c.base + path)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET %s: %d", path, resp.StatusCode)
	}
	doc, err := goquery.NewDocumentFromReader(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return doc
}

// queueSubmission queues a digits submission of owner straight in the store.
func (p *realPortal) queueSubmission(t *testing.T, owner *d5list.User) int64 {
	t.Helper()
	s := &d5list.Submission{
		BenchmarkID: "l2-digits-mlp-cpu", OwnerID: owner.ID, Status: d5list.StatusQueued,
		Division: d5list.DivisionClosed, Availability: d5list.AvailabilityAvailable,
		Submitter: "Carl", SystemName: "box", Framework: "go", BundleSHA256: strings.Repeat("ab", 32),
		Recipe: &d5list.Recipe{}, Claimed: &d5list.Result{}, Reasons: []d5list.Reason{},
	}
	if err := p.db.CreateSubmission(context.Background(), s); err != nil {
		t.Fatal(err)
	}
	return s.ID
}

// The runners page lists each agent with its state, current job, last
// call and labels.
func TestRunnersPage(t *testing.T) {
	p := startReal(t)
	ctx := context.Background()
	if err := p.db.TouchRunner(ctx, "gpu-box/a-0", map[string]string{"accelerator_model": "H100", "cpu_cores": "16"}, 42); err != nil {
		t.Fatal(err)
	}
	org := p.login(t, "organiser")
	doc := org.doc(t, "/console/runners")
	rows := doc.Find(testid("runner-row"))
	if rows.Length() != 1 {
		t.Fatalf("%d runner rows, want 1", rows.Length())
	}
	row := rows.First()
	if row.AttrOr("data-name", "") != "gpu-box/a-0" || row.AttrOr("data-online", "") != "true" ||
		strings.TrimSpace(row.Find(testid("runner-status")).Text()) != "online" ||
		!strings.Contains(row.Find(testid("runner-job")).Text(), "job 42") ||
		!strings.HasSuffix(row.Find(testid("runner-seen")).Text(), "ago") {
		t.Errorf("runner row: %q", row.Text())
	}
	var labels []string
	row.Find(testid("runner-labels") + " li").Each(func(_ int, l *goquery.Selection) { labels = append(labels, l.Text()) })
	if strings.Join(labels, " ") != "accelerator_model=H100 cpu_cores=16" {
		t.Errorf("labels %q", labels)
	}
	// The console links the page.
	if org.doc(t, "/console/").Find(`a[href="/console/runners"]`).Length() == 0 {
		t.Errorf("the console does not link /console/runners")
	}
	// A competitor is refused.
	resp, err := p.login(t, "competitor").Get(p.url + "/console/runners")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusForbidden {
		t.Errorf("a competitor's GET /console/runners: %d, want 403", resp.StatusCode)
	}
}

// The queue page shows the backlog per benchmark and each job's state,
// place and attempts; its cancel button (with the CSRF token) cancels.
func TestQueuePageShowsBacklogAndCancels(t *testing.T) {
	p := startReal(t)
	ctx := context.Background()
	owner := p.users["competitor"]
	first := p.queueSubmission(t, owner)
	second := p.queueSubmission(t, owner)
	lease, err := p.db.LeaseJob(ctx, "pool/r-0", map[string]string{}, time.Minute)
	if err != nil || lease == nil || lease.Job.SubmissionID != first {
		t.Fatalf("lease: %+v %v", lease, err)
	}
	org := p.login(t, "organiser")
	doc := org.doc(t, "/console/queue")
	b := doc.Find(testid("backlog-row"))
	if b.Length() != 1 || b.AttrOr("data-benchmark", "") != "l2-digits-mlp-cpu" ||
		b.Find(testid("backlog-waiting")).Text() != "1" || b.Find(testid("backlog-running")).Text() != "1" ||
		!strings.HasSuffix(strings.TrimSpace(b.Find(testid("backlog-oldest")).Text()), "s") {
		t.Fatalf("backlog: %d rows, %q", b.Length(), b.Text())
	}
	jobs := doc.Find(testid("queue-job"))
	if jobs.Length() != 2 {
		t.Fatalf("%d job rows, want 2", jobs.Length())
	}
	running, waiting := jobs.Eq(0), jobs.Eq(1)
	if running.Find(testid("job-state")).Text() != "running" || running.Find(testid("job-attempts")).Text() != "1 of 3" ||
		!strings.Contains(running.Text(), "pool/r-0") {
		t.Errorf("running job row: %q", running.Text())
	}
	if waiting.Find(testid("job-state")).Text() != "queued" || strings.TrimSpace(waiting.Find(testid("job-position")).Text()) != "1" ||
		waiting.Find(testid("job-attempts")).Text() != "0 of 3" {
		t.Errorf("waiting job row: %q", waiting.Text())
	}
	if org.doc(t, "/console/").Find(`a[href="/console/queue"]`).Length() == 0 {
		t.Errorf("the console does not link /console/queue")
	}

	// The cancel form posts the CSRF token; without it the post is refused.
	form := waiting.Find("form")
	action := form.AttrOr("action", "")
	csrf := form.Find(`input[name="csrf"]`).AttrOr("value", "")
	if form.Find(testid("cancel-job")).Length() != 1 || csrf == "" || action != "/console/jobs/"+waiting.AttrOr("data-job", "")+"/cancel" {
		t.Fatalf("cancel form: action %q, csrf %q", action, csrf)
	}
	resp, err := org.PostForm(p.url+action, url.Values{})
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusForbidden {
		t.Errorf("cancel without the CSRF token: %d, want 403", resp.StatusCode)
	}
	resp, err = org.PostForm(p.url+action, url.Values{"csrf": {csrf}})
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusSeeOther || !strings.HasPrefix(resp.Header.Get("Location"), "/console/queue?done=") {
		t.Fatalf("cancel: %d to %q, want 303 back to the queue", resp.StatusCode, resp.Header.Get("Location"))
	}
	jobID, _ := strconv.ParseInt(waiting.AttrOr("data-job", ""), 10, 64)
	if j, _ := p.db.Job(ctx, jobID); j.State != d5list.JobCancelled {
		t.Errorf("job %d is %s after the cancel, want cancelled", jobID, j.State)
	}
	if sub, _ := p.db.Submission(ctx, second); sub.Status != d5list.StatusFailed {
		t.Errorf("submission %d is %s, want failed (cancelled)", second, sub.Status)
	}
	after := org.doc(t, resp.Header.Get("Location"))
	if !strings.Contains(after.Find(testid("queue-notice")).Text(), "cancelled") || after.Find(testid("queue-job")).Length() != 1 {
		t.Errorf("after the cancel: notice %q, %d jobs", after.Find(testid("queue-notice")).Text(), after.Find(testid("queue-job")).Length())
	}
	// Cancelling it again tells so on the page instead of failing.
	resp, err = org.PostForm(p.url+action, url.Values{"csrf": {csrf}})
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusSeeOther {
		t.Errorf("a second cancel: %d, want 303", resp.StatusCode)
	}
}

// The submitter and organisers see the re-run's log tail and the timeline
// on the submission page; other competitors and visitors see neither.
func TestSubmissionPageLogAndTimelineArePrivate(t *testing.T) {
	p := startReal(t)
	ctx := context.Background()
	owner := p.users["competitor"]
	id := p.queueSubmission(t, owner)
	lease, err := p.db.LeaseJob(ctx, "pool/r-0", map[string]string{}, time.Minute)
	if err != nil || lease == nil {
		t.Fatalf("lease: %+v %v", lease, err)
	}
	if err := p.db.AppendJobLog(ctx, lease.Job.ID, lease.Secret, []d5list.LogLine{
		{Stream: d5list.StreamStdout, Text: "epoch 1 <script>alert(1)</script>"},
		{Stream: d5list.StreamStderr, Text: "warning"},
	}); err != nil {
		t.Fatal(err)
	}
	path := "/submissions/" + strconv.FormatInt(id, 10)
	for _, who := range []string{"competitor", "organiser"} {
		doc := p.login(t, who).doc(t, path)
		lines := doc.Find(testid("log-line"))
		if lines.Length() != 2 || lines.First().Text() != "epoch 1 <script>alert(1)</script>\n" || doc.Find("pre script").Length() != 0 {
			t.Errorf("%s: log lines %q", who, lines.Text())
		}
		if doc.Find(testid("log-tail")).AttrOr("data-last-seq", "") != strconv.FormatInt(mustLastSeq(t, p, id), 10) {
			t.Errorf("%s: data-last-seq %q", who, doc.Find(testid("log-tail")).AttrOr("data-last-seq", ""))
		}
		var kinds []string
		doc.Find(testid("timeline-entry")).Each(func(_ int, e *goquery.Selection) { kinds = append(kinds, e.AttrOr("data-kind", "")) })
		if strings.Join(kinds, ",") != "uploaded,checked,queued,leased" {
			t.Errorf("%s: timeline %v", who, kinds)
		}
		if !strings.Contains(doc.Find(testid("job-state")).Text(), "attempt 1 of 3") {
			t.Errorf("%s: job line %q", who, doc.Find(testid("job-state")).Text())
		}
		if doc.Find(`[data-events-url="`+path+`/events"]`).Length() != 1 {
			t.Errorf("%s: no data-events-url for the live stream", who)
		}
	}
	// A visitor, a public account and another competitor (by API token)
	// see the status only.
	stranger, err := p.db.EnsureUser(ctx, "other-competitor", d5list.RoleCompetitor)
	if err != nil {
		t.Fatal(err)
	}
	token, err := p.db.CreateToken(ctx, stranger.ID, "test")
	if err != nil {
		t.Fatal(err)
	}
	req, _ := http.NewRequest(http.MethodGet, p.url+path, nil)
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	strangerDoc, err := goquery.NewDocumentFromReader(resp.Body)
	resp.Body.Close()
	if err != nil {
		t.Fatal(err)
	}
	for name, doc := range map[string]*goquery.Document{
		"a visitor": p.login(t, "").doc(t, path), "a public account": p.login(t, "public").doc(t, path), "another competitor": strangerDoc,
	} {
		if doc.Find(testid("log-tail")+", "+testid("timeline")).Length() != 0 || doc.Find(testid("log-private")).Length() != 1 {
			t.Errorf("%s sees the log or the timeline", name)
		}
	}
}

func mustLastSeq(t *testing.T, p *realPortal, id int64) int64 {
	t.Helper()
	lines, err := p.db.JobLog(context.Background(), id, -1, 1)
	if err != nil || len(lines) != 1 {
		t.Fatalf("last line: %v %v", lines, err)
	}
	return lines[0].Seq
}

// A queued job that no online runner can take says so, with what a runner
// needs, on its page and in the API; once such a runner calls in, it is
// just waiting its turn (issue 14).
func TestQueuedJobNobodyCanRunSaysSo(t *testing.T) {
	p := startReal(t)
	ctx := context.Background()
	id := p.queueSubmission(t, p.users["competitor"])
	path := "/submissions/" + strconv.FormatInt(id, 10)
	// A runner for competitors' code is online; the digits job needs the builtin one.
	if err := p.db.TouchRunner(ctx, "torch-box/a-0", map[string]string{"runs": "entrypoint", "framework.torch": "1.13.1"}, 0); err != nil {
		t.Fatal(err)
	}
	anon := p.login(t, "")
	note := anon.doc(t, path).Find(testid("no-runner")).Text()
	if !strings.Contains(note, "No runner online can take this job") || !strings.Contains(note, "runs=builtin") {
		t.Fatalf("no-runner note %q, want what a runner needs", note)
	}
	var api struct {
		NoRunner string `json:"no_runner"`
	}
	if err := json.Unmarshal([]byte(anon.get(t, "/api/v1"+path)), &api); err != nil || !strings.Contains(api.NoRunner, "runs=builtin") {
		t.Fatalf("API no_runner %q (%v)", api.NoRunner, err)
	}

	if err := p.db.TouchRunner(ctx, "local-0", map[string]string{"runs": "builtin", "cpu_model": "AMD EPYC"}, 0); err != nil {
		t.Fatal(err)
	}
	if n := anon.doc(t, path).Find(testid("no-runner")).Length(); n != 0 {
		t.Fatalf("the note is still there with a builtin runner online")
	}
	api.NoRunner = ""
	if err := json.Unmarshal([]byte(anon.get(t, "/api/v1"+path)), &api); err != nil || api.NoRunner != "" {
		t.Fatalf("API no_runner %q (%v) with a runner online, want none", api.NoRunner, err)
	}
}
