package main

import (
	"context"
	"io"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	d5list "github.com/deep500/d5list"
	"github.com/deep500/d5list/internal/slowtest"
	"github.com/deep500/d5list/workloads"
)

// The Level 3 benchmark through the whole pipeline: its runs start worker
// processes (this test binary, re-executed; see TestMain) both in `run` and
// in the portal's in-process runner that re-runs the submission.
func TestEndToEndDataParallel(t *testing.T) {
	slowtest.Require(t, "honest Level 3 entries judged on their re-runs' times")
	const id = "l3-digits-mlp-dp-cpu"
	p := startPortal(t, 1)
	dir := filepath.Join(t.TempDir(), "dp")
	ctx := context.Background()
	if err := run(ctx, []string{"init", id, dir, "--submitter", "Dana Lab"}, io.Discard, io.Discard); err != nil {
		t.Fatalf("init: %v", err)
	}
	var out strings.Builder
	if err := run(ctx, []string{"run", dir}, &out, io.Discard); err != nil {
		t.Fatalf("run: %v\n%s", err, out.String())
	}
	var checkOut, checkErr strings.Builder
	if err := run(ctx, []string{"check", dir}, &checkOut, &checkErr); err != nil {
		t.Fatalf("check: %v\n%s%s", err, checkOut.String(), checkErr.String())
	}

	sub := p.honestVerdict(t, p.submitFolder(t, dir))
	if sub.Status != d5list.StatusVerified {
		t.Fatalf("submission ended %s with reasons %+v", sub.Status, sub.Reasons)
	}
	if sub.Claimed == nil || sub.Measured == nil || len(sub.Claimed.Runs) != 5 || len(sub.Measured.ClaimedSeedRuns()) != 5 {
		t.Fatalf("claimed or measured runs missing: %+v", sub)
	}
	for i, c := range sub.Claimed.Runs {
		m := sub.Measured.Runs[i]
		if c.GlobalBatchSize != 64 || m.GlobalBatchSize != 64 {
			t.Errorf("run %d: global batch sizes %d claimed, %d measured, want 2 workers x 32", i, c.GlobalBatchSize, m.GlobalBatchSize)
		}
		bytes := c.Extra[workloads.KeyCommunicationBytes]
		if !(bytes > 0) || bytes != m.Extra[workloads.KeyCommunicationBytes] {
			t.Errorf("run %d: %s claimed %v, measured %v: the same seed and workers move the same bytes", i, workloads.KeyCommunicationBytes, bytes, m.Extra[workloads.KeyCommunicationBytes])
		}
		if !(c.Extra[workloads.KeyScalingEfficiency] > 0) || !(m.Extra[workloads.KeyScalingEfficiency] > 0) {
			t.Errorf("run %d: no scaling efficiency (claimed %v, measured %v)", i, c.Extra, m.Extra)
		}
	}

	// The submission page shows both metrics per run beside the curves.
	doc := p.page(t, "/submissions/"+strconv.FormatInt(sub.ID, 10))
	for _, key := range []string{workloads.KeyCommunicationBytes, workloads.KeyScalingEfficiency} {
		cells := doc.Find(`[data-testid="metric-measured"][data-metric="` + key + `"]`)
		if cells.Length() != len(sub.Measured.Runs) || strings.TrimSpace(cells.First().Text()) == "—" {
			t.Errorf("submission page: %d measured %s cells (first %q), want one with a value for each of the %d runs (the claimed seeds' and the fresh ones)", cells.Length(), key, cells.First().Text(), len(sub.Measured.Runs))
		}
	}

	var board d5list.Leaderboard
	if code := p.getJSON(t, "/api/v1/leaderboards/"+id, &board); code != 200 {
		t.Fatalf("leaderboard: %d", code)
	}
	if len(board.Entries) != 1 || board.Entries[0].SubmissionID != sub.ID || board.Entries[0].Rank != 1 || !(board.Entries[0].Value > 0) {
		t.Fatalf("leaderboard entries %+v, want submission %d at rank 1", board.Entries, sub.ID)
	}
}
