package web_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/PuerkitoBio/goquery"

	d5list "github.com/deep500/d5list"
)

// A running re-run's page reads, for its competitor, where the re-run is
// in words and a bar per run, with the raw MLLOG lines folded under it;
// the event stream sends the same section rendered anew as lines arrive.
// A visitor gets neither.
func TestRunningRerunPageShowsProgress(t *testing.T) {
	p := startReal(t)
	ctx := context.Background()
	owner := p.users["competitor"]
	id := p.queueSubmission(t, owner)
	lease, err := p.db.LeaseJob(ctx, "pool/r-0", map[string]string{}, time.Minute)
	if err != nil || lease == nil {
		t.Fatalf("lease: %v %v", lease, err)
	}
	mllog := func(run int, key, value, meta string) d5list.LogLine {
		return d5list.LogLine{Run: run, Stream: d5list.StreamMLLOG, Text: fmt.Sprintf(
			`:::MLLOG {"namespace": "", "time_ms": 1, "event_type": "POINT_IN_TIME", "key": %q, "value": %s, "metadata": {%s}}`, key, value, meta)}
	}
	if err := p.db.AppendJobLog(ctx, lease.Job.ID, lease.Secret, []d5list.LogLine{
		mllog(0, "run_start", "null", ""), mllog(0, "run_stop", "null", `"status": "success"`),
		mllog(1, "run_start", "null", ""), mllog(1, "eval_accuracy", "0.91", `"epoch_num": 11`),
	}); err != nil {
		t.Fatal(err)
	}
	path := "/submissions/" + strconv.FormatInt(id, 10)

	doc := p.login(t, "competitor").doc(t, path)
	if got := doc.Find(testid("progress-line")).Text(); got != "run 2 of 7 · epoch 11 · accuracy 0.9100" {
		t.Errorf("progress %q, want run 2 of 7 (5 claimed, 2 fresh) at its epoch and accuracy", got)
	}
	var states []string
	doc.Find(testid("run-bar")).Each(func(_ int, bar *goquery.Selection) { states = append(states, bar.AttrOr("data-state", "")) })
	if strings.Join(states, " ") != "done running waiting waiting waiting waiting waiting" {
		t.Errorf("bars %v, want one per run: done, running, then waiting", states)
	}
	raw := doc.Find(testid("raw-log"))
	if raw.Is("[open]") || raw.Find(testid("log-line")).Length() != 4 {
		t.Errorf("the raw log is open (%v) or lacks its 4 lines", raw.Is("[open]"))
	}
	if order := testidOrder(doc, "rerun-progress", "raw-log"); strings.Join(order, " ") != "rerun-progress raw-log" {
		t.Errorf("the page shows %v, want the progress above the raw log", order)
	}

	visitor := p.login(t, "").doc(t, path)
	if visitor.Find(testid("rerun-progress")).Length() != 0 || visitor.Find(testid("raw-log")).Length() != 0 {
		t.Error("a visitor sees the re-run's progress or log, which its code wrote")
	}

	token, err := p.db.CreateToken(ctx, owner.ID, "progress")
	if err != nil {
		t.Fatal(err)
	}
	_, next := openEvents(t, p.url, id, token)
	var ev struct {
		HTML string `json:"html"`
	}
	if err := json.Unmarshal([]byte(strings.TrimPrefix(next("data: {\"html\""), "data: ")), &ev); err != nil {
		t.Fatal(err)
	}
	section, err := goquery.NewDocumentFromReader(strings.NewReader(ev.HTML))
	if err != nil {
		t.Fatal(err)
	}
	if got := section.Find(testid("progress-line")).Text(); got != "run 2 of 7 · epoch 11 · accuracy 0.9100" {
		t.Errorf("the stream's progress reads %q", got)
	}
}
