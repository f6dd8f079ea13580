package web

import (
	"context"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"strconv"
	"testing"
	"testing/fstest"
	"time"

	d5list "github.com/deep500/d5list"
	"github.com/deep500/d5list/handlers"
	"github.com/deep500/d5list/leaderboard"
	"github.com/deep500/d5list/portal"
	"github.com/deep500/d5list/store"
)

// benchService is a real portal over a real SQLite file holding n
// synthetic verified submissions (leaderboard.Synthetic, as `d5list admin
// seed-synthetic` stores them) spread over systems systems.
func benchService(b *testing.B, n, systems int) *portal.Service {
	ctx := context.Background()
	db, err := store.Open(ctx, b.TempDir())
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { db.Close() })
	bench := d5list.Benchmark{ID: "l2-bench", Name: "Bench", Level: 2, Category: "image-classification", Runs: 5,
		Quality: d5list.QualityTarget{Metric: "eval_accuracy", Target: 0.97, Mode: "first", Direction: d5list.HigherIsBetter},
		Ranking: d5list.RankingRule{Metric: d5list.MetricTimeToTrain, Direction: d5list.LowerIsBetter, Unit: "s"}}
	if err := db.UpsertBenchmarks(ctx, []d5list.Benchmark{bench}); err != nil {
		b.Fatal(err)
	}
	if err := db.InsertSynthetic(ctx, leaderboard.Synthetic(&bench, n, systems, store.SyntheticSubmitter, 1)); err != nil {
		b.Fatal(err)
	}
	return portal.New(db, nil, portal.Config{}, nil)
}

func serveOnce(b *testing.B, h http.Handler, path, encoding string) *httptest.ResponseRecorder {
	rec := httptest.NewRecorder()
	req := httptest.NewRequest(http.MethodGet, path, nil)
	if encoding != "" {
		req.Header.Set("Accept-Encoding", encoding)
	}
	h.ServeHTTP(rec, req)
	if rec.Code != http.StatusOK || rec.Header().Get("Content-Encoding") != encoding {
		b.Fatalf("GET %s (%q): %d, Content-Encoding %q", path, encoding, rec.Code, rec.Header().Get("Content-Encoding"))
	}
	return rec
}

// BenchmarkLeaderboardVsStatic serves one board of 100,000 synthetic
// submissions over 1,000 systems (the page, its JSON and its CSV, warm in
// the board cache) and then the same bytes as a static file through the
// same router and middleware, plain and gzip-encoded; the ratio of the two
// ns/op of each pair is in BENCHMARKS.md. D5LIST_BENCH_SUBMISSIONS sets
// another count.
func BenchmarkLeaderboardVsStatic(b *testing.B) {
	n := 100_000
	if v, err := strconv.Atoi(os.Getenv("D5LIST_BENCH_SUBMISSIONS")); err == nil && v > 0 {
		n = v
	}
	svc := benchService(b, n, 1000)
	log := slog.New(slog.DiscardHandler)
	h := handlers.New(svc, log, handlers.Options{})
	metrics := NewMetrics(nil, log)
	// build is New's router; its /static/ route serves body instead of
	// the embedded files: the static-file ceiling on the same middleware.
	build := func(body []byte, name string) http.Handler {
		a, err := newAssets(fstest.MapFS{name: {Data: body}}, time.Hour, h.NotFound)
		if err != nil {
			b.Fatal(err)
		}
		return newRouter(h, a, metrics, log)
	}
	for _, c := range []struct{ path, file string }{
		{"/benchmarks/l2-bench", "board.html"},
		{"/api/v1/leaderboards/l2-bench", "board.json"},
		{"/api/v1/leaderboards/l2-bench.csv", "board.csv"},
	} {
		r := build(nil, "unused.txt")
		body := serveOnce(b, r, c.path, "").Body.Bytes() // also warms the caches
		static := build(body, c.file)
		for _, enc := range []string{"", "gzip"} {
			name := "plain"
			if enc != "" {
				name = enc
			}
			// The board cache gzips at a faster level than /static/
			// (leaderboard.gzipLevel): the same content, a few per cent
			// more bytes; each side reports its own.
			size := int64(serveOnce(b, static, "/static/"+c.file, enc).Body.Len())
			got := int64(serveOnce(b, r, c.path, enc).Body.Len())
			if enc == "" && got != size {
				b.Fatalf("%s %s: the board sends %d bytes, the static file %d", c.path, name, got, size)
			}
			b.Run("board"+c.path+"/"+name, func(b *testing.B) {
				b.SetBytes(got)
				for b.Loop() {
					serveOnce(b, r, c.path, enc)
				}
			})
			b.Run("static"+c.path+"/"+name, func(b *testing.B) {
				b.SetBytes(size)
				for b.Loop() {
					serveOnce(b, static, "/static/"+c.file, enc)
				}
			})
		}
	}
}
