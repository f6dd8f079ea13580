package store

import (
	"context"
	"database/sql"
	"sync"
)

// preparedReads keeps the read pool's statements of the board's hot reads
// prepared, by query text. database/sql prepares a kept statement once on
// each connection and reuses it there (Tx.StmtContext); unkept, every
// read parsed its SQL again, about a tenth of what a board's rendering
// cost. Only the read pool's transactions may use them (readTx).
type preparedReads struct {
	mu sync.Mutex
	m  map[string]*sql.Stmt
}

// maxPreparedReads bounds the kept statements: the board's queries are
// built from a fixed set of views, filters and orders, their values
// bound as arguments.
const maxPreparedReads = 256

// readStmt is q prepared for tx, a transaction of the read pool, or nil
// where it cannot be kept (the bound reached, or the preparation failed:
// the caller's own query then says why).
func (db *DB) readStmt(ctx context.Context, tx *sql.Tx, q string) *sql.Stmt {
	p := &db.prepared
	p.mu.Lock()
	st, ok := p.m[q]
	if !ok && len(p.m) < maxPreparedReads {
		if prepared, err := db.read.PrepareContext(context.WithoutCancel(ctx), q); err == nil {
			if p.m == nil {
				p.m = make(map[string]*sql.Stmt)
			}
			st, p.m[q] = prepared, prepared
		}
	}
	p.mu.Unlock()
	if st == nil {
		return nil
	}
	return tx.StmtContext(ctx, st)
}

// queryRead is tx.QueryContext through a kept statement; tx must be of
// the read pool.
func (db *DB) queryRead(ctx context.Context, tx *sql.Tx, q string, args ...any) (*sql.Rows, error) {
	if st := db.readStmt(ctx, tx, q); st != nil {
		return st.QueryContext(ctx, args...)
	}
	return tx.QueryContext(ctx, q, args...)
}

// queryRowRead is tx.QueryRowContext through a kept statement; tx must be
// of the read pool.
func (db *DB) queryRowRead(ctx context.Context, tx *sql.Tx, q string, args ...any) *sql.Row {
	if st := db.readStmt(ctx, tx, q); st != nil {
		return st.QueryRowContext(ctx, args...)
	}
	return tx.QueryRowContext(ctx, q, args...)
}

// rowQuerier is what a one-row read needs: a transaction of either pool,
// or a read pool's through its kept statements (preparedTx).
type rowQuerier interface {
	QueryRowContext(ctx context.Context, q string, args ...any) *sql.Row
}

// preparedTx is a read pool transaction whose queries go through the kept
// statements.
type preparedTx struct {
	db *DB
	tx *sql.Tx
}

func (p preparedTx) QueryRowContext(ctx context.Context, q string, args ...any) *sql.Row {
	return p.db.queryRowRead(ctx, p.tx, q, args...)
}

// closePrepared closes the kept statements, before the pool.
func (db *DB) closePrepared() error {
	p := &db.prepared
	p.mu.Lock()
	defer p.mu.Unlock()
	var first error
	for q, st := range p.m {
		if err := st.Close(); err != nil && first == nil {
			first = err
		}
		delete(p.m, q)
	}
	return first
}
