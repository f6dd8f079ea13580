// Package store is the SQLite adapter of d5list: benchmarks, users and
// tokens, submissions, the verification job queue, and the
// content-addressed blob folder that holds uploaded bundles.
//
// It uses modernc.org/sqlite (pure Go) in WAL mode. Every method is one
// transaction. Writes begin IMMEDIATE, so that two processes sharing the
// file queue up on the busy timeout instead of failing with SQLITE_BUSY
// when a read lock cannot be upgraded.
package store

import (
	"context"
	"database/sql"
	"embed"
	"errors"
	"fmt"
	"io/fs"
	"net/url"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	d5list "github.com/deep500/d5list"
	_ "modernc.org/sqlite"
)

// DefaultMaxAttempts bounds how often a job is leased before it is given up.
const DefaultMaxAttempts = 3

// busyTimeoutMS is how long a connection waits for another writer.
const busyTimeoutMS = 10000

//go:embed migrations/*.sql
var migrationFS embed.FS

// SubmissionFilter selects submissions in listings; it is the domain's type
// so that the portal's interface and this package agree.
type SubmissionFilter = d5list.SubmissionFilter

// DB is an open d5list data folder: dir/d5list.db and dir/blobs.
type DB struct {
	dir string
	// write has a single connection: writers of this process queue in
	// database/sql instead of spinning on SQLite's busy handler.
	write *sql.DB
	read  *sql.DB
	// watch tells this process's commits from others' (data_version.go);
	// nil until the migrations, which it counts from, are applied.
	watch *commitWatch
	blobs *Blobs

	// Now is the clock for timestamps and lease expiry; tests move it.
	Now func() time.Time
	// MaxAttempts is given to new jobs.
	MaxAttempts int

	// onBoardChange is told, around each commit, of every benchmark whose
	// board rows the transaction changed (NotifyBoardChanges).
	onBoardChange atomic.Pointer[boardListener]

	entries  decodedEntries
	results  decodedResults
	prepared preparedReads
}

type boardListener struct{ begin, end func(benchmarkID string) }

// NotifyBoardChanges has begin told, just before every commit of this
// process that changed a benchmark's board rows, that benchmark's id, and
// end told after the commit (or its failure): the one place where every
// such write (upload, lease, an expired lease settled, verdict, review,
// rebuild) is seen, so that whoever keeps boards drops them without
// knowing which store method changed what, and keeps nothing between the
// commit and end, where a reader already sees the write. There is one
// listener; a second call replaces the first.
func (db *DB) NotifyBoardChanges(begin, end func(benchmarkID string)) {
	db.onBoardChange.Store(&boardListener{begin, end})
}

// Open opens (creating if needed) the data folder dir, applies pending
// migrations and removes blob uploads a crash left behind.
func Open(ctx context.Context, dir string) (*DB, error) {
	if dir == "" {
		return nil, d5list.Errorf(d5list.EINVALID, "store: empty data folder")
	}
	if err := os.MkdirAll(dir, 0o750); err != nil {
		return nil, fmt.Errorf("store: creating %s: %w", dir, err)
	}
	path := filepath.Join(dir, "d5list.db")
	if err := ownerOnly(path); err != nil {
		return nil, err
	}
	db := &DB{dir: dir, Now: time.Now, MaxAttempts: DefaultMaxAttempts}

	var err error
	db.read, err = sql.Open("sqlite", dsn(path, false))
	if err != nil {
		return nil, fmt.Errorf("store: opening %s: %w", path, err)
	}
	db.write = sql.OpenDB(keptStatements{dsn: dsn(path, true), drv: db.read.Driver()})
	db.write.SetMaxOpenConns(1)
	// The writer's first connection switches the file to WAL, which
	// persists; the read pool's connections, made after it, rely on that.
	if err := pingSwitchingToWAL(ctx, db.write); err != nil {
		db.write.Close()
		db.read.Close()
		return nil, fmt.Errorf("store: opening %s: %w", path, err)
	}
	if err := db.migrate(ctx); err != nil {
		db.Close()
		return nil, err
	}
	if err := db.backfillBoards(ctx); err != nil {
		db.Close()
		return nil, fmt.Errorf("store: indexing the boards: %w", err)
	}
	if db.watch, err = openCommitWatch(path); err != nil {
		db.Close()
		return nil, fmt.Errorf("store: opening %s: %w", path, err)
	}
	db.blobs, err = openBlobs(filepath.Join(dir, "blobs"))
	if err != nil {
		db.Close()
		return nil, err
	}
	if err := db.blobs.CleanTemp(); err != nil {
		db.Close()
		return nil, err
	}
	return db, nil
}

// ownerOnly makes the database file readable by its owner only (it holds
// password hashes, session and token hashes and unpublished results):
// created 0600 before SQLite opens it, which then gives its -wal and -shm
// files the same mode, and an older file made so too.
func ownerOnly(path string) error {
	f, err := os.OpenFile(path, os.O_RDONLY|os.O_CREATE, 0o600)
	if err != nil {
		return fmt.Errorf("store: creating %s: %w", path, err)
	}
	f.Close()
	for _, p := range []string{path, path + "-wal", path + "-shm"} {
		if err := os.Chmod(p, 0o600); err != nil && !errors.Is(err, os.ErrNotExist) {
			return fmt.Errorf("store: %s: %w", p, err)
		}
	}
	return nil
}

func dsn(path string, writer bool) string {
	q := url.Values{}
	q.Add("_pragma", "busy_timeout("+strconv.Itoa(busyTimeoutMS)+")")
	q.Add("_pragma", "foreign_keys(1)")
	q.Add("_pragma", "synchronous(NORMAL)")
	if writer {
		q.Add("_pragma", "journal_mode(WAL)")
		q.Set("_txlock", "immediate")
	} else {
		q.Add("_pragma", "query_only(1)")
	}
	return "file:" + path + "?" + q.Encode()
}

// Close closes the database.
func (db *DB) Close() error {
	var errs []error
	if db.read != nil {
		errs = append(errs, db.closePrepared(), db.read.Close())
	}
	if db.write != nil {
		errs = append(errs, db.write.Close())
	}
	if db.watch != nil {
		errs = append(errs, db.watch.conn.Close())
	}
	return errors.Join(errs...)
}

// Dir is the data folder.
func (db *DB) Dir() string { return db.dir }

// Blobs is the content-addressed bundle folder.
func (db *DB) Blobs() *Blobs { return db.blobs }

func (db *DB) now() time.Time { return db.Now().UTC() }

// writeTx runs fn in an IMMEDIATE transaction and commits if fn succeeds.
func (db *DB) writeTx(ctx context.Context, fn func(tx *sql.Tx) error) error {
	tx, err := db.write.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("store: begin: %w", err)
	}
	boards := map[string]bool{}
	changedBoards.Store(tx, boards)
	defer changedBoards.Delete(tx)
	if err := fn(tx); err != nil {
		tx.Rollback()
		return noSpace(err)
	}
	var count int64
	if db.watch != nil {
		if err := tx.QueryRowContext(ctx, `UPDATE commit_count SET n = n + 1 RETURNING n`).Scan(&count); err != nil {
			tx.Rollback()
			return noSpace(fmt.Errorf("store: counting the commit: %w", err))
		}
	}
	listener := db.onBoardChange.Load()
	if listener != nil {
		for id := range boards {
			listener.begin(id)
		}
	}
	err = tx.Commit()
	if err == nil && db.watch != nil {
		db.watch.committed(count)
	}
	if listener != nil {
		for id := range boards {
			listener.end(id)
		}
	}
	if err != nil {
		return noSpace(fmt.Errorf("store: commit: %w", err))
	}
	return nil
}

// readTx runs fn in a read transaction, one consistent snapshot: the
// snapshot ctx carries (Snapshot) where it carries one of db's.
func (db *DB) readTx(ctx context.Context, fn func(tx *sql.Tx) error) error {
	if s, ok := ctx.Value(snapshotKey{}).(*snapshot); ok && s.db == db {
		return fn(s.tx)
	}
	tx, err := db.read.BeginTx(ctx, &sql.TxOptions{ReadOnly: true})
	if err != nil {
		return fmt.Errorf("store: begin: %w", err)
	}
	defer tx.Rollback()
	return fn(tx)
}

// snapshotKey is the context key of a Snapshot's read transaction.
type snapshotKey struct{}

type snapshot struct {
	db *DB
	tx *sql.Tx
}

// Snapshot runs fn with a context under which every read of db, by any
// method and however many, is made in one read transaction: what fn
// reads is one committed state, whatever commits meanwhile. An answer
// made of several reads (a board page's rows, its summary and its
// entries' curves) is thus never half before a change and half after.
// fn must only read: writes made with its context are not in the
// snapshot it reads, and the transaction ends when Snapshot returns. A
// Snapshot within another of the same db is the same snapshot.
func (db *DB) Snapshot(ctx context.Context, fn func(ctx context.Context) error) error {
	if s, ok := ctx.Value(snapshotKey{}).(*snapshot); ok && s.db == db {
		return fn(ctx)
	}
	return db.readTx(ctx, func(tx *sql.Tx) error {
		return fn(context.WithValue(ctx, snapshotKey{}, &snapshot{db, tx}))
	})
}

type migration struct {
	version int
	name    string
	sql     string
}

func loadMigrations(fsys fs.FS) ([]migration, error) {
	names, err := fs.Glob(fsys, "migrations/*.sql")
	if err != nil {
		return nil, err
	}
	var ms []migration
	seen := map[int]string{}
	for _, name := range names {
		base := filepath.Base(name)
		num, _, ok := strings.Cut(base, "_")
		v, err := strconv.Atoi(num)
		if !ok || err != nil || v <= 0 {
			return nil, fmt.Errorf("store: migration %s: the name must start with a positive number and '_'", name)
		}
		if prev, dup := seen[v]; dup {
			return nil, fmt.Errorf("store: migration %s: version %d already used by %s", name, v, prev)
		}
		seen[v] = name
		body, err := fs.ReadFile(fsys, name)
		if err != nil {
			return nil, err
		}
		ms = append(ms, migration{version: v, name: base, sql: string(body)})
	}
	sort.Slice(ms, func(i, j int) bool { return ms[i].version < ms[j].version })
	return ms, nil
}

// migrate applies each pending migration in its own transaction; another
// process migrating at the same moment waits on the write lock and then
// finds the version recorded.
func (db *DB) migrate(ctx context.Context) error {
	ms, err := loadMigrations(migrationFS)
	if err != nil {
		return err
	}
	err = db.writeTx(ctx, func(tx *sql.Tx) error {
		_, err := tx.ExecContext(ctx, `CREATE TABLE IF NOT EXISTS schema_migrations (
			version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at INTEGER NOT NULL)`)
		return err
	})
	if err != nil {
		return fmt.Errorf("store: creating schema_migrations: %w", err)
	}
	for _, m := range ms {
		err := db.writeTx(ctx, func(tx *sql.Tx) error {
			var n int
			if err := tx.QueryRowContext(ctx, `SELECT count(*) FROM schema_migrations WHERE version = ?`, m.version).Scan(&n); err != nil {
				return err
			}
			if n > 0 {
				return nil
			}
			if _, err := tx.ExecContext(ctx, m.sql); err != nil {
				return err
			}
			_, err := tx.ExecContext(ctx, `INSERT INTO schema_migrations (version, name, applied_at) VALUES (?, ?, ?)`,
				m.version, m.name, db.now().UnixNano())
			return err
		})
		if err != nil {
			return fmt.Errorf("store: migration %s: %w", m.name, err)
		}
	}
	return nil
}

func unixNano(t time.Time) int64 {
	if t.IsZero() {
		return 0
	}
	return t.UnixNano()
}

func fromUnixNano(n int64) time.Time {
	if n == 0 {
		return time.Time{}
	}
	return time.Unix(0, n).UTC()
}

// pingSwitchingToWAL opens the first write connection, whose pragmas switch
// the file to WAL. On a fresh file that switch needs a lock SQLite does not
// wait for under busy_timeout, so two processes opening a new data folder
// at once (a server and an admin command) see SQLITE_BUSY; it is retried
// for as long as the busy timeout would have waited.
func pingSwitchingToWAL(ctx context.Context, w *sql.DB) error {
	deadline := time.Now().Add(busyTimeoutMS * time.Millisecond)
	for wait := 5 * time.Millisecond; ; wait = min(2*wait, 200*time.Millisecond) {
		err := w.PingContext(ctx)
		if err == nil || !isBusy(err) || time.Now().After(deadline) {
			return err
		}
		select {
		case <-ctx.Done():
			return err
		case <-time.After(wait):
		}
	}
}

// isBusy reports SQLITE_BUSY (in any of its extended forms).
func isBusy(err error) bool {
	var coded interface{ Code() int }
	return errors.As(err, &coded) && coded.Code()&0xff == 5
}
