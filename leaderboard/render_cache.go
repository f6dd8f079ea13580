package leaderboard

import (
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"encoding/hex"
	"sync"
)

// DefaultMaxRenderedBytes bounds the rendered answers a Cache keeps. Filter
// values come from the query, so the number of distinct answers is the
// visitors' choice; past the bound the least useful answers are dropped.
const DefaultMaxRenderedBytes = 64 << 20

// Rendered is one finished answer for a board (a page, its JSON or its
// CSV) with what a static file server sends with it: a strong ETag of the
// bytes and, made on first request, their gzip encoding. Hits send these
// bytes as they are, which is what makes a board as cheap to serve as a
// static file; nothing in them may depend on who asks.
type Rendered struct {
	ContentType string
	Body        []byte
	ETag        string // of Body, unquoted; the gzip encoding's is ETag with -gz

	// Header values, made once and shared by every answer that sends
	// these bytes (see Header).
	hdrType, hdrETag, hdrGzETag []string

	gzOnce sync.Once
	gz     []byte
}

// NewRendered wraps a finished body.
func NewRendered(contentType string, body []byte) *Rendered {
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

// gzipLevel is the compression of cached answers' gzip encodings. Made on
// the first gzip request after each change, it is on the path issue 15
// bounds (p99 under 50 ms including that request): against the best
// compression (what /static/ uses) the default level takes a little over
// half the time for a few per cent more bytes (BenchmarkRenderedGzip, a
// 245 KB JSON board: 2.4 ms and 21,793 bytes, against 4.1 ms and
// 21,276).
const gzipLevel = gzip.DefaultCompression

// Gzip is the body gzip-encoded, computed once.
func (r *Rendered) Gzip() []byte {
	r.gzOnce.Do(func() {
		var buf bytes.Buffer
		zw, _ := gzip.NewWriterLevel(&buf, gzipLevel)
		_, _ = zw.Write(r.Body)
		_ = zw.Close()
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

// Render returns the cached answer of benchmarkID's board for variant, or
// renders it with render and keeps it. variant must name everything the
// bytes depend on besides the board's data: the format, the normalised
// query (see Options.Variant) and anything taken from the request such as
// the host in absolute links. Per-visitor content (a session's name, its
// CSRF token) must never be rendered into a cached answer; callers render
// those pages without the cache.
//
// Like Get, an answer rendered while its benchmark was invalidated is
// returned but not kept; concurrent misses share one rendering; errors are
// not cached. Answers larger than a quarter of the bound are not kept.
func (c *Cache) Render(benchmarkID, variant string, render func() (*Rendered, error)) (*Rendered, error) {
	key := pageKey{benchmarkID, variant}
	return load(c, benchmarkID, key, c.pages, c.pageFlights, func(p *Rendered) {
		if p != nil {
			c.keepPage(key, p)
		}
	}, render)
}

// keepPage stores p, dropping other answers while the bound would be
// passed. Map order is random, so what goes is a random pick: no visitor
// pattern can pin a particular board out of the cache.
func (c *Cache) keepPage(key pageKey, p *Rendered) {
	n := p.size()
	if n > c.maxBytes/4 {
		return
	}
	if old, ok := c.pages[key]; ok {
		c.dropPage(key, old)
	}
	for k, q := range c.pages {
		if c.pageBytes+n <= c.maxBytes {
			break
		}
		c.dropPage(k, q)
	}
	c.pages[key] = p
	c.pageBytes += n
}

func (c *Cache) dropPage(k pageKey, p *Rendered) {
	delete(c.pages, k)
	c.pageBytes -= p.size()
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

// RenderedLen is the number of kept answers and their accounted bytes.
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
