package d5list

import "time"

// Account is a user as the organiser console lists them.
type Account struct {
	User
	// HasPassword is false for users made by `d5list admin` (API only).
	HasPassword bool `json:"has_password"`
	// Approved is false while a sign-up waits for an organiser.
	Approved bool `json:"approved"`
}

// APIToken describes an issued API token; the token itself is shown once
// and never stored.
type APIToken struct {
	ID        int64      `json:"id"`
	Label     string     `json:"label"`
	CreatedAt time.Time  `json:"created_at"`
	RevokedAt *time.Time `json:"revoked_at,omitempty"`
}
