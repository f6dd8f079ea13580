package handlers

import (
	"context"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"github.com/go-chi/chi/v5"

	d5list "github.com/deep500/d5list"
	"github.com/deep500/d5list/catalog"
	"github.com/deep500/d5list/templates"
)

// editionLister is the list side of the service, where it has one.
type editionLister interface {
	Editions(ctx context.Context) ([]d5list.EditionSummary, error)
}

// DecisionLister lists the organisers' latest decisions, for the console.
type DecisionLister interface {
	RecentDecisions(ctx context.Context, user *d5list.User) ([]d5list.AuditEntry, error)
}

// maxYAMLBytes bounds the benchmark editor's text.
const maxYAMLBytes = 256 << 10

// ConsolePage is GET /console (organisers); ?from=ID starts the
// benchmark editor from a copy of benchmark ID.
func (h *Handler) ConsolePage(w http.ResponseWriter, r *http.Request) {
	entry, _ := strconv.ParseInt(r.URL.Query().Get("entry"), 10, 64)
	h.renderConsole(w, r, http.StatusOK, templates.Console{Notice: r.URL.Query().Get("done"), NoticeEntry: max(entry, 0), From: r.URL.Query().Get("from")})
}

// renderConsole fills c with the console's lists and renders it.
func (h *Handler) renderConsole(w http.ResponseWriter, r *http.Request, status int, c templates.Console) {
	acc, err := h.accounts()
	if err != nil {
		h.Error(w, r, err)
		return
	}
	ctx := r.Context()
	user := userFrom(ctx)
	if c.Accounts, err = acc.Accounts(ctx); err != nil {
		h.Error(w, r, err)
		return
	}
	if c.Benchmarks, err = h.svc.Benchmarks(ctx); err != nil {
		h.Error(w, r, err)
		return
	}
	_, c.HasRunners = acc.(RunnerTokens)
	if rs, ok := h.svc.(ReviewService); ok {
		c.HasReview = true
		if c.Review, err = rs.ReviewQueue(ctx, user); err != nil {
			h.Error(w, r, err)
			return
		}
		if ds, ok := h.svc.(DecisionLister); ok {
			if c.Decisions, err = ds.RecentDecisions(ctx, user); err != nil {
				h.Error(w, r, err)
				return
			}
		}
		if as, ok := h.svc.(AppealService); ok {
			if c.Appeals, err = as.Appeals(ctx, user); err != nil {
				h.Error(w, r, err)
				return
			}
		}
	}
	if el, ok := h.svc.(editionLister); ok {
		c.HasEdition = true
		if c.Editions, err = el.Editions(ctx); err != nil {
			h.Error(w, r, err)
			return
		}
	}
	if as, ok := h.svc.(AuditFailureService); ok {
		c.HasAuditFailures = true
		if c.AuditFailures, c.ShowFailedAudits, err = as.AuditFailures(ctx, user); err != nil {
			h.Error(w, r, err)
			return
		}
	}
	c.Roles = grantableRoles(user.Role)
	if c.YAML == "" {
		if c.YAML, err = editorStart(c.Benchmarks, c.From); err != nil {
			h.Error(w, r, err)
			return
		}
	}
	h.render(w, r, status, templates.ConsolePage(c))
}

// editorStart is the benchmark editor's text before anything is typed: a
// copy of the benchmark from, or the commented skeleton (an unknown from
// included, which a stale link may name).
func editorStart(benchmarks []d5list.Benchmark, from string) (string, error) {
	if b, err := catalog.Lookup(benchmarks, from); err == nil && from != "" {
		return catalog.CopyOf(*b)
	}
	return catalog.Skeleton, nil
}

// grantableRoles: an organiser may make competitors and organisers, and
// only an admin may make (or unmake) an admin.
func grantableRoles(by d5list.Role) []d5list.Role {
	roles := []d5list.Role{d5list.RolePublic, d5list.RoleCompetitor, d5list.RoleOrganiser}
	if by == d5list.RoleAdmin {
		roles = append(roles, d5list.RoleAdmin)
	}
	return roles
}

func pathID(r *http.Request, what string) (int64, error) {
	id, err := strconv.ParseInt(chi.URLParam(r, "id"), 10, 64)
	if err != nil || id <= 0 {
		return 0, d5list.Errorf(d5list.ENOTFOUND, "%s %q not found", what, chi.URLParam(r, "id"))
	}
	return id, nil
}

// ConsoleSetRole is POST /console/users/{id}/role.
func (h *Handler) ConsoleSetRole(w http.ResponseWriter, r *http.Request) {
	acc, err := h.accounts()
	if err != nil {
		h.Error(w, r, err)
		return
	}
	id, err := pathID(r, "user")
	if err != nil {
		h.Error(w, r, err)
		return
	}
	me := userFrom(r.Context())
	role := d5list.Role(r.PostFormValue("role"))
	if !role.Valid() {
		h.Error(w, r, d5list.Errorf(d5list.EINVALID, "role: unknown role %q", role))
		return
	}
	accounts, err := acc.Accounts(r.Context())
	if err != nil {
		h.Error(w, r, err)
		return
	}
	var target *d5list.Account
	for i := range accounts {
		if accounts[i].ID == id {
			target = &accounts[i]
		}
	}
	switch {
	case target == nil:
		err = d5list.Errorf(d5list.ENOTFOUND, "user %d not found", id)
	case (role == d5list.RoleAdmin || target.Role == d5list.RoleAdmin) && me.Role != d5list.RoleAdmin:
		err = d5list.Errorf(d5list.EFORBIDDEN, "only an admin gives or takes the admin role")
	case target.ID == me.ID:
		err = d5list.Errorf(d5list.EFORBIDDEN, "you cannot change your own role")
	case role.AtLeast(d5list.RoleOrganiser) && !target.Role.AtLeast(role) && r.PostFormValue("confirm") != "yes":
		// Giving an account the powers of the console is asked again.
		h.render(w, r, http.StatusOK, templates.ConfirmPage(templates.ConfirmPrompt{
			Title:  "Make " + target.Name + " " + string(role) + "?",
			Text:   target.Name + " will review, accept and reject entries, freeze editions and manage accounts" + adminWords(role) + ". You can change the role back later; what they do meanwhile stays done.",
			Action: "/console/users/" + strconv.FormatInt(id, 10) + "/role", Button: "Make " + target.Name + " " + string(role), Cancel: "/console#users",
			Fields: [][2]string{{"role", string(role)}}}))
		return
	default:
		err = acc.SetRole(r.Context(), id, role)
	}
	if err != nil {
		h.Error(w, r, err)
		return
	}
	h.log.InfoContext(r.Context(), "role changed", "by", me.Name, "user", target.Name, "role", role)
	http.Redirect(w, r, "/console?done="+target.Name+"+is+now+"+string(role)+"#users", http.StatusSeeOther)
}

// ConsoleApprove is POST /console/users/{id}/approve.
func (h *Handler) ConsoleApprove(w http.ResponseWriter, r *http.Request) {
	acc, err := h.accounts()
	if err != nil {
		h.Error(w, r, err)
		return
	}
	id, err := pathID(r, "user")
	if err != nil {
		h.Error(w, r, err)
		return
	}
	if err := acc.Approve(r.Context(), id); err != nil {
		h.Error(w, r, err)
		return
	}
	h.log.InfoContext(r.Context(), "sign-up approved", "by", userFrom(r.Context()).Name, "user_id", id)
	http.Redirect(w, r, "/console?done=approved#users", http.StatusSeeOther)
}

// OrganisationService confirms accounts' organisations.
type OrganisationService interface {
	ConfirmOrganisation(ctx context.Context, user *d5list.User, userID int64, organisation string) error
}

// ConsoleOrganisation is POST /console/users/{id}/organisation: confirm
// the account as a member of the organisation it asked for, or of another.
func (h *Handler) ConsoleOrganisation(w http.ResponseWriter, r *http.Request) {
	orgs, ok := h.svc.(OrganisationService)
	if !ok {
		h.Error(w, r, d5list.Errorf(d5list.EUNAVAILABLE, "this portal keeps no organisations"))
		return
	}
	id, err := pathID(r, "user")
	if err != nil {
		h.Error(w, r, err)
		return
	}
	org := r.PostFormValue("organisation")
	if err := orgs.ConfirmOrganisation(r.Context(), userFrom(r.Context()), id, org); err != nil {
		if d5list.ErrorCode(err) == d5list.EINVALID {
			h.renderConsole(w, r, http.StatusBadRequest, templates.Console{UsersError: "user " + strconv.FormatInt(id, 10) + ": " + d5list.ErrorMessage(err)})
			return
		}
		h.Error(w, r, err)
		return
	}
	http.Redirect(w, r, "/console?done=organisation+confirmed#users", http.StatusSeeOther)
}

// ConsoleBenchmarks is POST /console/benchmarks: YAML in the catalogue's
// format, parsed and validated, then upserted. On an error the editor
// keeps the text and shows what is wrong, naming the field.
func (h *Handler) ConsoleBenchmarks(w http.ResponseWriter, r *http.Request) {
	acc, err := h.accounts()
	if err != nil {
		h.Error(w, r, err)
		return
	}
	text := r.PostFormValue("yaml")
	fail := func(err error) {
		if d5list.ErrorCode(err) != d5list.EINVALID {
			h.Error(w, r, err)
			return
		}
		h.renderConsole(w, r, http.StatusBadRequest, templates.Console{YAML: text, YAMLError: d5list.ErrorMessage(err)})
	}
	if len(text) > maxYAMLBytes {
		fail(d5list.Errorf(d5list.EINVALID, "benchmarks.yaml: longer than %d bytes", maxYAMLBytes))
		return
	}
	if strings.TrimSpace(text) == "" {
		fail(d5list.Errorf(d5list.EINVALID, "benchmarks.yaml: empty"))
		return
	}
	bs, err := catalog.Parse("benchmarks.yaml", []byte(text))
	if err != nil {
		if d5list.ErrorCode(err) == "" || d5list.ErrorCode(err) == d5list.EINTERNAL {
			err = d5list.Errorf(d5list.EINVALID, "%v", err)
		}
		fail(err)
		return
	}
	if len(bs) == 0 {
		fail(d5list.Errorf(d5list.EINVALID, "benchmarks.yaml: no benchmark in it"))
		return
	}
	for i := range bs {
		if err := catalog.Validate(&bs[i]); err != nil {
			fail(d5list.Errorf(d5list.EINVALID, "benchmark %d (%s): %s", i+1, bs[i].ID, d5list.ErrorMessage(err)))
			return
		}
	}
	if err := catalog.RefuseBuiltIn(bs); err != nil {
		fail(err)
		return
	}
	if h.browser.Workloads != nil {
		if err := catalog.CheckWorkloads("benchmarks.yaml", bs, h.browser.Workloads); err != nil {
			fail(err)
			return
		}
	}
	// A changed definition rebuilds the benchmark's board rows: the save
	// and its rebuild run to the end even if the organiser's browser
	// leaves. Each committed part of the rebuild drops the boards' cached
	// pages (the store's notice to the portal), also of one that failed
	// half way.
	err = acc.UpsertBenchmarks(context.WithoutCancel(r.Context()), bs)
	ids := make([]string, len(bs))
	for i, b := range bs {
		ids[i] = b.ID
	}
	if err != nil {
		fail(err)
		return
	}
	h.log.InfoContext(r.Context(), "benchmarks saved", "by", userFrom(r.Context()).Name, "ids", ids)
	h.renderConsole(w, r, http.StatusOK, templates.Console{Notice: "saved " + strings.Join(ids, ", ")})
}

// ConsoleRunnerTokens is POST /console/runner-tokens: do=create shows a
// new token once; do=revoke ends every token of the name.
func (h *Handler) ConsoleRunnerTokens(w http.ResponseWriter, r *http.Request) {
	acc, err := h.accounts()
	if err != nil {
		h.Error(w, r, err)
		return
	}
	rt, ok := acc.(RunnerTokens)
	if !ok {
		h.Error(w, r, d5list.Errorf(d5list.EUNAVAILABLE, "the runner pool is not available on this server"))
		return
	}
	name := strings.TrimSpace(r.PostFormValue("name"))
	switch r.PostFormValue("do") {
	case "create":
		token, err := rt.CreateRunnerToken(r.Context(), name)
		if err != nil {
			h.Error(w, r, err)
			return
		}
		h.log.InfoContext(r.Context(), "runner token created", "by", userFrom(r.Context()).Name, "runner", name)
		w.Header().Set("Cache-Control", "no-store")
		h.renderConsole(w, r, http.StatusCreated, templates.Console{NewRunner: token, RunnerName: name})
	case "revoke":
		if err := rt.RevokeRunnerToken(r.Context(), name); err != nil {
			h.Error(w, r, err)
			return
		}
		h.log.InfoContext(r.Context(), "runner tokens revoked", "by", userFrom(r.Context()).Name, "runner", name)
		http.Redirect(w, r, "/console?done=revoked+runner+"+name+"#runners", http.StatusSeeOther)
	default:
		h.Error(w, r, d5list.Errorf(d5list.EINVALID, "do: want create or revoke, got %q", r.PostFormValue("do")))
	}
}

// ConsoleReview is POST /console/review/{id}: the review API's action
// from a form.
func (h *Handler) ConsoleReview(w http.ResponseWriter, r *http.Request) {
	rs, err := h.reviewer()
	if err != nil {
		h.Error(w, r, err)
		return
	}
	id, err := pathID(r, "submission")
	if err != nil {
		h.Error(w, r, err)
		return
	}
	req := d5list.ReviewRequest{
		Action: d5list.ReviewAction(r.PostFormValue("action")),
		Reason: r.PostFormValue("reason"),
		Note:   r.PostFormValue("note"),
	}
	// A rejection is for good: asked again, once it has its reason (one
	// without is refused below, with the console).
	if req.Action == d5list.ActionReject && strings.TrimSpace(req.Reason) != "" && r.PostFormValue("confirm") != "yes" {
		h.render(w, r, http.StatusOK, templates.ConfirmPage(templates.ConfirmPrompt{
			Title:  "Reject submission " + strconv.FormatInt(id, 10) + " for good?",
			Text:   "It leaves every board and cannot be accepted afterwards; only a re-run undoes it. Its competitor is told the reason: " + req.Reason,
			Action: "/console/review/" + strconv.FormatInt(id, 10), Button: "Reject submission " + strconv.FormatInt(id, 10), Cancel: "/console#review-" + strconv.FormatInt(id, 10),
			Fields: [][2]string{{"action", string(req.Action)}, {"reason", req.Reason}, {"note", req.Note}}}))
		return
	}
	sub, _, err := rs.Review(r.Context(), userFrom(r.Context()), id, req)
	if err != nil {
		if c := d5list.ErrorCode(err); c == d5list.EINVALID || c == d5list.ECONFLICT {
			h.renderConsole(w, r, StatusOf(d5list.ErrorCode(err)), templates.Console{ReviewError: "submission " + strconv.FormatInt(id, 10) + ": " + d5list.ErrorMessage(err)})
			return
		}
		h.Error(w, r, err)
		return
	}
	http.Redirect(w, r, "/console?done=submission+"+strconv.FormatInt(sub.ID, 10)+"+is+now+"+string(sub.Status)+"&entry="+strconv.FormatInt(sub.ID, 10)+"#review", http.StatusSeeOther)
}

// adminWords is what the admin role adds to an organiser's powers.
func adminWords(role d5list.Role) string {
	if role == d5list.RoleAdmin {
		return ", and give or take the admin role"
	}
	return ""
}

// ConsoleFreezeEdition is POST /console/editions: the console's form for
// what POST /api/v1/editions does. Freezing cannot be undone, so the form
// first answers with a page that asks to confirm, whose own form posts
// confirm=yes; only that one freezes.
func (h *Handler) ConsoleFreezeEdition(w http.ResponseWriter, r *http.Request) {
	ls, err := h.list()
	if err != nil {
		h.Error(w, r, err)
		return
	}
	name := strings.TrimSpace(r.PostFormValue("name"))
	if r.PostFormValue("confirm") != "yes" {
		h.confirmEdition(w, r, name)
		return
	}
	ed, err := ls.FreezeEdition(r.Context(), userFrom(r.Context()), name)
	if err != nil {
		if c := d5list.ErrorCode(err); c == d5list.EINVALID || c == d5list.ECONFLICT {
			h.renderConsole(w, r, StatusOf(d5list.ErrorCode(err)), templates.Console{EditionError: d5list.ErrorMessage(err), EditionName: name})
			return
		}
		h.Error(w, r, err)
		return
	}
	http.Redirect(w, r, "/console?done=edition+"+url.QueryEscape(ed.Name)+"+frozen#editions", http.StatusSeeOther)
}

// confirmEdition asks to confirm freezing edition name, or re-shows the
// console's form with the reason where the name could not be frozen
// (empty, or taken).
func (h *Handler) confirmEdition(w http.ResponseWriter, r *http.Request, name string) {
	refuse := func(msg string) {
		h.renderConsole(w, r, http.StatusBadRequest, templates.Console{EditionError: msg, EditionName: name})
	}
	if name == "" {
		refuse("name: required, for example 2026-11")
		return
	}
	if el, ok := h.svc.(editionLister); ok {
		editions, err := el.Editions(r.Context())
		if err != nil {
			h.Error(w, r, err)
			return
		}
		for _, e := range editions {
			if e.Name == name {
				refuse("edition " + name + " is frozen already; a frozen edition never changes, so choose another name")
				return
			}
		}
	}
	benchmarks, err := h.svc.Benchmarks(r.Context())
	if err != nil {
		h.Error(w, r, err)
		return
	}
	h.render(w, r, http.StatusOK, templates.EditionConfirmPage(name, len(benchmarks)))
}
