package web

import (
	"context"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"testing"
	"testing/fstest"
	"time"

	"github.com/go-chi/chi/v5"
	"github.com/go-chi/chi/v5/middleware"

	d5list "github.com/deep500/d5list"
	"github.com/deep500/d5list/handlers"
	"github.com/deep500/d5list/portal"
	"github.com/deep500/d5list/store"
)

// benchService is a real portal holding n verified submissions, one
// system each.
func benchService(b *testing.B, n int) *portal.Service {
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
	for i := range n {
		res := &d5list.Result{}
		for r := range 5 {
			res.Runs = append(res.Runs, d5list.RunMetrics{Index: r, Converged: true, TimeToTrain: float64(10 + (i*7+r)%997), FinalAccuracy: 0.97})
		}
		s := &d5list.Submission{BenchmarkID: bench.ID, Division: "closed", Availability: "available", Submitter: "synthetic",
			SystemName: "sys-" + time.Duration(i).String(), Framework: "numpy", Claimed: res}
		if err := db.CreateSubmission(ctx, s); err != nil {
			b.Fatal(err)
		}
		if err := db.SetSubmissionStatus(ctx, s.ID, d5list.StatusVerified, nil); err != nil {
			b.Fatal(err)
		}
	}
	svc := portal.New(db, nil, portal.Config{}, nil)
	return svc
}

func serveOnce(b *testing.B, h http.Handler, path string) int {
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, path, nil))
	if rec.Code != http.StatusOK {
		b.Fatalf("GET %s: %d", path, rec.Code)
	}
	return rec.Body.Len()
}

// BenchmarkLeaderboardVsStatic serves one board (JSON API, from the ranking
// cache) and then the same number of bytes as a static file through the
// same router; the ratio of the two ns/op is in BENCHMARKS.md.
func BenchmarkLeaderboardVsStatic(b *testing.B) {
	svc := benchService(b, 1000)
	log := slog.New(slog.DiscardHandler)
	h := handlers.New(svc, log, handlers.Options{})
	// build is New's router; its /static/ route serves body instead of
	// the embedded files: the static-file ceiling on the same middleware.
	build := func(body []byte) http.Handler {
		a, err := newAssets(fstest.MapFS{"board.json": {Data: body}}, time.Hour, h.NotFound)
		if err != nil {
			b.Fatal(err)
		}
		r := chi.NewRouter()
		r.Use(requestID, accessLog(log), recoverer(log, h), securityHeaders, middleware.GetHead)
		routes(r, h, a)
		return r
	}
	for _, path := range []string{"/api/v1/leaderboards/l2-bench", "/benchmarks/l2-bench"} {
		r := build(nil)
		rec := httptest.NewRecorder()
		r.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, path, nil))
		static := build(rec.Body.Bytes())
		b.Run("board"+path, func(b *testing.B) {
			b.SetBytes(int64(rec.Body.Len()))
			for b.Loop() {
				serveOnce(b, r, path)
			}
		})
		b.Run("static"+path, func(b *testing.B) {
			b.SetBytes(int64(rec.Body.Len()))
			for b.Loop() {
				serveOnce(b, static, "/static/board.json")
			}
		})
	}
}
