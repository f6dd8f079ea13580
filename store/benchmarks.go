package store

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"

	d5list "github.com/deep500/d5list"
)

// UpsertBenchmarks stores the catalogue; running it again with the same
// definitions changes nothing, with changed ones replaces them.
func (db *DB) UpsertBenchmarks(ctx context.Context, bs []d5list.Benchmark) error {
	seen := map[string]bool{}
	for i, b := range bs {
		if b.ID == "" {
			return d5list.Errorf(d5list.EINVALID, "benchmark %d (%q): empty id", i, b.Name)
		}
		if seen[b.ID] {
			return d5list.Errorf(d5list.EINVALID, "benchmark %q appears twice", b.ID)
		}
		seen[b.ID] = true
	}
	changed := false
	err := db.writeTx(ctx, func(tx *sql.Tx) error {
		now := db.now().UnixNano()
		for _, b := range bs {
			def, err := json.Marshal(b)
			if err != nil {
				return fmt.Errorf("store: encoding benchmark %q: %w", b.ID, err)
			}
			res, err := tx.ExecContext(ctx, `INSERT INTO benchmarks (id, level, category, definition, updated_at)
				VALUES (?, ?, ?, ?, ?)
				ON CONFLICT (id) DO UPDATE SET level = excluded.level, category = excluded.category,
					definition = excluded.definition, updated_at = excluded.updated_at
				WHERE definition IS NOT excluded.definition`,
				b.ID, b.Level, b.Category, string(def), now)
			if err != nil {
				return fmt.Errorf("store: saving benchmark %q: %w", b.ID, err)
			}
			if n, _ := res.RowsAffected(); n > 0 {
				changed = true
			}
		}
		return nil
	})
	if err != nil {
		return err
	}
	// A changed definition may rank its submissions differently; an
	// unchanged one (every start seeds the catalogue) costs nothing.
	if changed {
		return db.RebuildBoards(ctx)
	}
	return nil
}

// Benchmarks lists the catalogue by level, category and id.
func (db *DB) Benchmarks(ctx context.Context) ([]d5list.Benchmark, error) {
	bs := []d5list.Benchmark{}
	err := db.readTx(ctx, func(tx *sql.Tx) error {
		rows, err := tx.QueryContext(ctx, `SELECT id, definition FROM benchmarks ORDER BY level, category, id`)
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			var id, def string
			if err := rows.Scan(&id, &def); err != nil {
				return err
			}
			b, err := decodeBenchmark(id, def)
			if err != nil {
				return err
			}
			bs = append(bs, *b)
		}
		return rows.Err()
	})
	if err != nil {
		return nil, fmt.Errorf("store: listing benchmarks: %w", err)
	}
	return bs, nil
}

// Benchmark returns one benchmark definition.
func (db *DB) Benchmark(ctx context.Context, id string) (*d5list.Benchmark, error) {
	var b *d5list.Benchmark
	err := db.readTx(ctx, func(tx *sql.Tx) (err error) {
		b, err = benchmarkTx(ctx, tx, id)
		return err
	})
	return b, err
}

func benchmarkTx(ctx context.Context, tx *sql.Tx, id string) (*d5list.Benchmark, error) {
	var def string
	err := tx.QueryRowContext(ctx, `SELECT definition FROM benchmarks WHERE id = ?`, id).Scan(&def)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, d5list.Errorf(d5list.ENOTFOUND, "benchmark %q not found", id)
	} else if err != nil {
		return nil, fmt.Errorf("store: reading benchmark %q: %w", id, err)
	}
	return decodeBenchmark(id, def)
}

func decodeBenchmark(id, def string) (*d5list.Benchmark, error) {
	var b d5list.Benchmark
	if err := json.Unmarshal([]byte(def), &b); err != nil {
		return nil, fmt.Errorf("store: benchmark %q: decoding its definition: %w", id, err)
	}
	return &b, nil
}
