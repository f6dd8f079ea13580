package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"slices"

	d5list "github.com/deep500/d5list"
	"github.com/deep500/d5list/leaderboard"
)

// What a board's charts and filter choices show is kept with the writes
// (migration 0041), so that BoardSummary reads about its own rows, never
// the board: each system's best rows summed by accelerator and framework
// name (the shares), every listed row counted by name (the filter
// choices), and for each accelerator count and declared price among the
// best rows, the best of them and whether it is on the Pareto front.

// shareCols are the names the shares group each system's best row by, and
// the filter choices every listed row by.
var shareCols = [2]string{"accelerator_name", "framework_name"}

// frontCols are the values the Pareto fronts are drawn against.
var frontCols = [2]string{"accelerators", "cost"}

// frontX is r's value of col, 0 where it declares none.
func (r *bestRow) frontX(col string) float64 {
	if col == "accelerators" {
		return float64(r.accelerators)
	}
	return r.cost
}

func (r *bestRow) name(col string) string {
	if col == "accelerator_name" {
		return r.accelName
	}
	return r.frameworkName
}

func (r *listedRow) name(col string) string {
	if col == "accelerator_name" {
		return r.accelName
	}
	return r.frameworkName
}

// withCountView is board_counts' key of view's best rows that declare a
// value of col above 0.
func withCountView(view, col string) string { return view + "\x00" + col }

// sumDeltas gathers what one write changes in a benchmark's counts and
// sums; write applies them.
type sumDeltas struct {
	counts map[string]int
	// rows counts listed rows by view and filter values, made counts of
	// every filter set by write: a seeding's election counts a million
	// rows, most of them with the values of the row before.
	rows   map[rowKey]int
	groups map[groupKey]groupSum
	// fronts: each value whose best row or count may have changed, and
	// the change of its count.
	fronts map[frontKey]int
}

type rowKey struct {
	view string
	vals filterValues
}

type groupKey struct{ view, col, name string }

type groupSum struct {
	n    int
	perf float64
}

type frontKey struct {
	view, col string
	x         float64
}

func newSumDeltas() *sumDeltas {
	return &sumDeltas{counts: map[string]int{}, rows: map[rowKey]int{}, groups: map[groupKey]groupSum{}, fronts: map[frontKey]int{}}
}

func (d *sumDeltas) size() int { return len(d.counts) + len(d.rows) + len(d.groups) + len(d.fronts) }

func (d *sumDeltas) addGroup(k groupKey, n int, perf float64) {
	s := d.groups[k]
	d.groups[k] = groupSum{s.n + n, s.perf + perf}
}

// addRow adds what a listed row adds (sign 1) or takes (-1): the counts of
// every entry of the views it is on, plain and under each filter set, and
// the filter choices' names.
func (d *sumDeltas) addRow(r *listedRow, sign int) {
	for _, v := range []struct {
		view string
		on   bool
	}{{viewOnDefault, r.onDefault}, {viewOnAll, r.onAll}} {
		if !v.on {
			continue
		}
		d.counts[v.view] += sign
		d.rows[rowKey{v.view, r.vals}] += sign
	}
	if r.onAll {
		for _, col := range shareCols {
			d.addGroup(groupKey{viewOnAll, col, r.name(col)}, sign, 0)
		}
	}
}

// addBest adds what a system's best row of view adds (sign 1) or takes
// (-1): the view's count, its shares and its fronts.
func (d *sumDeltas) addBest(view string, r *bestRow, sign int) {
	if r == nil {
		return
	}
	d.counts[view] += sign
	for _, col := range shareCols {
		d.addGroup(groupKey{view, col, r.name(col)}, sign, float64(sign)*r.perf)
	}
	for _, col := range frontCols {
		if x := r.frontX(col); x > 0 {
			d.counts[withCountView(view, col)] += sign
			d.fronts[frontKey{view, col, x}] += sign
		}
	}
}

// write applies the deltas: counts and sums are added, a group left empty
// goes, each value of a front whose rows changed has its best row elected
// again, and each changed front is walked from its lowest changed value.
// The best rows must be marked already.
func (d *sumDeltas) write(ctx context.Context, tx *sql.Tx, benchID string) error {
	for k, n := range d.rows {
		for _, s := range filterSets {
			d.counts[filterCountView(k.view, s.col(), s.val(k.vals))] += n
		}
	}
	if err := bumpCountsTx(ctx, tx, benchID, d.counts); err != nil {
		return err
	}
	for k, s := range d.groups {
		if s.n == 0 && s.perf == 0 {
			continue
		}
		if _, err := tx.ExecContext(ctx, `INSERT INTO board_groups (benchmark_id, view, col, name, n, perf) VALUES (?, ?, ?, ?, ?, ?)
			ON CONFLICT (benchmark_id, view, col, name) DO UPDATE SET n = n + excluded.n, perf = perf + excluded.perf`,
			benchID, k.view, k.col, k.name, s.n, s.perf); err != nil {
			return err
		}
		if s.n < 0 {
			if _, err := tx.ExecContext(ctx, `DELETE FROM board_groups WHERE benchmark_id = ? AND view = ? AND col = ? AND name = ? AND n <= 0`,
				benchID, k.view, k.col, k.name); err != nil {
				return err
			}
		}
	}
	changed := map[frontKey][]float64{} // per view and column (x unset): the values touched
	for k, n := range d.fronts {
		if err := electFrontValueTx(ctx, tx, benchID, k, n); err != nil {
			return err
		}
		front := frontKey{k.view, k.col, 0}
		changed[front] = append(changed[front], k.x)
	}
	for front, xs := range changed {
		if err := walkFrontTx(ctx, tx, benchID, front.view, front.col, slices.Min(xs), slices.Max(xs)); err != nil {
			return err
		}
	}
	clear(d.counts)
	clear(d.rows)
	clear(d.groups)
	clear(d.fronts)
	return nil
}

// electFrontValueTx adds n to the count of value k.x of a front and elects
// its best row again (one seek in the partial index of the view's best
// rows by that column); the value goes when no best row has it.
func electFrontValueTx(ctx context.Context, tx *sql.Tx, benchID string, k frontKey, n int) error {
	var b rankKeys
	err := tx.QueryRowContext(ctx, `SELECT submission_id, k1, sec_missing, k2, created_at FROM board_rows
		WHERE benchmark_id = ? AND `+k.view+` = 1 AND `+k.col+` = ? ORDER BY `+boardOrder+` LIMIT 1`, benchID, k.x).
		Scan(&b.id, &b.k1, &b.secMissing, &b.k2, &b.created)
	if errors.Is(err, sql.ErrNoRows) {
		_, err = tx.ExecContext(ctx, `DELETE FROM board_fronts WHERE benchmark_id = ? AND view = ? AND col = ? AND x = ?`, benchID, k.view, k.col, k.x)
		return err
	} else if err != nil {
		return err
	}
	_, err = tx.ExecContext(ctx, `INSERT INTO board_fronts (benchmark_id, view, col, x, n, submission_id, k1, sec_missing, k2, created_at, on_front)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, 0)
		ON CONFLICT (benchmark_id, view, col, x) DO UPDATE SET n = n + excluded.n, submission_id = excluded.submission_id,
			k1 = excluded.k1, sec_missing = excluded.sec_missing, k2 = excluded.k2, created_at = excluded.created_at`,
		benchID, k.view, k.col, k.x, n, b.id, b.k1, b.secMissing, b.k2, b.created)
	return err
}

// walkFrontTx marks again which values of a front are on it, from value
// from: a value is on the front where its best row's value ranks better
// than the best of every smaller value (the front's last point below it).
// Past until (the highest value changed), the first value that was on the
// front and still is ends the walk: from there on the smaller values'
// best is what it was, and so is every mark.
func walkFrontTx(ctx context.Context, tx *sql.Tx, benchID, view, col string, from, until float64) error {
	var best sql.NullFloat64
	err := tx.QueryRowContext(ctx, `SELECT k1 FROM board_fronts WHERE benchmark_id = ? AND view = ? AND col = ? AND x < ? AND on_front = 1
		ORDER BY x DESC LIMIT 1`, benchID, view, col, from).Scan(&best)
	if err != nil && !errors.Is(err, sql.ErrNoRows) {
		return err
	}
	rows, err := tx.QueryContext(ctx, `SELECT x, k1, on_front FROM board_fronts WHERE benchmark_id = ? AND view = ? AND col = ? AND x >= ?
		ORDER BY x`, benchID, view, col, from)
	if err != nil {
		return err
	}
	defer rows.Close()
	type mark struct {
		x  float64
		on bool
	}
	var marks []mark
	for rows.Next() {
		var x, k1 float64
		var was bool
		if err := rows.Scan(&x, &k1, &was); err != nil {
			return err
		}
		on := !best.Valid || k1 < best.Float64
		if on {
			best = sql.NullFloat64{Float64: k1, Valid: true}
		}
		if on != was {
			marks = append(marks, mark{x, on})
		} else if on && x > until {
			break
		}
	}
	if err := rows.Err(); err != nil {
		return err
	}
	rows.Close()
	for _, m := range marks {
		if _, err := tx.ExecContext(ctx, `UPDATE board_fronts SET on_front = ? WHERE benchmark_id = ? AND view = ? AND col = ? AND x = ?`,
			m.on, benchID, view, col, m.x); err != nil {
			return err
		}
	}
	return nil
}

// sumBestRowsTx makes the sums of each system's best rows again from the
// marked best rows (after an election of every system): the views'
// counts, the shares and the fronts. The counts of every entry and the
// filter choices come from the election's own pass.
func sumBestRowsTx(ctx context.Context, tx *sql.Tx, benchID string) error {
	for _, table := range []string{"board_groups", "board_fronts"} {
		if _, err := tx.ExecContext(ctx, `DELETE FROM `+table+` WHERE benchmark_id = ? AND view IN (?, ?)`, benchID, viewBestDefault, viewBestAll); err != nil {
			return err
		}
	}
	for _, view := range bestViews {
		if _, err := tx.ExecContext(ctx, `INSERT INTO board_counts (benchmark_id, view, n)
				SELECT ?, ?, count(*) FROM board_rows WHERE benchmark_id = ? AND `+view+` = 1
			ON CONFLICT (benchmark_id, view) DO UPDATE SET n = excluded.n`, benchID, view, benchID); err != nil {
			return err
		}
		for _, col := range shareCols {
			if _, err := tx.ExecContext(ctx, `INSERT INTO board_groups (benchmark_id, view, col, name, n, perf)
				SELECT ?, ?, ?, `+col+`, count(*), sum(perf) FROM board_rows WHERE benchmark_id = ? AND `+view+` = 1 GROUP BY `+col,
				benchID, view, col, benchID); err != nil {
				return err
			}
		}
		for _, col := range frontCols {
			if _, err := tx.ExecContext(ctx, `INSERT INTO board_counts (benchmark_id, view, n)
					SELECT ?, ?, count(*) FROM board_rows WHERE benchmark_id = ? AND `+view+` = 1 AND `+col+` > 0
				ON CONFLICT (benchmark_id, view) DO UPDATE SET n = excluded.n`, benchID, withCountView(view, col), benchID); err != nil {
				return err
			}
			if _, err := tx.ExecContext(ctx, `INSERT INTO board_fronts (benchmark_id, view, col, x, n, submission_id, k1, sec_missing, k2, created_at, on_front)
				SELECT ?, ?, ?, x, n, submission_id, k1, sec_missing, k2, created_at, 0 FROM (
					SELECT `+col+` AS x, submission_id, k1, sec_missing, k2, created_at,
						row_number() OVER (PARTITION BY `+col+` ORDER BY `+boardOrder+`) AS one,
						count(*) OVER (PARTITION BY `+col+`) AS n
					FROM board_rows WHERE benchmark_id = ? AND `+view+` = 1 AND `+col+` > 0)
				WHERE one = 1`, benchID, view, col, benchID); err != nil {
				return err
			}
			if err := walkFrontTx(ctx, tx, benchID, view, col, 0, 0); err != nil {
				return err
			}
		}
	}
	return nil
}

// maxSummaryGroups bounds the rows a summary reads of each list (declared
// prices and accelerator names can be many); a variable so that tests can
// make the bound bite.
var maxSummaryGroups = 10000

// othersGroup names, inside BoardSummary, the group that sums the names
// past maxSummaryGroups; stored names are trimmed, so none begins with a
// space.
const othersGroup = " others"

// BoardSummary is what the charts and the filter choices of a benchmark's
// board need (each system's best entry; includeUnverified picks the board
// that lists unverified ones), read from what the writes keep: the top
// entries are a range of the board's index, the fronts, shares and names
// a range of their own tables, each bounded in rows. It never passes over
// the board.
func (db *DB) BoardSummary(ctx context.Context, benchID string, includeUnverified bool) (*leaderboard.Summary, error) {
	view, on := viewBestDefault, viewOnDefault
	if includeUnverified {
		view, on = viewBestAll, viewOnAll
	}
	sum := &leaderboard.Summary{}
	var err error
	if sum.Top, sum.Total, err = db.BoardPage(ctx, benchID, leaderboard.Options{IncludeUnverified: includeUnverified}, 0, leaderboard.ChartTop); err != nil {
		return nil, err
	}
	err = db.readTx(ctx, func(tx *sql.Tx) (err error) {
		for i, p := range []struct {
			front *[]d5list.Entry
			with  *int
		}{{&sum.ParetoAccelerators, &sum.WithAccelerators}, {&sum.ParetoCost, &sum.WithCost}} {
			if *p.front, err = db.frontTx(ctx, tx, benchID, view, frontCols[i]); err != nil {
				return err
			}
			if *p.with, err = db.countTx(ctx, tx, benchID, withCountView(view, frontCols[i])); err != nil {
				return err
			}
		}
		for _, sh := range []struct {
			col    string
			shares *[]leaderboard.Share
			group  func(name string) string
		}{
			{"accelerator_name", &sum.Vendors, func(name string) string { return leaderboard.Vendor(d5list.Entry{Accelerator: name}) }},
			{"framework_name", &sum.Frameworks, func(name string) string { return leaderboard.Framework(d5list.Entry{Framework: name}) }},
		} {
			groups, err := db.groupsTx(ctx, tx, benchID, view, sh.col)
			if err != nil {
				return err
			}
			*sh.shares = leaderboard.SharesOf(groups, func(name string) string {
				if name == othersGroup {
					return "others"
				}
				return sh.group(name)
			})
		}
		if sum.Records, err = db.recordsTx(ctx, tx, benchID, on); err != nil {
			return err
		}
		if sum.AcceleratorNames, err = db.namesTx(ctx, tx, benchID, "accelerator_name"); err != nil {
			return err
		}
		sum.FrameworkNames, err = db.namesTx(ctx, tx, benchID, "framework_name")
		return err
	})
	if err != nil {
		return nil, wrap(err, "summarising the board of %q", benchID)
	}
	return sum, nil
}

// frontTx is the Pareto front of view's best entries against col, its
// best-ranked entries first (at most maxSummaryGroups).
func (db *DB) frontTx(ctx context.Context, tx *sql.Tx, benchID, view, col string) ([]d5list.Entry, error) {
	rows, err := db.queryRead(ctx, tx, `SELECT b.entry FROM board_fronts f JOIN board_rows b ON b.submission_id = f.submission_id
		WHERE f.benchmark_id = ? AND f.view = ? AND f.col = ? AND f.on_front = 1 ORDER BY f.k1, f.submission_id LIMIT ?`,
		benchID, view, col, maxSummaryGroups)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []d5list.Entry
	var raw sql.RawBytes
	for rows.Next() {
		if err := rows.Scan(&raw); err != nil {
			return nil, err
		}
		e, err := db.entries.decode(raw)
		if err != nil {
			return nil, fmt.Errorf("decoding a board entry: %w", err)
		}
		leaderboard.Finish(&e, 0)
		out = append(out, e)
	}
	return out, rows.Err()
}

func (db *DB) countTx(ctx context.Context, tx *sql.Tx, benchID, view string) (int, error) {
	n := 0
	err := db.queryRowRead(ctx, tx, `SELECT n FROM board_counts WHERE benchmark_id = ? AND view = ?`, benchID, view).Scan(&n)
	if errors.Is(err, sql.ErrNoRows) {
		return 0, nil
	}
	return n, err
}

// groupsTx is view's best entries summed by col, the largest groups first;
// past the bound the rest are summed as one group, so that the shares
// still add up to the whole board.
func (db *DB) groupsTx(ctx context.Context, tx *sql.Tx, benchID, view, col string) ([]leaderboard.GroupSum, error) {
	rows, err := db.queryRead(ctx, tx, `SELECT name, n, perf FROM board_groups WHERE benchmark_id = ? AND view = ? AND col = ?
		ORDER BY n DESC, name LIMIT ?`, benchID, view, col, maxSummaryGroups+1)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []leaderboard.GroupSum
	for rows.Next() {
		var g leaderboard.GroupSum
		if err := rows.Scan(&g.Name, &g.Entries, &g.Performance); err != nil {
			return nil, err
		}
		out = append(out, g)
	}
	if err := rows.Err(); err != nil || len(out) <= maxSummaryGroups {
		return out, err
	}
	rows.Close()
	out = out[:maxSummaryGroups]
	others := leaderboard.GroupSum{Name: othersGroup}
	if err := db.queryRowRead(ctx, tx, `SELECT sum(n), sum(perf) FROM board_groups WHERE benchmark_id = ? AND view = ? AND col = ?`,
		benchID, view, col).Scan(&others.Entries, &others.Performance); err != nil {
		return nil, err
	}
	for _, g := range out {
		others.Entries -= g.Entries
		others.Performance -= g.Performance
	}
	others.Performance = max(others.Performance, 0)
	return append(out, others), nil
}

// namesTx are the filter choices of col: the names of every entry that
// any board lists, in order.
func (db *DB) namesTx(ctx context.Context, tx *sql.Tx, benchID, col string) ([]string, error) {
	rows, err := db.queryRead(ctx, tx, `SELECT name FROM board_groups WHERE benchmark_id = ? AND view = ? AND col = ? AND name != ''
		ORDER BY name LIMIT ?`, benchID, viewOnAll, col, maxSummaryGroups)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var name string
		if err := rows.Scan(&name); err != nil {
			return nil, err
		}
		out = append(out, name)
	}
	return out, rows.Err()
}
