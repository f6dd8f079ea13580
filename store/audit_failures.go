package store

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"

	d5list "github.com/deep500/d5list"
)

// recordAuditFailureTx files the verdict of job j as a failed audit where
// its reasons hold any (d5list.IsAuditFailure), under the entry's account
// and organisation as they stand now. It runs in the verdict's own
// transaction, so that the verdict and what it costs are one change; a
// report repeated after the verdict never reaches it.
func recordAuditFailureTx(ctx context.Context, tx *sql.Tx, j *jobRow, reasons []d5list.Reason, now int64) error {
	failed := d5list.AuditFailureReasons(reasons)
	if len(failed) == 0 {
		return nil
	}
	text, err := encodeReasons(failed)
	if err != nil {
		return err
	}
	var owner sql.NullInt64
	var name, org, orgKey, submitter, submitterKey string
	err = tx.QueryRowContext(ctx, `SELECT s.owner_id, coalesce(u.name, ''), coalesce(u.organisation, ''),
		coalesce(u.organisation_key, ''), s.submitter, s.submitter_key
		FROM submissions s LEFT JOIN users u ON u.id = s.owner_id WHERE s.id = ?`, j.SubmissionID).
		Scan(&owner, &name, &org, &orgKey, &submitter, &submitterKey)
	if err != nil {
		return fmt.Errorf("reading the owner of submission %d: %w", j.SubmissionID, err)
	}
	if org == "" {
		org, orgKey = submitter, submitterKey
	}
	_, err = tx.ExecContext(ctx, `INSERT INTO audit_failures (submission_id, job_id, owner_id, owner, organisation,
		organisation_key, benchmark_id, reasons, created_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)
		ON CONFLICT (job_id) DO NOTHING`,
		j.SubmissionID, j.ID, owner, name, org, orgKey, j.BenchmarkID, text, now)
	return err
}

// unclearedAuditFailuresTx counts the failed audits of benchmark by the
// account ownerID that no organiser has cleared.
func unclearedAuditFailuresTx(ctx context.Context, tx *sql.Tx, ownerID int64, benchmarkID string) (int, error) {
	if ownerID == 0 {
		return 0, nil
	}
	var n int
	err := tx.QueryRowContext(ctx, `SELECT count(*) FROM audit_failures
		WHERE owner_id = ? AND benchmark_id = ? AND cleared_at IS NULL`, ownerID, benchmarkID).Scan(&n)
	return n, err
}

// UnclearedAuditFailures counts the failed audits of benchmark by the
// account ownerID that no organiser has cleared.
func (db *DB) UnclearedAuditFailures(ctx context.Context, ownerID int64, benchmarkID string) (int, error) {
	var n int
	err := db.readTx(ctx, func(tx *sql.Tx) (err error) {
		n, err = unclearedAuditFailuresTx(ctx, tx, ownerID, benchmarkID)
		return err
	})
	return n, wrap(err, "counting the failed audits of user %d on %s", ownerID, benchmarkID)
}

// heldUploadTx refuses an upload of benchmark by the account ownerID while
// d5list.HoldAfterAuditFailures of its audits of it are uncleared.
func heldUploadTx(ctx context.Context, tx *sql.Tx, ownerID int64, benchmarkID string) error {
	n, err := unclearedAuditFailuresTx(ctx, tx, ownerID, benchmarkID)
	if err != nil {
		return err
	}
	if n >= d5list.HoldAfterAuditFailures {
		return d5list.Errorf(d5list.EFORBIDDEN, "uploads of benchmark %s by this account are held: %d of its re-runs of %s failed their audit, "+
			"and an organiser must clear them before it uploads to %s again", benchmarkID, n, benchmarkID, benchmarkID)
	}
	return nil
}

// maxAuditFailuresListed bounds the console's list.
const maxAuditFailuresListed = 500

// AuditFailures lists the failed audits, newest first (the 500 latest).
func (db *DB) AuditFailures(ctx context.Context) ([]d5list.AuditFailure, error) {
	out := []d5list.AuditFailure{}
	err := db.readTx(ctx, func(tx *sql.Tx) error {
		rows, err := tx.QueryContext(ctx, `SELECT id, submission_id, job_id, coalesce(owner_id, 0), owner, organisation,
			benchmark_id, reasons, created_at, cleared_at, cleared_by FROM audit_failures ORDER BY created_at DESC, id DESC LIMIT ?`,
			maxAuditFailuresListed)
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			var f d5list.AuditFailure
			var reasons string
			var created int64
			var cleared sql.NullInt64
			if err := rows.Scan(&f.ID, &f.SubmissionID, &f.JobID, &f.OwnerID, &f.Owner, &f.Organisation, &f.BenchmarkID,
				&reasons, &created, &cleared, &f.ClearedBy); err != nil {
				return err
			}
			if err := json.Unmarshal([]byte(reasons), &f.Reasons); err != nil {
				return fmt.Errorf("audit failure %d: reasons: %w", f.ID, err)
			}
			f.CreatedAt = fromUnixNano(created)
			if cleared.Valid {
				t := fromUnixNano(cleared.Int64)
				f.ClearedAt = &t
			}
			out = append(out, f)
		}
		return rows.Err()
	})
	if err != nil {
		return nil, fmt.Errorf("store: listing failed audits: %w", err)
	}
	return out, nil
}

// ClearAuditFailures clears, as organiser by, every uncleared failed audit
// of benchmark by the account ownerID: its uploads of it are no longer
// held, nor its jobs audited in full. It returns how many it cleared;
// none is ENOTFOUND, so that a stale form says so.
func (db *DB) ClearAuditFailures(ctx context.Context, by *d5list.User, ownerID int64, benchmarkID string) (int, error) {
	if by == nil || !by.Role.AtLeast(d5list.RoleOrganiser) {
		return 0, d5list.Errorf(d5list.EFORBIDDEN, "only organisers clear failed audits")
	}
	var n int64
	err := db.writeTx(ctx, func(tx *sql.Tx) error {
		res, err := tx.ExecContext(ctx, `UPDATE audit_failures SET cleared_at = ?, cleared_by_id = ?, cleared_by = ?
			WHERE owner_id = ? AND benchmark_id = ? AND cleared_at IS NULL`,
			db.now().UnixNano(), by.ID, by.Name, ownerID, benchmarkID)
		if err != nil {
			return err
		}
		if n, err = res.RowsAffected(); err != nil {
			return err
		}
		if n == 0 {
			return d5list.Errorf(d5list.ENOTFOUND, "user %d has no uncleared failed audit of %s", ownerID, benchmarkID)
		}
		return nil
	})
	return int(n), wrap(err, "clearing the failed audits of user %d on %s", ownerID, benchmarkID)
}

// Setting returns the value of the organisers' setting name, "" where it
// was never set (its default).
func (db *DB) Setting(ctx context.Context, name string) (string, error) {
	var v string
	err := db.readTx(ctx, func(tx *sql.Tx) error {
		err := tx.QueryRowContext(ctx, `SELECT value FROM settings WHERE name = ?`, name).Scan(&v)
		if errors.Is(err, sql.ErrNoRows) {
			return nil
		}
		return err
	})
	return v, wrap(err, "reading setting %s", name)
}

// SetSetting sets the organisers' setting name to value, as organiser by.
func (db *DB) SetSetting(ctx context.Context, by *d5list.User, name, value string) error {
	if by == nil || !by.Role.AtLeast(d5list.RoleOrganiser) {
		return d5list.Errorf(d5list.EFORBIDDEN, "only organisers change the portal's settings")
	}
	err := db.writeTx(ctx, func(tx *sql.Tx) error {
		_, err := tx.ExecContext(ctx, `INSERT INTO settings (name, value, updated_by_id, updated_by, updated_at) VALUES (?, ?, ?, ?, ?)
			ON CONFLICT (name) DO UPDATE SET value = excluded.value, updated_by_id = excluded.updated_by_id,
			updated_by = excluded.updated_by, updated_at = excluded.updated_at`,
			name, value, by.ID, by.Name, db.now().UnixNano())
		return err
	})
	return wrap(err, "setting %s", name)
}
