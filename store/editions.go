package store

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"

	d5list "github.com/deep500/d5list"
	"github.com/deep500/d5list/leaderboard"
)

// editionName keeps edition names usable as one URL path segment.
var editionName = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$`)

// ValidEditionName reports whether name may name an edition.
func ValidEditionName(name string) bool { return editionName.MatchString(name) }

// FreezeEdition stores boards as the edition name, in one transaction. The
// migration's triggers keep the rows from ever changing afterwards.
// beforeCommit, when set, runs in the transaction after its last write,
// right before the commit (and only if it gets there), with the edition
// it returns: the portal marks every board as changing there, so that
// readers keep sharing answers while the edition is encoded and written,
// and holds the edition for the readers that begin after the commit and
// before FreezeEdition returns.
func (db *DB) FreezeEdition(ctx context.Context, name, by string, boards []d5list.Leaderboard, beforeCommit func(*d5list.Edition)) (*d5list.Edition, error) {
	if !ValidEditionName(name) {
		return nil, d5list.Errorf(d5list.EINVALID, "edition name %q: use 1-64 letters, digits, '.', '_' or '-', starting with a letter or digit", name)
	}
	// Encoded before the transaction, which holds the write lock.
	type frozenBoard struct {
		data    []byte
		entries [][]byte
	}
	frozen := make([]frozenBoard, len(boards))
	for i := range boards {
		data, entries, err := encodeFrozenBoard(&boards[i])
		if err != nil {
			return nil, fmt.Errorf("store: freezing edition %q: encoding board %s: %w", name, boards[i].Benchmark.ID, err)
		}
		frozen[i] = frozenBoard{data, entries}
	}
	now := db.now()
	ed := &d5list.Edition{Name: name, FrozenAt: fromUnixNano(now.UnixNano()), FrozenBy: by, Boards: boards}
	err := db.writeTx(ctx, func(tx *sql.Tx) error {
		var n int
		if err := tx.QueryRowContext(ctx, `SELECT count(*) FROM editions WHERE name = ?`, name).Scan(&n); err != nil {
			return err
		}
		if n > 0 {
			return d5list.Errorf(d5list.ECONFLICT, "edition %q is already frozen", name)
		}
		if _, err := tx.ExecContext(ctx, `INSERT INTO editions (name, frozen_at, frozen_by) VALUES (?, ?, ?)`,
			name, now.UnixNano(), by); err != nil {
			return err
		}
		for i := range boards {
			if _, err := tx.ExecContext(ctx, `INSERT INTO edition_boards (edition, benchmark_id, board) VALUES (?, ?, ?)`,
				name, boards[i].Benchmark.ID, string(frozen[i].data)); err != nil {
				return err
			}
			if err := editionSystemsTx(ctx, tx, name, &boards[i], frozen[i].entries); err != nil {
				return err
			}
			for _, p := range leaderboard.Development([]string{name}, [][]d5list.Entry{boards[i].Entries}) {
				var tenth any
				if p.Has10th {
					tenth = p.Tenth
				}
				if _, err := tx.ExecContext(ctx, `INSERT INTO edition_board_points (edition, benchmark_id, entries, best, tenth, median) VALUES (?, ?, ?, ?, ?, ?)`,
					name, boards[i].Benchmark.ID, p.Entries, p.Best, tenth, p.Median); err != nil {
					return err
				}
			}
		}
		if beforeCommit != nil {
			beforeCommit(ed)
		}
		return nil
	})
	if err != nil {
		return nil, wrap(err, "freezing edition %q", name)
	}
	return ed, nil
}

// encodeFrozenBoard is json.Marshal(board) made of its entries' own
// encodings, which edition_systems keeps one by one, so that a freeze
// encodes each entry once.
func encodeFrozenBoard(board *d5list.Leaderboard) (data []byte, entries [][]byte, err error) {
	bench, err := json.Marshal(&board.Benchmark)
	if err != nil {
		return nil, nil, err
	}
	data = append(append(append(make([]byte, 0, 64*1024), `{"benchmark":`...), bench...), `,"entries":`...)
	if board.Entries == nil {
		return append(data, "null}"...), nil, nil
	}
	entries = make([][]byte, len(board.Entries))
	data = append(data, '[')
	for i := range board.Entries {
		if entries[i], err = json.Marshal(&board.Entries[i]); err != nil {
			return nil, nil, err
		}
		if i > 0 {
			data = append(data, ',')
		}
		data = append(data, entries[i]...)
	}
	return append(data, "]}"...), entries, nil
}

// Editions lists the frozen editions, the latest first.
func (db *DB) Editions(ctx context.Context) ([]d5list.EditionSummary, error) {
	out := []d5list.EditionSummary{}
	err := db.readTx(ctx, func(tx *sql.Tx) error {
		rows, err := tx.QueryContext(ctx, `SELECT e.name, e.frozen_at, e.frozen_by,
				coalesce((SELECT sum(p.entries) FROM edition_board_points p WHERE p.edition = e.name), 0)
			FROM editions e ORDER BY e.frozen_at DESC, e.name DESC`)
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			var e d5list.EditionSummary
			var at int64
			if err := rows.Scan(&e.Name, &at, &e.FrozenBy, &e.Entries); err != nil {
				return err
			}
			e.FrozenAt = fromUnixNano(at)
			out = append(out, e)
		}
		return rows.Err()
	})
	if err != nil {
		return nil, fmt.Errorf("store: listing editions: %w", err)
	}
	return out, nil
}

// Edition returns one frozen edition with its boards, ordered by benchmark.
func (db *DB) Edition(ctx context.Context, name string) (*d5list.Edition, error) {
	var e d5list.Edition
	err := db.readTx(ctx, func(tx *sql.Tx) error {
		var at int64
		err := tx.QueryRowContext(ctx, `SELECT name, frozen_at, frozen_by FROM editions WHERE name = ?`, name).Scan(&e.Name, &at, &e.FrozenBy)
		if errors.Is(err, sql.ErrNoRows) {
			return d5list.Errorf(d5list.ENOTFOUND, "edition %q not found", name)
		} else if err != nil {
			return err
		}
		e.FrozenAt = fromUnixNano(at)
		rows, err := tx.QueryContext(ctx, `SELECT benchmark_id, board FROM edition_boards WHERE edition = ? ORDER BY benchmark_id`, name)
		if err != nil {
			return err
		}
		defer rows.Close()
		e.Boards = []d5list.Leaderboard{}
		for rows.Next() {
			var id, data string
			if err := rows.Scan(&id, &data); err != nil {
				return err
			}
			var b d5list.Leaderboard
			if err := json.Unmarshal([]byte(data), &b); err != nil {
				return fmt.Errorf("edition %q, board %s: %w", name, id, err)
			}
			if b.Entries == nil {
				b.Entries = []d5list.Entry{}
			}
			e.Boards = append(e.Boards, b)
		}
		return rows.Err()
	})
	if err != nil {
		return nil, wrap(err, "reading edition %q", name)
	}
	return &e, nil
}

// EditionDevelopment is each benchmark's development through the editions
// (leaderboard.Development), oldest edition first, from what each freeze
// kept of its boards: no board of an edition is read for it.
func (db *DB) EditionDevelopment(ctx context.Context) (map[string][]leaderboard.DevelopmentPoint, error) {
	dev := map[string][]leaderboard.DevelopmentPoint{}
	err := db.readTx(ctx, func(tx *sql.Tx) error {
		rows, err := tx.QueryContext(ctx, `SELECT p.edition, p.benchmark_id, p.entries, p.best, p.tenth, p.median
			FROM edition_board_points p JOIN editions e ON e.name = p.edition
			ORDER BY e.frozen_at, e.name`)
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			var bench string
			var p leaderboard.DevelopmentPoint
			var tenth sql.NullFloat64
			if err := rows.Scan(&p.Edition, &bench, &p.Entries, &p.Best, &tenth, &p.Median); err != nil {
				return err
			}
			p.Tenth, p.Has10th = tenth.Float64, tenth.Valid
			dev[bench] = append(dev[bench], p)
		}
		return rows.Err()
	})
	if err != nil {
		return nil, wrap(err, "reading the editions' development")
	}
	return dev, nil
}
