package store

import (
	"context"
	"database/sql"
	"fmt"
	"time"

	d5list "github.com/deep500/d5list"
)

// HeartbeatJob extends the holder's lease by ttl from now. A cancelled or
// finished job answers ECONFLICT, telling the runner to stop.
func (db *DB) HeartbeatJob(ctx context.Context, jobID int64, secret string, ttl time.Duration) error {
	if ttl <= 0 {
		return d5list.Errorf(d5list.EINVALID, "heartbeat: the lease time must be positive, not %s", ttl)
	}
	err := db.writeTx(ctx, func(tx *sql.Tx) error {
		if _, err := db.heldLeaseTx(ctx, tx, jobID, secret); err != nil {
			return err
		}
		now := db.now().UnixNano()
		_, err := tx.ExecContext(ctx, `UPDATE jobs SET lease_expires = ?, updated_at = ? WHERE id = ?`, now+int64(ttl), now, jobID)
		return err
	})
	return wrap(err, "heartbeat of job %d", jobID)
}

// CheckLease returns the job if secret holds its live lease, or is the
// lease whose report completed it, so that a repeated report is
// recognised (the caller tells the two apart by the job's state).
func (db *DB) CheckLease(ctx context.Context, jobID int64, secret string) (*d5list.Job, error) {
	var job *d5list.Job
	err := db.readTx(ctx, func(tx *sql.Tx) error {
		j, ok, err := db.liveLeaseTx(ctx, tx, jobID, secret)
		if err != nil {
			return err
		}
		if !ok && j.State != d5list.JobDone {
			return notLeased(j)
		}
		job = &j.Job
		return nil
	})
	if err != nil {
		return nil, wrap(err, "checking the lease of job %d", jobID)
	}
	return job, nil
}

// CompleteJob records the re-run's verdict: the job is done and the
// submission gets the measured result, status and reasons, together. A
// report repeated with the same secret after success is a no-op.
func (db *DB) CompleteJob(ctx context.Context, jobID int64, secret string, measured *d5list.Result, st d5list.Status, reasons []d5list.Reason) error {
	err := db.endJob(ctx, jobID, secret, measured, st, reasons, func(tx *sql.Tx, j *jobRow, v encodedVerdict, now int64) error {
		if err := jobEventTx(ctx, tx, j, j.Attempts, d5list.EventCompleted, j.RunnerID, string(st), now); err != nil {
			return err
		}
		if _, err := tx.ExecContext(ctx, `UPDATE submissions SET measured = ?, status = ?, reasons = ?, updated_at = ? WHERE id = ?`,
			v.measured, string(st), v.reasons, now, j.SubmissionID); err != nil {
			return err
		}
		// The verdict and the entry's place on the boards are one change.
		return syncBoardRowTx(ctx, tx, j.SubmissionID)
	})
	return wrap(err, "completing job %d", jobID)
}

// encodedVerdict is a re-run's measured result and reasons as stored.
type encodedVerdict struct {
	measured any
	reasons  string
}

// endJob ends the holder's job with a verdict, in one transaction: the job
// is done, the blobs of its logs are named, and record writes what the
// verdict changes. A report repeated with the same secret after that is a
// no-op.
func (db *DB) endJob(ctx context.Context, jobID int64, secret string, measured *d5list.Result, st d5list.Status, reasons []d5list.Reason,
	record func(tx *sql.Tx, j *jobRow, v encodedVerdict, now int64) error) error {
	if !st.Final() {
		return d5list.Errorf(d5list.EINVALID, "job %d: %q is not a final status", jobID, st)
	}
	var v encodedVerdict
	var err error
	if v.measured, err = encodeResult(measured); err != nil {
		return fmt.Errorf("store: job %d: encoding the measured result: %w", jobID, err)
	}
	if v.reasons, err = encodeReasons(reasons); err != nil {
		return err
	}
	return db.writeTx(ctx, func(tx *sql.Tx) error {
		j, ok, err := db.liveLeaseTx(ctx, tx, jobID, secret)
		if err != nil {
			return err
		}
		if !ok {
			if j.State == d5list.JobDone {
				return nil
			}
			return notLeased(j)
		}
		now := db.now().UnixNano()
		if _, err := tx.ExecContext(ctx, `UPDATE jobs SET state = ?, lease_expires = 0, updated_at = ? WHERE id = ?`,
			string(d5list.JobDone), now, jobID); err != nil {
			return err
		}
		if err := rerunLogsTx(ctx, tx, j, measured); err != nil {
			return err
		}
		if err := recordAuditFailureTx(ctx, tx, j, reasons, now); err != nil {
			return err
		}
		return record(tx, j, v, now)
	})
}

// rerunLogsTx names the blobs of the re-run's logs that measured carries
// (RunMetrics.LogSHA256) in rerun_logs, with the verdict, whether it is
// published or held back for a re-measure (whose measurement stays in the
// submission's history).
func rerunLogsTx(ctx context.Context, tx *sql.Tx, j *jobRow, measured *d5list.Result) error {
	if measured == nil {
		return nil
	}
	for _, r := range measured.Runs {
		if r.LogSHA256 == "" {
			continue
		}
		if _, err := tx.ExecContext(ctx, `INSERT OR REPLACE INTO rerun_logs (job_id, run, submission_id, sha256) VALUES (?, ?, ?, ?)`,
			j.ID, r.Index, j.SubmissionID, r.LogSHA256); err != nil {
			return err
		}
	}
	return nil
}

// FailJob records that the holder's re-run broke. The job goes back to the
// queue while attempts remain; after the last one it fails, and so does
// its submission.
func (db *DB) FailJob(ctx context.Context, jobID int64, secret string, message string) error {
	err := db.writeTx(ctx, func(tx *sql.Tx) error {
		j, err := db.heldLeaseTx(ctx, tx, jobID, secret)
		if err != nil {
			return err
		}
		now := db.now().UnixNano()
		if j.Attempts < j.MaxAttempts {
			if err := jobEventTx(ctx, tx, j, j.Attempts, d5list.EventRequeued, j.RunnerID, message, now); err != nil {
				return err
			}
			if _, err := tx.ExecContext(ctx, `UPDATE jobs SET state = ?, runner_id = '', secret_hash = '', lease_expires = 0,
				error = ?, updated_at = ? WHERE id = ?`, string(d5list.JobQueued), message, now, jobID); err != nil {
				return err
			}
			if _, err := tx.ExecContext(ctx, `UPDATE submissions SET status = ?, updated_at = ? WHERE id = ?`,
				string(d5list.StatusQueued), now, j.SubmissionID); err != nil {
				return err
			}
			return syncBoardRowTx(ctx, tx, j.SubmissionID)
		}
		if _, err := tx.ExecContext(ctx, `UPDATE jobs SET state = ?, lease_expires = 0, error = ?, updated_at = ? WHERE id = ?`,
			string(d5list.JobFailed), message, now, jobID); err != nil {
			return err
		}
		if err := jobEventTx(ctx, tx, j, j.Attempts, d5list.EventFailed, j.RunnerID, message, now); err != nil {
			return err
		}
		return failSubmissionTx(ctx, tx, j.SubmissionID, d5list.Reason{Code: "rerun_failed", Message: message}, now)
	})
	return wrap(err, "failing job %d", jobID)
}
