package leaderboard

import (
	"bytes"
	"compress/gzip"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	d5list "github.com/deep500/d5list"
)

// renderOf renders body, counting its renderings in n.
func renderOf(n *atomic.Int32, body string) func(int) (*Rendered, error) {
	return func(int) (*Rendered, error) {
		n.Add(1)
		return NewRendered("text/plain", []byte(body)), nil
	}
}

// An answer is rendered once and kept; after a change of its board the
// first request renders it again, and the requests that start while that
// rendering runs share it: none is answered the kept answer from before
// the change. The other boards' answers stay current; InvalidateAll makes
// every answer out of date.
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
	release := make(chan struct{})
	var rebuilds atomic.Int32
	slow := func(int) (*Rendered, error) {
		rebuilds.Add(1)
		<-release
		return NewRendered("text/plain", []byte("three")), nil
	}
	var wg sync.WaitGroup
	answers := make([]*Rendered, 5)
	for i := range answers {
		wg.Go(func() {
			p, f, err := c.Render("a", "html", slow)
			if f != Miss || err != nil {
				t.Errorf("after Invalidate(a): %v %v, want the new rendering", f, err)
			}
			answers[i] = p
		})
	}
	for rebuilds.Load() == 0 {
		time.Sleep(time.Millisecond)
	}
	if p, f, _ := c.Render("b", "html", renderOf(&renders, "x")); p != other || f != Hit {
		t.Fatalf("another board's answer after Invalidate(a): %q %v", p.Body, f)
	}
	close(release)
	wg.Wait()
	for _, p := range answers {
		if string(p.Body) != "three" {
			t.Fatalf("a request after the change got %q, want the answer rendered after it", p.Body)
		}
	}
	if p, f, _ := c.Render("a", "html", slow); string(p.Body) != "three" || f != Hit || rebuilds.Load() != 1 {
		t.Fatalf("after the rebuild: %q %v, %d renderings for 5 requests", p.Body, f, rebuilds.Load())
	}

	c.InvalidateAll()
	for _, k := range []pageKey{{"a", "html"}, {"a", "json"}, {"b", "html"}} {
		if p, f, _ := c.Render(k.benchmark, k.variant, renderOf(&renders, "four")); f != Miss || string(p.Body) != "four" {
			t.Errorf("%v after InvalidateAll: %q %v, want a new rendering", k, p.Body, f)
		}
	}
	// Errors are answered and not kept.
	boom := errors.New("boom")
	if _, _, err := c.Render("c", "html", func(int) (*Rendered, error) { return nil, boom }); !errors.Is(err, boom) {
		t.Fatalf("err %v", err)
	}
	if p, f, _ := c.Render("c", "html", renderOf(&renders, "five")); string(p.Body) != "five" || f != Miss {
		t.Errorf("after an error: %q %v", p.Body, f)
	}
}

// An answer rendered for a request while its board changed may show the
// old verdict: it is answered to that request, which began before the
// change, and neither kept nor shared with a request that begins after.
func TestRenderAcrossAChangeIsNotKept(t *testing.T) {
	for _, change := range []func(c *Cache){
		func(c *Cache) { c.Invalidate("a") },
		func(c *Cache) { c.InvalidateAll() },
		func(c *Cache) { c.BeginChange("a"); c.EndChange("a") },
	} {
		c := NewCache()
		changed, release := make(chan struct{}), make(chan struct{})
		done := make(chan struct{})
		go func() {
			defer close(done)
			p, f, _ := c.Render("a", "html", func(int) (*Rendered, error) {
				change(c)
				close(changed)
				<-release
				return NewRendered("text/plain", []byte("old")), nil
			})
			if string(p.Body) != "old" || f != Miss {
				t.Errorf("the caller got %q %v", p.Body, f)
			}
		}()
		<-changed
		// Begun after the change, while the old rendering still runs.
		if p, f, _ := c.Render("a", "html", func(int) (*Rendered, error) { return NewRendered("text/plain", []byte("new")), nil }); f != Miss || string(p.Body) != "new" {
			t.Fatalf("a request after the change: %q %v, want its own rendering", p.Body, f)
		}
		close(release)
		<-done
		if p, f, _ := c.Render("a", "html", func(int) (*Rendered, error) { return NewRendered("text/plain", []byte("newer")), nil }); string(p.Body) == "old" {
			t.Fatalf("the answer rendered across the change was kept: %q %v", p.Body, f)
		}
	}
}

// Between a write's BeginChange and its EndChange (its commit happens in
// between) no answer of its board is kept or answered from the cache: a
// request that starts after the commit reads the store as it left it.
func TestNothingIsKeptWhileAChangeIsOpen(t *testing.T) {
	c := NewCache()
	var renders atomic.Int32
	c.Render("a", "html", renderOf(&renders, "before"))
	c.Render("b", "html", renderOf(&renders, "b"))
	c.BeginChange("a")
	for _, body := range []string{"committed", "again"} {
		if p, f, _ := c.Render("a", "html", renderOf(&renders, body)); f != Miss || string(p.Body) != body {
			t.Fatalf("while the change is open: %q %v, want a rendering of its own", p.Body, f)
		}
	}
	entries, _ := c.Get("a", Options{}, func() ([]d5list.Entry, error) { return []d5list.Entry{{SubmissionID: 1}}, nil })
	if got, _ := c.Get("a", Options{}, func() ([]d5list.Entry, error) { return []d5list.Entry{{SubmissionID: 2}}, nil }); len(entries) != 1 || got[0].SubmissionID != 2 {
		t.Fatalf("a board computed while the change is open was kept: %+v", got)
	}
	if _, f, _ := c.Render("b", "html", renderOf(&renders, "x")); f != Hit {
		t.Fatalf("another board while a's change is open: %v, want a hit", f)
	}
	c.EndChange("a")
	c.Render("a", "html", renderOf(&renders, "after"))
	if p, f, _ := c.Render("a", "html", renderOf(&renders, "x")); f != Hit || string(p.Body) != "after" {
		t.Fatalf("after the change ended: %q %v, want the answer rendered since kept", p.Body, f)
	}
}

// A rendering that fails (or panics) after a change is answered with its
// error and keeps nothing, such as a page past the last one of a board
// that has shrunk.
func TestFailedRenderingKeepsNothing(t *testing.T) {
	for _, fail := range []func(int) (*Rendered, error){
		func(int) (*Rendered, error) { return nil, errors.New("page 5 of this board does not exist") },
		func(int) (*Rendered, error) { panic("a template broke") },
	} {
		c := NewCache()
		var renders atomic.Int32
		c.Render("a", "html?page=5", renderOf(&renders, "page 5"))
		c.Invalidate("a")
		func() {
			defer func() { _ = recover() }()
			if _, f, err := c.Render("a", "html?page=5", fail); f != Miss || err == nil {
				t.Fatalf("after the change: %v %v, want the rendering's error", f, err)
			}
		}()
		if _, f, err := c.Render("a", "html?page=5", func(int) (*Rendered, error) { return nil, errors.New("not found") }); f != Miss || err == nil {
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
			p, _, err := c.Render("a", "html", func(int) (*Rendered, error) {
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
		c.Render("a", string(rune('A'+i)), func(int) (*Rendered, error) {
			return NewRendered("text/plain", bytes.Repeat([]byte("x"), 100)), nil
		})
		if _, size := c.RenderedLen(); size > 1000 {
			t.Fatalf("after %d answers the cache holds %d bytes", i+1, size)
		}
	}
	if n, _ := c.RenderedLen(); n != 5 {
		t.Errorf("%d answers of 200 accounted bytes kept under 1000, want 5", n)
	}
	big, _, _ := c.Render("a", "big", func(int) (*Rendered, error) {
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
// made with each rendering after a change, by the encoder kept answers use
// (newGzipWriter) and by the standard library's at its level 2, its
// default and the best compression /static/ uses, on the JSON export of a board of 500 entries (about the size of a board
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
	// The kept encoder against the standard library's, which the cache
	// used before: its level 2, its default, and /static/'s best.
	std := func(level int) func(w io.Writer) io.WriteCloser {
		return func(w io.Writer) io.WriteCloser { zw, _ := gzip.NewWriterLevel(w, level); return zw }
	}
	for _, c := range []struct {
		name string
		make func(w io.Writer) io.WriteCloser
	}{{"kept", func(w io.Writer) io.WriteCloser { return newGzipWriter(w) }}, {"stdlib-2", std(2)}, {"stdlib-default", std(gzip.DefaultCompression)}, {"stdlib-best", std(gzip.BestCompression)}} {
		b.Run(c.name, func(b *testing.B) {
			var n int
			for b.Loop() {
				var buf bytes.Buffer
				zw := c.make(&buf)
				zw.Write(body.Bytes())
				zw.Close()
				n = buf.Len()
			}
			b.ReportMetric(float64(body.Len()), "body-bytes")
			b.ReportMetric(float64(n), "gzip-bytes")
		})
	}
}

// A rendering after a change is told the length of the answer it
// replaces, to size its buffer; the first rendering of a view, and one of
// another view, are told nothing.
func TestRenderIsToldTheLengthOfTheAnswerItReplaces(t *testing.T) {
	c := NewCache()
	var hints []int
	render := func(body string) func(int) (*Rendered, error) {
		return func(sizeHint int) (*Rendered, error) {
			hints = append(hints, sizeHint)
			return NewRendered("text/plain", []byte(body)), nil
		}
	}
	c.Render("a", "html", render(strings.Repeat("x", 1000)))
	c.Render("a", "html", render("a hit renders nothing"))
	c.Invalidate("a")
	c.Render("a", "html", render(strings.Repeat("y", 1001)))
	c.Render("a", "json", render("{}"))
	c.InvalidateAll()
	c.Render("a", "html", render("z"))
	if want := []int{0, 1000, 0, 1001}; !slices.Equal(hints, want) {
		t.Fatalf("the renderings were told %v, want %v", hints, want)
	}
}

// The encoders are shared between renderings: answers encoded at once,
// each by whichever encoder the pool hands out, each decode to their own
// bytes.
func TestGzipEncodingsAtOnceDecodeToTheirOwnBodies(t *testing.T) {
	answers := make([]*Rendered, 64)
	for i := range answers {
		answers[i] = NewRendered("text/plain", []byte(strings.Repeat(fmt.Sprintf("answer %d, ", i), 2000+i)))
	}
	var wg sync.WaitGroup
	for _, a := range answers {
		wg.Go(func() { a.Gzip() })
	}
	wg.Wait()
	for i, a := range answers {
		zr, err := gzip.NewReader(bytes.NewReader(a.Gzip()))
		if err != nil {
			t.Fatalf("answer %d: %v", i, err)
		}
		got, err := io.ReadAll(zr)
		if err != nil || !bytes.Equal(got, a.Body) {
			t.Fatalf("answer %d decodes to %d bytes (%v), want its own %d", i, len(got), err, len(a.Body))
		}
	}
}

// An answer written into a buffer sized for a much longer one keeps only
// its own bytes: the cache counts its length.
func TestRenderedKeepsAboutItsLength(t *testing.T) {
	buf := bytes.NewBuffer(make([]byte, 0, 1<<20))
	buf.WriteString("a short answer")
	if r := NewRendered("text/plain", buf.Bytes()); cap(r.Body) > 2*len(r.Body) || string(r.Body) != "a short answer" {
		t.Fatalf("the answer keeps %d bytes of capacity for %q", cap(r.Body), r.Body)
	}
}
