package store

import (
	"context"
	"database/sql"
	"errors"
	"strings"
	"sync"
	"time"
	"unicode"

	d5list "github.com/deep500/d5list"
)

// MinPasswordLen is the shortest password sign-up accepts.
const MinPasswordLen = 10

// dummyHash is checked when a login names no account, so that a wrong
// name costs as long as a wrong password. It is made on first use: at
// package init it cost every start of the binary (each CLI command, each
// data-parallel worker) a quarter second and 64 MiB.
var dummyHash = sync.OnceValue(func() string { return HashPassword("not a password of anyone") })

// ValidUserName explains what is wrong with a sign-up name, or returns nil.
func ValidUserName(name string) error {
	if name == "" {
		return d5list.Errorf(d5list.EINVALID, "name: empty")
	}
	if len(name) > 64 {
		return d5list.Errorf(d5list.EINVALID, "name: longer than 64 bytes")
	}
	for _, c := range name {
		if !(unicode.IsLetter(c) || unicode.IsDigit(c) || strings.ContainsRune("._-", c)) {
			return d5list.Errorf(d5list.EINVALID, "name: %q is not allowed; use letters, digits, '.', '_' and '-'", c)
		}
	}
	return nil
}

// SignUp creates a competitor with a password. approved false leaves the
// account unable to log in until an organiser approves it. The
// organisation it names is a request to join: the account may submit for
// it only while no account is confirmed for it, or once an organiser
// confirms this one (submitForOrganisationTx).
func (db *DB) SignUp(ctx context.Context, name, organisation, password string, approved bool) (*d5list.User, error) {
	name = strings.TrimSpace(name)
	if err := ValidUserName(name); err != nil {
		return nil, err
	}
	organisation = d5list.CleanOrganisation(organisation)
	if len(organisation) > d5list.MaxOrganisationLen {
		return nil, d5list.Errorf(d5list.EINVALID, "organisation: longer than %d bytes", d5list.MaxOrganisationLen)
	}
	if len(password) < MinPasswordLen {
		return nil, d5list.Errorf(d5list.EINVALID, "password: shorter than %d characters", MinPasswordLen)
	}
	hash := HashPassword(password)
	var u d5list.User
	err := db.writeTx(ctx, func(tx *sql.Tx) error {
		var n int
		if err := tx.QueryRowContext(ctx, `SELECT count(*) FROM users WHERE name = ?`, name).Scan(&n); err != nil {
			return err
		}
		if n > 0 {
			return d5list.Errorf(d5list.ECONFLICT, "name: %q is taken", name)
		}
		now := db.now().UnixNano()
		var created int64
		if err := tx.QueryRowContext(ctx, `INSERT INTO users (name, role, created_at, organisation, organisation_key) VALUES (?, ?, ?, ?, ?)
			RETURNING id, name, role, created_at, organisation`, name, string(d5list.RoleCompetitor), now, organisation, organisationKey(organisation)).
			Scan(&u.ID, &u.Name, &u.Role, &created, &u.Organisation); err != nil {
			return err
		}
		u.CreatedAt = fromUnixNano(created)
		_, err := tx.ExecContext(ctx, `INSERT INTO passwords (user_id, hash, approved, updated_at) VALUES (?, ?, ?, ?)`,
			u.ID, hash, approved, now)
		return err
	})
	if err != nil {
		return nil, wrap(err, "signing up %q", name)
	}
	return &u, nil
}

// SetPassword gives an existing user (one made by `admin`, say) a
// password and approves them.
func (db *DB) SetPassword(ctx context.Context, userID int64, password string) error {
	if len(password) < MinPasswordLen {
		return d5list.Errorf(d5list.EINVALID, "password: shorter than %d characters", MinPasswordLen)
	}
	hash := HashPassword(password)
	err := db.writeTx(ctx, func(tx *sql.Tx) error {
		_, err := tx.ExecContext(ctx, `INSERT INTO passwords (user_id, hash, approved, updated_at) VALUES (?, ?, 1, ?)
			ON CONFLICT (user_id) DO UPDATE SET hash = excluded.hash, updated_at = excluded.updated_at`,
			userID, hash, db.now().UnixNano())
		return err
	})
	return wrap(err, "setting the password of user %d", userID)
}

// Login returns the user whose name and password match.
func (db *DB) Login(ctx context.Context, name, password string) (*d5list.User, error) {
	var u *d5list.User
	var hash string
	var approved bool
	err := db.readTx(ctx, func(tx *sql.Tx) error {
		var created int64
		u = new(d5list.User)
		return tx.QueryRowContext(ctx, `SELECT u.id, u.name, u.role, u.created_at, u.organisation, u.organisation_confirmed, p.hash, p.approved
			FROM users u JOIN passwords p ON p.user_id = u.id WHERE u.name = ?`, strings.TrimSpace(name)).
			Scan(&u.ID, &u.Name, &u.Role, &created, &u.Organisation, &u.OrganisationConfirmed, &hash, &approved)
	})
	if errors.Is(err, sql.ErrNoRows) {
		CheckPassword(dummyHash(), password)
		return nil, d5list.Errorf(d5list.EUNAUTHORIZED, "wrong name or password")
	} else if err != nil {
		return nil, wrap(err, "logging in")
	}
	if !CheckPassword(hash, password) {
		return nil, d5list.Errorf(d5list.EUNAUTHORIZED, "wrong name or password")
	}
	if !approved {
		return nil, d5list.Errorf(d5list.EFORBIDDEN, "the account %q waits for an organiser's approval", u.Name)
	}
	return u, nil
}

// CreateSession starts a session for the user and returns the cookie
// value and the session's CSRF token. Only the value's hash is stored.
func (db *DB) CreateSession(ctx context.Context, userID int64, ttl time.Duration) (cookie, csrf string, err error) {
	cookie, csrf = randomString(), randomString()
	now := db.now()
	err = db.writeTx(ctx, func(tx *sql.Tx) error {
		// Expired sessions are swept here rather than by a timer.
		if _, err := tx.ExecContext(ctx, `DELETE FROM sessions WHERE expires_at < ?`, now.UnixNano()); err != nil {
			return err
		}
		_, err := tx.ExecContext(ctx, `INSERT INTO sessions (hash, user_id, csrf, created_at, expires_at) VALUES (?, ?, ?, ?, ?)`,
			hashSecret(cookie), userID, csrf, now.UnixNano(), now.Add(ttl).UnixNano())
		return err
	})
	if err != nil {
		return "", "", wrap(err, "creating a session for user %d", userID)
	}
	return cookie, csrf, nil
}

// SessionUser returns the user of a live session and its CSRF token.
func (db *DB) SessionUser(ctx context.Context, cookie string) (*d5list.User, string, error) {
	var u d5list.User
	var csrf string
	err := db.readTx(ctx, func(tx *sql.Tx) error {
		var created int64
		err := tx.QueryRowContext(ctx, `SELECT u.id, u.name, u.role, u.created_at, u.organisation, u.organisation_confirmed, s.csrf
			FROM sessions s JOIN users u ON u.id = s.user_id WHERE s.hash = ? AND s.expires_at > ?`,
			hashSecret(cookie), db.now().UnixNano()).Scan(&u.ID, &u.Name, &u.Role, &created, &u.Organisation, &u.OrganisationConfirmed, &csrf)
		u.CreatedAt = fromUnixNano(created)
		return err
	})
	if errors.Is(err, sql.ErrNoRows) {
		return nil, "", d5list.Errorf(d5list.EUNAUTHORIZED, "the session has ended; log in again")
	} else if err != nil {
		return nil, "", wrap(err, "reading a session")
	}
	return &u, csrf, nil
}

// DeleteSession ends a session; ending an unknown one is not an error.
func (db *DB) DeleteSession(ctx context.Context, cookie string) error {
	err := db.writeTx(ctx, func(tx *sql.Tx) error {
		_, err := tx.ExecContext(ctx, `DELETE FROM sessions WHERE hash = ?`, hashSecret(cookie))
		return err
	})
	return wrap(err, "ending a session")
}

// Tokens lists a user's API tokens, newest first.
func (db *DB) Tokens(ctx context.Context, userID int64) ([]d5list.APIToken, error) {
	var out []d5list.APIToken
	err := db.readTx(ctx, func(tx *sql.Tx) error {
		rows, err := tx.QueryContext(ctx, `SELECT id, label, created_at, revoked_at FROM tokens WHERE user_id = ? ORDER BY id DESC`, userID)
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			var t d5list.APIToken
			var created int64
			var revoked sql.NullInt64
			if err := rows.Scan(&t.ID, &t.Label, &created, &revoked); err != nil {
				return err
			}
			t.CreatedAt = fromUnixNano(created)
			if revoked.Valid {
				r := fromUnixNano(revoked.Int64)
				t.RevokedAt = &r
			}
			out = append(out, t)
		}
		return rows.Err()
	})
	return out, wrap(err, "listing the tokens of user %d", userID)
}

// RevokeTokenOf ends the user's token id; another user's token is not found.
func (db *DB) RevokeTokenOf(ctx context.Context, userID, tokenID int64) error {
	err := db.writeTx(ctx, func(tx *sql.Tx) error {
		res, err := tx.ExecContext(ctx, `UPDATE tokens SET revoked_at = coalesce(revoked_at, ?) WHERE id = ? AND user_id = ?`,
			db.now().UnixNano(), tokenID, userID)
		if err != nil {
			return err
		}
		if n, _ := res.RowsAffected(); n == 0 {
			return d5list.Errorf(d5list.ENOTFOUND, "token %d not found", tokenID)
		}
		return nil
	})
	return wrap(err, "revoking token %d", tokenID)
}

// Accounts lists every user with their sign-up state, by name.
func (db *DB) Accounts(ctx context.Context) ([]d5list.Account, error) {
	var out []d5list.Account
	err := db.readTx(ctx, func(tx *sql.Tx) error {
		rows, err := tx.QueryContext(ctx, `SELECT u.id, u.name, u.role, u.created_at, u.organisation, u.organisation_confirmed,
				p.user_id IS NOT NULL, coalesce(p.approved, 1)
			FROM users u LEFT JOIN passwords p ON p.user_id = u.id ORDER BY u.name`)
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			var a d5list.Account
			var created int64
			if err := rows.Scan(&a.ID, &a.Name, &a.Role, &created, &a.Organisation, &a.OrganisationConfirmed, &a.HasPassword, &a.Approved); err != nil {
				return err
			}
			a.CreatedAt = fromUnixNano(created)
			out = append(out, a)
		}
		return rows.Err()
	})
	return out, wrap(err, "listing accounts")
}

// SetRole changes a user's role.
func (db *DB) SetRole(ctx context.Context, userID int64, role d5list.Role) error {
	if !role.Valid() {
		return d5list.Errorf(d5list.EINVALID, "role: unknown role %q", role)
	}
	err := db.writeTx(ctx, func(tx *sql.Tx) error {
		res, err := tx.ExecContext(ctx, `UPDATE users SET role = ? WHERE id = ?`, string(role), userID)
		if err != nil {
			return err
		}
		if n, _ := res.RowsAffected(); n == 0 {
			return d5list.Errorf(d5list.ENOTFOUND, "user %d not found", userID)
		}
		return nil
	})
	return wrap(err, "setting the role of user %d", userID)
}

// SetOrganisation confirms a user as a member of organisation, an
// organiser's decision: the name the account asked for, or another. The
// account's earlier entries keep the submitter they were uploaded with.
func (db *DB) SetOrganisation(ctx context.Context, userID int64, organisation string) error {
	organisation = d5list.CleanOrganisation(organisation)
	switch {
	case organisation == "":
		return d5list.Errorf(d5list.EINVALID, "organisation: empty")
	case len(organisation) > d5list.MaxOrganisationLen:
		return d5list.Errorf(d5list.EINVALID, "organisation: longer than %d bytes", d5list.MaxOrganisationLen)
	}
	err := db.writeTx(ctx, func(tx *sql.Tx) error {
		// Members share one spelling, the first confirmed one, so that the
		// board does not list "NVIDIA" and "Nvidia" as two organisations.
		existing, err := confirmedOrganisationTx(ctx, tx, userID, organisation)
		if err != nil {
			return err
		}
		if existing != "" {
			organisation = existing
		}
		res, err := tx.ExecContext(ctx, `UPDATE users SET organisation = ?, organisation_key = ?, organisation_confirmed = 1 WHERE id = ?`,
			organisation, organisationKey(organisation), userID)
		if err != nil {
			return err
		}
		if n, _ := res.RowsAffected(); n == 0 {
			return d5list.Errorf(d5list.ENOTFOUND, "user %d not found", userID)
		}
		return nil
	})
	return wrap(err, "setting the organisation of user %d", userID)
}

// confirmedOrganisationTx returns the first-confirmed spelling of the
// organisation called name among the accounts other than userID that an
// organiser confirmed, or "". The names are
// compared by their keys (organisationKey), not by SQLite's NOCASE, which
// folds ASCII only: "ÉCOLE" and "école" would be two organisations to it
// and one to every other check.
func confirmedOrganisationTx(ctx context.Context, tx *sql.Tx, userID int64, name string) (string, error) {
	key := organisationKey(name)
	if key == "" {
		return "", nil
	}
	var org string
	err := tx.QueryRowContext(ctx, `SELECT organisation FROM users WHERE organisation_key = ? AND organisation_confirmed = 1
		AND id != ? ORDER BY id LIMIT 1`, key, userID).Scan(&org)
	if errors.Is(err, sql.ErrNoRows) {
		return "", nil
	}
	return org, err
}

// Approve lets a waiting sign-up log in.
func (db *DB) Approve(ctx context.Context, userID int64) error {
	err := db.writeTx(ctx, func(tx *sql.Tx) error {
		res, err := tx.ExecContext(ctx, `UPDATE passwords SET approved = 1 WHERE user_id = ?`, userID)
		if err != nil {
			return err
		}
		if n, _ := res.RowsAffected(); n == 0 {
			return d5list.Errorf(d5list.ENOTFOUND, "user %d has no sign-up to approve", userID)
		}
		return nil
	})
	return wrap(err, "approving user %d", userID)
}
