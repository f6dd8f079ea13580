package handlers

import (
	"net/http"
	"net/url"
	"strconv"

	d5list "github.com/deep500/d5list"
	"github.com/deep500/d5list/templates"
)

// RunnersPage is GET /console/runners (organisers): every runner agent,
// online or offline, its labels, current job and last call.
func (h *Handler) RunnersPage(w http.ResponseWriter, r *http.Request) {
	if !h.pool(w, r) {
		return
	}
	rs, err := h.runners.Runners(r.Context())
	if err != nil {
		h.Error(w, r, err)
		return
	}
	h.render(w, r, http.StatusOK, templates.RunnersPage(templates.PoolPage{Runners: rs}))
}

// QueuePage is GET /console/queue (organisers): the backlog of each
// benchmark and every unfinished job, each with a cancel button.
func (h *Handler) QueuePage(w http.ResponseWriter, r *http.Request) {
	if !h.pool(w, r) {
		return
	}
	q, err := h.runners.Queue(r.Context())
	if err != nil {
		h.Error(w, r, err)
		return
	}
	h.render(w, r, http.StatusOK, templates.QueuePage(templates.PoolPage{Queue: q, Notice: r.URL.Query().Get("done")}))
}

// ConsoleCancelJob is POST /console/jobs/{id}/cancel (organisers, with the
// form's CSRF token): the queue page's cancel button. A job that already
// ended is reported on the queue page rather than as an error page.
func (h *Handler) ConsoleCancelJob(w http.ResponseWriter, r *http.Request) {
	if !h.pool(w, r) {
		return
	}
	id, err := pathID(r, "job")
	if err != nil {
		h.Error(w, r, err)
		return
	}
	notice := "Job " + strconv.FormatInt(id, 10) + " cancelled; its runner stops it within a few seconds."
	if err := h.runners.CancelJob(r.Context(), userFrom(r.Context()), id); err != nil {
		if d5list.ErrorCode(err) != d5list.ECONFLICT {
			h.Error(w, r, err)
			return
		}
		notice = d5list.ErrorMessage(err)
	}
	http.Redirect(w, r, "/console/queue?done="+url.QueryEscape(notice), http.StatusSeeOther)
}
