package handlers

import (
	"net/http"
	"slices"
	"strconv"

	d5list "github.com/deep500/d5list"
)

func (h *Handler) pool(w http.ResponseWriter, r *http.Request) bool {
	if h.runners == nil {
		h.Error(w, r, d5list.Errorf(d5list.EUNAVAILABLE, "this portal has no runner pool"))
		return false
	}
	return true
}

// ShowQueue is GET /api/v1/queue: the backlog of each benchmark and every
// unfinished job with its state, attempts and place in the line. Which
// runner holds a job names the pool's machines, so only organisers see it.
func (h *Handler) ShowQueue(w http.ResponseWriter, r *http.Request) {
	if !h.pool(w, r) {
		return
	}
	viewer, err := h.viewer(r)
	if err != nil {
		h.Error(w, r, err)
		return
	}
	q, err := h.runners.Queue(r.Context())
	if err != nil {
		h.Error(w, r, err)
		return
	}
	if viewer == nil || !viewer.Role.AtLeast(d5list.RoleOrganiser) {
		public := *q
		public.Jobs = slices.Clone(q.Jobs)
		for i := range public.Jobs {
			public.Jobs[i].RunnerID = ""
		}
		q = &public
	}
	h.writeJSON(w, r, http.StatusOK, q)
}

// ListRunners is GET /api/v1/runners: online or offline, labels, current
// job and last call of each runner.
func (h *Handler) ListRunners(w http.ResponseWriter, r *http.Request) {
	if !h.pool(w, r) {
		return
	}
	rs, err := h.runners.Runners(r.Context())
	if err != nil {
		h.Error(w, r, err)
		return
	}
	h.writeJSON(w, r, http.StatusOK, map[string]any{"runners": rs})
}

// CancelJob is POST /api/v1/jobs/{id}/cancel, for organisers.
func (h *Handler) CancelJob(w http.ResponseWriter, r *http.Request) {
	if !h.pool(w, r) {
		return
	}
	raw := r.PathValue("id")
	id, err := strconv.ParseInt(raw, 10, 64)
	if err != nil || id <= 0 {
		h.Error(w, r, d5list.Errorf(d5list.ENOTFOUND, "job %q does not exist: ids are positive integers", raw))
		return
	}
	if err := h.runners.CancelJob(r.Context(), userFrom(r.Context()), id); err != nil {
		h.Error(w, r, err)
		return
	}
	h.writeJSON(w, r, http.StatusOK, map[string]any{"job_id": id, "state": d5list.JobCancelled})
}
