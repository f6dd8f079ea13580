package handlers

import (
	"net/http/httptest"
	"testing"
)

// AcceptsGzip reads every Accept-Encoding line and entry, and a weight of
// 0 refuses.
func TestAcceptsGzip(t *testing.T) {
	for _, tt := range []struct {
		values []string
		want   bool
	}{
		{nil, false},
		{[]string{""}, false},
		{[]string{"gzip"}, true},
		{[]string{"GZip"}, true},
		{[]string{"gzip, deflate, br, zstd"}, true},
		{[]string{"br,gzip"}, true},
		{[]string{"deflate", "gzip;q=0.5"}, true},
		{[]string{"br;q=1.0, gzip;q=0.8, *;q=0.1"}, true},
		{[]string{"gzip;q=0"}, false},
		{[]string{"gzip; q=0"}, false},
		{[]string{"gzip;q=0.000"}, false},
		{[]string{"gzip;q=0.001"}, true},
		{[]string{"deflate, br"}, false},
		{[]string{"x-gzip"}, false},
		{[]string{"identity, gzip ;q=0 "}, false},
	} {
		r := httptest.NewRequest("GET", "/", nil)
		for _, v := range tt.values {
			r.Header.Add("Accept-Encoding", v)
		}
		if got := AcceptsGzip(r); got != tt.want {
			t.Errorf("Accept-Encoding %q: %v, want %v", tt.values, got, tt.want)
		}
	}
}
