package store

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strings"
	"time"

	d5list "github.com/deep500/d5list"
)

// RunnerTokenPrefix starts every runner token, so that one is never taken
// for a user's API token (d5_) in logs or configuration.
const RunnerTokenPrefix = "d5r_"

// RunnerOnlineWindow is how long after its last call a runner still counts
// as online. Agents long-poll (about 20 s) or heartbeat (every few
// seconds), so a live one is never silent for this long.
var RunnerOnlineWindow = 45 * time.Second

// CreateRunnerToken issues a token for the runner machine name. Only its
// sha256 is kept, so the token is shown once, here.
func (db *DB) CreateRunnerToken(ctx context.Context, name string) (string, error) {
	name = strings.TrimSpace(name)
	if err := validRunnerName(name, "runner token name"); err != nil {
		return "", err
	}
	token := RunnerTokenPrefix + randomString()
	err := db.writeTx(ctx, func(tx *sql.Tx) error {
		_, err := tx.ExecContext(ctx, `INSERT INTO runner_tokens (name, hash, created_at) VALUES (?, ?, ?)`,
			name, hashSecret(token), db.now().UnixNano())
		return err
	})
	if err != nil {
		return "", wrap(err, "creating a runner token for %q", name)
	}
	return token, nil
}

// RevokeRunnerToken ends every token issued under name; the runners using
// them get 401 on their next call. Revoking again is not an error.
func (db *DB) RevokeRunnerToken(ctx context.Context, name string) error {
	err := db.writeTx(ctx, func(tx *sql.Tx) error {
		res, err := tx.ExecContext(ctx, `UPDATE runner_tokens SET revoked_at = coalesce(revoked_at, ?) WHERE name = ?`,
			db.now().UnixNano(), name)
		if err != nil {
			return err
		}
		if n, _ := res.RowsAffected(); n == 0 {
			return d5list.Errorf(d5list.ENOTFOUND, "no runner token named %q", name)
		}
		return nil
	})
	return wrap(err, "revoking the runner tokens of %q", name)
}

// RunnerByToken returns the runner a live token was issued to.
func (db *DB) RunnerByToken(ctx context.Context, token string) (*d5list.RunnerToken, error) {
	if !strings.HasPrefix(token, RunnerTokenPrefix) {
		return nil, d5list.Errorf(d5list.EUNAUTHORIZED, "not a runner token (runner tokens start with %s)", RunnerTokenPrefix)
	}
	var rt d5list.RunnerToken
	err := db.readTx(ctx, func(tx *sql.Tx) error {
		var created int64
		err := tx.QueryRowContext(ctx, `SELECT id, name, created_at FROM runner_tokens
			WHERE hash = ? AND revoked_at IS NULL`, hashSecret(token)).Scan(&rt.ID, &rt.Name, &created)
		rt.CreatedAt = fromUnixNano(created)
		return err
	})
	if errors.Is(err, sql.ErrNoRows) {
		return nil, d5list.Errorf(d5list.EUNAUTHORIZED, "unknown or revoked runner token")
	} else if err != nil {
		return nil, fmt.Errorf("store: looking up a runner token: %w", err)
	}
	return &rt, nil
}

// TouchRunner records that the runner called now, holding jobID (0: none).
// Nil labels keep the ones it advertised before, since only lease requests
// carry them.
func (db *DB) TouchRunner(ctx context.Context, runnerName string, labels map[string]string, jobID int64) error {
	if err := validRunnerName(runnerName, "runner name"); err != nil {
		return err
	}
	var enc any
	if labels != nil {
		b, err := json.Marshal(labels)
		if err != nil {
			return fmt.Errorf("store: encoding the labels of runner %q: %w", runnerName, err)
		}
		enc = string(b)
	}
	err := db.writeTx(ctx, func(tx *sql.Tx) error {
		_, err := tx.ExecContext(ctx, `INSERT INTO runners (name, labels, last_seen, current_job)
			VALUES (?1, coalesce(?2, '{}'), ?3, ?4)
			ON CONFLICT (name) DO UPDATE SET labels = coalesce(?2, labels), last_seen = ?3, current_job = ?4`,
			runnerName, enc, db.now().UnixNano(), jobID)
		return err
	})
	return wrap(err, "recording runner %q", runnerName)
}

// Runners lists every runner ever seen, online ones first, then by name.
func (db *DB) Runners(ctx context.Context) ([]d5list.Runner, error) {
	runners := []d5list.Runner{}
	err := db.readTx(ctx, func(tx *sql.Tx) error {
		rows, err := tx.QueryContext(ctx, `SELECT name, labels, last_seen, current_job FROM runners`)
		if err != nil {
			return err
		}
		defer rows.Close()
		now := db.now()
		for rows.Next() {
			var r d5list.Runner
			var labels string
			var seen int64
			if err := rows.Scan(&r.Name, &labels, &seen, &r.CurrentJob); err != nil {
				return err
			}
			if err := json.Unmarshal([]byte(labels), &r.Labels); err != nil {
				return fmt.Errorf("runner %q: labels: %w", r.Name, err)
			}
			r.LastSeen = fromUnixNano(seen)
			r.Online = now.Sub(r.LastSeen) < RunnerOnlineWindow
			runners = append(runners, r)
		}
		return rows.Err()
	})
	if err != nil {
		return nil, fmt.Errorf("store: listing runners: %w", err)
	}
	sort.SliceStable(runners, func(i, j int) bool {
		if runners[i].Online != runners[j].Online {
			return runners[i].Online
		}
		return runners[i].Name < runners[j].Name
	})
	return runners, nil
}

// ActiveJobs lists the jobs not finished yet (queued or leased), oldest
// first, with the place of each waiting one in the line.
func (db *DB) ActiveJobs(ctx context.Context) ([]d5list.QueuedJob, error) {
	jobs := []d5list.QueuedJob{}
	err := db.readTx(ctx, func(tx *sql.Tx) error {
		rows, err := tx.QueryContext(ctx, `SELECT `+jobColumns+` WHERE state IN (?, ?) ORDER BY id`,
			string(d5list.JobQueued), string(d5list.JobLeased))
		if err != nil {
			return err
		}
		defer rows.Close()
		now := db.now().UnixNano()
		pos := 0
		for rows.Next() {
			j, err := scanJob(rows)
			if err != nil {
				return err
			}
			q := d5list.QueuedJob{Job: j.Job}
			// An expired lease is back in the line, as LeaseJob treats it.
			if j.State == d5list.JobQueued || j.expires <= now {
				pos++
				q.Position = pos
			}
			jobs = append(jobs, q)
		}
		return rows.Err()
	})
	if err != nil {
		return nil, fmt.Errorf("store: listing active jobs: %w", err)
	}
	return jobs, nil
}

// validRunnerName keeps names printable and short: they appear in pages,
// logs and job rows.
func validRunnerName(name, field string) error {
	if name == "" {
		return d5list.Errorf(d5list.EINVALID, "%s: empty", field)
	}
	if len(name) > 128 {
		return d5list.Errorf(d5list.EINVALID, "%s: longer than 128 bytes", field)
	}
	for _, c := range name {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || strings.ContainsRune("-_./:@", c)) {
			return d5list.Errorf(d5list.EINVALID, "%s %q: only letters, digits and - _ . / : @ are allowed", field, name)
		}
	}
	return nil
}
