package handlers

import (
	"bytes"
	"net/http"

	"github.com/a-h/templ"
)

// render writes a page only once it rendered whole, so that a template
// failure becomes an error answer and not half a page.
func (h *Handler) render(w http.ResponseWriter, r *http.Request, status int, page templ.Component) {
	var buf bytes.Buffer
	if err := page.Render(r.Context(), &buf); err != nil {
		h.log.ErrorContext(r.Context(), "rendering page", "path", r.URL.Path, "err", err)
		http.Error(w, "internal error", http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.WriteHeader(status)
	_, _ = w.Write(buf.Bytes())
}
