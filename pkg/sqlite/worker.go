package sqlite

import (
	"context"
	"database/sql"
	"fmt"

	"github.com/redeliver/redeliver/pkg/handler"
)

// Worker is the store one worker of a concurrent step writes through: the
// same database on a connection of its own, so racing workers contend for
// SQLite's write lock the way separate consumer processes do.
type Worker struct {
	conn *sql.Conn
	q    *queries
}

// Worker opens a connection of its own for one concurrent worker. The
// caller closes it (the returned store is an io.Closer).
func (d *DB) Worker(ctx context.Context) (handler.Store, error) {
	c, err := d.db.Conn(ctx)
	if err != nil {
		return nil, fmt.Errorf("open a worker connection to %s: %w", d.path, err)
	}
	return &Worker{conn: c, q: &d.q}, nil
}

// Begin starts a write transaction (BEGIN IMMEDIATE) on the worker's connection.
func (w *Worker) Begin(ctx context.Context) (handler.Tx, error) { return begin(ctx, w.conn, w.q) }

// Close gives the connection back.
func (w *Worker) Close() error { return w.conn.Close() }

// WriteLockOnBegin reports that a transaction holds the database's one
// write lock from BEGIN (IMMEDIATE) to its end: while a worker is inside a
// transaction, no other worker can begin one.
func (d *DB) WriteLockOnBegin() bool { return true }
