package handlers

import "net/http"

// Health is GET /healthz: the process serves HTTP. It calls nothing, so
// that a slow database does not get the process restarted.
func (h *Handler) Health(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	_, _ = w.Write([]byte("ok"))
}
