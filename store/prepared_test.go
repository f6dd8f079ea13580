package store

import (
	"context"
	"database/sql"
	"fmt"
	"testing"
)

// TestPreparedReadsAreCurrentAndBounded: a kept statement reads what was
// committed after it was prepared, and past the bound queries still run,
// unkept.
func TestPreparedReadsAreCurrentAndBounded(t *testing.T) {
	ctx := context.Background()
	db := openTestDB(t, t.TempDir())
	count := func(q string) int {
		t.Helper()
		var n int
		err := db.readTx(ctx, func(tx *sql.Tx) error {
			return db.queryRowRead(ctx, tx, q).Scan(&n)
		})
		if err != nil {
			t.Fatal(err)
		}
		return n
	}
	const q = `SELECT count(*) FROM editions`
	if n := count(q); n != 0 {
		t.Fatalf("a new folder has %d editions", n)
	}
	if _, err := db.write.ExecContext(ctx, `INSERT INTO editions (name, frozen_at, frozen_by) VALUES ('2026-11', 0, 'org')`); err != nil {
		t.Fatal(err)
	}
	if n := count(q); n != 1 {
		t.Fatalf("the kept statement read %d editions after one was frozen", n)
	}
	for i := range maxPreparedReads + 10 {
		if n := count(fmt.Sprintf(`SELECT count(*) + %d FROM editions`, i)); n != i+1 {
			t.Fatalf("query %d read %d, want %d", i, n, i+1)
		}
	}
	if len(db.prepared.m) > maxPreparedReads {
		t.Fatalf("%d statements kept, the bound is %d", len(db.prepared.m), maxPreparedReads)
	}
}
