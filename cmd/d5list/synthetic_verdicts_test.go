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

// serve --synthetic-verdicts writes verified verdicts through the store's
// CompleteJob onto a folder of synthetic submissions, and the board shows
// them at once; it refuses a folder that holds a real submission (issue 15).
func TestSyntheticVerdicts(t *testing.T) {
	if portal.SyntheticSubmitter != store.SyntheticSubmitter {
		t.Fatalf("portal.SyntheticSubmitter %q differs from store's %q", portal.SyntheticSubmitter, store.SyntheticSubmitter)
	}
	data := t.TempDir()
	var out bytes.Buffer
	if err := run(context.Background(), []string{"admin", "seed-synthetic", "--data", data, "--submissions", "30", "--systems", "30"}, &out, io.Discard); err != nil {
		t.Fatal(err)
	}
	// A synthetic submission a killed server left queued: the made-up
	// verdicts take it with them instead of stopping at it.
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
	cfg := serveConfig{Addr: "127.0.0.1:0", DataDir: data, SyntheticVerdicts: 50, SyntheticBenchmark: "l2-digits-mlp-cpu",
		Ready: func(a string) { ready <- a }}
	go func() { done <- serve(ctx, cfg, slog.New(slog.NewTextHandler(testWriter{t}, nil))) }()
	select {
	case <-ready:
	case err := <-done:
		t.Fatal(err)
	}
	time.Sleep(time.Second)
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	db, err := store.Open(context.Background(), data)
	if err != nil {
		t.Fatal(err)
	}
	subs, err := db.Submissions(context.Background(), d5list.SubmissionFilter{})
	if err != nil {
		t.Fatal(err)
	}
	verified := 0
	for _, s := range subs {
		if s.Status == d5list.StatusVerified {
			verified++
		}
	}
	if len(subs) < 40 || verified != len(subs) {
		t.Fatalf("%d submissions, %d verified, after a second of 50 verdicts a second on 30; want about 80, all verified", len(subs), verified)
	}
	_, n, err := db.BoardPage(context.Background(), "l2-digits-mlp-cpu", leaderboard.Options{AllPerSystem: true}, 0, 1)
	if err != nil || n != len(subs) {
		t.Fatalf("the board of every entry has %d rows (%v), want %d", n, err, len(subs))
	}

	// A real submission in the folder: refused.
	s := &d5list.Submission{BenchmarkID: "l2-digits-mlp-cpu", Submitter: "Real Lab", SystemName: "box", Division: "closed",
		Availability: "available", Framework: "go", Recipe: &d5list.Recipe{}}
	if err := db.CreateSubmission(context.Background(), s); err != nil {
		t.Fatal(err)
	}
	db.Close()
	err = serve(context.Background(), cfg, slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err == nil || !strings.Contains(err.Error(), "real submissions") {
		t.Fatalf("serve --synthetic-verdicts on a folder with a real submission: %v", err)
	}
}
