package handlers

import (
	"encoding/json"
	"io"
	"net/http"

	d5list "github.com/deep500/d5list"
)

// FreezeEdition is POST /api/v1/editions {"name": "2026-11"} (organisers):
// it snapshots every benchmark's public board as an edition that never
// changes afterwards.
func (h *Handler) FreezeEdition(w http.ResponseWriter, r *http.Request) {
	ls, err := h.list()
	if err != nil {
		h.Error(w, r, err)
		return
	}
	var body struct {
		Name string `json:"name"`
	}
	dec := json.NewDecoder(io.LimitReader(r.Body, 4096))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&body); err != nil {
		h.Error(w, r, d5list.Errorf(d5list.EINVALID, "request body: %v; send {\"name\": \"2026-11\"}", err))
		return
	}
	if body.Name == "" {
		h.Error(w, r, d5list.Errorf(d5list.EINVALID, "request body: field name is empty"))
		return
	}
	ed, err := ls.FreezeEdition(r.Context(), userFrom(r.Context()), body.Name)
	if err != nil {
		h.Error(w, r, err)
		return
	}
	w.Header().Set("Location", "/editions/"+ed.Name)
	h.writeJSON(w, r, http.StatusCreated, ed)
}

// ListEditions is GET /api/v1/editions.
func (h *Handler) ListEditions(w http.ResponseWriter, r *http.Request) {
	ls, err := h.list()
	if err != nil {
		h.Error(w, r, err)
		return
	}
	list, err := ls.Editions(r.Context())
	if err != nil {
		h.Error(w, r, err)
		return
	}
	h.writeJSON(w, r, http.StatusOK, list)
}

// ShowEdition is GET /api/v1/editions/{name}: every board of the edition.
func (h *Handler) ShowEdition(w http.ResponseWriter, r *http.Request) {
	ls, err := h.list()
	if err != nil {
		h.Error(w, r, err)
		return
	}
	ed, err := ls.Edition(r.Context(), r.PathValue("name"))
	if err != nil {
		h.Error(w, r, err)
		return
	}
	h.writeJSON(w, r, http.StatusOK, ed)
}

// ShowEditionBoard is GET /api/v1/editions/{name}/benchmarks/{id}, JSON or
// CSV like the live board's export.
func (h *Handler) ShowEditionBoard(w http.ResponseWriter, r *http.Request) {
	ls, err := h.list()
	if err != nil {
		h.Error(w, r, err)
		return
	}
	id, format, err := exportFormat(r, r.PathValue("id"))
	if err != nil {
		h.Error(w, r, err)
		return
	}
	name := r.PathValue("name")
	board, err := ls.EditionBoard(r.Context(), name, id)
	if err != nil {
		h.Error(w, r, err)
		return
	}
	h.writeBoard(w, r, board, format, name+"-"+id)
}
