package store

import (
	"context"
	"database/sql"
	"fmt"
	"math"
	"slices"

	d5list "github.com/deep500/d5list"
	"github.com/deep500/d5list/leaderboard"
)

// A board view's best result over time (leaderboard.Records) is the rows
// whose value is better than that of every row submitted before them, in
// (created_at, submission_id) order. It is kept in board_records with the
// writes, so that a summary reads the latest few instead of passing over
// the board: at a million rows that pass cost seconds on every answer
// after a change.

// recordViews are the views whose records are kept: every entry of the
// default board and of the one that includes unverified entries.
var recordViews = [2]string{viewOnDefault, viewOnAll}

// recordRow is a row as the records read it: its place in time, its
// value (ascending is better).
type recordRow struct {
	createdAt, id int64
	k1            float64
}

func (a recordRow) before(b recordRow) bool {
	return a.createdAt < b.createdAt || a.createdAt == b.createdAt && a.id < b.id
}

// recordsTx is the latest leaderboard.MaxRecords records of benchID's view
// on (viewOnDefault or viewOnAll), oldest first.
func (db *DB) recordsTx(ctx context.Context, tx *sql.Tx, benchID, on string) ([]d5list.Entry, error) {
	rows, err := db.queryRead(ctx, tx, `SELECT b.entry FROM board_records r JOIN board_rows b ON b.submission_id = r.submission_id
		WHERE r.benchmark_id = ? AND r.view = ?
		ORDER BY r.created_at DESC, r.submission_id DESC LIMIT ?`, benchID, on, leaderboard.MaxRecords)
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
	slices.Reverse(out)
	return out, rows.Err()
}

// remakeRecordsTx makes benchID's records again from its rows, one pass
// over each view's rows in time order: what a rebuild or an election of
// the whole board does once at its end.
func remakeRecordsTx(ctx context.Context, tx *sql.Tx, benchID string) error {
	if _, err := tx.ExecContext(ctx, `DELETE FROM board_records WHERE benchmark_id = ?`, benchID); err != nil {
		return err
	}
	for _, view := range recordViews {
		_, err := tx.ExecContext(ctx, `INSERT INTO board_records (benchmark_id, view, created_at, submission_id, k1)
			SELECT ?1, ?2, created_at, submission_id, k1 FROM (
				SELECT created_at, submission_id, k1,
					min(k1) OVER (ORDER BY created_at, submission_id ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING) AS before
				FROM board_rows WHERE benchmark_id = ?1 AND `+view+` = 1)
			WHERE before IS NULL OR k1 < before`, benchID, view)
		if err != nil {
			return err
		}
	}
	return nil
}

// recordChange is one row's change on a view: where it is in time, and
// its value before and after where it was and is on the view.
type recordChange struct {
	at           recordRow // its place; k1 unused
	wasOn, isOn  bool
	oldK1, newK1 float64
}

// syncRecordsTx keeps benchID's records of view in step with one row's
// change. The records before the row stay as they are (they depend on
// earlier rows only), and the running best just before it is the value of
// the last of them. After it, the records are drawn again from the old
// records after it, the row itself, and, where the row was a record and
// got worse or left, the rows it alone kept from being records: those
// after it valued from its old value up to the running best before it, a
// range of the view's index. So a change costs the records after the row
// and the rows ranked between two records, never a pass over the board.
func syncRecordsTx(ctx context.Context, tx *sql.Tx, benchID, view string, c recordChange) error {
	if !c.wasOn && !c.isOn {
		return nil
	}
	p := c.at
	bestBefore := math.Inf(1)
	err := tx.QueryRowContext(ctx, `SELECT k1 FROM board_records WHERE benchmark_id = ? AND view = ? AND (created_at, submission_id) < (?, ?)
		ORDER BY created_at DESC, submission_id DESC LIMIT 1`, benchID, view, p.createdAt, p.id).Scan(&bestBefore)
	if err != nil && err != sql.ErrNoRows {
		return err
	}
	var wasRecord bool
	if err := tx.QueryRowContext(ctx, `SELECT EXISTS (SELECT 1 FROM board_records WHERE benchmark_id = ? AND view = ? AND created_at = ? AND submission_id = ?)`,
		benchID, view, p.createdAt, p.id).Scan(&wasRecord); err != nil {
		return err
	}
	becomes := c.isOn && c.newK1 < bestBefore
	if !wasRecord && !becomes {
		// It kept no row from being a record, and keeps none.
		return nil
	}
	cands, err := recordRowsTx(ctx, tx, `SELECT created_at, submission_id, k1 FROM board_records
		WHERE benchmark_id = ? AND view = ? AND (created_at, submission_id) > (?, ?)`, benchID, view, p.createdAt, p.id)
	if err != nil {
		return err
	}
	if c.isOn {
		cands = append(cands, recordRow{p.createdAt, p.id, c.newK1})
	}
	if wasRecord && (!c.isOn || c.newK1 > c.oldK1) {
		q := `SELECT created_at, submission_id, k1 FROM board_rows INDEXED BY board_` + view + `
			WHERE benchmark_id = ? AND ` + view + ` = 1 AND k1 >= ? AND (created_at, submission_id) > (?, ?)`
		args := []any{benchID, c.oldK1, p.createdAt, p.id}
		if !math.IsInf(bestBefore, 1) {
			q += ` AND k1 < ?`
			args = append(args, bestBefore)
		}
		exposed, err := recordRowsTx(ctx, tx, q, args...)
		if err != nil {
			return err
		}
		cands = append(cands, exposed...)
	}
	slices.SortFunc(cands, func(a, b recordRow) int {
		switch {
		case a.before(b):
			return -1
		case b.before(a):
			return 1
		}
		return 0
	})
	if _, err := tx.ExecContext(ctx, `DELETE FROM board_records WHERE benchmark_id = ? AND view = ? AND (created_at, submission_id) >= (?, ?)`,
		benchID, view, p.createdAt, p.id); err != nil {
		return err
	}
	best := bestBefore
	for _, r := range cands {
		if r.k1 >= best {
			continue
		}
		best = r.k1
		if _, err := tx.ExecContext(ctx, `INSERT INTO board_records (benchmark_id, view, created_at, submission_id, k1) VALUES (?, ?, ?, ?, ?)`,
			benchID, view, r.createdAt, r.id, r.k1); err != nil {
			return err
		}
	}
	return nil
}

func recordRowsTx(ctx context.Context, tx *sql.Tx, q string, args ...any) ([]recordRow, error) {
	rows, err := tx.QueryContext(ctx, q, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []recordRow
	for rows.Next() {
		var r recordRow
		if err := rows.Scan(&r.createdAt, &r.id, &r.k1); err != nil {
			return nil, err
		}
		out = append(out, r)
	}
	return out, rows.Err()
}
