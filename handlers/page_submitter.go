package handlers

import (
	"context"
	"net/http"
	"net/url"

	d5list "github.com/deep500/d5list"
	"github.com/deep500/d5list/leaderboard"
	"github.com/deep500/d5list/templates"
)

// EntityService lists an organisation's entries, or one system's, and a
// system's places on the boards and in the editions.
type EntityService interface {
	EntriesOf(ctx context.Context, viewer *d5list.User, submitter, system string) ([]d5list.Submission, error)
	Places(ctx context.Context, submitter, system string) ([]leaderboard.Place, error)
}

// SubmitterPage is GET /submitters/{name}: an organisation's systems and
// entries over time, as Top500 keeps a page per site.
func (h *Handler) SubmitterPage(w http.ResponseWriter, r *http.Request) {
	h.entityPage(w, r, false)
}

// SystemPage is GET /submitters/{name}/systems/{system}: one system's
// description and its entries over time.
func (h *Handler) SystemPage(w http.ResponseWriter, r *http.Request) {
	h.entityPage(w, r, true)
}

func (h *Handler) entityPage(w http.ResponseWriter, r *http.Request, system bool) {
	es, ok := h.svc.(EntityService)
	if !ok {
		h.Error(w, r, d5list.Errorf(d5list.EUNAVAILABLE, "this portal has no organisation pages"))
		return
	}
	submitter, err := pathText(r, "name")
	if err != nil {
		h.Error(w, r, err)
		return
	}
	var systemName string
	if system {
		if systemName, err = pathText(r, "system"); err != nil {
			h.Error(w, r, err)
			return
		}
	}
	viewer, err := h.viewer(r)
	if err != nil {
		h.Error(w, r, err)
		return
	}
	subs, err := es.EntriesOf(r.Context(), viewer, submitter, systemName)
	if err != nil {
		h.Error(w, r, err)
		return
	}
	benches, err := h.svc.Benchmarks(r.Context())
	if err != nil {
		h.Error(w, r, err)
		return
	}
	view := templates.NewEntityView(subs, benches)
	if system {
		places, err := es.Places(r.Context(), view.Submitter, view.System)
		if err != nil {
			h.Error(w, r, err)
			return
		}
		view.AddStandings(places, benches)
		h.render(w, r, http.StatusOK, templates.SystemPage(view))
		return
	}
	h.render(w, r, http.StatusOK, templates.SubmitterPage(view))
}

// pathText is a path parameter as written: chi matches the escaped path
// when the URL carries escapes the default encoding would not (a "/" in a
// name), and the decoded one otherwise.
func pathText(r *http.Request, name string) (string, error) {
	v := r.PathValue(name)
	if r.URL.RawPath == "" {
		return v, nil
	}
	text, err := url.PathUnescape(v)
	if err != nil {
		return "", d5list.Errorf(d5list.ENOTFOUND, "%s %q: not a valid path segment", name, v)
	}
	return text, nil
}
