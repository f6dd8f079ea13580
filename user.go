package d5list

import (
	"strings"
	"time"
)

// Role orders what a user may do; each role includes the ones before it.
type Role string

const (
	RolePublic     Role = "public"
	RoleCompetitor Role = "competitor"
	RoleOrganiser  Role = "organiser"
	RoleAdmin      Role = "admin"
)

var roleRank = map[Role]int{RolePublic: 0, RoleCompetitor: 1, RoleOrganiser: 2, RoleAdmin: 3}

// Valid reports whether r is a known role.
func (r Role) Valid() bool { _, ok := roleRank[r]; return ok }

// AtLeast reports whether r includes the rights of min.
func (r Role) AtLeast(min Role) bool { return roleRank[r] >= roleRank[min] }

// User is an account of the portal.
type User struct {
	ID        int64     `json:"id"`
	Name      string    `json:"name"`
	Role      Role      `json:"role"`
	CreatedAt time.Time `json:"created_at"`
	// Organisation is who the account submits for: every submission.json
	// it uploads must name it as submitter. An account without one names it
	// with its first upload; an organiser confirms it (or sets another).
	Organisation          string `json:"organisation,omitempty"`
	OrganisationConfirmed bool   `json:"organisation_confirmed,omitempty"`
}

// MaxOrganisationLen bounds an organisation's name, in bytes.
const MaxOrganisationLen = 100

// CleanOrganisation trims an organisation's name and collapses its inner
// spaces, so that "Lab  X " and "Lab X" are one organisation.
func CleanOrganisation(name string) string {
	return strings.Join(strings.Fields(name), " ")
}
