package store

import (
	"context"
	"database/sql"
	"strings"

	d5list "github.com/deep500/d5list"
)

// quotaMessage is what the submissions_quota trigger (migration 0005)
// raises.
const quotaMessage = "d5list: daily submission quota reached"

// SetDailyQuota sets how many submissions one user may make per benchmark
// and UTC day; 0 lifts the limit. Failed and rejected ones do not count.
func (db *DB) SetDailyQuota(ctx context.Context, n int) error {
	if n < 0 {
		return d5list.Errorf(d5list.EINVALID, "quota: %d is negative", n)
	}
	err := db.writeTx(ctx, func(tx *sql.Tx) error {
		_, err := tx.ExecContext(ctx, `UPDATE submission_quota SET daily = ? WHERE id = 1`, n)
		return err
	})
	return wrap(err, "setting the quota")
}

// DailyQuota returns the limit SetDailyQuota set.
func (db *DB) DailyQuota(ctx context.Context) (int, error) {
	var n int
	err := db.readTx(ctx, func(tx *sql.Tx) error {
		return tx.QueryRowContext(ctx, `SELECT daily FROM submission_quota WHERE id = 1`).Scan(&n)
	})
	return n, wrap(err, "reading the quota")
}

// Quota is the store with quota errors given their domain code: the
// trigger that enforces the quota inside CreateSubmission's transaction
// can only raise a message, which Quota turns into ELIMIT (429).
type Quota struct{ *DB }

// CreateSubmission is DB.CreateSubmission with the quota refusal as ELIMIT.
func (q Quota) CreateSubmission(ctx context.Context, s *d5list.Submission) error {
	err := q.DB.CreateSubmission(ctx, s)
	if err != nil && strings.Contains(err.Error(), quotaMessage) {
		n, _ := q.quotaFor(ctx, s.BenchmarkID)
		return d5list.Errorf(d5list.ELIMIT, "quota: %d submissions to %s per day are allowed; failed and rejected ones do not count", n, s.BenchmarkID)
	}
	return err
}

// quotaFor is the daily limit the trigger applies to benchmarkID: its own
// daily_quota, else the portal-wide one.
func (db *DB) quotaFor(ctx context.Context, benchmarkID string) (int, error) {
	var n int
	err := db.readTx(ctx, func(tx *sql.Tx) error {
		return tx.QueryRowContext(ctx, `SELECT COALESCE(NULLIF((SELECT json_extract(definition, '$.daily_quota') FROM benchmarks WHERE id = ?), 0),
			(SELECT daily FROM submission_quota WHERE id = 1))`, benchmarkID).Scan(&n)
	})
	return n, wrap(err, "reading the quota of %s", benchmarkID)
}
