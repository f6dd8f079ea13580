package leaderboard

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"io"
	"runtime"
	"sync"
	"time"

	"github.com/klauspost/compress/gzip"
)

// DefaultMaxRenderedBytes bounds the rendered answers a Cache keeps. Filter
// values come from the query, so the number of distinct answers is the
// visitors' choice; past the bound the least useful answers are dropped.
const DefaultMaxRenderedBytes = 64 << 20

// Rendered is one finished answer for a board (a page, its JSON or its
// CSV) with what a static file server sends with it: a strong ETag of the
// bytes and their gzip encoding (made with the rendering where the cache
// renders it, else on first request). Hits send these bytes as they are,
// which is what makes a board as cheap to serve as a static file; nothing
// in them may depend on who asks.
type Rendered struct {
	ContentType string
	Body        []byte
	ETag        string // of Body, unquoted; the gzip encoding's is ETag with -gz

	// Header values, made once and shared by every answer that sends
	// these bytes (see Header, RenderedAt).
	hdrType, hdrETag, hdrGzETag, hdrRenderedAt []string

	gzOnce sync.Once
	gz     []byte
}

// NewRendered wraps a finished body. A body that holds over twice its
// length in capacity (written into a buffer sized for a longer answer) is
// copied, so that what the cache keeps is about what it counts.
func NewRendered(contentType string, body []byte) *Rendered {
	if cap(body) > 2*len(body) {
		body = bytes.Clone(body)
	}
	sum := sha256.Sum256(body)
	etag := hex.EncodeToString(sum[:12])
	return &Rendered{ContentType: contentType, Body: body, ETag: etag,
		hdrType: []string{contentType}, hdrETag: []string{`"` + etag + `"`}, hdrGzETag: []string{`"` + etag + `-gz"`}}
}

// Header gives the Content-Type and quoted ETag header values of the
// answer (of its gzip encoding where gz), made when it was rendered, so
// that a cached answer is sent without building them again. Every answer
// shares them: callers assign them to a header map and never write into
// them (each slice's capacity is its length, so an Add copies).
func (r *Rendered) Header(gz bool) (contentType, etag []string) {
	if gz {
		return r.hdrType, r.hdrGzETag
	}
	return r.hdrType, r.hdrETag
}

// RenderedAt is when the answer's rendering began, as a header value
// (RFC 3339; the cache sets it when it keeps the answer): what it shows
// of the board is as of then. Callers never write into it.
func (r *Rendered) RenderedAt() []string { return r.hdrRenderedAt }

// newGzipWriter makes cached answers' gzip encodings. Made with each
// rendering, after every change of a board, the encoding is a good part of
// what a stream of changes costs, so it is klauspost/compress's fastest
// level, which is twice as fast as the standard library's level 2 for
// slightly fewer bytes (BenchmarkRenderedGzip, a 271 KB JSON board:
// 0.85 ms and 26,738 bytes against 1.75 ms and 26,940; the standard
// library's best compression, which /static/ uses: 6.5 ms and 22,542).
// The bytes are loopback-cheap next to a rendering that every reader
// after a change waits for.
func newGzipWriter(w io.Writer) *gzip.Writer {
	zw, _ := gzip.NewWriterLevel(w, gzip.BestSpeed)
	return zw
}

// gzipWriters keeps encoders between renderings: each holds its
// compressor's tables and window, about half a megabyte that a new one
// allocates again, and the collector reclaims, for every rendering. A
// sync.Pool would drop them at every other collection, which a stream of
// renderings brings about often; renderings run a few at a time
// (NewCache), so as many encoders as cores are kept for good.
var gzipWriters = make(chan *gzip.Writer, runtime.GOMAXPROCS(0))

func takeGzipWriter(w io.Writer) *gzip.Writer {
	select {
	case zw := <-gzipWriters:
		zw.Reset(w)
		return zw
	default:
		return newGzipWriter(w)
	}
}

func returnGzipWriter(zw *gzip.Writer) {
	zw.Reset(nil) // holds no answer's buffer while kept
	select {
	case gzipWriters <- zw:
	default:
	}
}

// Gzip is the body gzip-encoded, computed once.
func (r *Rendered) Gzip() []byte {
	r.gzOnce.Do(func() {
		var buf bytes.Buffer
		// The boards' answers compress 7 to 14 times.
		buf.Grow(len(r.Body) / 8)
		zw := takeGzipWriter(&buf)
		_, _ = zw.Write(r.Body)
		_ = zw.Close()
		returnGzipWriter(zw)
		r.gz = buf.Bytes()
	})
	return r.gz
}

// size is what the answer holds in memory, the gzip encoding counted as
// if made (it is at most about as large as the body).
func (r *Rendered) size() int64 { return 2 * int64(len(r.Body)) }

type pageKey struct {
	benchmark string
	variant   string
}

// Freshness says how Render answered.
type Freshness int

const (
	// Hit: a kept answer rendered after the board's last change.
	Hit Freshness = iota
	// Miss: none current was kept; the answer was rendered for the
	// request (or for one that began after the board's last change, and
	// shared).
	Miss
)

func (f Freshness) String() string {
	if f == Hit {
		return "hit"
	}
	return "miss"
}

// keptPage is a kept answer, with the generations of its benchmark and of
// everything when its rendering began: it is current while both still
// are and no change of its board is open.
type keptPage struct {
	page        *Rendered
	gen, allGen uint64
}

// Render returns benchmarkID's answer for variant. variant must name
// everything the bytes depend on besides the board's data: the format,
// the normalised query (see Options.Variant) and anything taken from the
// request such as the host in absolute links. Per-visitor content (a
// session's name, its CSRF token) must never be rendered into a cached
// answer; callers render those pages without the cache.
//
// A kept answer is answered only while it is current (Hit): after a change
// of its board (BeginChange, Invalidate, InvalidateAll) the first request
// renders it again, and the requests that start meanwhile share that
// rendering (Miss). A rendering that began before a change is answered to
// its own request, which began before the change too, and is neither
// kept nor shared with later ones. Errors are answered and not kept.
// render must not use the request it came with beyond its values: it
// serves the requests that share it. Answers larger than a quarter of the
// bound are not kept.
//
// render is given the length of the answer kept from before the change
// (0 where none is), for sizing its buffer: an answer is as long as the
// one before it give or take a row, and a buffer grown by doubling to
// hundreds of kilobytes copies and clears each size on the way.
func (c *Cache) Render(benchmarkID, variant string, render func(sizeHint int) (*Rendered, error)) (*Rendered, Freshness, error) {
	key := pageKey{benchmarkID, variant}
	c.mu.RLock()
	k, ok := c.pages[key]
	fresh := ok && c.current(benchmarkID, k.gen, k.allGen)
	c.mu.RUnlock()
	if fresh {
		return k.page, Hit, nil
	}
	sizeHint := 0
	if ok {
		sizeHint = len(k.page.Body)
	}
	c.mu.Lock()
	if k, ok := c.pages[key]; ok && c.current(benchmarkID, k.gen, k.allGen) {
		// Kept by another request between the two locks.
		c.mu.Unlock()
		return k.page, Hit, nil
	}
	if f, ok := c.pageFlights[key]; ok && c.current(benchmarkID, f.gen, f.allGen) {
		c.mu.Unlock()
		<-f.done
		return f.value.page, Miss, f.err
	}
	f := &flight[keptPage]{done: make(chan struct{}), gen: c.gens[benchmarkID], allGen: c.allGen}
	c.pageFlights[key] = f
	c.mu.Unlock()
	defer func() {
		c.mu.Lock()
		if c.pageFlights[key] == f {
			delete(c.pageFlights, key)
		}
		if f.err == nil && c.current(benchmarkID, f.value.gen, f.value.allGen) {
			c.keepPage(key, f.value)
		}
		c.mu.Unlock()
		close(f.done)
	}()
	// If render panics the deferred release still runs; the waiters must
	// then see a failure, not an empty answer, and nothing is kept.
	f.err = errComputePanicked
	c.renders <- struct{}{}
	defer func() { <-c.renders }()
	// Another rendering may have kept a current answer while this one
	// waited for its place: current now, it holds every change made before
	// this request began, and a queue of readers after a burst of changes
	// costs one rendering, not one each.
	c.mu.RLock()
	k, ok = c.pages[key]
	fresh = ok && c.current(benchmarkID, k.gen, k.allGen)
	c.mu.RUnlock()
	if fresh {
		f.value, f.err = *k, nil
		return k.page, Hit, nil
	}
	f.value, f.err = c.renderKept(f.gen, f.allGen, func() (*Rendered, error) { return render(sizeHint) })
	return f.value.page, Miss, f.err
}

// renderKept renders an answer and notes the generations it was rendered
// from: those of when it began, so that a change during the rendering
// leaves it out of date.
func (c *Cache) renderKept(gen, allGen uint64, render func() (*Rendered, error)) (keptPage, error) {
	began := time.Now()
	p, err := render()
	if err == nil && p == nil {
		err = errNoAnswer
	}
	if err == nil {
		p.hdrRenderedAt = []string{began.UTC().Format(time.RFC3339Nano)}
		// Most clients take gzip: encoded now, with the rendering, not on
		// the first such request.
		p.Gzip()
	}
	return keptPage{page: p, gen: gen, allGen: allGen}, err
}

var errNoAnswer = errors.New("leaderboard: rendering gave no answer")

// keepPage stores p, dropping other answers while the bound would be
// passed. Map order is random, so what goes is a random pick: no visitor
// pattern can pin a particular board out of the cache.
func (c *Cache) keepPage(key pageKey, p keptPage) {
	if old, ok := c.pages[key]; ok {
		c.dropPage(key, old)
	}
	n := p.page.size()
	if n > c.maxBytes/4 {
		return
	}
	for k, q := range c.pages {
		if c.pageBytes+n <= c.maxBytes {
			break
		}
		c.dropPage(k, q)
	}
	c.pages[key] = &p
	c.pageBytes += n
}

func (c *Cache) dropPage(k pageKey, p *keptPage) {
	delete(c.pages, k)
	c.pageBytes -= p.page.size()
}

// SetMaxRenderedBytes changes the bound on kept answers (tests, and
// servers with memory to spare); answers over it are dropped at once.
func (c *Cache) SetMaxRenderedBytes(n int64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.maxBytes = n
	for k, q := range c.pages {
		if c.pageBytes <= c.maxBytes {
			break
		}
		c.dropPage(k, q)
	}
}

// RenderedLen is the number of kept answers, current or out of date, and their
// accounted bytes.
func (c *Cache) RenderedLen() (n int, bytes int64) {
	c.mu.RLock()
	defer c.mu.RUnlock()
	return len(c.pages), c.pageBytes
}

// Variant is the part of a cache variant that opt contributes: options
// that select the same board give the same string.
func (o Options) Variant() string { return o.normalized().Query().Encode() }

// Scored returns benchmarkID's scored submissions, computing them with
// compute on a miss: the one store read and sort that every board of the
// benchmark (any Options) is then made from in one pass. It is kept and
// dropped like the boards.
func (c *Cache) Scored(benchmarkID string, compute func() (*Scored, error)) (*Scored, error) {
	return load(c, benchmarkID, benchmarkID, c.scored, c.scoredFlights, func(s *Scored) {
		if s != nil {
			c.scored[benchmarkID] = s
		}
	}, compute)
}
