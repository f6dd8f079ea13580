package web

import (
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"encoding/hex"
	"io/fs"
	"mime"
	"net/http"
	"path"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/deep500/d5list/handlers"
)

// assets serves the embedded files under /static/. Embedded files have no
// modification time, so each gets an ETag from its content, computed once.
type assets struct {
	files    map[string]asset
	maxAge   string
	notFound http.HandlerFunc
}

type asset struct {
	data        []byte
	etag        string
	contentType string
	gz          *gzipped // nil for formats that are compressed already
}

// gzipped is an asset's gzip encoding, made on first request: ECharts
// shrinks from 1 MB to a third, and most tests never ask for it.
type gzipped struct {
	once sync.Once
	data []byte
}

func (g *gzipped) bytes(plain []byte) []byte {
	g.once.Do(func() {
		var buf bytes.Buffer
		zw, _ := gzip.NewWriterLevel(&buf, gzip.BestCompression)
		_, _ = zw.Write(plain)
		_ = zw.Close()
		g.data = buf.Bytes()
	})
	return g.data
}

// contentTypes pins the types browsers check strictly under nosniff, rather
// than relying on the host's MIME tables.
var contentTypes = map[string]string{
	".js":   "text/javascript; charset=utf-8",
	".css":  "text/css; charset=utf-8",
	".json": "application/json",
	".svg":  "image/svg+xml",
	".png":  "image/png",
	".ico":  "image/x-icon",
}

func newAssets(fsys fs.FS, maxAge time.Duration, notFound http.HandlerFunc) (*assets, error) {
	a := &assets{
		files:    map[string]asset{},
		maxAge:   "public, max-age=" + strconv.Itoa(int(maxAge.Seconds())),
		notFound: notFound,
	}
	err := fs.WalkDir(fsys, ".", func(name string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		data, err := fs.ReadFile(fsys, name)
		if err != nil {
			return err
		}
		sum := sha256.Sum256(data)
		f := asset{data: data, etag: hex.EncodeToString(sum[:12]), contentType: typeOf(name)}
		if strings.HasPrefix(f.contentType, "text/") || f.contentType == "application/json" || f.contentType == "image/svg+xml" {
			f.gz = &gzipped{}
		}
		a.files[name] = f
		return nil
	})
	return a, err
}

func typeOf(name string) string {
	ext := strings.ToLower(path.Ext(name))
	if t, ok := contentTypes[ext]; ok {
		return t
	}
	if t := mime.TypeByExtension(ext); t != "" {
		return t
	}
	// LICENSE and NOTICE files.
	return "text/plain; charset=utf-8"
}

func (a *assets) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	name := strings.TrimPrefix(r.URL.Path, "/static/")
	f, ok := a.files[name]
	if !ok {
		a.notFound(w, r)
		return
	}
	hd := w.Header()
	hd.Set("Content-Type", f.contentType)
	hd.Set("Cache-Control", a.maxAge)
	body, etag := f.data, f.etag
	if f.gz != nil {
		hd.Set("Vary", "Accept-Encoding")
		if handlers.AcceptsGzip(r) {
			// Each encoding is its own representation with its own ETag.
			body, etag = f.gz.bytes(f.data), f.etag+"-gz"
			hd.Set("Content-Encoding", "gzip")
		}
	}
	hd.Set("ETag", `"`+etag+`"`)
	// ServeContent answers If-None-Match with 304 and serves ranges.
	http.ServeContent(w, r, name, time.Time{}, bytes.NewReader(body))
}
