package store

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"

	d5list "github.com/deep500/d5list"
	"github.com/deep500/d5list/leaderboard"
)

// boardOrder is the ranking order of board_rows, best first: the value,
// the secondary value (a missing one loses), the earlier submission, the
// lower id. leaderboard.Score sorts by the same keys.
const boardOrder = "k1, sec_missing, k2, created_at, submission_id"

// The views of a benchmark's board that have an index and a count of
// their own: each system's best entry or every entry, of the default
// board or of the one that includes unverified entries.
const (
	viewBestDefault = "best_default"
	viewOnDefault   = "on_default"
	viewBestAll     = "best_all"
	viewOnAll       = "on_all"
)

// syncBoardRowTx derives submission id's board row from its current state,
// in the transaction that changed it, and keeps its system's best row and
// the views' counts in step. Every write to a submission that a board
// reads (status, claimed, measured, flag, division) calls it.
func syncBoardRowTx(ctx context.Context, tx *sql.Tx, id int64) error {
	sub, err := submissionTx(ctx, tx, id)
	if err != nil {
		return err
	}
	bench, err := benchmarkTx(ctx, tx, sub.BenchmarkID)
	if err != nil {
		return err
	}
	var oldSystem string
	var oldDefault, oldAll bool
	var oldValues filterValues
	err = tx.QueryRowContext(ctx, `SELECT system_key, on_default, on_all, `+strings.Join(filterColumns[:], ", ")+`
		FROM board_rows WHERE submission_id = ?`, id).
		Scan(&oldSystem, &oldDefault, &oldAll, &oldValues[0], &oldValues[1], &oldValues[2], &oldValues[3])
	had := err == nil
	if err != nil && !errors.Is(err, sql.ErrNoRows) {
		return err
	}
	row, listed := leaderboard.RowOf(bench, sub)
	if had || listed {
		boardChangedTx(tx, bench.ID)
	}
	systems := map[string]bool{}
	if had {
		systems[oldSystem] = true
	}
	if listed {
		systems[row.SystemKey] = true
	}
	before := map[string][2]bool{}
	for sys := range systems {
		d, a, err := systemHasBestTx(ctx, tx, bench.ID, sys)
		if err != nil {
			return err
		}
		before[sys] = [2]bool{d, a}
	}
	vals := filterValues{row.Division, row.Availability, row.Accelerator, row.Framework}
	// What the row leaves and what it joins, in one change of the counts:
	// a verdict that keeps its views and values changes none.
	counts := map[string]int{}
	if had {
		if _, err := tx.ExecContext(ctx, `DELETE FROM board_rows WHERE submission_id = ?`, id); err != nil {
			return err
		}
		addRowCounts(counts, oldDefault, oldAll, oldValues, -1)
	}
	if listed {
		if err := insertBoardRowTx(ctx, tx, bench.ID, &row, false, false); err != nil {
			return err
		}
		addRowCounts(counts, row.OnDefault, row.OnAll, vals, 1)
	}
	if err := bumpCountsTx(ctx, tx, bench.ID, counts); err != nil {
		return err
	}
	for sys := range systems {
		if err := electBestTx(ctx, tx, bench.ID, sys); err != nil {
			return err
		}
		d, a, err := systemHasBestTx(ctx, tx, bench.ID, sys)
		if err != nil {
			return err
		}
		was := before[sys]
		if err := bumpCountsTx(ctx, tx, bench.ID, map[string]int{viewBestDefault: b2i(d) - b2i(was[0]), viewBestAll: b2i(a) - b2i(was[1])}); err != nil {
			return err
		}
	}
	// Only the groups the row left or joined can have another best row.
	groups := map[filterGroup]bool{}
	if had {
		for i, col := range filterColumns {
			groups[filterGroup{oldSystem, col, oldValues[i]}] = true
		}
	}
	if listed {
		for i, col := range filterColumns {
			groups[filterGroup{row.SystemKey, col, vals[i]}] = true
		}
	}
	for g := range groups {
		if err := electFilterBestTx(ctx, tx, bench.ID, g); err != nil {
			return err
		}
	}
	return nil
}

// changedBoards holds, for each open write transaction, the benchmarks
// whose board rows it changed; writeTx tells NotifyBoardChanges's
// listener of them once it has committed. Only the transaction's own
// goroutine writes its set.
var changedBoards sync.Map // *sql.Tx -> map[string]bool

// boardChangedTx notes that tx changed benchID's board rows.
func boardChangedTx(tx *sql.Tx, benchID string) {
	if set, ok := changedBoards.Load(tx); ok {
		set.(map[string]bool)[benchID] = true
	}
}

// filterColumns are the board_rows columns a board filters on, one at a
// time from board_filter_best.
var filterColumns = [4]string{"division", "availability", "accelerator", "framework"}

type filterValues [4]string

// filterGroup is a system's rows with one value in one filter column.
type filterGroup struct{ system, col, val string }

// The views of board_filter_best: each system's best of the default
// board, or of the one that includes unverified entries.
var filterViews = []struct{ name, on string }{{"default", viewOnDefault}, {"all", viewOnAll}}

// electFilterBestTx keeps g's best row of each view in board_filter_best,
// or none where g has no row on that view.
func electFilterBestTx(ctx context.Context, tx *sql.Tx, benchID string, g filterGroup) error {
	for _, v := range filterViews {
		var b filterBest
		err := tx.QueryRowContext(ctx, `SELECT submission_id, k1, sec_missing, k2, created_at FROM board_rows
			WHERE benchmark_id = ? AND system_key = ? AND `+v.on+` = 1 AND `+g.col+` = ?
			ORDER BY `+boardOrder+` LIMIT 1`, benchID, g.system, g.val).Scan(&b.id, &b.k1, &b.secMissing, &b.k2, &b.created)
		if errors.Is(err, sql.ErrNoRows) {
			_, err = tx.ExecContext(ctx, `DELETE FROM board_filter_best
				WHERE benchmark_id = ? AND view = ? AND col = ? AND val = ? AND system_key = ?`, benchID, v.name, g.col, g.val, g.system)
		} else if err == nil {
			_, err = tx.ExecContext(ctx, upsertFilterBest, b.args(benchID, v.name, g)...)
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// filterBest is a group's best row: its id and ranking keys.
type filterBest struct {
	id         int64
	k1, k2     float64
	secMissing int
	created    int64
}

func (b filterBest) args(benchID, view string, g filterGroup) []any {
	return []any{benchID, view, g.col, g.val, g.system, b.id, b.k1, b.secMissing, b.k2, b.created}
}

const upsertFilterBest = `INSERT INTO board_filter_best (benchmark_id, view, col, val, system_key, submission_id, k1, sec_missing, k2, created_at)
	VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
	ON CONFLICT (benchmark_id, view, col, val, system_key) DO UPDATE SET submission_id = excluded.submission_id,
		k1 = excluded.k1, sec_missing = excluded.sec_missing, k2 = excluded.k2, created_at = excluded.created_at`

// addRowCounts adds to d what one row adds (sign 1) or takes (-1) from
// the counts of the views it is on: every entry, plain and under each
// filter value.
func addRowCounts(d map[string]int, onDefault, onAll bool, vals filterValues, sign int) {
	d[viewOnDefault] += sign * b2i(onDefault)
	d[viewOnAll] += sign * b2i(onAll)
	for i, col := range filterColumns {
		d[filterCountView(viewOnDefault, col, vals[i])] += sign * b2i(onDefault)
		d[filterCountView(viewOnAll, col, vals[i])] += sign * b2i(onAll)
	}
}

// filterCountView is board_counts' key of every entry of view (on_default
// or on_all) with val in filter column col; NUL separates the parts, as
// no stored value holds one.
func filterCountView(view, col, val string) string {
	return view + "\x00" + col + "\x00" + val
}

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}

func systemHasBestTx(ctx context.Context, tx *sql.Tx, benchID, system string) (def, all bool, err error) {
	err = tx.QueryRowContext(ctx, `SELECT coalesce(max(best_default), 0), coalesce(max(best_all), 0) FROM board_rows
		WHERE benchmark_id = ? AND system_key = ?`, benchID, system).Scan(&def, &all)
	return def, all, err
}

// electBestTx marks the best row of the system in each view, and only it.
func electBestTx(ctx context.Context, tx *sql.Tx, benchID, system string) error {
	for _, v := range []struct{ best, on string }{{viewBestDefault, viewOnDefault}, {viewBestAll, viewOnAll}} {
		var best int64
		err := tx.QueryRowContext(ctx, `SELECT submission_id FROM board_rows WHERE benchmark_id = ? AND system_key = ? AND `+v.on+` = 1
			ORDER BY `+boardOrder+` LIMIT 1`, benchID, system).Scan(&best)
		if errors.Is(err, sql.ErrNoRows) {
			best = 0
		} else if err != nil {
			return err
		}
		if _, err := tx.ExecContext(ctx, `UPDATE board_rows SET `+v.best+` = (submission_id = ?)
			WHERE benchmark_id = ? AND system_key = ? AND (`+v.best+` = 1 OR submission_id = ?)`, best, benchID, system, best); err != nil {
			return err
		}
	}
	return nil
}

func bumpCountsTx(ctx context.Context, tx *sql.Tx, benchID string, deltas map[string]int) error {
	for view, d := range deltas {
		if d == 0 {
			continue
		}
		if _, err := tx.ExecContext(ctx, `INSERT INTO board_counts (benchmark_id, view, n) VALUES (?, ?, ?)
			ON CONFLICT (benchmark_id, view) DO UPDATE SET n = n + excluded.n`, benchID, view, d); err != nil {
			return err
		}
	}
	return nil
}

const insertBoardRow = `INSERT INTO board_rows (submission_id, benchmark_id, on_default, on_all, best_default, best_all,
		k1, sec_missing, k2, created_at, system_key, division, availability, accelerator, framework, search,
		sort_submitter, sort_system, accelerators, cost, perf, accelerator_name, framework_name, entry)
	VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`

func boardRowArgs(benchID string, r *leaderboard.Row, bestDefault, bestAll bool) ([]any, error) {
	entry, err := json.Marshal(&r.Entry)
	if err != nil {
		return nil, fmt.Errorf("store: encoding the board entry of submission %d: %w", r.Entry.SubmissionID, err)
	}
	return []any{r.Entry.SubmissionID, benchID, r.OnDefault, r.OnAll, bestDefault, bestAll,
		r.Key1, r.SecMissing, r.Key2, r.Entry.CreatedAt.UnixNano(), r.SystemKey, r.Division, r.Availability,
		r.Accelerator, r.Framework, r.Search, r.SortSubmitter, r.SortSystem,
		r.Entry.Accelerators, r.Entry.CostPerHour, r.Performance, strings.TrimSpace(r.Entry.Accelerator), strings.TrimSpace(r.Entry.Framework),
		string(entry)}, nil
}

func insertBoardRowTx(ctx context.Context, tx *sql.Tx, benchID string, r *leaderboard.Row, bestDefault, bestAll bool) error {
	args, err := boardRowArgs(benchID, r, bestDefault, bestAll)
	if err != nil {
		return err
	}
	_, err = tx.ExecContext(ctx, insertBoardRow, args...)
	return err
}

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

// submissionsAfterTx reads up to n submissions of benchID with ids above
// after, in id order.
func submissionsAfterTx(ctx context.Context, tx *sql.Tx, benchID string, after int64, n int) ([]*d5list.Submission, error) {
	rows, err := tx.QueryContext(ctx, `SELECT `+submissionColumns+` WHERE s.benchmark_id = ? AND s.id > ? ORDER BY s.id LIMIT ?`, benchID, after, n)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var subs []*d5list.Submission
	for rows.Next() {
		s, err := scanSubmission(rows)
		if err != nil {
			return nil, err
		}
		subs = append(subs, s)
	}
	return subs, rows.Err()
}

// upsertBoardRow writes a row whatever is there already, keeping the row's
// best marks where it is still on their view: the election at the end of
// the rebuild settles them, and until then a system keeps its best row.
const upsertBoardRow = insertBoardRow + `
	ON CONFLICT (submission_id) DO UPDATE SET benchmark_id = excluded.benchmark_id,
		on_default = excluded.on_default, on_all = excluded.on_all,
		best_default = best_default AND excluded.on_default, best_all = best_all AND excluded.on_all,
		k1 = excluded.k1, sec_missing = excluded.sec_missing, k2 = excluded.k2, created_at = excluded.created_at,
		system_key = excluded.system_key, division = excluded.division, availability = excluded.availability,
		accelerator = excluded.accelerator, framework = excluded.framework, search = excluded.search,
		sort_submitter = excluded.sort_submitter, sort_system = excluded.sort_system,
		accelerators = excluded.accelerators, cost = excluded.cost, perf = excluded.perf,
		accelerator_name = excluded.accelerator_name, framework_name = excluded.framework_name, entry = excluded.entry`

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
// view and under each filter, and counts its views. One pass over the
// system index in ranking order finds them all (a system's first row on a
// view is its best there, and its first with a value its best under that
// filter), a slice of systems at a time: the elected are written between
// slices, so that what is held stays bounded whatever the board's size.
func electAllBestTx(ctx context.Context, tx *sql.Tx, benchID string) error {
	boardChangedTx(tx, benchID)
	for _, best := range []string{viewBestDefault, viewBestAll} {
		if _, err := tx.ExecContext(ctx, `UPDATE board_rows SET `+best+` = 0 WHERE benchmark_id = ? AND `+best+` = 1`, benchID); err != nil {
			return err
		}
	}
	if _, err := tx.ExecContext(ctx, `DELETE FROM board_filter_best WHERE benchmark_id = ?`, benchID); err != nil {
		return err
	}
	var e election
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
	if _, err := tx.ExecContext(ctx, `DELETE FROM board_counts WHERE benchmark_id = ?`, benchID); err != nil {
		return err
	}
	for _, view := range []string{viewBestDefault, viewOnDefault, viewBestAll, viewOnAll} {
		if _, err := tx.ExecContext(ctx, `INSERT INTO board_counts (benchmark_id, view, n)
				SELECT ?, ?, count(*) FROM board_rows WHERE benchmark_id = ? AND `+view+` = 1`, benchID, view, benchID); err != nil {
			return err
		}
	}
	for _, col := range filterColumns {
		// One pass over the column's index counts both views.
		if _, err := tx.ExecContext(ctx, `INSERT INTO board_counts (benchmark_id, view, n)
				SELECT ?, ? || char(0) || ? || char(0) || `+col+`, count(*) FROM board_rows
				WHERE benchmark_id = ? AND on_all = 1 GROUP BY `+col+`
				UNION ALL
				SELECT ?, ? || char(0) || ? || char(0) || `+col+`, sum(on_default) FROM board_rows
				WHERE benchmark_id = ? AND on_all = 1 GROUP BY `+col+` HAVING sum(on_default) > 0`,
			benchID, viewOnAll, col, benchID, benchID, viewOnDefault, col, benchID); err != nil {
			return err
		}
	}
	return nil
}

// electionSlice is about how many elected rows electAllBestTx holds
// before writing them; a variable so that tests can make slices small.
var electionSlice = 20000

// election is what one slice of electAllBestTx's pass elected.
type election struct {
	bestDefault, bestAll []int64
	filters              []filterBestOf
}

type filterBestOf struct {
	view string
	g    filterGroup
	b    filterBest
}

func (e *election) size() int { return len(e.bestDefault) + len(e.bestAll) + len(e.filters) }

// scan reads the system index from the system after `after` (from the
// first where !resume), electing each system's best rows, and stops at the
// first system boundary past electionSlice elected rows; it returns the
// last system it finished and whether systems remain.
func (e *election) scan(ctx context.Context, tx *sql.Tx, benchID, after string, resume bool) (string, bool, error) {
	q := `SELECT submission_id, system_key, on_default, on_all, k1, sec_missing, k2, created_at, ` +
		strings.Join(filterColumns[:], ", ") + ` FROM board_rows WHERE benchmark_id = ?`
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
	seen := map[string]bool{}
	for rows.Next() {
		var system string
		var onDefault, onAll bool
		var b filterBest
		var vals filterValues
		if err := rows.Scan(&b.id, &system, &onDefault, &onAll, &b.k1, &b.secMissing, &b.k2, &b.created,
			&vals[0], &vals[1], &vals[2], &vals[3]); err != nil {
			return "", false, err
		}
		if !started || system != current {
			if started && e.size() >= electionSlice {
				return current, true, rows.Close()
			}
			current, started = system, true
			clear(seen)
		}
		for _, v := range filterViews {
			if on := onDefault && v.name == "default" || onAll && v.name == "all"; !on {
				continue
			}
			if !seen[v.name] {
				seen[v.name] = true
				if v.name == "default" {
					e.bestDefault = append(e.bestDefault, b.id)
				} else {
					e.bestAll = append(e.bestAll, b.id)
				}
			}
			for i, col := range filterColumns {
				key := filterCountView(v.name, col, vals[i])
				if !seen[key] {
					seen[key] = true
					e.filters = append(e.filters, filterBestOf{v.name, filterGroup{system, col, vals[i]}, b})
				}
			}
		}
	}
	return current, false, rows.Err()
}

// write stores what the slice elected and empties it.
func (e *election) write(ctx context.Context, tx *sql.Tx, benchID string) error {
	for _, m := range []struct {
		best string
		ids  []int64
	}{{viewBestDefault, e.bestDefault}, {viewBestAll, e.bestAll}} {
		for ids := range slices.Chunk(m.ids, 500) {
			args := make([]any, len(ids))
			for i, id := range ids {
				args[i] = id
			}
			if _, err := tx.ExecContext(ctx, `UPDATE board_rows SET `+m.best+` = 1 WHERE submission_id IN (?`+
				strings.Repeat(", ?", len(ids)-1)+`)`, args...); err != nil {
				return err
			}
		}
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
	e.bestDefault, e.bestAll, e.filters = e.bestDefault[:0], e.bestAll[:0], e.filters[:0]
	return nil
}

// backfillBoards runs at Open: it marks for a rebuild each benchmark that
// has submissions but no counted views (never indexed, as a database made
// before migration 0009, or its counts lost), and finishes every rebuild
// left pending, such as one a crash stopped half way.
func (db *DB) backfillBoards(ctx context.Context) error {
	// Most starts have nothing to do: a read says so without taking the
	// write lock from a serving process.
	if err := db.electUnfiltered(ctx); err != nil {
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

// electUnfiltered elects the filtered boards' best rows of each benchmark
// whose rows were indexed before board_filter_best existed (migration
// 0015): its rows are listed, but no system has a best row under a filter.
func (db *DB) electUnfiltered(ctx context.Context) error {
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

// boardQuery is the SQL of rows offset to offset+limit (limit -1: all) of
// one board as opt selects it, in rank order (or opt.Sort's), each row
// with its rank on that board and the board's row count: the entry's JSON,
// whether an organiser confirmed its organisation, the rank, the count.
// Only the rows it returns are joined to their submissions and owners
// (for that confirmation): the ranking, the count and the page are made
// from board_rows alone. counted says the count is not in the rows but
// kept in board_counts, and the rows come without their ranks: the caller
// numbers them from offset, down from the count where reversed (the score
// column worst first, the same partial index read backwards).
func boardQuery(benchID string, opt leaderboard.Options, offset, limit int) (q string, args []any, counted, reversed bool) {
	opt = opt.Normalized()
	on, best := viewOnDefault, viewBestDefault
	if opt.IncludeUnverified {
		on, best = viewOnAll, viewBestAll
	}
	const pick = `SELECT b.entry, coalesce(u.organisation_confirmed AND u.organisation_key = s.submitter_key, 0)`
	const join = ` JOIN submissions s ON s.id = b.submission_id LEFT JOIN users u ON u.id = s.owner_id`
	filtered := opt.Division != "" || opt.Availability != "" || opt.Accelerator != "" || opt.Framework != ""
	g, single := singleFilter(opt)
	if inRankOrder := opt.Sort == "" || opt.Sort == leaderboard.SortScore || opt.Sort == leaderboard.SortScoreReverse; inRankOrder && opt.Search == "" {
		// A range of one index in ranking order, read backwards for the
		// score column worst first; the count is kept apart. The index
		// drives the join, so LIMIT stops it after the page.
		reversed = opt.Sort == leaderboard.SortScoreReverse
		rankOrder := func(table string) string {
			order := prefixed(table+".", boardOrder)
			if reversed {
				order = strings.ReplaceAll(order, ",", " DESC,") + " DESC"
			}
			return order
		}
		const tail = ` LIMIT ? OFFSET ?`
		switch {
		case !filtered:
			// Each system's best, or every entry: a partial index.
			view := best
			if opt.AllPerSystem {
				view = on
			}
			q = pick + `, 0, 0 FROM board_rows b` + join + ` WHERE b.benchmark_id = ? AND b.` + view + ` = 1 ORDER BY ` + rankOrder("b") + tail
			return q, []any{benchID, limit, offset}, true, reversed
		case single && opt.AllPerSystem:
			// Every entry with one filter's value: that column's index.
			q = pick + `, 0, 0 FROM board_rows b` + join +
				` WHERE b.benchmark_id = ? AND b.` + g.col + ` = ? AND b.on_all = 1 AND b.` + on + ` = 1 ORDER BY ` + rankOrder("b") + tail
			return q, []any{benchID, g.val, limit, offset}, true, reversed
		case single:
			// Each system's best under one filter: board_filter_best's
			// index.
			q = pick + `, 0, 0 FROM board_filter_best f JOIN board_rows b ON b.submission_id = f.submission_id` + join +
				` WHERE f.benchmark_id = ? AND f.view = ? AND f.col = ? AND f.val = ? ORDER BY ` + rankOrder("f") + tail
			return q, []any{benchID, g.view, g.col, g.val, limit, offset}, true, reversed
		}
	}
	const cols = `submission_id, k1, sec_missing, k2, created_at, system_key, search, sort_submitter, sort_system`
	from := "v"
	switch {
	case !opt.AllPerSystem && !filtered:
		// Each system's best row is marked: a search or another order
		// reads those, about one row per system.
		q = `WITH v AS (SELECT ` + cols + ` FROM board_rows WHERE benchmark_id = ? AND ` + best + ` = 1)`
		args = []any{benchID}
	case !opt.AllPerSystem && single:
		// So is each system's best under one filter.
		q = `WITH v AS (SELECT ` + prefixed("b.", cols) + ` FROM board_filter_best f JOIN board_rows b ON b.submission_id = f.submission_id
			WHERE f.benchmark_id = ? AND f.view = ? AND f.col = ? AND f.val = ?)`
		args = []any{benchID, g.view, g.col, g.val}
	default:
		// Every row of the view with the filters' values; each system's
		// best of those where the board keeps one per system (two filters
		// or more: a window over the rows that have both values).
		where := []string{"benchmark_id = ?", on + " = 1"}
		args = []any{benchID}
		for i, val := range []string{opt.Division, opt.Availability, opt.Accelerator, opt.Framework} {
			if val != "" {
				where, args = append(where, filterColumns[i]+" = ?"), append(args, val)
			}
		}
		q = `WITH v AS (SELECT ` + cols + ` FROM board_rows WHERE ` + strings.Join(where, " AND ") + `)`
		if !opt.AllPerSystem {
			q += `, p AS (SELECT * FROM (SELECT *, row_number() OVER (PARTITION BY system_key ORDER BY ` + boardOrder + `) AS one FROM v) WHERE one = 1)`
			from = "p"
		}
	}
	q += `, r AS (SELECT *, row_number() OVER (ORDER BY ` + boardOrder + `) AS rank FROM ` + from + `)`
	if term := leaderboard.SearchTerm(opt); term != "" {
		q += `, f AS (SELECT * FROM r WHERE instr(search, ?) > 0)`
		args = append(args, term)
	} else {
		q += `, f AS (SELECT * FROM r)`
	}
	order := "rank"
	switch opt.Sort {
	case leaderboard.SortDate:
		order = "created_at DESC, rank"
	case leaderboard.SortSubmitter:
		order = "sort_submitter, rank"
	case leaderboard.SortSystem:
		order = "sort_system, rank"
	case leaderboard.SortScoreReverse:
		order = "rank DESC"
	}
	// The page: its ids, ranks and sort keys, and the count of the whole
	// filtered board (the window sees every row before LIMIT applies).
	q += `, page AS (SELECT submission_id, rank, created_at, sort_submitter, sort_system, count(*) OVER () AS n
			FROM f ORDER BY ` + order + ` LIMIT ? OFFSET ?)`
	args = append(args, limit, offset)
	q += ` ` + pick + `, page.rank, page.n FROM page JOIN board_rows b ON b.submission_id = page.submission_id` + join +
		` ORDER BY ` + prefixed("page.", order)
	return q, args, false, false
}

// filterView is one filter of a board as board_filter_best keys it.
type filterView struct{ view, col, val string }

// singleFilter reports the filter of a board that filters on exactly one
// column; two or more (or none) are answered another way.
func singleFilter(opt leaderboard.Options) (filterView, bool) {
	var f filterView
	n := 0
	for i, val := range []string{opt.Division, opt.Availability, opt.Accelerator, opt.Framework} {
		if val != "" {
			f.col, f.val = filterColumns[i], val
			n++
		}
	}
	f.view = "default"
	if opt.IncludeUnverified {
		f.view = "all"
	}
	return f, n == 1
}

func prefixed(p, cols string) string {
	parts := strings.Split(cols, ", ")
	for i := range parts {
		parts[i] = p + parts[i]
	}
	return strings.Join(parts, ", ")
}

// BoardPage answers one page of a board from the index: at most limit
// entries from offset, ranked, and the board's row count. Its cost is
// about the page's rows for each system's best, plain or under one filter;
// a search or another order of those costs about a row per system; two
// filters or more, or a search or another order of every entry, cost a
// pass over the benchmark's index rows. It never reads a submission
// beyond the page's.
func (db *DB) BoardPage(ctx context.Context, benchID string, opt leaderboard.Options, offset, limit int) ([]d5list.Entry, int, error) {
	q, args, counted, reversed := boardQuery(benchID, opt, offset, limit)
	entries := []d5list.Entry{}
	total := 0
	err := db.readTx(ctx, func(tx *sql.Tx) (err error) {
		if counted {
			if total, err = boardCountTx(ctx, tx, benchID, opt); err != nil {
				return err
			}
		}
		return scanBoard(ctx, tx, q, args, func(e *d5list.Entry, rank, n int) error {
			if counted {
				rank = offset + len(entries) + 1
				if reversed {
					rank = total - offset - len(entries)
				}
			} else {
				total = n
			}
			leaderboard.Finish(e, rank)
			entries = append(entries, *e)
			return nil
		})
	})
	if err != nil {
		return nil, 0, wrap(err, "reading a page of the board of %q", benchID)
	}
	if !counted && len(entries) == 0 && offset > 0 {
		// Past the last page the window's count is not seen: ask for it.
		_, n, err := db.BoardPage(ctx, benchID, opt, 0, 1)
		return entries, n, err
	}
	return entries, total, nil
}

// EachBoardEntry streams a whole board from the index, in its order, for
// the exports: one entry in memory at a time.
func (db *DB) EachBoardEntry(ctx context.Context, benchID string, opt leaderboard.Options, fn func(*d5list.Entry) error) error {
	q, args, counted, reversed := boardQuery(benchID, opt, 0, -1)
	rank, step := 0, 1
	err := db.readTx(ctx, func(tx *sql.Tx) error {
		if reversed {
			total, err := boardCountTx(ctx, tx, benchID, opt)
			if err != nil {
				return err
			}
			rank, step = total+1, -1
		}
		return scanBoard(ctx, tx, q, args, func(e *d5list.Entry, r, _ int) error {
			rank += step
			if counted {
				r = rank
			}
			leaderboard.Finish(e, r)
			return fn(e)
		})
	})
	return wrap(err, "reading the board of %q", benchID)
}

// boardCountTx is the row count kept for the view of opt that has an
// index of its own (no filter, no search).
func boardCountTx(ctx context.Context, tx *sql.Tx, benchID string, opt leaderboard.Options) (int, error) {
	o := opt.Normalized()
	if g, ok := singleFilter(o); ok && o.AllPerSystem {
		view := viewOnDefault
		if o.IncludeUnverified {
			view = viewOnAll
		}
		total := 0
		err := tx.QueryRowContext(ctx, `SELECT n FROM board_counts WHERE benchmark_id = ? AND view = ?`,
			benchID, filterCountView(view, g.col, g.val)).Scan(&total)
		if err != nil && !errors.Is(err, sql.ErrNoRows) {
			return 0, err
		}
		return total, nil
	}
	if g, ok := singleFilter(o); ok && !o.AllPerSystem {
		// One row per system with that value: at most the systems.
		total := 0
		err := tx.QueryRowContext(ctx, `SELECT count(*) FROM board_filter_best WHERE benchmark_id = ? AND view = ? AND col = ? AND val = ?`,
			benchID, g.view, g.col, g.val).Scan(&total)
		return total, err
	}
	view := viewBestDefault
	switch {
	case o.IncludeUnverified && o.AllPerSystem:
		view = viewOnAll
	case o.IncludeUnverified:
		view = viewBestAll
	case o.AllPerSystem:
		view = viewOnDefault
	}
	total := 0
	err := tx.QueryRowContext(ctx, `SELECT n FROM board_counts WHERE benchmark_id = ? AND view = ?`, benchID, view).Scan(&total)
	if err != nil && !errors.Is(err, sql.ErrNoRows) {
		return 0, err
	}
	return total, nil
}

func scanBoard(ctx context.Context, tx *sql.Tx, q string, args []any, fn func(e *d5list.Entry, rank, total int) error) error {
	rows, err := tx.QueryContext(ctx, q, args...)
	if err != nil {
		return err
	}
	defer rows.Close()
	for rows.Next() {
		var raw string
		var confirmed bool
		var rank, total int
		if err := rows.Scan(&raw, &confirmed, &rank, &total); err != nil {
			return err
		}
		var e d5list.Entry
		if err := json.Unmarshal([]byte(raw), &e); err != nil {
			return fmt.Errorf("decoding a board entry: %w", err)
		}
		e.SubmitterConfirmed = confirmed
		if err := fn(&e, rank, total); err != nil {
			return err
		}
	}
	return rows.Err()
}

// maxSummaryGroups bounds the rows an aggregate query of a summary
// returns (declared prices and accelerator names can be many); a variable
// so that tests can make the bound bite.
var maxSummaryGroups = 10000

// othersGroup names, inside BoardSummary, the group that sums the names
// past maxSummaryGroups; stored names are trimmed, so none begins with a
// space.
const othersGroup = " others"

// paretoFrontQuery is the Pareto front of a board's entries against col
// (accelerator count or declared price): each value of col's best entry
// (row_number over the system index order), kept where it ranks better
// than the best entry of every smaller value, which is the front the
// charts draw (templates.ParetoChart). The front is made over every group
// before the bound applies, and the bound keeps its best-ranked entries:
// cutting the groups by col first would drop the dearest ones, among them
// the best value on the board. n is the entries that declare col.
func paretoFrontQuery(col, best string) string {
	return `WITH g AS (SELECT submission_id, x, k1, n FROM (
			SELECT submission_id, ` + col + ` AS x, k1,
				row_number() OVER (PARTITION BY ` + col + ` ORDER BY ` + boardOrder + `) AS one,
				count(*) OVER (PARTITION BY ` + col + `) AS n
			FROM board_rows WHERE benchmark_id = ? AND ` + best + ` = 1 AND ` + col + ` > 0) WHERE one = 1),
		f AS (SELECT submission_id, k1, sum(n) OVER () AS total,
				min(k1) OVER (ORDER BY x ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING) AS ahead
			FROM g)
		SELECT b.entry, f.total FROM f JOIN board_rows b ON b.submission_id = f.submission_id
		WHERE f.ahead IS NULL OR f.k1 < f.ahead
		ORDER BY f.k1, f.submission_id LIMIT ?`
}

// BoardSummary makes what the charts and the filter choices of a
// benchmark's board need (each system's best entry; includeUnverified
// picks the board that lists unverified ones) with aggregate queries over
// the index, each bounded in rows. It passes over the board's index
// entries a few times: the portal runs it off the request path.
func (db *DB) BoardSummary(ctx context.Context, benchID string, includeUnverified bool) (*leaderboard.Summary, error) {
	bench, err := db.Benchmark(ctx, benchID)
	if err != nil {
		return nil, err
	}
	best, on := viewBestDefault, viewOnDefault
	if includeUnverified {
		best, on = viewBestAll, viewOnAll
	}
	sum := &leaderboard.Summary{}
	if sum.Top, sum.Total, err = db.BoardPage(ctx, benchID, leaderboard.Options{IncludeUnverified: includeUnverified}, 0, leaderboard.ChartTop); err != nil {
		return nil, err
	}
	err = db.readTx(ctx, func(tx *sql.Tx) error {
		for _, p := range []struct {
			col   string
			front *[]d5list.Entry
			n     *int
		}{{"accelerators", &sum.ParetoAccelerators, &sum.WithAccelerators}, {"cost", &sum.ParetoCost, &sum.WithCost}} {
			rows, err := tx.QueryContext(ctx, paretoFrontQuery(p.col, best), benchID, maxSummaryGroups)
			if err != nil {
				return err
			}
			for rows.Next() {
				var raw string
				if err := rows.Scan(&raw, p.n); err != nil {
					rows.Close()
					return err
				}
				var e d5list.Entry
				if err := json.Unmarshal([]byte(raw), &e); err != nil {
					rows.Close()
					return fmt.Errorf("decoding a board entry: %w", err)
				}
				leaderboard.Finish(&e, 0)
				*p.front = append(*p.front, e)
			}
			rows.Close()
			if err := rows.Err(); err != nil {
				return err
			}
		}
		// groups sums the board's entries by col, the largest groups
		// first; past the bound the rest are summed as one group, so that
		// the shares still add up to the whole board.
		groups := func(col string) ([]leaderboard.GroupSum, error) {
			rows, err := tx.QueryContext(ctx, `SELECT name, n, perf, sum(n) OVER (), sum(perf) OVER () FROM (
					SELECT `+col+` AS name, count(*) AS n, sum(perf) AS perf FROM board_rows
					WHERE benchmark_id = ? AND `+best+` = 1 GROUP BY `+col+`)
				ORDER BY n DESC, name LIMIT ?`, benchID, maxSummaryGroups)
			if err != nil {
				return nil, err
			}
			defer rows.Close()
			var out []leaderboard.GroupSum
			var kept, all int
			var keptPerf, allPerf float64
			for rows.Next() {
				var g leaderboard.GroupSum
				if err := rows.Scan(&g.Name, &g.Entries, &g.Performance, &all, &allPerf); err != nil {
					return nil, err
				}
				out = append(out, g)
				kept, keptPerf = kept+g.Entries, keptPerf+g.Performance
			}
			if all > kept {
				out = append(out, leaderboard.GroupSum{Name: othersGroup, Entries: all - kept, Performance: max(allPerf-keptPerf, 0)})
			}
			return out, rows.Err()
		}
		byAccel, err := groups("accelerator_name")
		if err != nil {
			return err
		}
		sum.Vendors = leaderboard.SharesOf(byAccel, func(name string) string {
			if name == othersGroup {
				return "others"
			}
			return leaderboard.Vendor(d5list.Entry{Accelerator: name})
		})
		if sum.Records, err = recordsTx(ctx, tx, benchID, on); err != nil {
			return err
		}
		byFramework, err := groups("framework_name")
		if err != nil {
			return err
		}
		sum.Frameworks = leaderboard.SharesOf(byFramework, func(name string) string {
			if name == othersGroup {
				return "others"
			}
			return leaderboard.Framework(d5list.Entry{Framework: name})
		})
		for _, c := range []struct {
			col string
			out *[]string
		}{{"accelerator_name", &sum.AcceleratorNames}, {"framework_name", &sum.FrameworkNames}} {
			rows, err := tx.QueryContext(ctx, `SELECT DISTINCT `+c.col+` FROM board_rows
				WHERE benchmark_id = ? AND on_all = 1 AND `+c.col+` != '' ORDER BY 1 LIMIT ?`, benchID, maxSummaryGroups)
			if err != nil {
				return err
			}
			for rows.Next() {
				var name string
				if err := rows.Scan(&name); err != nil {
					rows.Close()
					return err
				}
				*c.out = append(*c.out, name)
			}
			rows.Close()
			if err := rows.Err(); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return nil, wrap(err, "summarising the board of %q", bench.ID)
	}
	return sum, nil
}

// OnBoard says which of ids are still listed as their system's best entry
// on the board of benchID (the unverified one where unverified): a kept
// summary drops the entries a later review took off.
func (db *DB) OnBoard(ctx context.Context, benchID string, unverified bool, ids []int64) (map[int64]bool, error) {
	view := viewBestDefault
	if unverified {
		view = viewBestAll
	}
	return db.inView(ctx, benchID, view, ids)
}

// Listed says which of ids the board of benchID lists among every entry
// (each entry, not each system's best; the unverified ones too where
// unverified): a kept summary's records drop the entries a review took
// off.
func (db *DB) Listed(ctx context.Context, benchID string, unverified bool, ids []int64) (map[int64]bool, error) {
	view := viewOnDefault
	if unverified {
		view = viewOnAll
	}
	return db.inView(ctx, benchID, view, ids)
}

// inView says which of ids the rows of view hold.
func (db *DB) inView(ctx context.Context, benchID, view string, ids []int64) (map[int64]bool, error) {
	on := map[int64]bool{}
	if len(ids) == 0 {
		return on, nil
	}
	args := []any{benchID}
	for _, id := range ids {
		args = append(args, id)
	}
	err := db.readTx(ctx, func(tx *sql.Tx) error {
		rows, err := tx.QueryContext(ctx, `SELECT submission_id FROM board_rows WHERE benchmark_id = ? AND `+view+` = 1
			AND submission_id IN (?`+strings.Repeat(", ?", len(ids)-1)+`)`, args...)
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			var id int64
			if err := rows.Scan(&id); err != nil {
				return err
			}
			on[id] = true
		}
		return rows.Err()
	})
	return on, wrap(err, "checking entries of the board of %q", benchID)
}

// LatestOnBoard is the n newest entries of the default board of benchID
// (each system's best), newest first, without their ranks: counting the
// rows ahead of each would cost a pass over the board.
func (db *DB) LatestOnBoard(ctx context.Context, benchID string, n int) ([]d5list.Entry, error) {
	q := `SELECT b.entry, coalesce(u.organisation_confirmed AND u.organisation_key = s.submitter_key, 0), 0, 0
		FROM board_rows b JOIN submissions s ON s.id = b.submission_id LEFT JOIN users u ON u.id = s.owner_id
		WHERE b.benchmark_id = ? AND b.best_default = 1 ORDER BY b.created_at DESC LIMIT ?`
	var out []d5list.Entry
	err := db.readTx(ctx, func(tx *sql.Tx) error {
		return scanBoard(ctx, tx, q, []any{benchID, n}, func(e *d5list.Entry, _, _ int) error {
			leaderboard.Finish(e, 0)
			out = append(out, *e)
			return nil
		})
	})
	return out, wrap(err, "reading the newest entries of %q", benchID)
}

// RankOf is submission id's entry on the default board listing every
// entry (each system's best where bestOnly), with its rank, or nil when
// that board does not list it. Its cost grows with the rank: the rows
// ahead are counted in the index.
func (db *DB) RankOf(ctx context.Context, benchID string, id int64, bestOnly bool) (*d5list.Entry, error) {
	view := viewOnDefault
	if bestOnly {
		view = viewBestDefault
	}
	var e *d5list.Entry
	err := db.readTx(ctx, func(tx *sql.Tx) (err error) {
		e, err = rankOfTx(ctx, tx, benchID, id, view)
		return err
	})
	return e, wrap(err, "ranking submission %d", id)
}

// rankOfTx is RankOf on the board of view (viewOnDefault or
// viewBestDefault), in tx.
func rankOfTx(ctx context.Context, tx *sql.Tx, benchID string, id int64, view string) (*d5list.Entry, error) {
	var raw string
	var k1, k2 float64
	var secMissing, created int64
	err := tx.QueryRowContext(ctx, `SELECT entry, k1, sec_missing, k2, created_at FROM board_rows
		WHERE submission_id = ? AND benchmark_id = ? AND `+view+` = 1`, id, benchID).Scan(&raw, &k1, &secMissing, &k2, &created)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, nil
	} else if err != nil {
		return nil, err
	}
	var ahead int
	if err := tx.QueryRowContext(ctx, `SELECT count(*) FROM board_rows WHERE benchmark_id = ? AND `+view+` = 1
		AND (k1, sec_missing, k2, created_at, submission_id) < (?, ?, ?, ?, ?)`, benchID, k1, secMissing, k2, created, id).Scan(&ahead); err != nil {
		return nil, err
	}
	e := new(d5list.Entry)
	if err := json.Unmarshal([]byte(raw), e); err != nil {
		return nil, fmt.Errorf("decoding a board entry: %w", err)
	}
	leaderboard.Finish(e, ahead+1)
	return e, nil
}
