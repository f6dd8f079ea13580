package store

import (
	"context"
	"database/sql"
	"fmt"
	"sync"
)

// commitWatch tells this process's commits from other processes' (d5list
// admin, a script, a second portal on the folder, or a tool that is not
// d5list): whoever keeps answers computed from the database asks it
// before answering from them. SQLite's data_version, on a connection of
// its own that no write uses, changes whenever any other connection
// commits, this process's writer included; every commit of the store also
// counts itself in commit_count, and the writer notes the counts of its
// own. A commit elsewhere is then a count that is not one of this
// process's, or a data_version that moved without the count.
type commitWatch struct {
	mu   sync.Mutex
	conn *sql.DB
	// What the last CommittedElsewhere saw; known is false before it.
	known   bool
	version int64
	commits int64
	// own are the counts of this process's commits not yet seen.
	own map[int64]bool
}

// maxOwnCommits bounds the counts kept between two looks: past it they
// are forgotten, and the next look reports a commit elsewhere.
const maxOwnCommits = 1 << 16

func openCommitWatch(path string) (*commitWatch, error) {
	conn, err := sql.Open("sqlite", dsn(path, false))
	if err != nil {
		return nil, err
	}
	// One connection, never closed for idling: data_version is a
	// connection's own, and a new connection's starts anew (which reads
	// as a change: safe, but it costs every kept answer).
	conn.SetMaxOpenConns(1)
	conn.SetMaxIdleConns(1)
	conn.SetConnMaxLifetime(0)
	conn.SetConnMaxIdleTime(0)
	return &commitWatch{conn: conn, own: map[int64]bool{}}, nil
}

// committed notes a commit of this process's writer, by its count.
func (w *commitWatch) committed(n int64) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if len(w.own) >= maxOwnCommits {
		clear(w.own)
		w.known = false
	}
	w.own[n] = true
}

// CommittedElsewhere reports whether a connection other than this store's
// writer committed to the database since the last call, and is true at the
// first. A commit of this store's that it has not yet noted (between its
// commit and its note) reads as one elsewhere: the answer may say so
// needlessly, never the other way round.
func (db *DB) CommittedElsewhere(ctx context.Context) (bool, error) {
	w := db.watch
	w.mu.Lock()
	defer w.mu.Unlock()
	var v, n int64
	// data_version first: a commit between the two reads moves it again
	// for the next call, which then reads the count past it.
	if err := w.conn.QueryRowContext(ctx, `PRAGMA data_version`).Scan(&v); err != nil {
		return false, fmt.Errorf("store: reading the database's data version: %w", err)
	}
	if w.known && v == w.version {
		return false, nil
	}
	if err := w.conn.QueryRowContext(ctx, `SELECT n FROM commit_count`).Scan(&n); err != nil {
		return false, fmt.Errorf("store: reading the commit count: %w", err)
	}
	ours := int64(0)
	for k := range w.own {
		if k > w.commits && k <= n {
			ours++
		}
		if k <= n {
			delete(w.own, k)
		}
	}
	// No count moved, yet something was committed: a writer that does not
	// count (another tool, an older d5list).
	elsewhere := !w.known || n == w.commits || ours != n-w.commits
	w.known, w.version, w.commits = true, v, n
	return elsewhere, nil
}

// latestEditionQuery reads the last entry of the index editions_by_time.
const latestEditionQuery = `SELECT name FROM editions ORDER BY frozen_at DESC, name DESC LIMIT 1`

// LatestEditionName is the name of the most recently frozen edition, or
// "" when none is; under a Snapshot, the snapshot's.
func (db *DB) LatestEditionName(ctx context.Context) (string, error) {
	var name string
	err := db.readTx(ctx, func(tx *sql.Tx) error {
		return tx.QueryRowContext(ctx, latestEditionQuery).Scan(&name)
	})
	if err == sql.ErrNoRows {
		return "", nil
	}
	if err != nil {
		return "", fmt.Errorf("store: reading the latest edition's name: %w", err)
	}
	return name, nil
}
