package store

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"database/sql"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"

	d5list "github.com/deep500/d5list"
)

// TokenPrefix starts every API token, so that a leaked one is recognisable.
const TokenPrefix = "d5_"

// EnsureUser creates the user name, or returns it with its role set to role.
func (db *DB) EnsureUser(ctx context.Context, name string, role d5list.Role) (*d5list.User, error) {
	name = strings.TrimSpace(name)
	if name == "" {
		return nil, d5list.Errorf(d5list.EINVALID, "user name: empty")
	}
	if !role.Valid() {
		return nil, d5list.Errorf(d5list.EINVALID, "user %q: unknown role %q", name, role)
	}
	var u d5list.User
	err := db.writeTx(ctx, func(tx *sql.Tx) error {
		var created int64
		err := tx.QueryRowContext(ctx, `INSERT INTO users (name, role, created_at) VALUES (?, ?, ?)
			ON CONFLICT (name) DO UPDATE SET role = excluded.role
			RETURNING id, name, role, created_at, organisation, organisation_confirmed`, name, string(role), db.now().UnixNano()).
			Scan(&u.ID, &u.Name, &u.Role, &created, &u.Organisation, &u.OrganisationConfirmed)
		u.CreatedAt = fromUnixNano(created)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("store: saving user %q: %w", name, err)
	}
	return &u, nil
}

// User returns the user called name.
func (db *DB) User(ctx context.Context, name string) (*d5list.User, error) {
	var u *d5list.User
	err := db.readTx(ctx, func(tx *sql.Tx) (err error) {
		u, err = scanUser(tx.QueryRowContext(ctx, `SELECT id, name, role, created_at, organisation, organisation_confirmed FROM users WHERE name = ?`, name))
		return err
	})
	if errors.Is(err, sql.ErrNoRows) {
		return nil, d5list.Errorf(d5list.ENOTFOUND, "user %q not found", name)
	} else if err != nil {
		return nil, fmt.Errorf("store: reading user %q: %w", name, err)
	}
	return u, nil
}

func scanUser(row *sql.Row) (*d5list.User, error) {
	var u d5list.User
	var created int64
	if err := row.Scan(&u.ID, &u.Name, &u.Role, &created, &u.Organisation, &u.OrganisationConfirmed); err != nil {
		return nil, err
	}
	u.CreatedAt = fromUnixNano(created)
	return &u, nil
}

// CreateToken issues an API token for the user. Only its sha256 is kept,
// so the token is shown once, here.
func (db *DB) CreateToken(ctx context.Context, userID int64, label string) (string, error) {
	token := TokenPrefix + randomString()
	err := db.writeTx(ctx, func(tx *sql.Tx) error {
		var n int
		if err := tx.QueryRowContext(ctx, `SELECT count(*) FROM users WHERE id = ?`, userID).Scan(&n); err != nil {
			return err
		}
		if n == 0 {
			return d5list.Errorf(d5list.ENOTFOUND, "user %d not found", userID)
		}
		_, err := tx.ExecContext(ctx, `INSERT INTO tokens (user_id, hash, label, created_at) VALUES (?, ?, ?, ?)`,
			userID, hashSecret(token), label, db.now().UnixNano())
		return err
	})
	if err != nil {
		return "", wrap(err, "creating a token for user %d", userID)
	}
	return token, nil
}

// UserByToken returns the owner of a live token. The lookup is by the
// token's hash, so comparing it leaks nothing about stored tokens.
func (db *DB) UserByToken(ctx context.Context, token string) (*d5list.User, error) {
	var u *d5list.User
	err := db.readTx(ctx, func(tx *sql.Tx) (err error) {
		u, err = scanUser(tx.QueryRowContext(ctx, `SELECT u.id, u.name, u.role, u.created_at, u.organisation, u.organisation_confirmed
			FROM tokens t JOIN users u ON u.id = t.user_id
			WHERE t.hash = ? AND t.revoked_at IS NULL`, hashSecret(token)))
		return err
	})
	if errors.Is(err, sql.ErrNoRows) {
		return nil, d5list.Errorf(d5list.EUNAUTHORIZED, "unknown or revoked API token")
	} else if err != nil {
		return nil, fmt.Errorf("store: looking up a token: %w", err)
	}
	return u, nil
}

// RevokeToken ends a token; revoking it again is not an error.
func (db *DB) RevokeToken(ctx context.Context, token string) error {
	err := db.writeTx(ctx, func(tx *sql.Tx) error {
		res, err := tx.ExecContext(ctx, `UPDATE tokens SET revoked_at = coalesce(revoked_at, ?) WHERE hash = ?`,
			db.now().UnixNano(), hashSecret(token))
		if err != nil {
			return err
		}
		if n, _ := res.RowsAffected(); n == 0 {
			return d5list.Errorf(d5list.ENOTFOUND, "unknown API token")
		}
		return nil
	})
	return wrap(err, "revoking a token")
}

// randomString is 32 random bytes, base64url: 256 bits that cannot be guessed.
func randomString() string {
	var b [32]byte
	rand.Read(b[:])
	return base64.RawURLEncoding.EncodeToString(b[:])
}

func hashSecret(s string) string {
	h := sha256.Sum256([]byte(s))
	return hex.EncodeToString(h[:])
}

// wrap adds context to internal errors and passes domain errors unchanged,
// so that their codes and messages reach the user as written.
func wrap(err error, format string, args ...any) error {
	if err == nil {
		return nil
	}
	var de *d5list.Error
	if errors.As(err, &de) {
		return err
	}
	return fmt.Errorf("store: "+format+": %w", append(args, err)...)
}
