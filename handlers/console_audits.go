package handlers

import (
	"context"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	d5list "github.com/deep500/d5list"
	"github.com/deep500/d5list/templates"
)

// AuditFailureService is what the console's failed audits need of the
// portal, asked of the Service by type assertion.
type AuditFailureService interface {
	AuditFailures(ctx context.Context, user *d5list.User) ([]d5list.AuditFailure, bool, error)
	ClearAuditFailures(ctx context.Context, user *d5list.User, ownerID int64, benchmarkID string) (int, error)
	ShowFailedAudits(ctx context.Context, user *d5list.User, show bool) error
}

func (h *Handler) auditFailures() (AuditFailureService, error) {
	as, ok := h.svc.(AuditFailureService)
	if !ok {
		return nil, d5list.Errorf(d5list.EUNAVAILABLE, "failed audits are not kept on this server")
	}
	return as, nil
}

// ConsoleClearAuditFailures is POST /console/audit-failures/clear: clear an
// account's (owner_id) uncleared failed audits of a benchmark. Clearing
// cannot be undone, so the form first answers with a page that asks to
// confirm, whose own form posts confirm=yes; only that one clears.
func (h *Handler) ConsoleClearAuditFailures(w http.ResponseWriter, r *http.Request) {
	as, err := h.auditFailures()
	if err != nil {
		h.Error(w, r, err)
		return
	}
	user := userFrom(r.Context())
	benchmark := strings.TrimSpace(r.PostFormValue("benchmark"))
	ownerID, perr := strconv.ParseInt(r.PostFormValue("owner_id"), 10, 64)
	if perr != nil || ownerID <= 0 || benchmark == "" {
		h.renderConsole(w, r, http.StatusBadRequest, templates.Console{AuditError: "owner_id and benchmark: required, as the console's form sends them"})
		return
	}
	if r.PostFormValue("confirm") != "yes" {
		fs, _, err := as.AuditFailures(r.Context(), user)
		if err != nil {
			h.Error(w, r, err)
			return
		}
		owner, n := "", 0
		for _, f := range fs {
			if f.OwnerID == ownerID && f.BenchmarkID == benchmark && f.ClearedAt == nil {
				owner, n = f.Owner, n+1
			}
		}
		if n == 0 {
			h.renderConsole(w, r, http.StatusNotFound, templates.Console{AuditError: "user " + strconv.FormatInt(ownerID, 10) + " has no uncleared failed audit of " + benchmark})
			return
		}
		h.render(w, r, http.StatusOK, templates.ConfirmPage(templates.ConfirmPrompt{
			Title: "Clear " + owner + "'s failed audits of " + benchmark + "?",
			Text: strconv.Itoa(n) + " failed audits of " + benchmark + " by " + owner + " stop counting: the account's uploads of it are accepted again, " +
				"and its next job is audited as anyone's. The failures stay listed, marked cleared by you; this cannot be undone.",
			Action: "/console/audit-failures/clear",
			Fields: [][2]string{{"owner_id", strconv.FormatInt(ownerID, 10)}, {"benchmark", benchmark}},
			Button: "Clear " + strconv.Itoa(n) + " failed audits",
			Cancel: "/console#audits",
		}))
		return
	}
	n, err := as.ClearAuditFailures(r.Context(), user, ownerID, benchmark)
	if err != nil {
		if c := d5list.ErrorCode(err); c == d5list.ENOTFOUND || c == d5list.EINVALID {
			h.renderConsole(w, r, StatusOf(c), templates.Console{AuditError: d5list.ErrorMessage(err)})
			return
		}
		h.Error(w, r, err)
		return
	}
	http.Redirect(w, r, "/console?done="+url.QueryEscape(strconv.Itoa(n)+" failed audits of "+benchmark+" cleared")+"#audits", http.StatusSeeOther)
}

// ConsoleShowFailedAudits is POST /console/settings/show-failed-audits:
// show=on shows the entries whose audit failed to everyone, show=off to
// their competitors and the organisers alone (the default).
func (h *Handler) ConsoleShowFailedAudits(w http.ResponseWriter, r *http.Request) {
	as, err := h.auditFailures()
	if err != nil {
		h.Error(w, r, err)
		return
	}
	var show bool
	switch v := r.PostFormValue("show"); v {
	case "on":
		show = true
	case "off":
	default:
		h.renderConsole(w, r, http.StatusBadRequest, templates.Console{AuditError: "show: want on or off, got " + strconv.Quote(v)})
		return
	}
	if err := as.ShowFailedAudits(r.Context(), userFrom(r.Context()), show); err != nil {
		h.Error(w, r, err)
		return
	}
	done := "failed audits are shown only to their competitors and organisers"
	if show {
		done = "failed audits are shown to everyone"
	}
	http.Redirect(w, r, "/console?done="+url.QueryEscape(done)+"#audits", http.StatusSeeOther)
}
