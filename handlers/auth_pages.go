package handlers

import (
	"net/http"
	"strings"

	d5list "github.com/deep500/d5list"
	"github.com/deep500/d5list/templates"
)

// LoginPage is GET /login.
func (h *Handler) LoginPage(w http.ResponseWriter, r *http.Request) {
	h.render(w, r, http.StatusOK, templates.LoginPage("", "", localPath(r.URL.Query().Get("next"))))
}

// Login is POST /login: a new session on success, the form again with
// the reason on failure. Attempts are rate limited per client IP.
func (h *Handler) Login(w http.ResponseWriter, r *http.Request) {
	acc, err := h.accounts()
	if err != nil {
		h.Error(w, r, err)
		return
	}
	if ok, wait := h.browser.login.allow(clientIP(r)); !ok {
		h.refuseLimited(w, r, wait, "log-in attempts")
		return
	}
	name, next := r.PostFormValue("name"), localPath(r.PostFormValue("next"))
	account := strings.ToLower(strings.TrimSpace(name))
	if ok, wait := h.browser.accountFails.allow(account); !ok {
		h.refuseLimited(w, r, wait, "wrong passwords for this account")
		return
	}
	release, err := h.browser.hashes.hold(r.Context(), 1)
	if err != nil {
		h.browser.accountFails.refund(account)
		return // the client left while waiting
	}
	user, err := acc.Login(r.Context(), name, r.PostFormValue("password"))
	release()
	code := d5list.ErrorCode(err)
	if code != d5list.EUNAUTHORIZED {
		h.browser.accountFails.refund(account) // only a wrong password spends it
	}
	if err != nil {
		if code != d5list.EUNAUTHORIZED && code != d5list.EFORBIDDEN {
			h.Error(w, r, err)
			return
		}
		h.render(w, r, StatusOf(code), templates.LoginPage(d5list.ErrorMessage(err), name, next))
		return
	}
	h.startSession(w, r, user, next)
}

func (h *Handler) startSession(w http.ResponseWriter, r *http.Request, user *d5list.User, next string) {
	// A session from before the log-in is ended, so that a cookie planted
	// before it (session fixation) is worth nothing after.
	if c, err := r.Cookie(SessionCookie); err == nil && c.Value != "" {
		_ = h.browser.Accounts.DeleteSession(r.Context(), c.Value)
	}
	cookie, _, err := h.browser.Accounts.CreateSession(r.Context(), user.ID, h.browser.SessionTTL)
	if err != nil {
		h.Error(w, r, err)
		return
	}
	h.setSessionCookie(w, r, cookie)
	h.log.InfoContext(r.Context(), "logged in", "user", user.Name)
	http.Redirect(w, r, next, http.StatusSeeOther)
}

// SignupPage is GET /signup.
func (h *Handler) SignupPage(w http.ResponseWriter, r *http.Request) {
	h.render(w, r, http.StatusOK, templates.SignupPage("", "", "", false, h.browser.RequireApproval))
}

// Signup is POST /signup: a competitor account, logged in at once unless
// sign-ups wait for an organiser's approval. It shares the log-in limit.
func (h *Handler) Signup(w http.ResponseWriter, r *http.Request) {
	acc, err := h.accounts()
	if err != nil {
		h.Error(w, r, err)
		return
	}
	if ok, wait := h.browser.login.allow(clientIP(r)); !ok {
		h.refuseLimited(w, r, wait, "sign-up attempts")
		return
	}
	name, org := r.PostFormValue("name"), r.PostFormValue("organisation")
	release, err := h.browser.hashes.hold(r.Context(), 1)
	if err != nil {
		return // the client left while waiting
	}
	user, err := acc.SignUp(r.Context(), name, org, r.PostFormValue("password"), !h.browser.RequireApproval)
	release()
	if err != nil {
		code := d5list.ErrorCode(err)
		if code != d5list.EINVALID && code != d5list.ECONFLICT {
			h.Error(w, r, err)
			return
		}
		h.render(w, r, StatusOf(code), templates.SignupPage(d5list.ErrorMessage(err), name, org, false, h.browser.RequireApproval))
		return
	}
	h.log.InfoContext(r.Context(), "signed up", "user", user.Name, "approved", !h.browser.RequireApproval)
	if h.browser.RequireApproval {
		h.render(w, r, http.StatusCreated, templates.SignupPage("", user.Name, user.Organisation, true, true))
		return
	}
	h.startSession(w, r, user, "/upload")
}

// Logout is POST /logout: the session ends in the store, not only in the
// browser.
func (h *Handler) Logout(w http.ResponseWriter, r *http.Request) {
	if c, err := r.Cookie(SessionCookie); err == nil && c.Value != "" && h.browser.Accounts != nil {
		if err := h.browser.Accounts.DeleteSession(r.Context(), c.Value); err != nil {
			h.Error(w, r, err)
			return
		}
	}
	h.clearSessionCookie(w, r)
	http.Redirect(w, r, "/", http.StatusSeeOther)
}
