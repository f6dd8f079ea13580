package store

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	d5list "github.com/deep500/d5list"
	"github.com/deep500/d5list/leaderboard"
)

// boardQuery is the SQL of rows offset to offset+limit (limit -1: all) of
// one board as opt selects it, in rank order (or opt.Sort's), each row
// with its rank on that board and the board's row count: the entry's JSON,
// whether an organiser confirmed its organisation, the rank, the count.
// Only the rows it returns are joined to their submissions and owners
// (for that confirmation): the ranking, the count and the page are made
// from board_rows alone. counted says the count is not in the rows but
// kept in board_counts, and the rows come without their ranks: the caller
// numbers them from offset, down from the count where reversed (the score
// column worst first, the same partial index read backwards). lead is the
// filter column whose index reads every entry under several filters
// (leadFilterTx).
func boardQuery(benchID string, opt leaderboard.Options, offset, limit int, lead int) (q string, args []any, counted, reversed bool) {
	opt = opt.Normalized()
	on := viewOnDefault
	if opt.IncludeUnverified {
		on = viewOnAll
	}
	const pick = `SELECT b.entry, coalesce(u.organisation_confirmed AND u.organisation_key = s.submitter_key, 0)`
	const join = ` JOIN submissions s ON s.id = b.submission_id LEFT JOIN users u ON u.id = s.owner_id`
	f, filtered := filterOf(opt)
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
		case !filtered && !opt.AllPerSystem:
			// Each system's best: board_ranked, in this order on disk.
			q = `SELECT b.entry, coalesce(u.organisation_confirmed AND u.organisation_key = b.submitter_key, 0), 0, 0
				FROM board_ranked b LEFT JOIN users u ON u.id = b.owner_id
				WHERE b.benchmark_id = ? AND b.best_all = ? ORDER BY ` + rankOrder("b") + tail
			return q, []any{benchID, opt.IncludeUnverified, limit, offset}, true, reversed
		case !filtered:
			// Every entry: a partial index.
			q = pick + `, 0, 0 FROM board_rows b` + join + ` WHERE b.benchmark_id = ? AND b.` + on + ` = 1 ORDER BY ` + rankOrder("b") + tail
			return q, []any{benchID, limit, offset}, true, reversed
		case opt.AllPerSystem:
			// Every entry with the filters' values: the index of one of
			// their columns, the one with the fewest entries, the other
			// values checked on the rows it gives.
			where := ` WHERE b.benchmark_id = ? AND b.` + filterColumns[lead] + ` = ? AND b.on_all = 1 AND b.` + on + ` = 1`
			args = []any{benchID, f.vals[lead]}
			for i, col := range filterColumns {
				if i != lead && f.set&(1<<i) != 0 {
					where, args = where+` AND b.`+col+` = ?`, append(args, f.vals[i])
				}
			}
			q = pick + `, 0, 0 FROM board_rows b INDEXED BY board_on_all_by_` + filterColumns[lead] + join + where + ` ORDER BY ` + rankOrder("b") + tail
			return q, append(args, limit, offset), true, reversed
		default:
			// Each system's best under the filters: board_filter_best's
			// index.
			q = pick + `, 0, 0 FROM board_filter_best f JOIN board_rows b ON b.submission_id = f.submission_id` + join +
				` WHERE f.benchmark_id = ? AND f.view = ? AND f.col = ? AND f.val = ? ORDER BY ` + rankOrder("f") + tail
			return q, []any{benchID, f.view, f.col, f.val, limit, offset}, true, reversed
		}
	}
	const cols = `submission_id, k1, sec_missing, k2, created_at, search, sort_submitter, sort_system`
	switch {
	case !opt.AllPerSystem && !filtered:
		// Each system's best row: a search or another order reads those,
		// one row per system, from board_ranked.
		q = `WITH v AS (SELECT ` + cols + ` FROM board_ranked WHERE benchmark_id = ? AND best_all = ?)`
		args = []any{benchID, opt.IncludeUnverified}
	case !opt.AllPerSystem:
		// So is each system's best under the filters.
		q = `WITH v AS (SELECT ` + prefixed("b.", cols) + ` FROM board_filter_best f JOIN board_rows b ON b.submission_id = f.submission_id
			WHERE f.benchmark_id = ? AND f.view = ? AND f.col = ? AND f.val = ?)`
		args = []any{benchID, f.view, f.col, f.val}
	default:
		// Every row of the view with the filters' values.
		where := []string{"benchmark_id = ?", on + " = 1"}
		args = []any{benchID}
		for i, val := range f.vals {
			if val != "" {
				where, args = append(where, filterColumns[i]+" = ?"), append(args, val)
			}
		}
		q = `WITH v AS (SELECT ` + cols + ` FROM board_rows WHERE ` + strings.Join(where, " AND ") + `)`
	}
	q += `, r AS (SELECT *, row_number() OVER (ORDER BY ` + boardOrder + `) AS rank FROM v)`
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
	if !opt.AllPerSystem && !filtered {
		// The page's entries are board_ranked's rows too.
		q += ` SELECT b.entry, coalesce(u.organisation_confirmed AND u.organisation_key = b.submitter_key, 0), page.rank, page.n
			FROM page JOIN board_ranked b ON b.submission_id = page.submission_id AND b.benchmark_id = ? AND b.best_all = ?
			LEFT JOIN users u ON u.id = b.owner_id ORDER BY ` + prefixed("page.", order)
		return q, append(args, benchID, opt.IncludeUnverified), false, false
	}
	q += ` ` + pick + `, page.rank, page.n FROM page JOIN board_rows b ON b.submission_id = page.submission_id` + join +
		` ORDER BY ` + prefixed("page.", order)
	return q, args, false, false
}

// leadFilterTx is, for a board of every entry under filters, the index in
// filterColumns of the filter whose value has the fewest entries (their
// counts are kept): its index is the shortest to read for the others.
func (db *DB) leadFilterTx(ctx context.Context, tx *sql.Tx, benchID string, opt leaderboard.Options) (int, error) {
	f, _ := filterOf(opt.Normalized())
	lead, fewest := -1, 0
	for i, col := range filterColumns {
		if f.set&(1<<i) == 0 {
			continue
		}
		if f.set == 1<<i {
			return i, nil // the only one
		}
		n, err := db.countTx(ctx, tx, benchID, filterCountView(viewOnAll, col, f.vals[i]))
		if err != nil {
			return 0, err
		}
		if lead < 0 || n < fewest {
			lead, fewest = i, n
		}
	}
	return lead, nil
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
// about the page's rows for each system's best, plain or under any
// filters, and for every entry, plain or under one filter (under several,
// the rows of the fewest entries' filter read until the page is full); a
// search or another order of each system's best costs about a row per
// system; a search or another order of every entry costs a pass over the
// benchmark's index rows. It never reads a submission beyond the page's.
func (db *DB) BoardPage(ctx context.Context, benchID string, opt leaderboard.Options, offset, limit int) ([]d5list.Entry, int, error) {
	entries := []d5list.Entry{}
	total := 0
	counted := false
	err := db.readTx(ctx, func(tx *sql.Tx) error {
		lead, err := db.leadFilterTx(ctx, tx, benchID, opt)
		if err != nil {
			return err
		}
		q, args, isCounted, reversed := boardQuery(benchID, opt, offset, limit, lead)
		if counted = isCounted; counted {
			if total, err = db.boardCountTx(ctx, tx, benchID, opt); err != nil {
				return err
			}
		}
		return db.scanBoard(ctx, tx, q, args, func(e *d5list.Entry, rank, n int) error {
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
	err := db.readTx(ctx, func(tx *sql.Tx) error {
		lead, err := db.leadFilterTx(ctx, tx, benchID, opt)
		if err != nil {
			return err
		}
		q, args, counted, reversed := boardQuery(benchID, opt, 0, -1, lead)
		rank, step := 0, 1
		if reversed {
			total, err := db.boardCountTx(ctx, tx, benchID, opt)
			if err != nil {
				return err
			}
			rank, step = total+1, -1
		}
		return db.scanBoard(ctx, tx, q, args, func(e *d5list.Entry, r, _ int) error {
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

// boardCountTx is the row count of the board opt selects in ranking order
// without a search: kept in board_counts, except each system's best under
// filters, which counts its systems in board_filter_best's index.
func (db *DB) boardCountTx(ctx context.Context, tx *sql.Tx, benchID string, opt leaderboard.Options) (int, error) {
	o := opt.Normalized()
	on, best := viewOnDefault, viewBestDefault
	if o.IncludeUnverified {
		on, best = viewOnAll, viewBestAll
	}
	f, filtered := filterOf(o)
	switch {
	case filtered && o.AllPerSystem:
		return db.countTx(ctx, tx, benchID, filterCountView(on, f.col, f.val))
	case filtered:
		total := 0
		err := db.queryRowRead(ctx, tx, `SELECT count(*) FROM board_filter_best WHERE benchmark_id = ? AND view = ? AND col = ? AND val = ?`,
			benchID, f.view, f.col, f.val).Scan(&total)
		return total, err
	case o.AllPerSystem:
		return db.countTx(ctx, tx, benchID, on)
	}
	return db.countTx(ctx, tx, benchID, best)
}

func (db *DB) scanBoard(ctx context.Context, tx *sql.Tx, q string, args []any, fn func(e *d5list.Entry, rank, total int) error) error {
	rows, err := db.queryRead(ctx, tx, q, args...)
	if err != nil {
		return err
	}
	defer rows.Close()
	var raw sql.RawBytes
	for rows.Next() {
		var confirmed bool
		var rank, total int
		if err := rows.Scan(&raw, &confirmed, &rank, &total); err != nil {
			return err
		}
		e, err := db.entries.decode(raw)
		if err != nil {
			return fmt.Errorf("decoding a board entry: %w", err)
		}
		e.SubmitterConfirmed = confirmed
		if err := fn(&e, rank, total); err != nil {
			return err
		}
	}
	return rows.Err()
}

// LatestOnBoard is the n newest entries of the default board of benchID
// (each system's best), newest first, each with its rank: the systems
// ahead of it counted in the board's index, a cost that grows with the
// rank, bounded by the systems on the board, not its entries.
func (db *DB) LatestOnBoard(ctx context.Context, benchID string, n int) ([]d5list.Entry, error) {
	q := `SELECT b.entry, coalesce(u.organisation_confirmed AND u.organisation_key = s.submitter_key, 0), 0, 0
		FROM board_rows b JOIN submissions s ON s.id = b.submission_id LEFT JOIN users u ON u.id = s.owner_id
		WHERE b.benchmark_id = ? AND b.best_default = 1 ORDER BY b.created_at DESC, b.submission_id DESC LIMIT ?`
	var out []d5list.Entry
	err := db.readTx(ctx, func(tx *sql.Tx) error {
		err := db.scanBoard(ctx, tx, q, []any{benchID, n}, func(e *d5list.Entry, _, _ int) error {
			out = append(out, *e)
			return nil
		})
		if err != nil {
			return err
		}
		// Each with its rank, as its row on the board shows it: the
		// default board has a row per system, so the count is of the
		// systems ahead.
		for i := range out {
			var ahead int
			if err := tx.QueryRowContext(ctx, `SELECT count(*) FROM board_rows a JOIN board_rows b ON b.submission_id = ?
				WHERE a.benchmark_id = b.benchmark_id AND a.best_default = 1
				AND (a.k1, a.sec_missing, a.k2, a.created_at, a.submission_id) < (b.k1, b.sec_missing, b.k2, b.created_at, b.submission_id)`,
				out[i].SubmissionID).Scan(&ahead); err != nil {
				return err
			}
			leaderboard.Finish(&out[i], ahead+1)
		}
		return nil
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
