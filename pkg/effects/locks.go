package effects

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"time"

	"github.com/redeliver/redeliver/pkg/escape"
)

// LockWait is how long a reset statement or a read of the effects may
// wait on a PostgreSQL lock before redeliver names what holds it and
// gives up: a consumer that died inside a transaction, or a session left
// open by hand, would otherwise make it wait without a word.
const LockWait = 3 * time.Second

// LockError is a reset or a read that waited on a lock for longer than
// LockWait; its message names the server process holding the lock.
type LockError struct{ Msg string }

func (e *LockError) Error() string { return e.Msg }

// watchLocks runs f. On PostgreSQL, when f is still running after
// lockWait and one of redeliver's connections waits on a lock, f is
// cancelled and a LockError names the process that holds it: its pid,
// application name, state and query.
func (d *DB) watchLocks(ctx context.Context, what string, f func(context.Context) error) error {
	if d.kind != Postgres || d.app == "" || d.lockWait <= 0 {
		return f(ctx)
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var mu sync.Mutex
	var holder string
	var holderPID int32
	finished := false
	var t *time.Timer
	check := func() {
		c, stop := context.WithTimeout(context.Background(), d.lockWait)
		pid, h, err := d.lockHolder(c)
		stop()
		mu.Lock()
		defer mu.Unlock()
		if finished {
			return
		}
		if err == nil && h != "" {
			holder, holderPID = h, pid
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
	h, pid := holder, holderPID
	mu.Unlock()
	if h != "" {
		return &LockError{Msg: fmt.Sprintf("%s waited more than %s for a lock on the effects database %s, held by %s: end that session (SELECT pg_terminate_backend(%d)) or let it finish, then run again",
			what, d.lockWait, d.where, h, pid)}
	}
	return err
}

// lockHolder names a server process that holds a lock one of redeliver's
// connections waits for, with its pid, or "" when none waits.
func (d *DB) lockHolder(ctx context.Context) (int32, string, error) {
	var pid int32
	var app, state, query string
	err := d.db.QueryRowContext(ctx, `SELECT b.pid, coalesce(b.application_name, ''), coalesce(b.state, ''), coalesce(b.query, '')
		FROM pg_stat_activity w
		CROSS JOIN LATERAL unnest(pg_blocking_pids(w.pid)) AS k(pid)
		JOIN pg_stat_activity b ON b.pid = k.pid
		WHERE w.application_name = $1 AND w.pid <> pg_backend_pid() AND w.wait_event_type = 'Lock'
		ORDER BY b.backend_start LIMIT 1`, d.app).Scan(&pid, &app, &state, &query)
	if errors.Is(err, sql.ErrNoRows) {
		return 0, "", nil
	}
	if err != nil {
		return 0, "", err
	}
	if len(query) > 200 {
		query = query[:200] + "…"
	}
	verb := "running"
	if state != "active" {
		verb = "whose last query was"
	}
	if state == "" {
		state = "state unknown"
	}
	return pid, fmt.Sprintf("backend %d (application %s, %s, %s %s)", pid, strconv.Quote(escape.Input(app)), state, verb, strconv.Quote(escape.Input(query))), nil
}
