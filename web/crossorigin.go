package web

import (
	"net/http"

	d5list "github.com/deep500/d5list"
	"github.com/deep500/d5list/handlers"
)

// crossOrigin refuses unsafe requests that a browser marks as coming from
// another site (Sec-Fetch-Site, else Origin against Host), using the
// standard library's http.CrossOriginProtection rather than our own
// header parsing. It covers what the per-session CSRF token cannot: the
// log-in and sign-up forms, which are posted before there is a session.
// Clients that send neither header (curl, the d5list CLI, runners) pass.
func crossOrigin(h *handlers.Handler) func(http.Handler) http.Handler {
	cop := http.NewCrossOriginProtection()
	cop.SetDenyHandler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h.Error(w, r, d5list.Errorf(d5list.EFORBIDDEN, "cross-origin %s refused", r.Method))
	}))
	return cop.Handler
}
