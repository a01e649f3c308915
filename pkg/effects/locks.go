package effects

import (
	"context"
	"database/sql/driver"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// LockWait is how long a reset statement or a read of the effects may
// wait on a lock before redeliver names what holds it and gives up: a
// consumer that died inside a transaction, or a session left open by
// hand, would otherwise make it wait without a word (on MySQL, until
// innodb_lock_wait_timeout).
const LockWait = 3 * time.Second

// LockError is a reset or a read that waited on a lock for longer than
// LockWait; its message names the server process (or MySQL thread)
// holding the lock.
type LockError struct{ Msg string }

// askHolder bounds the query that names a lock's holder. It is not the
// lock wait: on a busy server a new connection alone can take longer
// than a short wait, and a query cut short at each try would name no
// holder while the read waits on.
const askHolder = 10 * time.Second

func (e *LockError) Error() string { return e.Msg }

// watchLocks runs f. On PostgreSQL and MySQL, when f is still running
// after lockWait and one of redeliver's connections waits on a lock, f
// is cancelled and a LockError names the session that holds it: its
// pid (thread id), application name or user, state and query.
func (d *DB) watchLocks(ctx context.Context, what string, f func(context.Context) error) error {
	if !d.s.watchesLocks() || d.lockWait <= 0 {
		return f(ctx)
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var mu sync.Mutex
	var holder, end string
	finished := false
	var t *time.Timer
	check := func() {
		c, stop := context.WithTimeout(context.Background(), askHolder)
		h, e, err := d.lockHolder(c)
		stop()
		mu.Lock()
		defer mu.Unlock()
		if finished {
			return
		}
		if err == nil && h != "" {
			holder, end = h, e
			cancel()
			return
		}
		t.Reset(d.lockWait)
	}
	mu.Lock()
	t = time.AfterFunc(d.lockWait, check)
	mu.Unlock()
	err := f(ctx)
	mu.Lock()
	finished = true
	t.Stop()
	h, e := holder, end
	mu.Unlock()
	if h != "" {
		return &LockError{Msg: fmt.Sprintf("%s waited more than %s for a lock on the effects database %s, held by %s: end that session (%s) or let it finish, then run again",
			what, d.lockWait, d.where, h, e)}
	}
	return err
}

// lockHolder names a session that holds a lock one of redeliver's
// connections waits for, and the statement that ends it, or "" when
// none waits.
func (d *DB) lockHolder(ctx context.Context) (string, string, error) { return d.s.lockHolder(ctx) }

// clip shortens a query to 200 bytes.
func clip(query string) string {
	if len(query) > 200 {
		return query[:200] + "…"
	}
	return query
}

// threadIDs are the thread ids of redeliver's own connections to a
// MySQL effects database, by which the lock waits that are its own are
// found.
type threadIDs struct {
	mu  sync.Mutex
	ids map[int64]struct{}
	// asked is the index in mysqlLockWaits of the one the server answers.
	asked atomic.Int32
}

// list is the ids, written for an IN list.
func (t *threadIDs) list() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	var b strings.Builder
	for id := range t.ids {
		if b.Len() > 0 {
			b.WriteByte(',')
		}
		b.WriteString(strconv.FormatInt(id, 10))
	}
	return b.String()
}

// ownConnector opens MySQL connections and keeps the thread id of each.
type ownConnector struct {
	driver.Connector
	own *threadIDs
}

// Connect opens a connection and asks its thread id. A connection that
// cannot say is used all the same: only its lock waits go unnamed.
func (c ownConnector) Connect(ctx context.Context) (driver.Conn, error) {
	conn, err := c.Connector.Connect(ctx)
	if err != nil {
		return nil, err
	}
	q, ok := conn.(driver.QueryerContext)
	if !ok {
		return conn, nil
	}
	rows, err := q.QueryContext(ctx, "SELECT CONNECTION_ID()", nil)
	if err != nil {
		return conn, nil
	}
	defer rows.Close()
	v := make([]driver.Value, 1)
	if rows.Next(v) != nil {
		return conn, nil
	}
	var id int64
	switch x := v[0].(type) {
	case int64:
		id = x
	case []byte:
		id, _ = strconv.ParseInt(string(x), 10, 64)
	}
	if id > 0 {
		c.own.mu.Lock()
		c.own.ids[id] = struct{}{}
		c.own.mu.Unlock()
	}
	return conn, nil
}
