package store

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"

	d5list "github.com/deep500/d5list"
)

// ApplyReview applies one organiser change to a submission and appends its
// audit entry in the same transaction, so that no change is unaudited and
// no entry describes a change that did not happen. The submission's status
// must still be ch.FromStatus (ECONFLICT otherwise: a verdict or another
// organiser got there first). It returns the entry, or nil when
// ch.AuditOnlyStatusChange left the status as it was.
func (db *DB) ApplyReview(ctx context.Context, ch d5list.ReviewChange) (*d5list.AuditEntry, error) {
	if ch.Actor == nil {
		return nil, d5list.Errorf(d5list.EINVALID, "review of submission %d: no actor", ch.SubmissionID)
	}
	if ch.Action == "" || ch.ToStatus == "" {
		return nil, d5list.Errorf(d5list.EINVALID, "review of submission %d: empty action or status", ch.SubmissionID)
	}
	var claimed any
	if ch.Claimed != nil {
		var err error
		if claimed, err = encodeResult(ch.Claimed); err != nil {
			return nil, fmt.Errorf("store: encoding the claimed result: %w", err)
		}
	}
	var reasons string
	if ch.Reasons != nil {
		var err error
		if reasons, err = encodeReasons(*ch.Reasons); err != nil {
			return nil, err
		}
	}
	var entry *d5list.AuditEntry
	err := db.writeTx(ctx, func(tx *sql.Tx) error {
		var cur, benchID string
		err := tx.QueryRowContext(ctx, `SELECT status, benchmark_id FROM submissions WHERE id = ?`, ch.SubmissionID).Scan(&cur, &benchID)
		if errors.Is(err, sql.ErrNoRows) {
			return d5list.Errorf(d5list.ENOTFOUND, "submission %d not found", ch.SubmissionID)
		} else if err != nil {
			return err
		}
		if d5list.Status(cur) != ch.FromStatus {
			return d5list.Errorf(d5list.ECONFLICT, "submission %d is %s now, no longer %s; reload and decide again", ch.SubmissionID, cur, ch.FromStatus)
		}
		now := db.now().UnixNano()
		// The verdict is archived before the update can touch it.
		var jobID sql.NullInt64
		if ch.Rerun {
			id, err := db.requeueTx(ctx, tx, ch.SubmissionID, benchID, cur, now)
			if err != nil {
				return err
			}
			jobID = sql.NullInt64{Int64: id, Valid: true}
		}
		set := []string{"status = ?", "updated_at = ?"}
		args := []any{string(ch.ToStatus), now}
		if ch.Rerun {
			// The verdict now lives in job_results only: a queued entry is
			// public, and its old findings must not be shown with it. Nor is
			// the next verdict public because this one was published.
			set = append(set, "measured = NULL", "reasons = '[]'", "published = 0")
		}
		if ch.Division != nil {
			set, args = append(set, "division = ?"), append(args, *ch.Division)
		}
		if ch.Flag != nil {
			set, args = append(set, "flag = ?"), append(args, *ch.Flag)
		}
		if ch.Published != nil {
			set, args = append(set, "published = ?"), append(args, *ch.Published)
		}
		if ch.Claimed != nil {
			set, args = append(set, "claimed = ?"), append(args, claimed)
		}
		if ch.Reasons != nil {
			set, args = append(set, "reasons = ?"), append(args, reasons)
		}
		q := "UPDATE submissions SET "
		for i, s := range set {
			if i > 0 {
				q += ", "
			}
			q += s
		}
		if _, err := tx.ExecContext(ctx, q+" WHERE id = ?", append(args, ch.SubmissionID)...); err != nil {
			return err
		}
		if err := syncBoardRowTx(ctx, tx, ch.SubmissionID); err != nil {
			return err
		}
		if ch.AuditOnlyStatusChange && d5list.Status(cur) == ch.ToStatus {
			return nil
		}
		e := d5list.AuditEntry{SubmissionID: ch.SubmissionID, ActorID: ch.Actor.ID, Actor: ch.Actor.Name,
			Action: ch.Action, Reason: ch.Reason, Note: ch.Note, FromStatus: d5list.Status(cur), ToStatus: ch.ToStatus,
			JobID: jobID.Int64, CreatedAt: fromUnixNano(now)}
		var actor any
		if ch.Actor.ID != 0 {
			actor = ch.Actor.ID
		}
		err = tx.QueryRowContext(ctx, `INSERT INTO audit_log (submission_id, actor_id, actor, action, reason, note,
				from_status, to_status, job_id, created_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?) RETURNING id`,
			e.SubmissionID, actor, e.Actor, string(e.Action), e.Reason, e.Note, string(e.FromStatus), string(e.ToStatus),
			jobID, now).Scan(&e.ID)
		if err != nil {
			return err
		}
		entry = &e
		return nil
	})
	if err != nil {
		return nil, wrap(err, "reviewing submission %d", ch.SubmissionID)
	}
	return entry, nil
}

// requeueTx archives the submission's verdict before the change (the
// outcome of its latest job, prevStatus) and queues a new job. The old job row stays as it was: it is the record of what that
// attempt did.
func (db *DB) requeueTx(ctx context.Context, tx *sql.Tx, subID int64, benchID, prevStatus string, now int64) (int64, error) {
	var last sql.NullInt64
	if err := tx.QueryRowContext(ctx, `SELECT max(id) FROM jobs WHERE submission_id = ?`, subID).Scan(&last); err != nil {
		return 0, err
	}
	if last.Valid {
		var state string
		if err := tx.QueryRowContext(ctx, `SELECT state FROM jobs WHERE id = ?`, last.Int64).Scan(&state); err != nil {
			return 0, err
		}
		switch d5list.JobState(state) {
		case d5list.JobQueued, d5list.JobLeased:
			return 0, d5list.Errorf(d5list.ECONFLICT, "submission %d: job %d is still %s", subID, last.Int64, state)
		}
		// public keeps who could see the verdict when it was written: one
		// against the entry only its competitor and the organisers, until
		// an organiser published it.
		var published bool
		if err := tx.QueryRowContext(ctx, `SELECT published FROM submissions WHERE id = ?`, subID).Scan(&published); err != nil {
			return 0, err
		}
		public := !(&d5list.Submission{Status: d5list.Status(prevStatus), Published: published}).Hidden()
		if _, err := tx.ExecContext(ctx, `INSERT OR IGNORE INTO job_results (job_id, submission_id, status, measured, reasons, archived_at, public)
			SELECT ?, id, ?, measured, reasons, ?, ? FROM submissions WHERE id = ?`,
			last.Int64, prevStatus, now, public, subID); err != nil {
			return 0, err
		}
	}
	return db.queueJobTx(ctx, tx, subID, benchID, now, remeasureWish{})
}

// AuditLog lists a submission's audit entries, oldest first.
func (db *DB) AuditLog(ctx context.Context, submissionID int64) ([]d5list.AuditEntry, error) {
	var entries []d5list.AuditEntry
	err := db.readTx(ctx, func(tx *sql.Tx) (err error) {
		if _, err := submissionTx(ctx, tx, submissionID); err != nil {
			return err
		}
		entries, err = auditEntriesTx(ctx, tx, `WHERE submission_id = ? ORDER BY id`, submissionID)
		return err
	})
	if err != nil {
		return nil, wrap(err, "reading the audit log of submission %d", submissionID)
	}
	return entries, nil
}

// auditEntriesTx reads the audit entries that where (a WHERE clause with
// its ORDER BY and LIMIT) selects.
func auditEntriesTx(ctx context.Context, tx *sql.Tx, where string, args ...any) ([]d5list.AuditEntry, error) {
	rows, err := tx.QueryContext(ctx, `SELECT id, submission_id, coalesce(actor_id, 0), actor, action, reason, note,
		from_status, to_status, coalesce(job_id, 0), created_at FROM audit_log `+where, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	entries := []d5list.AuditEntry{}
	for rows.Next() {
		var e d5list.AuditEntry
		var created int64
		if err := rows.Scan(&e.ID, &e.SubmissionID, &e.ActorID, &e.Actor, &e.Action, &e.Reason, &e.Note,
			&e.FromStatus, &e.ToStatus, &e.JobID, &created); err != nil {
			return nil, err
		}
		e.CreatedAt = fromUnixNano(created)
		entries = append(entries, e)
	}
	return entries, rows.Err()
}

// PendingAppeals returns, for each submission whose latest audit entry is
// its competitor's appeal, that entry: the messages no organiser has
// answered yet.
func (db *DB) PendingAppeals(ctx context.Context) (map[int64]d5list.AuditEntry, error) {
	out := map[int64]d5list.AuditEntry{}
	err := db.readTx(ctx, func(tx *sql.Tx) error {
		rows, err := tx.QueryContext(ctx, `SELECT a.id, a.submission_id, coalesce(a.actor_id, 0), a.actor, a.note, a.from_status, a.created_at
			FROM audit_log a WHERE a.action = ?
			AND a.id = (SELECT max(b.id) FROM audit_log b WHERE b.submission_id = a.submission_id)`, string(d5list.ActionAppeal))
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			e := d5list.AuditEntry{Action: d5list.ActionAppeal}
			var created int64
			if err := rows.Scan(&e.ID, &e.SubmissionID, &e.ActorID, &e.Actor, &e.Note, &e.FromStatus, &created); err != nil {
				return err
			}
			e.ToStatus, e.CreatedAt = e.FromStatus, fromUnixNano(created)
			out[e.SubmissionID] = e
		}
		return rows.Err()
	})
	return out, wrap(err, "listing appeals")
}

// LastDecision returns the latest audit entry of the submission that
// changed its status, or nil.
func (db *DB) LastDecision(ctx context.Context, submissionID int64) (*d5list.AuditEntry, error) {
	entries, err := db.AuditLog(ctx, submissionID)
	if err != nil {
		return nil, err
	}
	for i := len(entries) - 1; i >= 0; i-- {
		if entries[i].FromStatus != entries[i].ToStatus {
			return &entries[i], nil
		}
	}
	return nil, nil
}

// Attempts lists a submission's verification jobs, oldest first, each with
// the verdict archived when a later re-run replaced it; the latest job's
// verdict is the submission's own.
func (db *DB) Attempts(ctx context.Context, submissionID int64) ([]d5list.Attempt, error) {
	jobs, err := db.Jobs(ctx, submissionID)
	if err != nil {
		return nil, err
	}
	out := make([]d5list.Attempt, 0, len(jobs))
	err = db.readTx(ctx, func(tx *sql.Tx) error {
		for _, j := range jobs {
			a := d5list.Attempt{Job: j}
			var st, reasons string
			var measured sql.NullString
			var public bool
			err := tx.QueryRowContext(ctx, `SELECT status, measured, reasons, public FROM job_results WHERE job_id = ?`, j.ID).
				Scan(&st, &measured, &reasons, &public)
			switch {
			case errors.Is(err, sql.ErrNoRows):
			case err != nil:
				return err
			default:
				a.Status, a.Hidden = d5list.Status(st), !public
				if measured.Valid {
					if a.Measured, err = decodeResult(measured.String); err != nil {
						return fmt.Errorf("job %d: decoding the archived result: %w", j.ID, err)
					}
				}
				if err := json.Unmarshal([]byte(reasons), &a.Reasons); err != nil {
					return fmt.Errorf("job %d: decoding the archived reasons: %w", j.ID, err)
				}
			}
			out = append(out, a)
		}
		return nil
	})
	if err != nil {
		return nil, wrap(err, "listing the attempts of submission %d", submissionID)
	}
	return out, nil
}

// RecentDecisions lists the latest limit audit entries of organisers'
// decisions across all submissions, newest first: what the console shows
// as just changed. Competitors' appeals are not decisions; each is shown
// with its entry in the review queue instead.
func (db *DB) RecentDecisions(ctx context.Context, limit int) ([]d5list.AuditEntry, error) {
	var entries []d5list.AuditEntry
	err := db.readTx(ctx, func(tx *sql.Tx) (err error) {
		entries, err = auditEntriesTx(ctx, tx, `WHERE action != ? ORDER BY id DESC LIMIT ?`, string(d5list.ActionAppeal), limit)
		return err
	})
	return entries, wrap(err, "listing recent decisions")
}
