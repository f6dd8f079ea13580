package handlers

import (
	"net/http"
	"strconv"
	"strings"

	"github.com/go-chi/chi/v5"

	d5list "github.com/deep500/d5list"
	"github.com/deep500/d5list/templates"
)

// AccountPage is GET /account: the user's role and API tokens.
func (h *Handler) AccountPage(w http.ResponseWriter, r *http.Request) {
	h.renderAccount(w, r, "")
}

func (h *Handler) renderAccount(w http.ResponseWriter, r *http.Request, newToken string) {
	acc, err := h.accounts()
	if err != nil {
		h.Error(w, r, err)
		return
	}
	user := userFrom(r.Context())
	tokens, err := acc.Tokens(r.Context(), user.ID)
	if err != nil {
		h.Error(w, r, err)
		return
	}
	status := http.StatusOK
	if newToken != "" {
		status = http.StatusCreated
		// The one answer that holds the token must not be kept anywhere.
		w.Header().Set("Cache-Control", "no-store")
	}
	h.render(w, r, status, templates.AccountPage(user, tokens, newToken))
}

// CreateAPIToken is POST /account/tokens: a new token, shown once.
func (h *Handler) CreateAPIToken(w http.ResponseWriter, r *http.Request) {
	acc, err := h.accounts()
	if err != nil {
		h.Error(w, r, err)
		return
	}
	label := strings.TrimSpace(r.PostFormValue("label"))
	if len(label) > 100 {
		h.Error(w, r, d5list.Errorf(d5list.EINVALID, "label: longer than 100 bytes"))
		return
	}
	token, err := acc.CreateToken(r.Context(), userFrom(r.Context()).ID, label)
	if err != nil {
		h.Error(w, r, err)
		return
	}
	h.renderAccount(w, r, token)
}

// RevokeAPIToken is POST /account/tokens/{id}/revoke; only the owner's
// own tokens are found.
func (h *Handler) RevokeAPIToken(w http.ResponseWriter, r *http.Request) {
	acc, err := h.accounts()
	if err != nil {
		h.Error(w, r, err)
		return
	}
	id, err := strconv.ParseInt(chi.URLParam(r, "id"), 10, 64)
	if err != nil || id <= 0 {
		h.Error(w, r, d5list.Errorf(d5list.ENOTFOUND, "token %q not found", chi.URLParam(r, "id")))
		return
	}
	if err := acc.RevokeTokenOf(r.Context(), userFrom(r.Context()).ID, id); err != nil {
		h.Error(w, r, err)
		return
	}
	http.Redirect(w, r, "/account", http.StatusSeeOther)
}

// MySubmissionsPage is GET /my/submissions.
func (h *Handler) MySubmissionsPage(w http.ResponseWriter, r *http.Request) {
	acc, err := h.accounts()
	if err != nil {
		h.Error(w, r, err)
		return
	}
	subs, err := acc.Submissions(r.Context(), d5list.SubmissionFilter{OwnerID: userFrom(r.Context()).ID, Limit: 500})
	if err != nil {
		h.Error(w, r, err)
		return
	}
	quota, err := acc.DailyQuota(r.Context())
	if err != nil {
		h.Error(w, r, err)
		return
	}
	h.render(w, r, http.StatusOK, templates.MySubmissionsPage(subs, quota))
}

// UploadPage is GET /upload; static/js/upload.js posts the bundle to
// POST /api/v1/submissions with the session and its CSRF token.
func (h *Handler) UploadPage(w http.ResponseWriter, r *http.Request) {
	bs, err := h.svc.Benchmarks(r.Context())
	if err != nil {
		h.Error(w, r, err)
		return
	}
	h.render(w, r, http.StatusOK, templates.UploadPage(bs, h.opts.MaxUploadBytes))
}
