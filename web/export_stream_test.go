package web_test

import (
	"bytes"
	"compress/gzip"
	"io"
	"testing"

	"github.com/deep500/d5list/handlers"
)

// An export too long for the board cache is streamed, gzipped for clients
// that take gzip, and carries the same bytes as the cached export of a
// shorter board.
func TestLongExportsStreamGzipped(t *testing.T) {
	b := newSyntheticBoard(t, 300, 100)
	defer func(n int) { handlers.StreamedExportEntries = n }(handlers.StreamedExportEntries)
	for _, path := range []string{
		"/api/v1/leaderboards/l2-digits-mlp-cpu?rows=all&status=all",
		"/api/v1/leaderboards/l2-digits-mlp-cpu.csv?rows=all&status=all",
	} {
		handlers.StreamedExportEntries = 100 // the board has 300 entries
		plain := fetch(t, b.url+path)
		zipped := fetch(t, b.url+path, "Accept-Encoding", "gzip")
		handlers.StreamedExportEntries = 1 << 30
		cached := fetch(t, b.url+path)

		for name, a := range map[string]answer{"streamed": plain, "streamed gzip": zipped, "cached": cached} {
			if a.code != 200 {
				t.Fatalf("%s %s: %d %s", name, path, a.code, a.body)
			}
		}
		if plain.hd.Get("ETag") != "" || cached.hd.Get("ETag") == "" {
			t.Fatalf("%s: the streamed answer has ETag %q, the cached one %q; want only the cached one tagged",
				path, plain.hd.Get("ETag"), cached.hd.Get("ETag"))
		}
		if plain.hd.Get("Content-Encoding") != "" || zipped.hd.Get("Content-Encoding") != "gzip" || zipped.hd.Get("Vary") != "Accept-Encoding" {
			t.Fatalf("%s: encodings %q and %q (Vary %q)", path, plain.hd.Get("Content-Encoding"), zipped.hd.Get("Content-Encoding"), zipped.hd.Get("Vary"))
		}
		zr, err := gzip.NewReader(bytes.NewReader(zipped.body))
		if err != nil {
			t.Fatal(err)
		}
		unzipped, err := io.ReadAll(zr)
		if err != nil {
			t.Fatalf("%s: the gzip stream does not end well: %v", path, err)
		}
		if !bytes.Equal(plain.body, cached.body) || !bytes.Equal(unzipped, plain.body) {
			t.Fatalf("%s: streamed %d bytes, gunzipped %d, cached %d: want the same bytes", path, len(plain.body), len(unzipped), len(cached.body))
		}
		if len(zipped.body)*3 > len(plain.body) {
			t.Errorf("%s: gzip gave %d bytes of %d", path, len(zipped.body), len(plain.body))
		}
		t.Logf("%s: %d bytes, %d gzipped", path, len(plain.body), len(zipped.body))
	}
}
