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

// renderOf renders body, counting its renderings in n.
func renderOf(n *atomic.Int32, body string) func() (*Rendered, error) {
	return func() (*Rendered, error) {
		n.Add(1)
		return NewRendered("text/plain", []byte(body)), nil
	}
}

// awaitFresh asks for bench's variant until the answer is current, and
// returns it; a stale answer's rendering runs in the background.
func awaitFresh(t *testing.T, c *Cache, bench, variant string, render func() (*Rendered, error)) *Rendered {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(time.Millisecond) {
		p, f, err := c.Render(bench, variant, render)
		if err != nil {
			t.Fatal(err)
		}
		if f == Hit {
			return p
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s %s still %v after 10 s", bench, variant, f)
		}
	}
}

// An answer is rendered once and kept; a change of its board leaves it
// kept but stale: it is still answered, at once, while the new one is
// rendered in the background, once however many ask; the other boards'
// answers stay current. InvalidateAll makes every answer stale.
func TestRenderCacheHitsAndInvalidation(t *testing.T) {
	c := NewCache()
	var renders atomic.Int32
	a, f, err := c.Render("a", "html", renderOf(&renders, "one"))
	if err != nil || f != Miss || string(a.Body) != "one" {
		t.Fatalf("first Render: %v %v %v", a, f, err)
	}
	if b, f, _ := c.Render("a", "html", renderOf(&renders, "two")); b != a || f != Hit || renders.Load() != 1 {
		t.Fatalf("second Render: %v, %d renders, answered %q", f, renders.Load(), b.Body)
	}
	c.Render("a", "json", renderOf(&renders, "j"))
	other, _, _ := c.Render("b", "html", renderOf(&renders, "b"))
	if n, _ := c.RenderedLen(); n != 3 {
		t.Fatalf("RenderedLen %d, want 3", n)
	}

	c.Invalidate("a")
	if n, _ := c.RenderedLen(); n != 3 {
		t.Fatalf("after Invalidate(a) RenderedLen %d, want the 3 still kept", n)
	}
	release := make(chan struct{})
	var rebuilds atomic.Int32
	slow := func() (*Rendered, error) {
		rebuilds.Add(1)
		<-release
		return NewRendered("text/plain", []byte("three")), nil
	}
	for range 5 {
		if p, f, err := c.Render("a", "html", slow); p != a || f != Stale || err != nil {
			t.Fatalf("after Invalidate(a): %q %v %v, want the kept answer, stale", p.Body, f, err)
		}
	}
	if p, f, _ := c.Render("b", "html", renderOf(&renders, "x")); p != other || f != Hit {
		t.Fatalf("another board's answer after Invalidate(a): %q %v", p.Body, f)
	}
	close(release)
	if p := awaitFresh(t, c, "a", "html", slow); string(p.Body) != "three" || p.ETag == a.ETag || rebuilds.Load() != 1 {
		t.Fatalf("after the rebuild: %q, ETag %s (was %s), %d renderings for 5 stale answers", p.Body, p.ETag, a.ETag, rebuilds.Load())
	}

	c.InvalidateAll()
	for _, k := range []pageKey{{"a", "html"}, {"a", "json"}, {"b", "html"}} {
		if _, f, _ := c.Render(k.benchmark, k.variant, renderOf(&renders, "four")); f != Stale {
			t.Errorf("%v after InvalidateAll: %v, want stale", k, f)
		}
		awaitFresh(t, c, k.benchmark, k.variant, renderOf(&renders, "four"))
	}
	// Errors are answered and not kept.
	boom := errors.New("boom")
	if _, _, err := c.Render("c", "html", func() (*Rendered, error) { return nil, boom }); !errors.Is(err, boom) {
		t.Fatalf("err %v", err)
	}
	if p, f, _ := c.Render("c", "html", renderOf(&renders, "five")); string(p.Body) != "five" || f != Miss {
		t.Errorf("after an error: %q %v", p.Body, f)
	}
}

// An answer rendered for a request while its board changed may show the
// old verdict: it is answered, and kept as stale, so that the next
// request has it rendered again.
func TestRenderDuringInvalidationIsKeptStale(t *testing.T) {
	for _, change := range []func(c *Cache){
		func(c *Cache) { c.Invalidate("a") },
		func(c *Cache) { c.InvalidateAll() },
	} {
		c := NewCache()
		p, f, _ := c.Render("a", "html", func() (*Rendered, error) {
			change(c)
			return NewRendered("text/plain", []byte("old")), nil
		})
		if string(p.Body) != "old" || f != Miss {
			t.Fatalf("the caller got %q %v", p.Body, f)
		}
		if _, f, _ := c.Render("a", "html", func() (*Rendered, error) { return NewRendered("text/plain", []byte("new")), nil }); f != Stale {
			t.Fatalf("an answer rendered across a change: %v, want stale", f)
		}
	}
}

// A stale answer whose rendering fails (or panics) is dropped: the next
// request renders it and answers with the error, such as a page past the
// last one of a board that has shrunk.
func TestFailedRebuildDropsTheAnswer(t *testing.T) {
	for _, fail := range []func() (*Rendered, error){
		func() (*Rendered, error) { return nil, errors.New("page 5 of this board does not exist") },
		func() (*Rendered, error) { panic("a template broke") },
	} {
		c := NewCache()
		var renders atomic.Int32
		c.Render("a", "html?page=5", renderOf(&renders, "page 5"))
		c.Invalidate("a")
		if _, f, _ := c.Render("a", "html?page=5", fail); f != Stale {
			t.Fatalf("after the change: %v, want stale", f)
		}
		for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(time.Millisecond) {
			if n, _ := c.RenderedLen(); n == 0 {
				break
			}
			if time.Now().After(deadline) {
				t.Fatal("the answer whose rendering failed is still kept after 10 s")
			}
		}
		if _, f, err := c.Render("a", "html?page=5", func() (*Rendered, error) { return nil, errors.New("not found") }); f != Miss || err == nil {
			t.Fatalf("the next request: %v %v, want its own rendering's error", f, err)
		}
	}
}

func TestRenderSharesOneRenderingAmongMisses(t *testing.T) {
	c := NewCache()
	var renders atomic.Int32
	release := make(chan struct{})
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			p, _, err := c.Render("a", "html", func() (*Rendered, error) {
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
	big, _, _ := c.Render("a", "big", func() (*Rendered, error) {
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
