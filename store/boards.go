package store

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"

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
// in the transaction that changed it, and keeps in step its system's best
// rows (plain and under each filter set), the views' counts and the
// charts' sums. Every write to a submission that a board reads (status,
// claimed, measured, flag, division) calls it.
func syncBoardRowTx(ctx context.Context, tx *sql.Tx, id int64) error {
	sub, err := submissionTx(ctx, tx, id)
	if err != nil {
		return err
	}
	bench, err := benchmarkTx(ctx, tx, sub.BenchmarkID)
	if err != nil {
		return err
	}
	var old listedRow
	var oldK1 float64
	var oldCreated int64
	err = tx.QueryRowContext(ctx, `SELECT system_key, on_default, on_all, `+strings.Join(filterColumns[:], ", ")+`, accelerator_name, framework_name, k1, created_at
		FROM board_rows WHERE submission_id = ?`, id).
		Scan(&old.system, &old.onDefault, &old.onAll, &old.vals[0], &old.vals[1], &old.vals[2], &old.vals[3], &old.accelName, &old.frameworkName, &oldK1, &oldCreated)
	had := err == nil
	if err != nil && !errors.Is(err, sql.ErrNoRows) {
		return err
	}
	row, listed := leaderboard.RowOf(bench, sub)
	if !had && !listed {
		return nil
	}
	boardChangedTx(tx, bench.ID)
	now := listedRow{system: row.SystemKey, onDefault: row.OnDefault, onAll: row.OnAll,
		vals:      filterValues{row.Division, row.Availability, row.Accelerator, row.Framework},
		accelName: strings.TrimSpace(row.Entry.Accelerator), frameworkName: strings.TrimSpace(row.Entry.Framework)}
	// The groups whose best row may change: those the row left and joined.
	groups := map[string][]filterGroup{}
	if had {
		groups[old.system] = addFilterGroups(nil, old.system, old.vals)
	}
	if listed {
		groups[now.system] = addFilterGroups(groups[now.system], now.system, now.vals)
	}
	before := map[string][2]*bestRow{}
	for sys := range groups {
		if before[sys], err = bestRowsTx(ctx, tx, bench.ID, sys); err != nil {
			return err
		}
	}
	// What the row leaves and what it joins, in one change of the counts:
	// a verdict that keeps its views and values changes none.
	d := newSumDeltas()
	if had {
		if _, err := tx.ExecContext(ctx, `DELETE FROM board_rows WHERE submission_id = ?`, id); err != nil {
			return err
		}
		d.addRow(&old, -1)
	}
	if listed {
		if err := insertBoardRowTx(ctx, tx, bench.ID, &row, false, false); err != nil {
			return err
		}
		d.addRow(&now, 1)
	}
	at := recordRow{createdAt: row.Entry.CreatedAt.UnixNano(), id: id}
	if had && !listed {
		at.createdAt = oldCreated
	}
	for i, ch := range [2]recordChange{
		{at: at, wasOn: had && old.onDefault, isOn: listed && now.onDefault, oldK1: oldK1, newK1: row.Key1},
		{at: at, wasOn: had && old.onAll, isOn: listed && now.onAll, oldK1: oldK1, newK1: row.Key1},
	} {
		if err := syncRecordsTx(ctx, tx, bench.ID, recordViews[i], ch); err != nil {
			return err
		}
	}
	for sys, gs := range groups {
		after, err := electSystemTx(ctx, tx, bench.ID, sys, gs)
		if err != nil {
			return err
		}
		for v, view := range bestViews {
			if b, a := before[sys][v], after[v]; !sameBest(b, a, id) {
				if err := setBestTx(ctx, tx, bench.ID, view, sys, a); err != nil {
					return err
				}
				d.addBest(view, b, -1)
				d.addBest(view, a, 1)
			}
		}
	}
	return d.write(ctx, tx, bench.ID)
}

// listedRow is what the counts and sums read of a board row.
type listedRow struct {
	system                   string
	onDefault, onAll         bool
	vals                     filterValues
	accelName, frameworkName string
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

// The views of board_filter_best: each system's best of the default
// board, or of the one that includes unverified entries.
var filterViews = []struct{ name, on string }{{"default", viewOnDefault}, {"all", viewOnAll}}

// bestViews are the views that list each system's best row, in
// filterViews's order.
var bestViews = [2]string{viewBestDefault, viewBestAll}

// rankKeys are a row's ranking keys (boardOrder) and id.
type rankKeys struct {
	id         int64
	k1, k2     float64
	secMissing int
	created    int64
}

func (b rankKeys) args(benchID, view string, g filterGroup) []any {
	return []any{benchID, view, g.col, g.val, g.system, b.id, b.k1, b.secMissing, b.k2, b.created}
}

// upsertFilterBest keeps a group's best row; a row that is already the
// best, with the same keys, is left as it is (no page is written).
const upsertFilterBest = `INSERT INTO board_filter_best (benchmark_id, view, col, val, system_key, submission_id, k1, sec_missing, k2, created_at)
	VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
	ON CONFLICT (benchmark_id, view, col, val, system_key) DO UPDATE SET submission_id = excluded.submission_id,
		k1 = excluded.k1, sec_missing = excluded.sec_missing, k2 = excluded.k2, created_at = excluded.created_at
	WHERE (submission_id, k1, sec_missing, k2, created_at) != (excluded.submission_id, excluded.k1, excluded.sec_missing, excluded.k2, excluded.created_at)`

// bestRow is a system's best row on a view: its keys and what the charts
// count of it.
type bestRow struct {
	rankKeys
	accelerators             int
	cost, perf               float64
	accelName, frameworkName string
}

const bestRowColumns = `submission_id, k1, sec_missing, k2, created_at, accelerators, cost, perf, accelerator_name, framework_name`

func (r *bestRow) dest() []any {
	return []any{&r.id, &r.k1, &r.secMissing, &r.k2, &r.created, &r.accelerators, &r.cost, &r.perf, &r.accelName, &r.frameworkName}
}

// sameBest reports whether a system's best row of a view stayed the one it
// was: the same row, and not the one just written (whose values may have
// changed).
func sameBest(before, after *bestRow, written int64) bool {
	if before == nil || after == nil {
		return before == after
	}
	return before.id == after.id && after.id != written
}

// bestRowsTx reads system's best row of each view in bestViews's order
// (nil where it has none), through the partial indexes of best rows.
func bestRowsTx(ctx context.Context, tx *sql.Tx, benchID, system string) ([2]*bestRow, error) {
	var out [2]*bestRow
	for v, view := range bestViews {
		r := new(bestRow)
		err := tx.QueryRowContext(ctx, `SELECT `+bestRowColumns+` FROM board_rows
			WHERE benchmark_id = ? AND system_key = ? AND `+view+` = 1 LIMIT 1`, benchID, system).Scan(r.dest()...)
		if errors.Is(err, sql.ErrNoRows) {
			continue
		} else if err != nil {
			return out, err
		}
		out[v] = r
	}
	return out, nil
}

// setBestTx marks best as system's best row of view, and only it (none
// where best is nil).
func setBestTx(ctx context.Context, tx *sql.Tx, benchID, view, system string, best *bestRow) error {
	keep := int64(0)
	if best != nil {
		keep = best.id
	}
	if _, err := tx.ExecContext(ctx, `UPDATE board_rows SET `+view+` = 0
		WHERE benchmark_id = ? AND system_key = ? AND `+view+` = 1 AND submission_id != ?`, benchID, system, keep); err != nil {
		return err
	}
	if best == nil {
		return nil
	}
	_, err := tx.ExecContext(ctx, `UPDATE board_rows SET `+view+` = 1 WHERE submission_id = ?`, best.id)
	return err
}

// electSystemTx reads system's rows once in ranking order: the first on
// each view is its best there, which it returns (in bestViews's order),
// and the first of each of groups on each view is that group's best,
// which it keeps in board_filter_best (or removes, where the group has no
// row on the view). It stops once it has found them all.
func electSystemTx(ctx context.Context, tx *sql.Tx, benchID, system string, groups []filterGroup) ([2]*bestRow, error) {
	var best [2]*bestRow
	found := make([][2]*rankKeys, len(groups))
	rows, err := tx.QueryContext(ctx, `SELECT `+bestRowColumns+`, on_default, on_all, `+strings.Join(filterColumns[:], ", ")+`
		FROM board_rows WHERE benchmark_id = ? AND system_key = ? ORDER BY `+boardOrder, benchID, system)
	if err != nil {
		return best, err
	}
	defer rows.Close()
	missing := 2 + 2*len(groups)
	for missing > 0 && rows.Next() {
		var r bestRow
		var on [2]bool
		var vals filterValues
		if err := rows.Scan(append(r.dest(), &on[0], &on[1], &vals[0], &vals[1], &vals[2], &vals[3])...); err != nil {
			return best, err
		}
		for v := range on {
			if !on[v] {
				continue
			}
			if best[v] == nil {
				best[v] = &r
				missing--
			}
			for i, g := range groups {
				if found[i][v] == nil && g.set.val(vals) == g.val {
					found[i][v] = &r.rankKeys
					missing--
				}
			}
		}
	}
	if err := rows.Err(); err != nil {
		return best, err
	}
	rows.Close()
	for i, g := range groups {
		for v, fv := range filterViews {
			if k := found[i][v]; k != nil {
				_, err = tx.ExecContext(ctx, upsertFilterBest, k.args(benchID, fv.name, g)...)
			} else {
				_, err = tx.ExecContext(ctx, `DELETE FROM board_filter_best
					WHERE benchmark_id = ? AND view = ? AND col = ? AND val = ? AND system_key = ?`, benchID, fv.name, g.col, g.val, g.system)
			}
			if err != nil {
				return best, err
			}
		}
	}
	return best, nil
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
