package handlers

import (
	"net/http"

	"github.com/deep500/d5list/templates"
)

// SubmissionPage is GET /submissions/{id}: status, reasons, and the
// claimed results beside the measured ones.
func (h *Handler) SubmissionPage(w http.ResponseWriter, r *http.Request) {
	id, err := submissionID(r)
	if err != nil {
		h.Error(w, r, err)
		return
	}
	sub, err := h.svc.Submission(r.Context(), id)
	if err != nil {
		h.Error(w, r, err)
		return
	}
	bench, err := h.svc.Benchmark(r.Context(), sub.BenchmarkID)
	if err != nil {
		h.Error(w, r, err)
		return
	}
	h.render(w, r, http.StatusOK, templates.SubmissionPage(sub, bench, h.auditFor(r.Context(), sub.ID)))
}
