package web_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	d5list "github.com/deep500/d5list"
	"github.com/deep500/d5list/portal"
)

// digitsLog is an MLLOG run of the digits benchmark, the run-th, of the
// given seed, that reaches acc.
func digitsLog(seed int64, run int, acc float64) []byte {
	var b strings.Builder
	line := func(ms int, typ, key, value, meta string) {
		fmt.Fprintf(&b, `:::MLLOG {"namespace":"","time_ms":%d,"event_type":"%s","key":"%s","value":%s,"metadata":%s}`+"\n", ms, typ, key, value, meta)
	}
	line(1000, "POINT_IN_TIME", "seed", strconv.FormatInt(seed, 10), "{}")
	line(1000, "INTERVAL_START", "run_start", "null", "{}")
	line(3000+100*run, "POINT_IN_TIME", "eval_accuracy", strconv.FormatFloat(acc, 'f', -1, 64), `{"epoch_num":1}`)
	line(3000+100*run, "INTERVAL_END", "run_stop", "null", `{"status":"success"}`)
	return []byte(b.String())
}

// digitsClaim stores an entry of the competitor for the digits benchmark
// benchID, on hostCPU, whose claim is a log per run that reaches acc.
func digitsClaim(t *testing.T, p *realPortal, benchID, framework, hostCPU string, acc float64) *d5list.Submission {
	t.Helper()
	ctx := context.Background()
	bench, err := p.svc.Benchmark(ctx, benchID)
	if err != nil {
		t.Fatal(err)
	}
	var claimedLogs []d5list.RunLog
	for i := range bench.Runs {
		claimedLogs = append(claimedLogs, d5list.RunLog{Index: i, Seed: int64(100 + i), Log: digitsLog(int64(100+i), i, acc)})
	}
	claimed, err := portal.Measure(bench, claimedLogs)
	if err != nil {
		t.Fatal(err)
	}
	sub := &d5list.Submission{
		BenchmarkID: bench.ID, OwnerID: p.users["competitor"].ID, Division: d5list.DivisionClosed, Availability: d5list.AvailabilityAvailable,
		Submitter: "Rerun Lab", SystemName: "box", Framework: framework, HostCPU: hostCPU,
		Recipe: &d5list.Recipe{}, Claimed: claimed, Reasons: []d5list.Reason{},
	}
	if err := p.db.CreateSubmission(ctx, sub); err != nil {
		t.Fatal(err)
	}
	return sub
}

// rerunEntry stores an entry of the competitor whose claim is the logs
// with accuracy claimedAcc, and has the portal complete its job with the
// runner's logs, as a runner's report would (Service.Complete): the
// verdict, and the kept re-run logs, are the portal's own.
func rerunEntry(t *testing.T, p *realPortal, claimedAcc, rerunAcc float64) (int64, []d5list.RunLog) {
	t.Helper()
	ctx := context.Background()
	sub := digitsClaim(t, p, "l2-digits-mlp-cpu", "d5list-builtin", "AMD EPYC", claimedAcc)
	lease, err := p.db.LeaseJob(ctx, "r1", nil, time.Minute)
	if err != nil || lease == nil {
		t.Fatalf("lease: %v %v", lease, err)
	}
	// The runs the lease asks for, each logging its seed, as a runner's
	// report holds them.
	var rerunLogs []d5list.RunLog
	for _, run := range lease.Spec.Runs() {
		rerunLogs = append(rerunLogs, d5list.RunLog{Index: run.Index, Seed: run.Seed, Fresh: run.Fresh, Log: digitsLog(run.Seed, run.Index, rerunAcc)})
	}
	if err := p.svc.Complete(ctx, lease.Job.ID, lease.Secret, rerunLogs, map[string]string{"cpu_model": "AMD EPYC", "runs": "builtin"}); err != nil {
		t.Fatal(err)
	}
	return sub.ID, rerunLogs
}

func getBytes(t *testing.T, c *client, path string) (int, []byte) {
	t.Helper()
	resp, err := c.Get(c.base + path)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, body
}

// The portal's own re-run logs are downloads of the entry, beside the
// claimed ones and with their access: anyone's once it is verified, only
// its competitor's and the organisers' while its verdict goes against it.
// Each is the MLLOG the runner reported, byte for byte.
func TestRerunLogsAreDownloadable(t *testing.T) {
	p := startReal(t)
	verified, logs := rerunEntry(t, p, 0.96, 0.96)
	sub, err := p.svc.Submission(context.Background(), verified)
	if err != nil || sub.Status != d5list.StatusVerified {
		t.Fatalf("the entry re-run as claimed is %v (%v), want verified: %+v", sub.Status, err, sub.Reasons)
	}
	visitor := p.login(t, "")
	entry := "/submissions/" + strconv.FormatInt(verified, 10)
	links := visitor.doc(t, entry).Find(testid("download-rerun-log"))
	if links.Length() != len(logs) || links.Eq(3).AttrOr("href", "") != entry+"/reruns/3/log" {
		t.Fatalf("the entry page links %d re-run logs (the fourth %q), want %d", links.Length(), links.Eq(3).AttrOr("href", ""), len(logs))
	}
	if code, body := getBytes(t, visitor, entry+"/reruns/3/log"); code != http.StatusOK || string(body) != string(logs[3].Log) {
		t.Errorf("a visitor's download of re-run 3's log: %d %q, want 200 and the runner's log", code, body)
	}
	if code, _ := getBytes(t, visitor, entry+"/reruns/9/log"); code != http.StatusNotFound {
		t.Errorf("a run the re-run does not have: %d, want 404", code)
	}

	discrepant, logs := rerunEntry(t, p, 0.99, 0.96)
	if sub, _ := p.svc.Submission(context.Background(), discrepant); sub.Status != d5list.StatusDiscrepancy {
		t.Fatalf("the entry whose claim the re-run contradicts is %s, want discrepancy", sub.Status)
	}
	path := "/submissions/" + strconv.FormatInt(discrepant, 10) + "/reruns/0/log"
	for role, want := range map[string]int{"": http.StatusNotFound, "public": http.StatusNotFound, "competitor": http.StatusOK, "organiser": http.StatusOK} {
		code, body := getBytes(t, p.login(t, role), path)
		if code != want || (want == http.StatusOK && string(body) != string(logs[0].Log)) {
			t.Errorf("%q downloading a discrepant entry's re-run log: %d, want %d", role, code, want)
		}
	}
}

// An entry's code and paper, named in its submission.json, are links on
// its page; an entry without them shows neither.
func TestEntryPageLinksCodeAndPaper(t *testing.T) {
	p := startReal(t)
	ctx := context.Background()
	with := &d5list.Submission{BenchmarkID: "l2-digits-mlp-cpu", OwnerID: p.users["competitor"].ID, Division: d5list.DivisionClosed,
		Availability: d5list.AvailabilityAvailable, Submitter: "Paper Lab", SystemName: "box", Framework: "go",
		CodeURL: "https://github.com/paper-lab/box", PaperURL: "https://arxiv.org/abs/2501.00001",
		Recipe: &d5list.Recipe{}, Claimed: &d5list.Result{}, Reasons: []d5list.Reason{}}
	without := *with
	without.CodeURL, without.PaperURL = "", ""
	for _, s := range []*d5list.Submission{with, &without} {
		if err := p.db.CreateSubmission(ctx, s); err != nil {
			t.Fatal(err)
		}
	}
	doc := p.login(t, "").doc(t, "/submissions/"+strconv.FormatInt(with.ID, 10))
	for id, want := range map[string]string{"entry-code-link": with.CodeURL, "entry-paper-link": with.PaperURL} {
		a := doc.Find(testid(id))
		if a.AttrOr("href", "") != want || strings.TrimSpace(a.Text()) != want || !strings.Contains(a.AttrOr("rel", ""), "nofollow") {
			t.Errorf("%s: href %q, text %q, rel %q; want a nofollow link to %s", id, a.AttrOr("href", ""), a.Text(), a.AttrOr("rel", ""), want)
		}
	}
	doc = p.login(t, "").doc(t, "/submissions/"+strconv.FormatInt(without.ID, 10))
	if n := doc.Find(testid("entry-code-link") + "," + testid("entry-paper-link")).Length(); n != 0 {
		t.Errorf("an entry without code or paper links shows %d such links", n)
	}
}
