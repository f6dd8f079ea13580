package store

import (
	"context"
	"database/sql/driver"
	"fmt"
)

// keptStatements connects the writer's pool through connections that keep
// each statement they run prepared, by its SQL text. database/sql keeps
// none for a transaction's ExecContext and QueryContext, so SQLite compiled
// every write's SQL again, its triggers included: a quarter of the CPU of
// the writes that follow an upload, a verdict or a review. The read pool
// keeps its own (preparedReads).
type keptStatements struct {
	dsn string
	drv driver.Driver
}

func (k keptStatements) Connect(context.Context) (driver.Conn, error) {
	conn, err := k.drv.Open(k.dsn)
	if err != nil {
		return nil, err
	}
	inner, ok := conn.(sqliteConn)
	if !ok {
		conn.Close()
		return nil, fmt.Errorf("store: the SQLite driver's connection (%T) lacks a method the writer needs", conn)
	}
	return &keptStatementsConn{sqliteConn: inner, kept: map[string]*keptStatement{}}, nil
}

func (k keptStatements) Driver() driver.Driver { return k.drv }

// sqliteConn is what modernc.org/sqlite's connection does that the writer
// uses; keptStatementsConn passes all of it through but statements.
type sqliteConn interface {
	driver.Conn
	driver.ConnBeginTx
	driver.ConnPrepareContext
	driver.ExecerContext
	driver.QueryerContext
	driver.Pinger
	driver.SessionResetter
	driver.Validator
}

// maxKeptStatements bounds a connection's kept statements: the writes'
// SQL comes from a fixed set of texts, their values bound as arguments;
// past the bound a new text is prepared for its one use, as before.
const maxKeptStatements = 512

// keptStatementsConn is used by one goroutine at a time (database/sql
// holds a connection for the duration of each call and of each
// transaction), so its map needs no lock.
type keptStatementsConn struct {
	sqliteConn
	kept map[string]*keptStatement
}

type keptStatement struct {
	stmt interface {
		driver.Stmt
		driver.StmtExecContext
		driver.StmtQueryContext
	}
	// open: rows of this statement are being read; running it again
	// meanwhile would reset them, so another use prepares its own.
	open bool
}

// statement is query kept prepared, or nil where it cannot be kept (the
// bound reached, the preparation failed: the caller's own call then says
// why, or the statement is being read).
func (c *keptStatementsConn) statement(ctx context.Context, query string) *keptStatement {
	if k, ok := c.kept[query]; ok {
		if k.open {
			return nil
		}
		return k
	}
	if len(c.kept) >= maxKeptStatements {
		return nil
	}
	s, err := c.sqliteConn.PrepareContext(ctx, query)
	if err != nil {
		return nil
	}
	k := &keptStatement{}
	var ok bool
	if k.stmt, ok = s.(interface {
		driver.Stmt
		driver.StmtExecContext
		driver.StmtQueryContext
	}); !ok {
		s.Close()
		return nil
	}
	c.kept[query] = k
	return k
}

func (c *keptStatementsConn) ExecContext(ctx context.Context, query string, args []driver.NamedValue) (driver.Result, error) {
	k := c.statement(ctx, query)
	if k == nil {
		return c.sqliteConn.ExecContext(ctx, query, args)
	}
	return k.stmt.ExecContext(ctx, args)
}

func (c *keptStatementsConn) QueryContext(ctx context.Context, query string, args []driver.NamedValue) (driver.Rows, error) {
	k := c.statement(ctx, query)
	if k == nil {
		return c.sqliteConn.QueryContext(ctx, query, args)
	}
	rows, err := k.stmt.QueryContext(ctx, args)
	if err != nil {
		return nil, err
	}
	k.open = true
	return &keptRows{Rows: rows, statement: k}, nil
}

// Close closes the kept statements, then the connection.
func (c *keptStatementsConn) Close() error {
	for q, k := range c.kept {
		k.stmt.Close()
		delete(c.kept, q)
	}
	return c.sqliteConn.Close()
}

// keptRows frees its statement for the next use when closed.
type keptRows struct {
	driver.Rows
	statement *keptStatement
}

func (r *keptRows) Close() error {
	r.statement.open = false
	return r.Rows.Close()
}
