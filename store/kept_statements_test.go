package store

import (
	"context"
	"database/sql"
	"testing"
)

// keptCount is how many statements the writer's connection keeps, and
// whether q is one of them.
func keptCount(t *testing.T, db *DB, q string) (int, bool) {
	t.Helper()
	conn, err := db.write.Conn(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	n, has := -1, false
	err = conn.Raw(func(dc any) error {
		kept := dc.(*keptStatementsConn).kept
		_, has = kept[q]
		n = len(kept)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return n, has
}

// The writer runs each SQL text through one kept statement: again and
// again, inside a read of its own rows, and across a change of the schema
// it reads, with the answers a fresh statement gives.
func TestWriterKeepsItsStatements(t *testing.T) {
	db, _ := newTestDB(t)
	ctx := context.Background()
	exec := func(q string, args ...any) {
		t.Helper()
		if err := db.writeTx(ctx, func(tx *sql.Tx) error {
			_, err := tx.ExecContext(ctx, q, args...)
			return err
		}); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	exec(`CREATE TABLE kept_probe (id INTEGER PRIMARY KEY, name TEXT NOT NULL)`)
	const insert = `INSERT INTO kept_probe (id, name) VALUES (?, ?)`
	exec(insert, 1, "one")
	before, has := keptCount(t, db, insert)
	if !has {
		t.Fatalf("the INSERT was not kept (%d statements are)", before)
	}
	for i := 2; i <= 5; i++ {
		exec(insert, i, "more")
	}
	if after, _ := keptCount(t, db, insert); after != before {
		t.Fatalf("the same INSERT four times more: %d statements kept, then %d; want it kept once", before, after)
	}

	// The same query inside a read of its own rows: the inner one cannot
	// reset the outer one's rows.
	const pick = `SELECT id FROM kept_probe WHERE id >= ? ORDER BY id`
	var pairs int
	err := db.writeTx(ctx, func(tx *sql.Tx) error {
		outer, err := tx.QueryContext(ctx, pick, 1)
		if err != nil {
			return err
		}
		defer outer.Close()
		for outer.Next() {
			var id int
			if err := outer.Scan(&id); err != nil {
				return err
			}
			inner, err := tx.QueryContext(ctx, pick, id)
			if err != nil {
				return err
			}
			for inner.Next() {
				pairs++
			}
			if err := inner.Close(); err != nil {
				return err
			}
		}
		return outer.Err()
	})
	if err != nil {
		t.Fatal(err)
	}
	if pairs != 5+4+3+2+1 {
		t.Fatalf("the query inside its own rows gave %d pairs, want 15", pairs)
	}

	// A kept INSERT after the table gained a column, and a kept SELECT of
	// every column after it.
	var cols int
	countCols := func() {
		t.Helper()
		if err := db.writeTx(ctx, func(tx *sql.Tx) error {
			rows, err := tx.QueryContext(ctx, `SELECT * FROM kept_probe WHERE id = ?`, 1)
			if err != nil {
				return err
			}
			defer rows.Close()
			c, err := rows.Columns()
			cols = len(c)
			return err
		}); err != nil {
			t.Fatal(err)
		}
	}
	countCols()
	exec(`ALTER TABLE kept_probe ADD COLUMN note TEXT NOT NULL DEFAULT 'new'`)
	exec(insert, 6, "after")
	countCols()
	var n int
	var note string
	if err := db.write.QueryRowContext(ctx, `SELECT count(*), max(note) FROM kept_probe`).Scan(&n, &note); err != nil {
		t.Fatal(err)
	}
	if n != 6 || note != "new" || cols != 3 {
		t.Fatalf("after the new column: %d rows, note %q, %d columns read by the kept SELECT *; want 6, \"new\", 3", n, note, cols)
	}
}
