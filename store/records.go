package store

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"slices"

	d5list "github.com/deep500/d5list"
	"github.com/deep500/d5list/leaderboard"
)

// recordsTx is the best result over time of benchID's board of view on
// (viewOnDefault or viewOnAll): the rows whose value is better than every
// row submitted before them (leaderboard.Records), oldest first, the
// latest leaderboard.MaxRecords. The running best is a window over the
// view's index, one pass over the board's rows with only their keys
// sorted by time; the entries are read for the records alone.
func recordsTx(ctx context.Context, tx *sql.Tx, benchID, on string) ([]d5list.Entry, error) {
	rows, err := tx.QueryContext(ctx, `WITH r AS (
			SELECT submission_id, k1,
				min(k1) OVER (ORDER BY created_at, submission_id ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING) AS before
			FROM board_rows WHERE benchmark_id = ? AND `+on+` = 1)
		SELECT b.entry FROM r JOIN board_rows b ON b.submission_id = r.submission_id
		WHERE r.before IS NULL OR r.k1 < r.before
		ORDER BY b.created_at DESC, b.submission_id DESC LIMIT ?`, benchID, leaderboard.MaxRecords)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []d5list.Entry
	for rows.Next() {
		var raw string
		if err := rows.Scan(&raw); err != nil {
			return nil, err
		}
		var e d5list.Entry
		if err := json.Unmarshal([]byte(raw), &e); err != nil {
			return nil, fmt.Errorf("decoding a board entry: %w", err)
		}
		leaderboard.Finish(&e, 0)
		out = append(out, e)
	}
	slices.Reverse(out)
	return out, rows.Err()
}
