package main

import (
	"bytes"
	"context"
	"io"
	"log/slog"
	"strings"
	"testing"
	"time"

	d5list "github.com/deep500/d5list"
	"github.com/deep500/d5list/leaderboard"
	"github.com/deep500/d5list/portal"
	"github.com/deep500/d5list/store"
)

// serve --synthetic-changes writes each kind of change through the store
// methods of real ones onto a folder of synthetic submissions (uploads
// the verdicts take, a leader a rescore takes off and a review puts back,
// editions), tells stdout of each, and the board shows them; it refuses
// a folder that holds a real submission (issues 15 and 28).
func TestSyntheticChanges(t *testing.T) {
	if portal.SyntheticSubmitter != store.SyntheticSubmitter {
		t.Fatalf("portal.SyntheticSubmitter %q differs from store's %q", portal.SyntheticSubmitter, store.SyntheticSubmitter)
	}
	data := t.TempDir()
	var out bytes.Buffer
	if err := run(context.Background(), []string{"admin", "seed-synthetic", "--data", data, "--submissions", "30", "--systems", "30"}, &out, io.Discard); err != nil {
		t.Fatal(err)
	}
	// A synthetic submission a killed server left queued: the first
	// verdict takes it.
	left, err := store.Open(context.Background(), data)
	if err != nil {
		t.Fatal(err)
	}
	bench, err := left.Benchmark(context.Background(), "l2-digits-mlp-cpu")
	if err != nil {
		t.Fatal(err)
	}
	queued := leaderboard.SyntheticRange(bench, 30, 31, 30, store.SyntheticSubmitter, 7)[0]
	queued.Measured, queued.Status = nil, d5list.StatusQueued
	if err := left.CreateSubmission(context.Background(), &queued); err != nil {
		t.Fatal(err)
	}
	left.Close()

	ctx, cancel := context.WithCancel(context.Background())
	ready, done := make(chan string, 1), make(chan error, 1)
	told := &syncBuf{}
	cfg := serveConfig{Addr: "127.0.0.1:0", DataDir: data, SyntheticChanges: 50, SyntheticKinds: portal.SyntheticChangeKinds,
		SyntheticBenchmark: "l2-digits-mlp-cpu", SyntheticOut: told, Ready: func(a string) { ready <- a }}
	go func() { done <- serve(ctx, cfg, slog.New(slog.NewTextHandler(testWriter{t}, nil))) }()
	select {
	case <-ready:
	case err := <-done:
		t.Fatal(err)
	}
	// Two rounds of the five kinds at least.
	for deadline := time.Now().Add(time.Minute); strings.Count(told.String(), "synthetic change edition ") < 2; time.Sleep(50 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("after a minute, the changes told:\n%s", told.String())
		}
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	for _, kind := range portal.SyntheticChangeKinds {
		if !strings.Contains(told.String(), "synthetic change "+kind+" ") {
			t.Errorf("no %s change told:\n%s", kind, told.String())
		}
	}
	db, err := store.Open(context.Background(), data)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	ctx = context.Background()
	subs, err := db.Submissions(ctx, d5list.SubmissionFilter{})
	if err != nil {
		t.Fatal(err)
	}
	byStatus := map[d5list.Status]int{}
	for _, s := range subs {
		byStatus[s.Status]++
	}
	uploads := strings.Count(told.String(), "synthetic change upload ")
	if len(subs) != 31+uploads || byStatus[d5list.StatusVerified] < len(subs)-2 {
		t.Fatalf("%d submissions after %d uploads on 31 (%v): want each upload stored, all verified but the last upload and rescore", len(subs), uploads, byStatus)
	}
	if s, err := db.Submission(ctx, queued.ID); err != nil || s.Status != d5list.StatusVerified {
		t.Fatalf("the submission left queued: %v (%v), want verified by the first verdict", s, err)
	}
	if eds, err := db.Editions(ctx); err != nil || len(eds) < 2 {
		t.Fatalf("%d editions (%v), want one per edition change", len(eds), err)
	}
	var reviews []string
	for _, s := range subs {
		log, err := db.AuditLog(ctx, s.ID)
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range log {
			reviews = append(reviews, string(e.Action))
		}
	}
	if strings.Count(strings.Join(reviews, " "), "rescore") < 2 || strings.Count(strings.Join(reviews, " "), "accept") < 2 {
		t.Fatalf("audit entries %v: want the rescores and the reviews that accepted them", reviews)
	}
	for _, b := range []struct {
		unverified bool
		want       int
	}{{false, byStatus[d5list.StatusVerified]}, {true, len(subs)}} {
		_, n, err := db.BoardPage(ctx, "l2-digits-mlp-cpu", leaderboard.Options{AllPerSystem: true, IncludeUnverified: b.unverified}, 0, 1)
		if err != nil || n != b.want {
			t.Fatalf("the board of every entry (unverified %v) has %d rows (%v), want %d", b.unverified, n, err, b.want)
		}
	}

	// A real submission in the folder: refused.
	s := &d5list.Submission{BenchmarkID: "l2-digits-mlp-cpu", Submitter: "Real Lab", SystemName: "box", Division: "closed",
		Availability: "available", Framework: "go", Recipe: &d5list.Recipe{}}
	if err := db.CreateSubmission(ctx, s); err != nil {
		t.Fatal(err)
	}
	err = serve(ctx, cfg, slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err == nil || !strings.Contains(err.Error(), "real submissions") {
		t.Fatalf("serve --synthetic-changes on a folder with a real submission: %v", err)
	}
}
