package store

import (
	"context"
	"database/sql"
	"errors"
	"slices"
	"strings"
	"sync"

	d5list "github.com/deep500/d5list"
	"github.com/deep500/d5list/leaderboard"
)

// rebuildMu lets one rebuild run at a time in this process: two at once
// would each elect and count while the other rewrites rows. It is the
// package's rather than the DB's because rebuilds are rare and short
// next to what serialising them would cost. Another process's rebuild is
// kept apart by the generation check of each batch instead.
var rebuildMu sync.Mutex

// rebuildBatch is how many submissions one write transaction of a rebuild
// derives again: each transaction holds the write lock for about that
// many rows, so verdicts and uploads interleave with a long rebuild.
var rebuildBatch = 2000

// rebuildHook, when set (tests), runs between two batches of a rebuild,
// outside any transaction; an error stops the rebuild there as a crash
// would.
var rebuildHook func(benchID string, after int64) error

// errSuperseded stops a rebuild whose benchmark was changed again (or
// rebuilt by another process) while it ran; the newer generation is
// rebuilt instead.
var errSuperseded = errors.New("store: the benchmark changed during its rebuild")

// RebuildBoards derives the board rows of every benchmark marked for a
// rebuild again from its submissions: one whose definition changed, or a
// rebuild left pending. The change marked the benchmark in its own
// transaction (migration 0011's triggers), and the mark goes only when a
// rebuild has finished with that definition, so that one stopped half way
// (an error, a crash) is finished by the next RebuildBoards or the next
// Open. A benchmark that is not marked has rows derived from its current
// definition already: UpsertBenchmarks calls this once after changing
// any. It runs to the end even if ctx is cancelled: a visitor leaving the
// console must not leave a board half derived.
//
// Until it returns, the benchmark's rows are a mix of the old and the new
// derivation and its views' counts may be off; nothing is ever missing
// from the boards, since rows are replaced in place, not cleared first.
func (db *DB) RebuildBoards(ctx context.Context) error {
	return db.finishRebuilds(context.WithoutCancel(ctx))
}

// finishRebuilds rebuilds every benchmark marked in board_rebuilds, until
// none is: one changed again during its rebuild is simply done again.
func (db *DB) finishRebuilds(ctx context.Context) error {
	rebuildMu.Lock()
	defer rebuildMu.Unlock()
	for {
		var benchID string
		var gen int64
		err := db.read.QueryRowContext(ctx, `SELECT benchmark_id, generation FROM board_rebuilds ORDER BY benchmark_id LIMIT 1`).Scan(&benchID, &gen)
		if errors.Is(err, sql.ErrNoRows) {
			return nil
		} else if err != nil {
			return wrap(err, "reading the pending board rebuilds")
		}
		if err := db.rebuild(ctx, benchID, gen); err != nil && !errors.Is(err, errSuperseded) {
			return err
		}
	}
}

// rebuild derives benchmark benchID's board rows again, a batch of
// submissions to a write transaction, each row from the submission and
// the definition as they are in that transaction, so that a verdict or an
// upload written between two batches is never overwritten with an older
// state. Rows are upserted: a submission uploaded during the rebuild has
// its row already (syncBoardRowTx) when a later batch reaches it. The last
// transaction elects each system's best rows, counts the views and clears
// the mark of generation gen; a mark bumped meanwhile stays.
func (db *DB) rebuild(ctx context.Context, benchID string, gen int64) error {
	// still checks, in each transaction, that no newer change superseded
	// this rebuild (another process's rebuild may be under way with it).
	still := func(tx *sql.Tx) error {
		var now int64
		err := tx.QueryRowContext(ctx, `SELECT generation FROM board_rebuilds WHERE benchmark_id = ?`, benchID).Scan(&now)
		if errors.Is(err, sql.ErrNoRows) || err == nil && now != gen {
			return errSuperseded
		}
		return err
	}
	after := int64(0)
	for {
		n := 0
		err := db.writeTx(ctx, func(tx *sql.Tx) error {
			if err := still(tx); err != nil {
				return err
			}
			bench, err := benchmarkTx(ctx, tx, benchID)
			if d5list.ErrorCode(err) == d5list.ENOTFOUND {
				// Nothing to rank: the mark goes.
				_, err = tx.ExecContext(ctx, `DELETE FROM board_rebuilds WHERE benchmark_id = ?`, benchID)
				return err
			} else if err != nil {
				return err
			}
			subs, err := submissionsAfterTx(ctx, tx, benchID, after, rebuildBatch)
			if err != nil {
				return err
			}
			stmt, err := tx.PrepareContext(ctx, upsertBoardRow)
			if err != nil {
				return err
			}
			defer stmt.Close()
			for _, s := range subs {
				if err := upsertRowOf(ctx, tx, stmt, bench, s); err != nil {
					return err
				}
				after = s.ID
			}
			if len(subs) > 0 {
				boardChangedTx(tx, benchID)
			}
			n = len(subs)
			return nil
		})
		if err != nil {
			return wrap(err, "indexing the boards of %q", benchID)
		}
		if n < rebuildBatch {
			break
		}
		if rebuildHook != nil {
			if err := rebuildHook(benchID, after); err != nil {
				return err
			}
		}
	}
	err := db.writeTx(ctx, func(tx *sql.Tx) error {
		if err := still(tx); err != nil {
			return err
		}
		if err := electAllBestTx(ctx, tx, benchID); err != nil {
			return err
		}
		_, err := tx.ExecContext(ctx, `DELETE FROM board_rebuilds WHERE benchmark_id = ? AND generation = ?`, benchID, gen)
		return err
	})
	return wrap(err, "ranking the boards of %q", benchID)
}

// submissionsAfter walks index submissions_by_benchmark_id from an id on:
// a batch costs its own rows, not a sort of the whole benchmark.
const submissionsAfter = `SELECT ` + submissionColumns + ` WHERE s.benchmark_id = ? AND s.id > ? ORDER BY s.id LIMIT ?`

// submissionsAfterTx reads up to n submissions of benchID with ids above
// after, in id order.
func submissionsAfterTx(ctx context.Context, tx *sql.Tx, benchID string, after int64, n int) ([]*d5list.Submission, error) {
	rows, err := tx.QueryContext(ctx, submissionsAfter, benchID, after, n)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var subs []*d5list.Submission
	for rows.Next() {
		s, err := scanSubmission(rows, nil)
		if err != nil {
			return nil, err
		}
		subs = append(subs, s)
	}
	return subs, rows.Err()
}

// upsertBoardRow writes a row whatever is there already, keeping the row's
// best marks where it is still on their view: the election at the end of
// the rebuild settles them, and until then a system keeps its best row. A
// row derived as it was is left alone: most rows of a rebuild are (a
// migration that marks a board for one new field changes few), and
// rewriting one costs every index of the board and its pages in the
// write-ahead log, most of a rebuild's time at a million rows.
const upsertBoardRow = insertBoardRow + `
	ON CONFLICT (submission_id) DO UPDATE SET benchmark_id = excluded.benchmark_id,
		on_default = excluded.on_default, on_all = excluded.on_all,
		best_default = best_default AND excluded.on_default, best_all = best_all AND excluded.on_all,
		k1 = excluded.k1, sec_missing = excluded.sec_missing, k2 = excluded.k2, created_at = excluded.created_at,
		system_key = excluded.system_key, division = excluded.division, availability = excluded.availability,
		accelerator = excluded.accelerator, framework = excluded.framework, search = excluded.search,
		sort_submitter = excluded.sort_submitter, sort_system = excluded.sort_system,
		accelerators = excluded.accelerators, cost = excluded.cost, perf = excluded.perf,
		accelerator_name = excluded.accelerator_name, framework_name = excluded.framework_name, entry = excluded.entry
	WHERE (board_rows.benchmark_id, board_rows.on_default, board_rows.on_all, board_rows.k1, board_rows.sec_missing,
		board_rows.k2, board_rows.created_at, board_rows.system_key, board_rows.division, board_rows.availability,
		board_rows.accelerator, board_rows.framework, board_rows.search, board_rows.sort_submitter,
		board_rows.sort_system, board_rows.accelerators, board_rows.cost, board_rows.perf,
		board_rows.accelerator_name, board_rows.framework_name, board_rows.entry)
	IS NOT (excluded.benchmark_id, excluded.on_default, excluded.on_all, excluded.k1, excluded.sec_missing,
		excluded.k2, excluded.created_at, excluded.system_key, excluded.division, excluded.availability,
		excluded.accelerator, excluded.framework, excluded.search, excluded.sort_submitter,
		excluded.sort_system, excluded.accelerators, excluded.cost, excluded.perf,
		excluded.accelerator_name, excluded.framework_name, excluded.entry)`

// upsertRowOf writes submission s's board row, or removes it where no
// board lists s any more.
func upsertRowOf(ctx context.Context, tx *sql.Tx, stmt *sql.Stmt, bench *d5list.Benchmark, s *d5list.Submission) error {
	row, ok := leaderboard.RowOf(bench, s)
	if !ok {
		_, err := tx.ExecContext(ctx, `DELETE FROM board_rows WHERE submission_id = ?`, s.ID)
		return err
	}
	args, err := boardRowArgs(bench.ID, &row, false, false)
	if err != nil {
		return err
	}
	_, err = stmt.ExecContext(ctx, args...)
	return err
}

// electAllBestTx elects every system's best rows of a benchmark, in each
// view and under each filter set, counts its views and makes the charts'
// sums again. One pass over the system index in ranking order finds them
// all (a system's first row on a view is its best there, and its first
// with a set's values its best under those filters) and counts every
// listed row, a slice of systems at a time: the elected and counted are
// written between slices, so that what is held stays bounded whatever
// the board's size.
func electAllBestTx(ctx context.Context, tx *sql.Tx, benchID string) error {
	boardChangedTx(tx, benchID)
	if err := remakeRecordsTx(ctx, tx, benchID); err != nil {
		return err
	}
	for _, best := range bestViews {
		if _, err := tx.ExecContext(ctx, `UPDATE board_rows SET `+best+` = 0 WHERE benchmark_id = ? AND `+best+` = 1`, benchID); err != nil {
			return err
		}
	}
	for _, table := range []string{"board_filter_best", "board_counts", "board_groups", "board_fronts"} {
		if _, err := tx.ExecContext(ctx, `DELETE FROM `+table+` WHERE benchmark_id = ?`, benchID); err != nil {
			return err
		}
	}
	e := election{sums: newSumDeltas()}
	after, more := "", false
	for {
		var err error
		if after, more, err = e.scan(ctx, tx, benchID, after, more); err != nil {
			return err
		}
		if err := e.write(ctx, tx, benchID); err != nil {
			return err
		}
		if !more {
			break
		}
	}
	return sumBestRowsTx(ctx, tx, benchID)
}

// electionSlice is about how many elected rows and counts electAllBestTx
// holds before writing them; a variable so that tests can make slices
// small.
var electionSlice = 20000

// election is what one slice of electAllBestTx's pass elected and counted.
type election struct {
	best    [2][]int64 // in bestViews's order
	filters []filterBestOf
	sums    *sumDeltas
}

type filterBestOf struct {
	view string
	g    filterGroup
	b    rankKeys
}

func (e *election) size() int {
	return len(e.best[0]) + len(e.best[1]) + len(e.filters) + e.sums.size()
}

// scan reads the system index from the system after `after` (from the
// first where !resume), electing each system's best rows, and stops at the
// first system boundary past electionSlice elected rows; it returns the
// last system it finished and whether systems remain.
func (e *election) scan(ctx context.Context, tx *sql.Tx, benchID, after string, resume bool) (string, bool, error) {
	q := `SELECT submission_id, system_key, on_default, on_all, k1, sec_missing, k2, created_at, ` +
		strings.Join(filterColumns[:], ", ") + `, accelerator_name, framework_name FROM board_rows WHERE benchmark_id = ?`
	args := []any{benchID}
	if resume {
		q += ` AND system_key > ?`
		args = append(args, after)
	}
	rows, err := tx.QueryContext(ctx, q+` ORDER BY system_key, `+boardOrder, args...)
	if err != nil {
		return "", false, err
	}
	defer rows.Close()
	current, started := "", false
	// Per system: what was elected (set 0: the view's best row), and the
	// views and values whose groups were all elected already, which most
	// of its rows repeat.
	type elected struct {
		view string
		set  filterSet
		vals filterValues // the set's columns only
	}
	seen, seenRows := map[elected]bool{}, map[rowKey]bool{}
	for rows.Next() {
		var r listedRow
		var b rankKeys
		if err := rows.Scan(&b.id, &r.system, &r.onDefault, &r.onAll, &b.k1, &b.secMissing, &b.k2, &b.created,
			&r.vals[0], &r.vals[1], &r.vals[2], &r.vals[3], &r.accelName, &r.frameworkName); err != nil {
			return "", false, err
		}
		if !started || r.system != current {
			if started && e.size() >= electionSlice {
				return current, true, rows.Close()
			}
			current, started = r.system, true
			clear(seen)
			clear(seenRows)
		}
		e.sums.addRow(&r, 1)
		for v, fv := range filterViews {
			if on := r.onDefault && fv.name == "default" || r.onAll && fv.name == "all"; !on || seenRows[rowKey{fv.name, r.vals}] {
				continue
			}
			seenRows[rowKey{fv.name, r.vals}] = true
			if k := (elected{view: fv.name}); !seen[k] {
				seen[k] = true
				e.best[v] = append(e.best[v], b.id)
			}
			for _, s := range filterSets {
				if k := (elected{fv.name, s, s.mask(r.vals)}); !seen[k] {
					seen[k] = true
					e.filters = append(e.filters, filterBestOf{fv.name, filterGroup{r.system, s, s.col(), s.val(r.vals)}, b})
				}
			}
		}
	}
	return current, false, rows.Err()
}

// write stores what the slice elected and counted, and empties it.
func (e *election) write(ctx context.Context, tx *sql.Tx, benchID string) error {
	for v, view := range bestViews {
		for ids := range slices.Chunk(e.best[v], 500) {
			args := make([]any, len(ids))
			for i, id := range ids {
				args[i] = id
			}
			if _, err := tx.ExecContext(ctx, `UPDATE board_rows SET `+view+` = 1 WHERE submission_id IN (?`+
				strings.Repeat(", ?", len(ids)-1)+`)`, args...); err != nil {
				return err
			}
		}
		e.best[v] = e.best[v][:0]
	}
	if len(e.filters) > 0 {
		stmt, err := tx.PrepareContext(ctx, upsertFilterBest)
		if err != nil {
			return err
		}
		defer stmt.Close()
		for _, f := range e.filters {
			if _, err := stmt.ExecContext(ctx, f.b.args(benchID, f.view, f.g)...); err != nil {
				return err
			}
		}
	}
	e.filters = e.filters[:0]
	return e.sums.write(ctx, tx, benchID)
}

// backfillBoards runs at Open: it marks for a rebuild each benchmark that
// has submissions but no counted views (never indexed, as a database made
// before migration 0009, or its counts lost), and finishes every rebuild
// left pending, such as one a crash stopped half way.
func (db *DB) backfillBoards(ctx context.Context) error {
	// Most starts have nothing to do: a read says so without taking the
	// write lock from a serving process.
	if err := db.electUnelected(ctx); err != nil {
		return err
	}
	var todo bool
	err := db.read.QueryRowContext(ctx, `SELECT EXISTS (SELECT 1 FROM board_rebuilds) OR EXISTS (SELECT 1 FROM benchmarks b
		WHERE EXISTS (SELECT 1 FROM submissions s WHERE s.benchmark_id = b.id)
			AND NOT EXISTS (SELECT 1 FROM board_counts c WHERE c.benchmark_id = b.id))`).Scan(&todo)
	if err != nil || !todo {
		return err
	}
	err = db.writeTx(ctx, func(tx *sql.Tx) error {
		_, err := tx.ExecContext(ctx, `INSERT INTO board_rebuilds (benchmark_id, generation)
			SELECT b.id, 1 FROM benchmarks b
			WHERE EXISTS (SELECT 1 FROM submissions s WHERE s.benchmark_id = b.id)
				AND NOT EXISTS (SELECT 1 FROM board_counts c WHERE c.benchmark_id = b.id)
			ON CONFLICT (benchmark_id) DO NOTHING`)
		return err
	})
	if err != nil {
		return err
	}
	return db.finishRebuilds(ctx)
}

// electUnelected elects the filtered boards' best rows, and makes the
// charts' sums, of each benchmark whose rows were indexed before
// board_filter_best (migration 0015) or before it kept every set of
// filters (0041, which emptied it): its rows are listed, but no system has
// a best row under a filter.
func (db *DB) electUnelected(ctx context.Context) error {
	var benches []string
	rows, err := db.read.QueryContext(ctx, `SELECT id FROM benchmarks b
		WHERE EXISTS (SELECT 1 FROM board_rows r WHERE r.benchmark_id = b.id AND r.best_all = 1)
			AND NOT EXISTS (SELECT 1 FROM board_filter_best f WHERE f.benchmark_id = b.id)`)
	if err != nil {
		return err
	}
	for rows.Next() {
		var id string
		if err := rows.Scan(&id); err != nil {
			rows.Close()
			return err
		}
		benches = append(benches, id)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return err
	}
	for _, id := range benches {
		if err := db.ElectBoards(ctx, id); err != nil {
			return err
		}
	}
	return nil
}
