package handlers

import (
	"net/http"

	d5list "github.com/deep500/d5list"
)

// accountJSON is what the API tells a user of their own account: who the
// token or session is, and the organisation its uploads must name.
type accountJSON struct {
	Name                  string      `json:"name"`
	Role                  d5list.Role `json:"role"`
	Organisation          string      `json:"organisation"`
	OrganisationConfirmed bool        `json:"organisation_confirmed"`
}

// ShowAccount is GET /api/v1/account: the caller's account, which
// `d5list init --server --token` reads to name the submitter.
func (h *Handler) ShowAccount(w http.ResponseWriter, r *http.Request) {
	u := userFrom(r.Context())
	h.writeJSON(w, r, http.StatusOK, accountJSON{Name: u.Name, Role: u.Role, Organisation: u.Organisation,
		OrganisationConfirmed: u.OrganisationConfirmed})
}
