package store

import (
	"context"
	"database/sql"
	"strconv"
	"strings"
	"unicode/utf8"

	d5list "github.com/deep500/d5list"
	"github.com/deep500/d5list/leaderboard"
)

// searchColumns are the board_rows columns whose names search_names keeps
// (its kind), each with an index of the best rows per board.
var searchColumns = []string{"sort_submitter", "sort_system", "framework", "accelerator"}

// Search finds text in the names of the organisations, systems,
// frameworks and accelerators of every board's default view (each
// system's best entry, as a board's own search does), and gives per board
// the first perBoard matching entries, ranked, and how many systems
// match. The names come from search_names: by substring through its
// trigram index for a text of three characters or more, by the start of
// the name for a shorter one. Each name's rows are then a range of its
// column's index. cut says that more than leaderboard.MaxSearchNames
// names matched and only the first were looked up.
func (db *DB) Search(ctx context.Context, text string, perBoard int) (found []leaderboard.Found, cut bool, err error) {
	text = strings.ToLower(strings.TrimSpace(text))
	if text == "" {
		return nil, false, nil
	}
	err = db.readTx(ctx, func(tx *sql.Tx) error {
		keys, more, err := searchNamesTx(ctx, tx, text)
		if err != nil || len(keys) == 0 {
			return err
		}
		cut = more
		// One arm per column, each a range of that column's index of the
		// best rows: an OR of the columns would be a pass over the board.
		var arms []string
		var keyArgs []any
		for _, col := range searchColumns {
			if ks := keys[col]; len(ks) > 0 {
				in := make([]string, len(ks))
				for i := range ks {
					in[i] = "?" + strconv.Itoa(3+len(keyArgs)+i) // ?1 is the benchmark, ?2 the limit
				}
				arms = append(arms, `SELECT submission_id FROM board_rows WHERE benchmark_id = ?1 AND best_default = 1 AND `+
					col+` IN (`+strings.Join(in, ", ")+`)`)
				keyArgs = append(keyArgs, ks...)
			}
		}
		q := `WITH m AS (` + strings.Join(arms, " UNION ") + `)
			SELECT b.entry, coalesce(u.organisation_confirmed AND u.organisation_key = s.submitter_key, 0), 0, count(*) OVER ()
			FROM m JOIN board_rows b ON b.submission_id = m.submission_id
				JOIN submissions s ON s.id = b.submission_id LEFT JOIN users u ON u.id = s.owner_id
			ORDER BY b.k1, b.sec_missing, b.k2, b.created_at, b.submission_id LIMIT ?2`
		benches, err := benchmarkIDsTx(ctx, tx)
		if err != nil {
			return err
		}
		for _, id := range benches {
			f := leaderboard.Found{BenchmarkID: id}
			err := db.scanBoard(ctx, tx, q, append([]any{id, perBoard}, keyArgs...), func(e *d5list.Entry, _, n int) error {
				f.Systems = n
				ranked, err := rankOfTx(ctx, tx, id, e.SubmissionID, viewBestDefault)
				if err != nil || ranked == nil {
					return err
				}
				ranked.SubmitterConfirmed = e.SubmitterConfirmed
				f.Entries = append(f.Entries, *ranked)
				return nil
			})
			if err != nil {
				return err
			}
			if f.Systems > 0 {
				found = append(found, f)
			}
		}
		return nil
	})
	return found, cut, wrap(err, "searching the boards for %q", text)
}

// searchNamesTx is the keys of the names that match text, by board_rows
// column, at most leaderboard.MaxSearchNames of them; more says that
// there were more.
func searchNamesTx(ctx context.Context, tx *sql.Tx, text string) (keys map[string][]any, more bool, err error) {
	q, args := `SELECT n.kind, n.key FROM search_names_text t JOIN search_names n ON n.id = t.rowid
		WHERE search_names_text MATCH ? LIMIT ?`, []any{`"` + strings.ReplaceAll(text, `"`, `""`) + `"`, leaderboard.MaxSearchNames + 1}
	if utf8.RuneCountInString(text) < 3 {
		// Trigrams need three characters: a shorter text is a prefix.
		q, args = `SELECT kind, key FROM search_names WHERE key >= ? AND key < ? LIMIT ?`, []any{text, text + "\U0010FFFF", leaderboard.MaxSearchNames + 1}
	}
	rows, err := tx.QueryContext(ctx, q, args...)
	if err != nil {
		return nil, false, err
	}
	defer rows.Close()
	keys = map[string][]any{}
	n := 0
	for rows.Next() {
		var kind, key string
		if err := rows.Scan(&kind, &key); err != nil {
			return nil, false, err
		}
		if n++; n > leaderboard.MaxSearchNames {
			return keys, true, nil
		}
		keys[kind] = append(keys[kind], key)
	}
	return keys, false, rows.Err()
}

// benchmarkIDsTx lists the catalogue's benchmark ids.
func benchmarkIDsTx(ctx context.Context, tx *sql.Tx) ([]string, error) {
	rows, err := tx.QueryContext(ctx, `SELECT id FROM benchmarks ORDER BY level, id`)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var ids []string
	for rows.Next() {
		var id string
		if err := rows.Scan(&id); err != nil {
			return nil, err
		}
		ids = append(ids, id)
	}
	return ids, rows.Err()
}
