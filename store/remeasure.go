package store

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"

	d5list "github.com/deep500/d5list"
)

// remeasureWish is what a re-measure asks of its runner (jobRow): none for
// a first job or an organiser's re-run.
type remeasureWish struct {
	count                     int
	notBefore, elsewhereUntil int64
	avoidRunner               string
}

// RemeasureJob holds back a verdict that rests on timing alone and asks
// for the submission's timed runs to be measured again: the holder's job
// is done, its measurement and verdict go to the submission's history
// (job_results, as an organiser's re-run archives them; public as the
// verdict would have been), and a new job, the next re-measure, is queued
// with the submission back in the queue. No runner takes it before
// req.After; then, for req.Elsewhere, not the runner of this job while
// another that can run it is online. A report repeated after it is a
// no-op.
func (db *DB) RemeasureJob(ctx context.Context, jobID int64, secret string, measured *d5list.Result, st d5list.Status,
	reasons []d5list.Reason, req d5list.RemeasureRequest) error {
	err := db.endJob(ctx, jobID, secret, measured, st, reasons, func(tx *sql.Tx, j *jobRow, v encodedVerdict, now int64) error {
		if err := jobEventTx(ctx, tx, j, j.Attempts, d5list.EventRemeasure, j.RunnerID, string(st)+": "+req.Why, now); err != nil {
			return err
		}
		var published bool
		if err := tx.QueryRowContext(ctx, `SELECT published FROM submissions WHERE id = ?`, j.SubmissionID).Scan(&published); err != nil {
			return err
		}
		public := !(&d5list.Submission{Status: st, Published: published}).Hidden()
		if _, err := tx.ExecContext(ctx, `INSERT INTO job_results (job_id, submission_id, status, measured, reasons, archived_at, public)
			VALUES (?, ?, ?, ?, ?, ?, ?)`, jobID, j.SubmissionID, string(st), v.measured, v.reasons, now, public); err != nil {
			return err
		}
		notBefore := now + int64(req.After)
		wish := remeasureWish{count: j.Remeasure + 1, notBefore: notBefore, elsewhereUntil: notBefore + int64(req.Elsewhere),
			avoidRunner: j.RunnerID}
		if _, err := db.queueJobTx(ctx, tx, j.SubmissionID, j.BenchmarkID, now, wish); err != nil {
			return err
		}
		if _, err := tx.ExecContext(ctx, `UPDATE submissions SET status = ?, measured = NULL, reasons = '[]', updated_at = ? WHERE id = ?`,
			string(d5list.StatusQueued), now, j.SubmissionID); err != nil {
			return err
		}
		return syncBoardRowTx(ctx, tx, j.SubmissionID)
	})
	return wrap(err, "re-measuring job %d", jobID)
}

// queueJobTx queues a new job for a submission that had one before, with
// the requires of its latest job, and returns its id.
func (db *DB) queueJobTx(ctx context.Context, tx *sql.Tx, subID int64, benchID string, now int64, w remeasureWish) (int64, error) {
	maxAttempts := db.MaxAttempts
	if maxAttempts <= 0 {
		maxAttempts = DefaultMaxAttempts
	}
	var id int64
	err := tx.QueryRowContext(ctx, `INSERT INTO jobs (submission_id, benchmark_id, state, max_attempts, created_at, updated_at, requires,
			remeasure, not_before, avoid_runner, elsewhere_until)
		VALUES (?, ?, ?, ?, ?, ?, COALESCE((SELECT requires FROM jobs WHERE submission_id = ? ORDER BY id DESC LIMIT 1), ''), ?, ?, ?, ?)
		RETURNING id`, subID, benchID, string(d5list.JobQueued), maxAttempts, now, now, subID,
		w.count, w.notBefore, w.avoidRunner, w.elsewhereUntil).Scan(&id)
	return id, err
}

// wantsAnotherRunnerTx reports whether j, a re-measure, is not for
// runnerID yet: it is the runner of the measurement j repeats, j's wait
// for another one has not ended, and another runner that can run it is
// online (busy or not: it takes j when it is free).
func (db *DB) wantsAnotherRunnerTx(ctx context.Context, tx *sql.Tx, j *jobRow, bench *d5list.Benchmark, sub *d5list.Submission,
	runnerID string, now int64) (bool, error) {
	if j.avoidRunner != runnerID || now >= j.elsewhereUntil {
		return false, nil
	}
	rows, err := tx.QueryContext(ctx, `SELECT name, labels FROM runners WHERE name != ? AND last_seen > ?`,
		runnerID, now-int64(RunnerOnlineWindow))
	if err != nil {
		return false, err
	}
	defer rows.Close()
	for rows.Next() {
		var name, enc string
		if err := rows.Scan(&name, &enc); err != nil {
			return false, err
		}
		var labels map[string]string
		if err := json.Unmarshal([]byte(enc), &labels); err != nil {
			return false, fmt.Errorf("runner %q: labels: %w", name, err)
		}
		if bench.RunnableBy(labels) && d5list.HasLabels(labels, j.Requires) && d5list.HasLabels(labels, sub.Recipe.RunnerNeeds()) {
			return true, nil
		}
	}
	return false, rows.Err()
}
