package effects

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-sql-driver/mysql"
	"github.com/redeliver/redeliver/pkg/escape"
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

func (e *LockError) Error() string { return e.Msg }

// watchLocks runs f. On PostgreSQL and MySQL, when f is still running
// after lockWait and one of redeliver's connections waits on a lock, f
// is cancelled and a LockError names the session that holds it: its
// pid (thread id), application name or user, state and query.
func (d *DB) watchLocks(ctx context.Context, what string, f func(context.Context) error) error {
	if d.kind == Postgres && d.app == "" || d.kind == MySQL && d.own == nil || d.kind == SQLite || d.lockWait <= 0 {
		return f(ctx)
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var mu sync.Mutex
	var holder, end string
	finished := false
	var t *time.Timer
	check := func() {
		c, stop := context.WithTimeout(context.Background(), d.lockWait)
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
func (d *DB) lockHolder(ctx context.Context) (string, string, error) {
	if d.kind == MySQL {
		return d.mysqlLockHolder(ctx)
	}
	var pid int32
	var app, state, query string
	err := d.db.QueryRowContext(ctx, `SELECT b.pid, coalesce(b.application_name, ''), coalesce(b.state, ''), coalesce(b.query, '')
		FROM pg_stat_activity w
		CROSS JOIN LATERAL unnest(pg_blocking_pids(w.pid)) AS k(pid)
		JOIN pg_stat_activity b ON b.pid = k.pid
		WHERE w.application_name = $1 AND w.pid <> pg_backend_pid() AND w.wait_event_type = 'Lock'
		ORDER BY b.backend_start LIMIT 1`, d.app).Scan(&pid, &app, &state, &query)
	if errors.Is(err, sql.ErrNoRows) {
		return "", "", nil
	}
	if err != nil {
		return "", "", err
	}
	verb := "running"
	if state != "active" {
		verb = "whose last query was"
	}
	if state == "" {
		state = "state unknown"
	}
	return fmt.Sprintf("backend %d (application %s, %s, %s %s)", pid, strconv.Quote(escape.Input(app)), state, verb, strconv.Quote(escape.Input(clip(query)))),
		fmt.Sprintf("SELECT pg_terminate_backend(%d)", pid), nil
}

// clip shortens a query to 200 bytes.
func clip(query string) string {
	if len(query) > 200 {
		return query[:200] + "…"
	}
	return query
}

// mysqlLockWaits are the two ways a MySQL server says which transaction
// waits for which, each giving, for a waiting thread among redeliver's
// own (the IN list, filled in), the blocking thread's id, user, host,
// command and query: MariaDB (and MySQL before 8) answer
// information_schema.innodb_lock_waits; MySQL 8 dropped it for
// performance_schema.data_lock_waits, whose thread ids are
// performance_schema's own, mapped to the processlist's by
// performance_schema.threads.
var mysqlLockWaits = [2]string{
	`SELECT b.trx_mysql_thread_id, coalesce(p.user, ''), coalesce(p.host, ''), coalesce(p.command, ''), coalesce(p.info, b.trx_query, '')
		FROM information_schema.innodb_lock_waits w
		JOIN information_schema.innodb_trx r ON r.trx_id = w.requesting_trx_id
		JOIN information_schema.innodb_trx b ON b.trx_id = w.blocking_trx_id
		LEFT JOIN information_schema.processlist p ON p.id = b.trx_mysql_thread_id
		WHERE r.trx_mysql_thread_id IN (%s) AND r.trx_mysql_thread_id <> CONNECTION_ID()
		ORDER BY b.trx_started LIMIT 1`,
	`SELECT bt.processlist_id, coalesce(bt.processlist_user, ''), coalesce(bt.processlist_host, ''), coalesce(bt.processlist_command, ''), coalesce(bt.processlist_info, '')
		FROM performance_schema.data_lock_waits w
		JOIN performance_schema.threads rt ON rt.thread_id = w.requesting_thread_id
		JOIN performance_schema.threads bt ON bt.thread_id = w.blocking_thread_id
		WHERE rt.processlist_id IN (%s) AND rt.processlist_id <> CONNECTION_ID() AND bt.processlist_id IS NOT NULL
		ORDER BY bt.processlist_id LIMIT 1`,
}

// mysqlLockHolder is lockHolder on MySQL: asked of the server's own
// account of its lock waits, in whichever of mysqlLockWaits it answers
// (the first that does is kept).
func (d *DB) mysqlLockHolder(ctx context.Context) (string, string, error) {
	ids := d.own.list()
	if len(ids) == 0 {
		return "", "", nil
	}
	var id int64
	var user, host, command, query string
	var err error
	for i := int(d.own.asked.Load()); i < len(mysqlLockWaits); i++ {
		err = d.db.QueryRowContext(ctx, fmt.Sprintf(mysqlLockWaits[i], ids)).Scan(&id, &user, &host, &command, &query)
		if !unknownTable(err) {
			d.own.asked.Store(int32(i))
			break
		}
	}
	if errors.Is(err, sql.ErrNoRows) {
		return "", "", nil
	}
	if err != nil {
		return "", "", err
	}
	doing := "idle in a transaction"
	if command != "Sleep" && query != "" {
		doing = "running " + strconv.Quote(escape.Input(clip(query)))
	}
	return fmt.Sprintf("thread %d (user %s, %s)", id, strconv.Quote(escape.Input(user+"@"+host)), doing),
		fmt.Sprintf("KILL %d", id), nil
}

// unknownTable reports whether a server has no such table (1109: an
// unknown information_schema table; 1146: no such table).
func unknownTable(err error) bool {
	var me *mysql.MySQLError
	return errors.As(err, &me) && (me.Number == 1109 || me.Number == 1146)
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

// openMySQL opens a MySQL effects database whose connections' thread ids
// are kept. A DSN the driver cannot parse is opened as before, and its
// error comes when it is first reached.
func openMySQL(dsn string) (*sql.DB, *threadIDs, error) {
	cfg, err := mysql.ParseDSN(dsn)
	if err != nil {
		db, err := sql.Open("mysql", dsn)
		return db, nil, err
	}
	c, err := mysql.NewConnector(cfg)
	if err != nil {
		return nil, nil, err
	}
	own := &threadIDs{ids: map[int64]struct{}{}}
	return sql.OpenDB(ownConnector{c, own}), own, nil
}
