package d5list

import "time"

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
}
