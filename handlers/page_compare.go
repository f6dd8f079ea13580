package handlers

import (
	"net/http"
	"strconv"
	"strings"

	d5list "github.com/deep500/d5list"
	"github.com/deep500/d5list/templates"
)

// ComparePage is GET /compare?ids=A,B: two to six entries side by side.
// The board's checkboxes send ?id=A&id=B, which is read the same way.
func (h *Handler) ComparePage(w http.ResponseWriter, r *http.Request) {
	ids, err := compareIDs(r)
	if err != nil {
		h.Error(w, r, err)
		return
	}
	viewer, err := h.viewer(r)
	if err != nil {
		h.Error(w, r, err)
		return
	}
	entries := make([]templates.CompareEntry, 0, len(ids))
	for _, id := range ids {
		sub, err := h.svc.Submission(r.Context(), id)
		if err == nil && !sub.MayView(viewer) {
			err = hiddenSubmission(id)
		}
		if err != nil {
			h.Error(w, r, err)
			return
		}
		bench, err := h.svc.Benchmark(r.Context(), sub.BenchmarkID)
		if err != nil {
			h.Error(w, r, err)
			return
		}
		entries = append(entries, templates.CompareEntry{Sub: sub, Bench: bench})
	}
	h.render(w, r, http.StatusOK, templates.ComparePage(templates.NewCompareView(entries)))
}

// compareIDs reads the entries to compare, in the order given, each once.
func compareIDs(r *http.Request) ([]int64, error) {
	q := r.URL.Query()
	var raw []string
	for _, v := range append(q["ids"], q["id"]...) {
		raw = append(raw, strings.Split(v, ",")...)
	}
	var ids []int64
	seen := map[int64]bool{}
	for _, s := range raw {
		s = strings.TrimSpace(s)
		if s == "" {
			continue
		}
		id, err := strconv.ParseInt(s, 10, 64)
		if err != nil || id <= 0 {
			return nil, d5list.Errorf(d5list.EINVALID, "ids: %q is not a submission number", s)
		}
		if !seen[id] {
			seen[id] = true
			ids = append(ids, id)
		}
	}
	switch {
	case len(ids) < 2:
		return nil, d5list.Errorf(d5list.EINVALID, "ids: name two to %d entries to compare, as /compare?ids=12,15", templates.MaxCompared)
	case len(ids) > templates.MaxCompared:
		return nil, d5list.Errorf(d5list.EINVALID, "ids: at most %d entries side by side, got %d", templates.MaxCompared, len(ids))
	}
	return ids, nil
}
