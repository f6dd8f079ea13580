package store

import (
	"context"
	"crypto/rand"
	"crypto/subtle"
	"database/sql"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	d5list "github.com/deep500/d5list"
)

// The queue's guarantees: a job is leased by one runner at a time; a lease
// that is not renewed expires and the job goes back to the queue; only the
// holder of the current, unexpired lease can report on it; a report is
// accepted once (repeating it with the same secret is a no-op); and a job is
// given up after MaxAttempts leases, so nothing stays stuck.

const jobColumns = `id, submission_id, benchmark_id, state, attempts, max_attempts, runner_id,
	lease_expires, error, created_at, updated_at, secret_hash, requires, fresh_seeds,
	remeasure, not_before, avoid_runner, elsewhere_until FROM jobs`

// jobRequires is the requires column of a submission's first job.
func jobRequires(r *d5list.Recipe) (string, error) {
	needs := r.RunnerNeeds()
	if len(needs) == 0 {
		return "", nil
	}
	b, err := json.Marshal(needs)
	return string(b), err
}

// jobRow is a job with the hash of its lease secret, which never leaves
// this package, and a re-measure's wishes for its runner (RemeasureJob).
type jobRow struct {
	d5list.Job
	secretHash string
	expires    int64
	// notBefore: no lease before; avoidRunner leases it only after
	// elsewhereUntil where another runner can (UnixNano).
	notBefore, elsewhereUntil int64
	avoidRunner               string
}

func scanJob(row scanner) (*jobRow, error) {
	var j jobRow
	var created, updated int64
	var requires, fresh string
	err := row.Scan(&j.ID, &j.SubmissionID, &j.BenchmarkID, &j.State, &j.Attempts, &j.MaxAttempts, &j.RunnerID,
		&j.expires, &j.Error, &created, &updated, &j.secretHash, &requires, &fresh,
		&j.Remeasure, &j.notBefore, &j.avoidRunner, &j.elsewhereUntil)
	if err != nil {
		return nil, err
	}
	if requires != "" {
		if err := json.Unmarshal([]byte(requires), &j.Requires); err != nil {
			return nil, fmt.Errorf("job %d: requires: %w", j.ID, err)
		}
	}
	if fresh != "" {
		if err := json.Unmarshal([]byte(fresh), &j.FreshSeeds); err != nil {
			return nil, fmt.Errorf("job %d: fresh_seeds: %w", j.ID, err)
		}
	}
	j.LeaseExpires = fromUnixNano(j.expires)
	j.CreatedAt, j.UpdatedAt = fromUnixNano(created), fromUnixNano(updated)
	return &j, nil
}

func jobTx(ctx context.Context, tx *sql.Tx, id int64) (*jobRow, error) {
	j, err := scanJob(tx.QueryRowContext(ctx, `SELECT `+jobColumns+` WHERE id = ?`, id))
	if errors.Is(err, sql.ErrNoRows) {
		return nil, d5list.Errorf(d5list.ENOTFOUND, "job %d not found", id)
	} else if err != nil {
		return nil, fmt.Errorf("store: reading job %d: %w", id, err)
	}
	return j, nil
}

// holds reports whether secret is the one of j's latest lease.
func (j *jobRow) holds(secret string) bool {
	return j.secretHash != "" && subtle.ConstantTimeCompare([]byte(hashSecret(secret)), []byte(j.secretHash)) == 1
}

// Job returns one job.
func (db *DB) Job(ctx context.Context, id int64) (*d5list.Job, error) {
	var j *jobRow
	err := db.readTx(ctx, func(tx *sql.Tx) (err error) {
		j, err = jobTx(ctx, tx, id)
		return err
	})
	if err != nil {
		return nil, err
	}
	return &j.Job, nil
}

// queryJobsTx loads the jobs that where (a WHERE clause, and an ORDER BY)
// selects, all read before the caller writes in the same transaction.
func queryJobsTx(ctx context.Context, tx *sql.Tx, where string, args ...any) ([]*jobRow, error) {
	rows, err := tx.QueryContext(ctx, `SELECT `+jobColumns+` `+where, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var jobs []*jobRow
	for rows.Next() {
		j, err := scanJob(rows)
		if err != nil {
			return nil, err
		}
		jobs = append(jobs, j)
	}
	return jobs, rows.Err()
}

// Jobs lists the jobs of a submission, oldest first.
func (db *DB) Jobs(ctx context.Context, submissionID int64) ([]d5list.Job, error) {
	jobs := []d5list.Job{}
	err := db.readTx(ctx, func(tx *sql.Tx) error {
		rows, err := tx.QueryContext(ctx, `SELECT `+jobColumns+` WHERE submission_id = ? ORDER BY id`, submissionID)
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			j, err := scanJob(rows)
			if err != nil {
				return err
			}
			jobs = append(jobs, j.Job)
		}
		return rows.Err()
	})
	if err != nil {
		return nil, fmt.Errorf("store: listing the jobs of submission %d: %w", submissionID, err)
	}
	return jobs, nil
}

// LeaseJob gives the runner the oldest waiting job it has the labels for:
// a queued one, or one whose lease expired. A job already leased
// MaxAttempts times is failed instead, whichever runner asks. A re-measure
// waits as RemeasureJob asked: for its time, then for another runner than
// the last while one that can run it is online. It returns nil, nil when
// nothing fits.
func (db *DB) LeaseJob(ctx context.Context, runnerID string, labels map[string]string, ttl time.Duration) (*d5list.Lease, error) {
	if runnerID == "" {
		return nil, d5list.Errorf(d5list.EINVALID, "lease: empty runner id")
	}
	if ttl <= 0 {
		return nil, d5list.Errorf(d5list.EINVALID, "lease: the lease time must be positive, not %s", ttl)
	}
	var lease *d5list.Lease
	err := db.writeTx(ctx, func(tx *sql.Tx) error {
		now := db.now().UnixNano()
		waiting, err := queryJobsTx(ctx, tx, `WHERE `+leasableWhere+` ORDER BY id`, leasableArgs(now)...)
		if err != nil {
			return err
		}

		benches := map[string]*d5list.Benchmark{}
		for _, j := range waiting {
			lastErr := j.Error
			expired := j.State == d5list.JobLeased
			if expired {
				lastErr = fmt.Sprintf("the lease of runner %q expired without a report", j.RunnerID)
			}
			if j.Attempts >= j.MaxAttempts {
				msg := fmt.Sprintf("gave up after %d attempts: %s", j.Attempts, lastErr)
				if _, err := tx.ExecContext(ctx, `UPDATE jobs SET state = ?, error = ?, lease_expires = 0, updated_at = ?
					WHERE id = ?`, string(d5list.JobFailed), msg, now, j.ID); err != nil {
					return err
				}
				if expired {
					if err := jobEventTx(ctx, tx, j, j.Attempts, d5list.EventLeaseExpired, j.RunnerID, "", j.expires); err != nil {
						return err
					}
				}
				if err := jobEventTx(ctx, tx, j, j.Attempts, d5list.EventFailed, "", msg, now); err != nil {
					return err
				}
				if err := failSubmissionTx(ctx, tx, j.SubmissionID, d5list.Reason{Code: "rerun_failed", Message: msg}, now); err != nil {
					return err
				}
				continue
			}
			bench, ok := benches[j.BenchmarkID]
			if !ok {
				if bench, err = benchmarkTx(ctx, tx, j.BenchmarkID); err != nil {
					return err
				}
				benches[j.BenchmarkID] = bench
			}
			if !bench.RunnableBy(labels) || !d5list.HasLabels(labels, j.Requires) {
				continue
			}
			sub, err := submissionTx(ctx, tx, j.SubmissionID)
			if err != nil {
				return err
			}
			// The benchmark's requires are read now; the recipe's needs were
			// stored in the job at upload, by the rule of that day. A job
			// queued before a need was added (images=yes for an image archive)
			// is held to today's rule too, so that no runner leases it only
			// to refuse it.
			if !d5list.HasLabels(labels, sub.Recipe.RunnerNeeds()) {
				continue
			}
			if elsewhere, err := db.wantsAnotherRunnerTx(ctx, tx, j, bench, sub, runnerID, now); err != nil {
				return err
			} else if elsewhere {
				continue
			}
			if expired {
				if err := jobEventTx(ctx, tx, j, j.Attempts, d5list.EventLeaseExpired, j.RunnerID, "", j.expires); err != nil {
					return err
				}
			}
			if err := jobEventTx(ctx, tx, j, j.Attempts+1, d5list.EventLeased, runnerID, "", now); err != nil {
				return err
			}
			secret := randomString()
			fresh := freshSeeds(bench.FreshRunCount(), sub.Seeds())
			freshJSON, err := json.Marshal(fresh)
			if err != nil {
				return err
			}
			_, err = tx.ExecContext(ctx, `UPDATE jobs SET state = ?, attempts = attempts + 1, runner_id = ?,
				secret_hash = ?, lease_expires = ?, error = ?, updated_at = ?, fresh_seeds = ? WHERE id = ?`,
				string(d5list.JobLeased), runnerID, hashSecret(secret), now+int64(ttl), lastErr, now, string(freshJSON), j.ID)
			if err != nil {
				return err
			}
			if _, err := tx.ExecContext(ctx, `UPDATE submissions SET status = ?, updated_at = ? WHERE id = ?`,
				string(d5list.StatusRunning), now, j.SubmissionID); err != nil {
				return err
			}
			if err := syncBoardRowTx(ctx, tx, j.SubmissionID); err != nil {
				return err
			}
			leased, err := jobTx(ctx, tx, j.ID)
			if err != nil {
				return err
			}
			spec := d5list.JobSpec{JobID: j.ID, SubmissionID: sub.ID, Benchmark: *bench,
				Seeds: j.ClaimedSeedsToRun(bench, sub.Seeds(), len(fresh)), FreshSeeds: fresh, BundleSHA256: sub.BundleSHA256}
			if sub.Recipe != nil {
				spec.Recipe = *sub.Recipe
			}
			// An account that failed an audit of the benchmark, uncleared,
			// has every call of its next runs checked.
			failed, err := unclearedAuditFailuresTx(ctx, tx, sub.OwnerID, bench.ID)
			if err != nil {
				return err
			}
			spec.FullAudit = failed > 0
			lease = &d5list.Lease{Job: leased.Job, Secret: secret, Spec: spec}
			return nil
		}
		return nil
	})
	if err != nil {
		return nil, wrap(err, "leasing a job for runner %q", runnerID)
	}
	return lease, nil
}

// liveLeaseTx loads job id and checks that secret holds its unexpired
// lease. Jobs in another state are returned with ok false for the caller
// to judge; a wrong secret or an expired lease is EFORBIDDEN.
func (db *DB) liveLeaseTx(ctx context.Context, tx *sql.Tx, id int64, secret string) (j *jobRow, ok bool, err error) {
	j, err = jobTx(ctx, tx, id)
	if err != nil {
		return nil, false, err
	}
	if !j.holds(secret) {
		return nil, false, d5list.Errorf(d5list.EFORBIDDEN, "job %d: the secret does not belong to its current lease", id)
	}
	if j.State != d5list.JobLeased {
		return j, false, nil
	}
	if db.now().UnixNano() >= j.expires {
		return nil, false, d5list.Errorf(d5list.EFORBIDDEN, "job %d: lease expired", id)
	}
	return j, true, nil
}

// heldLeaseTx is liveLeaseTx for callers that need the lease live: a job
// no longer leased (cancelled, done) is ECONFLICT.
func (db *DB) heldLeaseTx(ctx context.Context, tx *sql.Tx, id int64, secret string) (*jobRow, error) {
	j, ok, err := db.liveLeaseTx(ctx, tx, id, secret)
	if err != nil {
		return nil, err
	}
	if !ok {
		return nil, notLeased(j)
	}
	return j, nil
}

func notLeased(j *jobRow) error {
	if j.State == d5list.JobCancelled {
		return d5list.Errorf(d5list.ECONFLICT, "job %d was cancelled", j.ID)
	}
	return d5list.Errorf(d5list.ECONFLICT, "job %d is %s", j.ID, j.State)
}

// CancelJob stops a job for good; its submission fails with the reason,
// and the runner holding it learns on its next heartbeat. Cancelling a
// cancelled job does nothing; a finished one answers ECONFLICT.
func (db *DB) CancelJob(ctx context.Context, jobID int64) error {
	err := db.writeTx(ctx, func(tx *sql.Tx) error {
		j, err := jobTx(ctx, tx, jobID)
		if err != nil {
			return err
		}
		switch j.State {
		case d5list.JobCancelled:
			return nil
		case d5list.JobDone, d5list.JobFailed:
			return d5list.Errorf(d5list.ECONFLICT, "job %d is already %s", jobID, j.State)
		}
		now := db.now().UnixNano()
		if _, err := tx.ExecContext(ctx, `UPDATE jobs SET state = ?, lease_expires = 0, updated_at = ? WHERE id = ?`,
			string(d5list.JobCancelled), now, jobID); err != nil {
			return err
		}
		if err := jobEventTx(ctx, tx, j, j.Attempts, d5list.EventCancelled, j.RunnerID, "", now); err != nil {
			return err
		}
		return failSubmissionTx(ctx, tx, j.SubmissionID, d5list.Reason{Code: "cancelled", Message: "cancelled by an organiser"}, now)
	})
	return wrap(err, "cancelling job %d", jobID)
}

// QueueStats counts the jobs waiting for a runner (queued, or leased with
// an expired lease) and when the oldest of them was created.
func (db *DB) QueueStats(ctx context.Context) (queued int, oldest time.Time, err error) {
	err = db.readTx(ctx, func(tx *sql.Tx) error {
		var first sql.NullInt64
		err := tx.QueryRowContext(ctx, `SELECT count(*), min(created_at) FROM jobs
			WHERE state = ? OR (state = ? AND lease_expires <= ?)`,
			string(d5list.JobQueued), string(d5list.JobLeased), db.now().UnixNano()).Scan(&queued, &first)
		if first.Valid {
			oldest = fromUnixNano(first.Int64)
		}
		return err
	})
	if err != nil {
		return 0, time.Time{}, fmt.Errorf("store: queue stats: %w", err)
	}
	return queued, oldest, nil
}

// leasableWhere selects the jobs a runner may lease at a time (the
// arguments of leasableArgs): queued ones whose time has come (a
// re-measure waits, RemeasureJob), and leased ones whose lease expired.
const leasableWhere = `((state = ? AND not_before <= ?) OR (state = ? AND lease_expires <= ?))`

func leasableArgs(now int64) []any {
	return []any{string(d5list.JobQueued), now, string(d5list.JobLeased), now}
}

// LeasableJobs is the read-only look a dispatcher takes before it leases:
// how many jobs wait for a runner (queued, or leased with an expired
// lease), and a mark that changes whenever that set changes, or a
// re-measure's wait for another runner ends, so that a dispatcher that
// found nothing for some labels knows when to try again without taking
// the write lock in between.
func (db *DB) LeasableJobs(ctx context.Context) (waiting int, mark string, err error) {
	err = db.readTx(ctx, func(tx *sql.Tx) error {
		var lastID, lastUpdate, attempts, anyRunner int64
		now := db.now().UnixNano()
		err := tx.QueryRowContext(ctx, `SELECT count(*), coalesce(max(id), 0), coalesce(max(updated_at), 0),
			coalesce(sum(attempts), 0), coalesce(sum(elsewhere_until <= ?), 0) FROM jobs WHERE `+leasableWhere,
			append([]any{now}, leasableArgs(now)...)...).Scan(&waiting, &lastID, &lastUpdate, &attempts, &anyRunner)
		mark = fmt.Sprintf("%d/%d/%d/%d/%d", waiting, lastID, lastUpdate, attempts, anyRunner)
		return err
	})
	if err != nil {
		return 0, "", fmt.Errorf("store: looking for leasable jobs: %w", err)
	}
	return waiting, mark, nil
}

// RequeueLeasesOf puts back in the queue, without counting the attempt,
// every job leased to a runner whose id starts with prefix: the portal's
// in-process runners, whose jobs ended with the process that held them
// when the portal stopped. It returns how many it requeued.
func (db *DB) RequeueLeasesOf(ctx context.Context, prefix, reason string) (int, error) {
	n := 0
	err := db.writeTx(ctx, func(tx *sql.Tx) error {
		held, err := queryJobsTx(ctx, tx, `WHERE state = ? AND substr(runner_id, 1, length(?)) = ?`,
			string(d5list.JobLeased), prefix, prefix)
		if err != nil {
			return err
		}
		now := db.now().UnixNano()
		for _, j := range held {
			if err := requeueUncountedTx(ctx, tx, j, reason, now); err != nil {
				return err
			}
			n++
		}
		return nil
	})
	return n, wrap(err, "requeueing the jobs of runners %s*", prefix)
}

// ReleaseLease gives back a lease that never reached its runner (the lease
// request was cancelled while the lease was being taken): the job is
// queued again and the attempt is not counted, since no runner tried it.
// A lease that is no longer live (expired, cancelled, reported) is left
// as it is.
func (db *DB) ReleaseLease(ctx context.Context, jobID int64, secret, reason string) error {
	err := db.writeTx(ctx, func(tx *sql.Tx) error {
		j, ok, err := db.liveLeaseTx(ctx, tx, jobID, secret)
		if err != nil || !ok {
			return err
		}
		return requeueUncountedTx(ctx, tx, j, reason, db.now().UnixNano())
	})
	return wrap(err, "releasing the lease of job %d", jobID)
}

// requeueUncountedTx puts a leased job back in line without counting the
// lease as an attempt: it ended for the portal's reasons, not the run's.
func requeueUncountedTx(ctx context.Context, tx *sql.Tx, j *jobRow, reason string, now int64) error {
	if err := jobEventTx(ctx, tx, j, j.Attempts, d5list.EventRequeued, j.RunnerID, reason, now); err != nil {
		return err
	}
	if _, err := tx.ExecContext(ctx, `UPDATE jobs SET state = ?, attempts = max(attempts - 1, 0), runner_id = '',
		secret_hash = '', lease_expires = 0, updated_at = ? WHERE id = ?`, string(d5list.JobQueued), now, j.ID); err != nil {
		return err
	}
	if _, err := tx.ExecContext(ctx, `UPDATE submissions SET status = ?, updated_at = ? WHERE id = ?`,
		string(d5list.StatusQueued), now, j.SubmissionID); err != nil {
		return err
	}
	return syncBoardRowTx(ctx, tx, j.SubmissionID)
}

// freshSeeds draws n distinct seeds that no claimed run used, from the
// operating system's random source: nothing the competitor's code can
// predict. They are positive and below 2^31, which every framework's seed
// setter takes (numpy's legacy seed wants under 2^32).
func freshSeeds(n int, claimed []int64) []int64 {
	if n <= 0 {
		return nil
	}
	used := make(map[int64]bool, len(claimed)+n)
	for _, s := range claimed {
		used[s] = true
	}
	seeds := make([]int64, 0, n)
	for len(seeds) < n {
		var b [4]byte
		rand.Read(b[:])
		s := int64(binary.BigEndian.Uint32(b[:]) & 0x7fffffff)
		if s == 0 || used[s] {
			continue
		}
		used[s] = true
		seeds = append(seeds, s)
	}
	return seeds
}
