package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"runtime"
	"slices"
	"strings"
	"sync"

	d5list "github.com/deep500/d5list"
	"github.com/deep500/d5list/leaderboard"
)

// SyntheticSubmitter is the submitter of every synthetic submission, so
// that no list built for a benchmark run is mistaken for real results.
const SyntheticSubmitter = "synthetic (d5list admin seed-synthetic)"

// InsertSynthetic stores generated submissions as verified, without jobs,
// bundles or audit entries, many to a transaction: it fills a data folder
// for performance measurements (issue 6: a board of 100,000 submissions).
// It refuses a folder that holds any submission not labelled synthetic,
// and submissions whose submitter is not SyntheticSubmitter.
func (db *DB) InsertSynthetic(ctx context.Context, subs []d5list.Submission) error {
	if err := db.SyntheticOnly(ctx); err != nil {
		return err
	}
	benches, err := db.AppendSynthetic(ctx, subs)
	if err != nil {
		return err
	}
	for _, id := range benches {
		if err := db.ElectBoards(ctx, id); err != nil {
			return err
		}
	}
	return nil
}

// SyntheticOnly refuses a data folder that holds real submissions:
// synthetic ones go into a folder of their own. It reads every row, so a
// seeding calls it once, not per chunk.
func (db *DB) SyntheticOnly(ctx context.Context) error {
	real, err := db.RealSubmissions(ctx)
	if err != nil {
		return err
	}
	if real > 0 {
		return d5list.Errorf(d5list.ECONFLICT, "%s holds %d real submissions; synthetic ones go into a data folder of their own", db.dir, real)
	}
	return nil
}

// RealSubmissions counts the submissions not made by seed-synthetic.
func (db *DB) RealSubmissions(ctx context.Context) (int, error) {
	var real int
	err := db.read.QueryRowContext(ctx, `SELECT count(*) FROM submissions `+notSynthetic).Scan(&real)
	return real, wrap(err, "counting submissions")
}

// notSynthetic is the WHERE clause of the partial index submissions_real
// (migration 0049), spelled as the index spells it: SQLite reads a partial
// index only for a query naming the same literal, not a bound parameter.
const notSynthetic = `WHERE submitter != '` + SyntheticSubmitter + `'`

// ElectBoards elects each system's best rows of a benchmark's boards and
// counts them, after AppendSynthetic.
func (db *DB) ElectBoards(ctx context.Context, benchID string) error {
	return wrap(db.writeTx(ctx, func(tx *sql.Tx) error { return electAllBestTx(ctx, tx, benchID) }), "ranking the boards of %q", benchID)
}

// AppendSynthetic is InsertSynthetic without its checks of the folder and
// without electing the boards' best rows, so that a million submissions
// can be stored a chunk at a time: SyntheticOnly once before, ElectBoards
// once after. It returns the benchmarks it wrote to.
func (db *DB) AppendSynthetic(ctx context.Context, subs []d5list.Submission) ([]string, error) {
	if err := onlySynthetic(subs); err != nil {
		return nil, err
	}
	var benches []string
	const batch = 20000 // encoded rows in memory at once
	for start := 0; start < len(subs); start += batch {
		next, err := db.NextSubmissionID(ctx)
		if err != nil {
			return nil, err
		}
		b, err := db.EncodeSynthetic(ctx, subs[start:min(start+batch, len(subs))], next)
		if err != nil {
			return nil, err
		}
		if err := db.StoreSynthetic(ctx, b); err != nil {
			return nil, err
		}
		for _, id := range b.Benchmarks {
			if !slices.Contains(benches, id) {
				benches = append(benches, id)
			}
		}
	}
	return benches, nil
}

func onlySynthetic(subs []d5list.Submission) error {
	for i := range subs {
		if subs[i].Submitter != SyntheticSubmitter {
			return d5list.Errorf(d5list.EINVALID, "synthetic submission %d: submitter %q, want %q", i+1, subs[i].Submitter, SyntheticSubmitter)
		}
	}
	return nil
}

// NextSubmissionID is the ID the next stored submission gets.
func (db *DB) NextSubmissionID(ctx context.Context) (int64, error) {
	var next int64
	err := db.read.QueryRowContext(ctx, `SELECT coalesce(max(id), 0) + 1 FROM submissions`).Scan(&next)
	return next, wrap(err, "numbering submissions")
}

// SyntheticBatch is synthetic submissions encoded for StoreSynthetic.
type SyntheticBatch struct {
	Benchmarks       []string // that its submissions are for
	first            int64
	subArgs, rowArgs [][]any
}

// EncodeSynthetic encodes synthetic submissions, numbered from firstID, on
// every core and outside any transaction, so that a seeding can encode
// one chunk while the writer stores the one before. firstID must be
// NextSubmissionID when the batch is stored, or StoreSynthetic refuses it.
func (db *DB) EncodeSynthetic(ctx context.Context, subs []d5list.Submission, firstID int64) (*SyntheticBatch, error) {
	if err := onlySynthetic(subs); err != nil {
		return nil, err
	}
	benches := map[string]*d5list.Benchmark{}
	b := &SyntheticBatch{first: firstID, subArgs: make([][]any, len(subs)), rowArgs: make([][]any, len(subs))}
	for i := range subs {
		id := subs[i].BenchmarkID
		if benches[id] == nil {
			bench, err := db.Benchmark(ctx, id)
			if err != nil {
				return nil, err
			}
			benches[id] = bench
			b.Benchmarks = append(b.Benchmarks, id)
		}
	}
	// Every submitter is SyntheticSubmitter (onlySynthetic): its key, a
	// Unicode normalisation and skeleton, is worked out once.
	key := organisationKey(SyntheticSubmitter)
	errs := make([]error, runtime.GOMAXPROCS(0))
	var wg sync.WaitGroup
	for w := range errs {
		wg.Go(func() {
			for i := w; i < len(subs); i += len(errs) {
				s := &subs[i]
				s.ID, s.Status = firstID+int64(i), d5list.StatusVerified
				if b.subArgs[i], errs[w] = syntheticArgs(s, key); errs[w] != nil {
					return
				}
				if row, ok := leaderboard.RowOf(benches[s.BenchmarkID], s); ok {
					if b.rowArgs[i], errs[w] = boardRowArgs(s.BenchmarkID, &row, false, false); errs[w] != nil {
						return
					}
				}
			}
		})
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	return b, nil
}

// StoreSynthetic stores a batch from EncodeSynthetic in one transaction.
func (db *DB) StoreSynthetic(ctx context.Context, b *SyntheticBatch) error {
	// A large page cache keeps the tables' last pages in memory while the
	// batch goes in (SQLite's default 2 MB rewrites them from disk); the
	// writer's usual setting comes back after.
	if _, err := db.write.ExecContext(ctx, `PRAGMA cache_size = -262144`); err != nil {
		return fmt.Errorf("store: sizing the page cache: %w", err)
	}
	defer db.write.ExecContext(context.WithoutCancel(ctx), `PRAGMA cache_size = -2000`)
	err := db.writeTx(ctx, func(tx *sql.Tx) error {
		var next int64
		if err := tx.QueryRowContext(ctx, `SELECT coalesce(max(id), 0) + 1 FROM submissions`).Scan(&next); err != nil {
			return err
		}
		if next != b.first {
			return fmt.Errorf("the batch is numbered from %d, but the next submission is %d", b.first, next)
		}
		stmt, err := tx.PrepareContext(ctx, `INSERT INTO submissions (id, benchmark_id, division, availability,
				submitter, system_name, framework, accelerator, accelerators, host_cpu, status, claimed, measured, reasons,
				created_at, updated_at, code_url, cost_per_hour, submitter_key)
			VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`)
		if err != nil {
			return err
		}
		defer stmt.Close()
		rowStmt, err := tx.PrepareContext(ctx, insertBoardRow)
		if err != nil {
			return err
		}
		defer rowStmt.Close()
		for i := range b.subArgs {
			if _, err := stmt.ExecContext(ctx, b.subArgs[i]...); err != nil {
				return err
			}
			if b.rowArgs[i] != nil {
				if _, err := rowStmt.ExecContext(ctx, b.rowArgs[i]...); err != nil {
					return err
				}
			}
		}
		return nil
	})
	return wrap(err, "storing synthetic submissions %d to %d", b.first, b.first+int64(len(b.subArgs))-1)
}

func syntheticArgs(s *d5list.Submission, submitterKey string) ([]any, error) {
	claimed, err := encodeResult(s.Claimed)
	if err != nil {
		return nil, err
	}
	measured, err := encodeResult(s.Measured)
	if err != nil {
		return nil, err
	}
	reasons, err := encodeReasons(s.Reasons)
	if err != nil {
		return nil, err
	}
	t := s.CreatedAt.UnixNano()
	return []any{s.ID, s.BenchmarkID, s.Division, s.Availability, s.Submitter, s.SystemName,
		s.Framework, s.Accelerator, s.Accelerators, s.HostCPU, string(d5list.StatusVerified), claimed, measured, reasons,
		t, t, s.CodeURL, s.CostPerHour, submitterKey}, nil
}

// emptyAfterSyntheticLoad ends the definition of each partial index that
// AppendSynthetic adds no entry to.
var emptyAfterSyntheticLoad = []string{"WHERE best_default = 1", "WHERE best_all = 1",
	"WHERE bundle_sha256 != ''", "WHERE content_sha256 != ''", notSynthetic}

// WithoutIndexes runs load with the secondary indexes of submissions and
// board_rows dropped, and builds them again after, each in one sorted
// pass: storing a million synthetic submissions otherwise rewrites the
// indexes' pages in every batch. The partial indexes that a synthetic
// load leaves empty (its board rows are no system's best until
// ElectBoards, and it stores no bundles) stay: building one again would
// scan its whole table for no entry, thirteen scans of the board's rows.
// For seeding a folder of its own only: nothing else may use the
// database meanwhile.
func (db *DB) WithoutIndexes(ctx context.Context, load func() error) error {
	type index struct{ name, sql string }
	var saved []index
	rows, err := db.read.QueryContext(ctx, `SELECT name, sql FROM sqlite_master
		WHERE type = 'index' AND tbl_name IN ('submissions', 'board_rows') AND sql IS NOT NULL ORDER BY name`)
	if err != nil {
		return fmt.Errorf("store: listing indexes: %w", err)
	}
	for rows.Next() {
		var ix index
		if err := rows.Scan(&ix.name, &ix.sql); err != nil {
			rows.Close()
			return err
		}
		if !slices.ContainsFunc(emptyAfterSyntheticLoad, func(where string) bool { return strings.HasSuffix(ix.sql, where) }) {
			saved = append(saved, ix)
		}
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return err
	}
	err = db.writeTx(ctx, func(tx *sql.Tx) error {
		for _, ix := range saved {
			if _, err := tx.ExecContext(ctx, `DROP INDEX `+ix.name); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return wrap(err, "dropping indexes for a bulk load")
	}
	loadErr := load()
	// The indexes come back whatever load did: the schema must stay whole.
	err = db.writeTx(context.WithoutCancel(ctx), func(tx *sql.Tx) error {
		for _, ix := range saved {
			if _, err := tx.ExecContext(ctx, ix.sql); err != nil {
				return fmt.Errorf("%s: %w", ix.name, err)
			}
		}
		return nil
	})
	if err != nil {
		return wrap(err, "building indexes after a bulk load")
	}
	return loadErr
}
