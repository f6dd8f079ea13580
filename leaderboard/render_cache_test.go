package leaderboard

import (
	"bytes"
	"compress/gzip"
	"errors"
	"io"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	d5list "github.com/deep500/d5list"
)

func TestRenderCacheHitsAndInvalidation(t *testing.T) {
	c := NewCache()
	renders := 0
	get := func(bench, variant, body string) *Rendered {
		t.Helper()
		p, err := c.Render(bench, variant, func() (*Rendered, error) {
			renders++
			return NewRendered("text/plain", []byte(body)), nil
		})
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	a := get("a", "html", "one")
	if b := get("a", "html", "two"); b != a || renders != 1 {
		t.Fatalf("second Render re-rendered (%d renders) or answered %q", renders, b.Body)
	}
	get("a", "json", "j")
	get("b", "html", "b")
	if n, _ := c.RenderedLen(); n != 3 {
		t.Fatalf("RenderedLen %d, want 3", n)
	}
	c.Invalidate("a")
	if n, _ := c.RenderedLen(); n != 1 {
		t.Fatalf("after Invalidate(a) RenderedLen %d, want 1", n)
	}
	if p := get("a", "html", "three"); string(p.Body) != "three" || p.ETag == a.ETag {
		t.Errorf("after Invalidate: %q, ETag %s (was %s)", p.Body, p.ETag, a.ETag)
	}
	c.InvalidateAll()
	if n, size := c.RenderedLen(); n != 0 || size != 0 {
		t.Fatalf("after InvalidateAll: %d answers, %d bytes", n, size)
	}
	// Errors are answered and not kept.
	boom := errors.New("boom")
	if _, err := c.Render("a", "html", func() (*Rendered, error) { return nil, boom }); !errors.Is(err, boom) {
		t.Fatalf("err %v", err)
	}
	if p := get("a", "html", "four"); string(p.Body) != "four" {
		t.Errorf("after an error: %q", p.Body)
	}
}

// An answer rendered while its benchmark was invalidated may show the old
// verdict: it is answered once and not kept.
func TestRenderDuringInvalidationIsNotKept(t *testing.T) {
	c := NewCache()
	p, _ := c.Render("a", "html", func() (*Rendered, error) {
		c.Invalidate("a")
		return NewRendered("text/plain", []byte("stale")), nil
	})
	if string(p.Body) != "stale" {
		t.Fatalf("the caller got %q", p.Body)
	}
	if n, _ := c.RenderedLen(); n != 0 {
		t.Fatal("an answer rendered across an Invalidate was kept")
	}
	c.Render("b", "html", func() (*Rendered, error) {
		c.InvalidateAll()
		return NewRendered("text/plain", []byte("stale")), nil
	})
	if n, _ := c.RenderedLen(); n != 0 {
		t.Fatal("an answer rendered across an InvalidateAll was kept")
	}
}

func TestRenderSharesOneRenderingAmongMisses(t *testing.T) {
	c := NewCache()
	var renders atomic.Int32
	release := make(chan struct{})
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			p, err := c.Render("a", "html", func() (*Rendered, error) {
				renders.Add(1)
				<-release
				return NewRendered("text/plain", []byte("x")), nil
			})
			if err != nil || string(p.Body) != "x" {
				t.Errorf("%v %v", p, err)
			}
		})
	}
	for c.flightsLen() == 0 {
		time.Sleep(time.Millisecond) // the first miss has not started yet
	}
	close(release)
	wg.Wait()
	if renders.Load() != 1 {
		t.Errorf("%d renderings for 8 concurrent misses", renders.Load())
	}
}

func (c *Cache) flightsLen() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.pageFlights)
}

// The kept answers stay under the bound whatever visitors ask for; one
// answer too large for it is served and not kept.
func TestRenderCacheIsBounded(t *testing.T) {
	c := NewCache()
	c.SetMaxRenderedBytes(1000)
	for i := range 50 {
		c.Render("a", string(rune('A'+i)), func() (*Rendered, error) {
			return NewRendered("text/plain", bytes.Repeat([]byte("x"), 100)), nil
		})
		if _, size := c.RenderedLen(); size > 1000 {
			t.Fatalf("after %d answers the cache holds %d bytes", i+1, size)
		}
	}
	if n, _ := c.RenderedLen(); n != 5 {
		t.Errorf("%d answers of 200 accounted bytes kept under 1000, want 5", n)
	}
	big, _ := c.Render("a", "big", func() (*Rendered, error) {
		return NewRendered("text/plain", bytes.Repeat([]byte("x"), 300)), nil
	})
	if len(big.Body) != 300 {
		t.Fatal("the large answer was not served")
	}
	c.mu.Lock()
	_, kept := c.pages[pageKey{"a", "big"}]
	c.mu.Unlock()
	if kept {
		t.Error("an answer over a quarter of the bound was kept")
	}
}

func TestRenderedGzipIsTheBody(t *testing.T) {
	p := NewRendered("text/html", bytes.Repeat([]byte("<tr><td>row</td></tr>"), 1000))
	zr, err := gzip.NewReader(bytes.NewReader(p.Gzip()))
	if err != nil {
		t.Fatal(err)
	}
	plain, _ := io.ReadAll(zr)
	if !bytes.Equal(plain, p.Body) || len(p.Gzip()) >= len(p.Body) {
		t.Errorf("gzip of %d bytes: %d bytes, round trip equal %v", len(p.Body), len(p.Gzip()), bytes.Equal(plain, p.Body))
	}
	if (Options{Division: " Closed"}).Variant() != (Options{Division: "closed"}).Variant() {
		t.Error("options selecting the same board give different variants")
	}
}

func TestScoredIsKeptAndDroppedWithTheBoards(t *testing.T) {
	c := NewCache()
	bench := testBench()
	computed := 0
	get := func() *Scored {
		s, err := c.Scored(bench.ID, func() (*Scored, error) {
			computed++
			return Score(bench, nil), nil
		})
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	first := get()
	if get() != first || computed != 1 {
		t.Fatalf("second Scored recomputed (%d)", computed)
	}
	c.Invalidate("other")
	if get() != first {
		t.Error("another benchmark's Invalidate dropped it")
	}
	c.Invalidate(bench.ID)
	if get() == first || computed != 2 {
		t.Error("Invalidate kept it")
	}
	c.InvalidateAll()
	get()
	if computed != 3 {
		t.Error("InvalidateAll kept it")
	}
}

// BenchmarkRenderedGzip is the cost of a cached answer's gzip encoding,
// made on the first gzip request after each change, at the level kept
// answers use (gzipLevel) and at the best compression /static/ uses, on
// the JSON export of a board of 500 entries (about the size of a board
// page); it reports the encoded bytes of each.
func BenchmarkRenderedGzip(b *testing.B) {
	bench := &d5list.Benchmark{ID: "l2-bench", Level: 2, Ranking: d5list.RankingRule{Metric: d5list.MetricTimeToTrain, Direction: d5list.LowerIsBetter}}
	subs := SyntheticRange(bench, 0, 500, 500, "synthetic", 1)
	for i := range subs {
		subs[i].Status = d5list.StatusVerified
	}
	var body bytes.Buffer
	if err := WriteJSON(&body, &d5list.Leaderboard{Benchmark: *bench, Entries: Rank(bench, subs, Options{})}); err != nil {
		b.Fatal(err)
	}
	for _, c := range []struct {
		name  string
		level int
	}{{"kept", gzipLevel}, {"best", gzip.BestCompression}} {
		b.Run(c.name, func(b *testing.B) {
			var n int
			for b.Loop() {
				var buf bytes.Buffer
				zw, _ := gzip.NewWriterLevel(&buf, c.level)
				zw.Write(body.Bytes())
				zw.Close()
				n = buf.Len()
			}
			b.ReportMetric(float64(body.Len()), "body-bytes")
			b.ReportMetric(float64(n), "gzip-bytes")
		})
	}
}
