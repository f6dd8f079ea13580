package handlers

import (
	"net/http"
	"testing"
)

// A client is limited by its address, an IPv6 one by its /64: each of
// the addresses a network hands it is not a bucket of its own.
func TestClientIP(t *testing.T) {
	for _, c := range []struct{ remote, want string }{
		{"127.0.0.2:5000", "127.0.0.2"},
		{"[::ffff:192.0.2.7]:80", "192.0.2.7"},
		{"[2001:db8:1:2::1]:443", "2001:db8:1:2::/64"},
		{"[2001:db8:1:2:ffff:ffff:ffff:ffff]:443", "2001:db8:1:2::/64"},
		{"[2001:db8:1:3::1]:443", "2001:db8:1:3::/64"},
		{"not an address", "not an address"},
	} {
		if got := clientIP(&http.Request{RemoteAddr: c.remote}); got != c.want {
			t.Errorf("clientIP(%q) = %q, want %q", c.remote, got, c.want)
		}
	}
}
