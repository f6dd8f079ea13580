package store

import (
	"context"
	"database/sql"
	"fmt"
	"slices"
	"time"

	d5list "github.com/deep500/d5list"
)

// MaxLogLinesPerJob is how many progress lines are kept for one job, the
// latest ones: enough for a live tail and the end of a failed run, and a
// bound on what a chatty (or hostile) run can write to the disk.
var MaxLogLinesPerJob = 2000

// AppendJobLog stores progress lines from the holder of job's live lease,
// stamped with the lease's attempt, and drops the job's oldest lines beyond
// MaxLogLinesPerJob. A wrong secret or an expired lease is EFORBIDDEN; a job
// no longer leased (cancelled, done) is ECONFLICT.
func (db *DB) AppendJobLog(ctx context.Context, jobID int64, secret string, lines []d5list.LogLine) error {
	err := db.writeTx(ctx, func(tx *sql.Tx) error {
		j, err := db.heldLeaseTx(ctx, tx, jobID, secret)
		if err != nil {
			return err
		}
		now := db.now().UnixNano()
		stmt, err := tx.PrepareContext(ctx, `INSERT INTO job_log (job_id, submission_id, attempt, run, stream, text, created_at)
			VALUES (?, ?, ?, ?, ?, ?, ?)`)
		if err != nil {
			return err
		}
		defer stmt.Close()
		for _, l := range lines {
			at := now
			if !l.Time.IsZero() {
				at = l.Time.UnixNano()
			}
			if _, err := stmt.ExecContext(ctx, jobID, j.SubmissionID, j.Attempts, l.Run, l.Stream, l.Text, at); err != nil {
				return err
			}
		}
		_, err = tx.ExecContext(ctx, `DELETE FROM job_log WHERE job_id = ?1 AND id <=
			(SELECT id FROM job_log WHERE job_id = ?1 ORDER BY id DESC LIMIT 1 OFFSET ?2)`, jobID, MaxLogLinesPerJob)
		return err
	})
	return wrap(err, "storing the progress of job %d", jobID)
}

// JobLog returns up to limit progress lines of a submission's jobs, oldest
// first: those whose seq is above after, or the latest ones when after is
// negative (a page's tail).
func (db *DB) JobLog(ctx context.Context, submissionID, after int64, limit int) ([]d5list.LogLine, error) {
	lines := []d5list.LogLine{}
	query := `SELECT id, job_id, attempt, run, stream, text, created_at FROM job_log
		WHERE submission_id = ? AND id > ? ORDER BY id LIMIT ?`
	if after < 0 {
		query = `SELECT id, job_id, attempt, run, stream, text, created_at FROM job_log
		WHERE submission_id = ? AND id > ? ORDER BY id DESC LIMIT ?`
	}
	err := db.readTx(ctx, func(tx *sql.Tx) error {
		rows, err := tx.QueryContext(ctx, query, submissionID, after, limit)
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			var l d5list.LogLine
			var at int64
			if err := rows.Scan(&l.Seq, &l.JobID, &l.Attempt, &l.Run, &l.Stream, &l.Text, &at); err != nil {
				return err
			}
			l.Time = fromUnixNano(at)
			lines = append(lines, l)
		}
		return rows.Err()
	})
	if err != nil {
		return nil, fmt.Errorf("store: reading the progress of submission %d: %w", submissionID, err)
	}
	if after < 0 {
		slices.Reverse(lines)
	}
	return lines, nil
}

// JobEvents lists the events of every job of a submission, oldest first.
func (db *DB) JobEvents(ctx context.Context, submissionID int64) ([]d5list.JobEvent, error) {
	events := []d5list.JobEvent{}
	err := db.readTx(ctx, func(tx *sql.Tx) error {
		rows, err := tx.QueryContext(ctx, `SELECT job_id, attempt, kind, runner, detail, created_at FROM job_events
			WHERE submission_id = ? ORDER BY id`, submissionID)
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			var e d5list.JobEvent
			var at int64
			if err := rows.Scan(&e.JobID, &e.Attempt, &e.Kind, &e.Runner, &e.Detail, &at); err != nil {
				return err
			}
			e.Time = fromUnixNano(at)
			events = append(events, e)
		}
		return rows.Err()
	})
	if err != nil {
		return nil, fmt.Errorf("store: reading the job events of submission %d: %w", submissionID, err)
	}
	return events, nil
}

// jobEventTx records one step of job j's life in the transaction that
// takes it.
func jobEventTx(ctx context.Context, tx *sql.Tx, j *jobRow, attempt int, kind, runner, detail string, now int64) error {
	_, err := tx.ExecContext(ctx, `INSERT INTO job_events (job_id, submission_id, attempt, kind, runner, detail, created_at)
		VALUES (?, ?, ?, ?, ?, ?, ?)`, j.ID, j.SubmissionID, attempt, kind, runner, detail, now)
	return err
}

// pruneBatch is how many log lines one pruning transaction deletes, so that
// a large backlog never holds the write lock long enough to stall uploads
// and runners. A variable so that tests can make several batches.
var pruneBatch = 5000

// PruneJobLogs deletes the progress lines of jobs that ended (done,
// failed or cancelled) before the given time, in short transactions, and
// returns how many it deleted. The lines of jobs still queued or leased
// are kept whatever their age: a job in progress shows its live tail.
func (db *DB) PruneJobLogs(ctx context.Context, endedBefore time.Time) (int64, error) {
	var total int64
	for {
		var n int64
		err := db.writeTx(ctx, func(tx *sql.Tx) error {
			res, err := tx.ExecContext(ctx, `DELETE FROM job_log WHERE id IN (
				SELECT l.id FROM job_log l JOIN jobs j ON j.id = l.job_id
				WHERE j.state NOT IN (?, ?) AND j.updated_at < ? LIMIT ?)`,
				string(d5list.JobQueued), string(d5list.JobLeased), endedBefore.UnixNano(), pruneBatch)
			if err != nil {
				return err
			}
			n, err = res.RowsAffected()
			return err
		})
		if err != nil {
			return total, wrap(err, "pruning the logs of jobs ended before %s", endedBefore.Format(time.RFC3339))
		}
		total += n
		if n < int64(pruneBatch) {
			return total, nil
		}
	}
}
