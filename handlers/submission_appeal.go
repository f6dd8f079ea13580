package handlers

import (
	"context"
	"net/http"
	"strconv"

	d5list "github.com/deep500/d5list"
	"github.com/deep500/d5list/templates"
)

// AppealService is the competitor's side of review: a message asking the
// organisers to look at a verdict.
type AppealService interface {
	Appeal(ctx context.Context, user *d5list.User, id int64, message string) (*d5list.AuditEntry, error)
	Appeals(ctx context.Context, user *d5list.User) (map[int64]d5list.AuditEntry, error)
	PendingAppeal(ctx context.Context, user *d5list.User, id int64) (*d5list.AuditEntry, error)
}

func (h *Handler) appeals() (AppealService, error) {
	as, ok := h.svc.(AppealService)
	if !ok {
		return nil, d5list.Errorf(d5list.EUNAVAILABLE, "asking for review is not available on this server")
	}
	return as, nil
}

// appealRequest is the body of POST /api/v1/submissions/{id}/appeal.
type appealRequest struct {
	Message string `json:"message"`
}

// AppealSubmission is POST /api/v1/submissions/{id}/appeal (the entry's
// competitor): the message goes to the organisers' review queue.
func (h *Handler) AppealSubmission(w http.ResponseWriter, r *http.Request) {
	as, err := h.appeals()
	if err != nil {
		h.Error(w, r, err)
		return
	}
	id, err := submissionID(r)
	if err != nil {
		h.Error(w, r, err)
		return
	}
	var req appealRequest
	if err := decodeJSONBody(r, maxReviewBody, &req); err != nil {
		h.Error(w, r, err)
		return
	}
	entry, err := as.Appeal(r.Context(), userFrom(r.Context()), id, req.Message)
	if err != nil {
		h.Error(w, r, err)
		return
	}
	h.writeJSON(w, r, http.StatusCreated, entry)
}

// AppealPage is POST /submissions/{id}/appeal, the submission page's form;
// a refused message re-renders the page with the form and its error.
func (h *Handler) AppealPage(w http.ResponseWriter, r *http.Request) {
	as, err := h.appeals()
	if err != nil {
		h.Error(w, r, err)
		return
	}
	id, err := submissionID(r)
	if err != nil {
		h.Error(w, r, err)
		return
	}
	message := r.PostFormValue("message")
	if _, err := as.Appeal(r.Context(), userFrom(r.Context()), id, message); err != nil {
		if c := d5list.ErrorCode(err); c == d5list.EINVALID || c == d5list.ECONFLICT {
			h.renderSubmissionPage(w, r, StatusOf(c), func(live *templates.SubmissionLive) {
				live.AppealError, live.AppealMessage = d5list.ErrorMessage(err), message
			})
			return
		}
		h.Error(w, r, err)
		return
	}
	http.Redirect(w, r, "/submissions/"+strconv.FormatInt(id, 10)+"#appeal", http.StatusSeeOther)
}
