// Package sqlite is the embedded store: the handler's tables on
// modernc.org/sqlite, in memory or in a file (WAL).
//
// It implements pkg/ledger's interfaces and decides the built-in replay's
// invariants in SQL. Of this module it imports pkg/consumer, pkg/escape,
// pkg/handler, pkg/invariant, pkg/ledger and pkg/problem; it links
// modernc.org/sqlite, and no broker client or other store.
package sqlite

import (
	"context"
	"crypto/rand"
	"database/sql"
	_ "embed"
	"encoding/hex"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"text/template"
	"time"

	"github.com/redeliver/redeliver/pkg/handler"
	_ "modernc.org/sqlite" // the "sqlite" database/sql driver
	sqlite3 "modernc.org/sqlite/lib"
)

//go:embed schema.sql
var schemaSQL string

var schema = template.Must(template.New("schema").Parse(schemaSQL))

// Memory is the path that names an in-memory database.
const Memory = ":memory:"

// timeLayout is fixed-width, so stored times sort as text and stay readable.
const timeLayout = "2006-01-02T15:04:05.000000000Z"

// formatTime writes t as text that sorts as t does. Years 0 to 9999 are
// timeLayout; a later year (a scenario clock advanced that far) is written
// after a "~" and its number of digits, so that it sorts after every
// four-digit year and before every longer one: "~510000-01-01T…".
func formatTime(t time.Time) string {
	t = t.UTC()
	if y := t.Year(); y > 9999 {
		ys := strconv.Itoa(y)
		return "~" + string(rune('0'+len(ys))) + ys + t.Format(timeLayout[4:])
	}
	return t.Format(timeLayout)
}

// parseTime reads what formatTime wrote.
func parseTime(s string) (time.Time, error) {
	if !strings.HasPrefix(s, "~") || len(s) < 2 {
		return time.Parse(timeLayout, s)
	}
	n := int(s[1] - '0')
	if n < 5 || len(s) < 2+n {
		return time.Time{}, fmt.Errorf("bad time %q", s)
	}
	y, err := strconv.Atoi(s[2 : 2+n])
	if err != nil {
		return time.Time{}, err
	}
	// The rest is read in a leap year, so that 29 February parses.
	t, err := time.Parse(timeLayout, "2000"+s[2+n:])
	if err != nil {
		return time.Time{}, err
	}
	return time.Date(y, t.Month(), t.Day(), t.Hour(), t.Minute(), t.Second(), t.Nanosecond(), time.UTC), nil
}

// ValidTableName reports whether name can be an effect table: the
// handler's one rule, checked again because the name becomes SQL text.
func ValidTableName(name string) bool { return handler.ValidEffectTable(name) }

// DB is one scenario's (or one replay's) database.
type DB struct {
	db     *sql.DB
	anchor *sql.Conn // held open for the life of the database
	path   string
	lock   *fileLock // the file's lock, nil in memory
	effect string
	q      queries
	// private: the database lives in its one connection, the anchor.
	private bool
}

type queries struct {
	marker, insertMarker, insertEffect, insertEffectAt, effectOf, effectByKey, purge string
	// cache holds the statements prepared on the pool, so that a delivery
	// does not parse its statements again (nil: each is prepared per use).
	cache *stmtCache
	// version counts the commits (and restores) since the database was
	// made: while it stands still, what the database holds is unchanged.
	version *atomic.Uint64
}

// stmtCache is the statements of one database, each prepared once on the
// pool: a transaction binds it to its connection, where database/sql
// prepares it once per connection.
type stmtCache struct {
	db *sql.DB
	mu sync.Mutex
	m  map[string]*sql.Stmt
}

// prepare prepares queries on the pool. It runs before any transaction:
// preparing reads the schema, which an in-memory database's write lock
// (held from BEGIN IMMEDIATE) keeps other connections from.
func (c *stmtCache) prepare(ctx context.Context, queries ...string) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.m == nil {
		c.m = map[string]*sql.Stmt{}
	}
	for _, q := range queries {
		if _, ok := c.m[q]; ok {
			continue
		}
		s, err := c.db.PrepareContext(ctx, q)
		if err != nil {
			return err
		}
		c.m[q] = s
	}
	return nil
}

// get returns the prepared statement of query, or nil.
func (c *stmtCache) get(query string) *sql.Stmt {
	if c == nil {
		return nil
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.m[query]
}

func (c *stmtCache) close() {
	if c == nil {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, s := range c.m {
		s.Close()
	}
	c.m = nil
}

// query runs a query of the pool through the cache.
func (d *DB) query(ctx context.Context, query string, args ...any) (*sql.Rows, error) {
	if s := d.q.cache.get(query); s != nil {
		return s.QueryContext(ctx, args...)
	}
	return d.db.QueryContext(ctx, query, args...)
}

// Create opens a fresh database for cfg at path (":memory:" or a file). An
// existing file is emptied only if it is a regular file redeliver made; the
// file stays locked against other redeliver processes until Close.
func Create(ctx context.Context, path string, cfg handler.Config) (*DB, error) {
	if !ValidTableName(cfg.Effect) {
		return nil, fmt.Errorf("effect table name %q is not a plain SQL identifier", cfg.Effect)
	}
	var lock *fileLock
	if path != Memory {
		var err error
		if lock, err = claimFresh(ctx, path); err != nil {
			return nil, err
		}
	}
	d, err := open(path)
	if err != nil {
		lock.release()
		return nil, err
	}
	d.lock = lock
	d.effect = cfg.Effect
	d.q = makeQueries(cfg.Effect)
	d.q.version = new(atomic.Uint64)
	if err := d.createSchema(ctx, cfg); err != nil {
		d.Close()
		return nil, err
	}
	d.q.cache = &stmtCache{db: d.db}
	if err := d.q.cache.prepare(ctx, d.q.marker, d.q.insertMarker, d.q.insertEffect, d.q.effectOf, d.q.effectByKey, d.q.purge,
		countQuery(handler.MarkerTable), countQuery(cfg.Effect), markersQuery, effectsQuery(cfg.Effect)); err != nil {
		d.Close()
		return nil, err
	}
	return d, nil
}

// claimFresh locks path and empties it if an earlier run of redeliver made
// it, in place (the lock is on the file), refusing anything else.
func claimFresh(ctx context.Context, path string) (*fileLock, error) {
	lock, err := lockFile(path)
	if err != nil {
		return nil, err
	}
	size, err := lock.size()
	if err == nil && size > 0 {
		var ours bool
		if _, ours, err = readMeta(ctx, path); err == nil && !ours {
			err = fmt.Errorf("%s exists and is %w; choose another --db path", quote(path), ErrNotOurs)
		}
	}
	if err == nil {
		err = removeSidecars(path)
	}
	if err == nil && size > 0 {
		err = lock.f.Truncate(0)
	}
	if err != nil {
		lock.release()
		return nil, err
	}
	return lock, nil
}

func open(path string) (*DB, error) {
	if path != Memory {
		if err := checkPath(path); err != nil {
			return nil, err
		}
	}
	// Every worker of a concurrent step gets its own connection, and a
	// connection waits up to busyTimeout for the write lock (SQLite's busy
	// handler sleeps 1, 2, 5 … 100 ms between tries) before it gives up with
	// SQLITE_BUSY, which the handler reports as a failed delivery.
	params := "_txlock=immediate&_pragma=busy_timeout(" + strconv.Itoa(busyTimeout) + ")&_pragma=foreign_keys(1)"
	dsn := path + "?" + params + "&_pragma=journal_mode(WAL)&_pragma=synchronous(NORMAL)"
	if path == Memory {
		// A plain :memory: database lives in one connection. A named
		// database on the memdb VFS is shared by every connection of this
		// process that opens the same name, with SQLite's ordinary locking
		// (so BEGIN IMMEDIATE and busy_timeout behave as on a file), and
		// vanishes with its last connection.
		var name [8]byte
		if _, err := rand.Read(name[:]); err != nil {
			return nil, err
		}
		dsn = "file:/redeliver-" + hex.EncodeToString(name[:]) + "?vfs=memdb&" + params
	}
	return openDSN(dsn, path)
}

// openDSN opens a pool on dsn and holds one connection of it.
func openDSN(dsn, path string) (*DB, error) {
	db, err := sql.Open("sqlite", dsn)
	if err != nil {
		return nil, fmt.Errorf("open %s: %w", path, err)
	}
	db.SetMaxOpenConns(0)
	db.SetMaxIdleConns(4)
	db.SetConnMaxLifetime(0)
	db.SetConnMaxIdleTime(0)
	// One connection is held for the life of the database: an in-memory
	// database lives as long as one connection to it is open.
	conn, err := db.Conn(context.Background())
	if err != nil {
		db.Close()
		return nil, fmt.Errorf("open %s: %w", path, err)
	}
	if err := conn.PingContext(context.Background()); err != nil {
		conn.Close()
		db.Close()
		return nil, fmt.Errorf("open %s: %w", path, err)
	}
	return &DB{db: db, anchor: conn, path: path}, nil
}

// busyTimeout is how long, in milliseconds, a connection waits for the
// write lock before it gives up with SQLITE_BUSY.
const busyTimeout = 5000

func (d *DB) createSchema(ctx context.Context, cfg handler.Config) error {
	// The schema is made whole or not at all, even when the run is being
	// interrupted: a half-made file would not be recognised as ours.
	ctx = context.WithoutCancel(ctx)
	s := cfg.Strategy
	var b strings.Builder
	err := schema.Execute(&b, map[string]any{
		"Effect":       cfg.Effect,
		"MarkerKey":    s != handler.CheckThenAct,
		"EffectUnique": s.Safe(),
		"KeyUnique":    s.Safe() && s.UsesKey(),
		"UsesKey":      s.UsesKey(),
	})
	if err != nil {
		return err
	}
	tx, err := d.anchor.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer tx.Rollback()
	if _, err := tx.ExecContext(ctx, b.String()); err != nil {
		return fmt.Errorf("create schema: %w", err)
	}
	if _, err := tx.ExecContext(ctx, `INSERT INTO redeliver_meta(key, value) VALUES ('strategy', ?), ('effect', ?)`, string(s), cfg.Effect); err != nil {
		return fmt.Errorf("create schema: %w", err)
	}
	return tx.Commit()
}

func makeQueries(effect string) queries {
	t := `"` + effect + `"`
	return queries{
		marker:         `SELECT identity, COALESCE(business_key, ''), processed_at FROM processed WHERE event_id = ? AND consumer = ? LIMIT 1`,
		insertMarker:   `INSERT INTO processed(event_id, consumer, identity, business_key, processed_at) VALUES (?, ?, ?, NULLIF(?, ''), ?)`,
		insertEffect:   `INSERT INTO ` + t + `(event_id, consumer, business_key, payload, created_at) VALUES (?, ?, NULLIF(?, ''), ?, ?)`,
		insertEffectAt: `INSERT INTO ` + t + `(id, event_id, consumer, business_key, payload, created_at) VALUES (?, ?, ?, NULLIF(?, ''), ?, ?)`,
		effectOf:       `SELECT id FROM ` + t + ` WHERE event_id = ? AND consumer = ? ORDER BY id LIMIT 1`,
		effectByKey:    `SELECT id, event_id FROM ` + t + ` WHERE business_key = ? ORDER BY id LIMIT 1`,
		purge:          `DELETE FROM processed WHERE processed_at < ?`,
	}
}

// Version changes whenever a transaction of the handler's stores commits
// (or a snapshot is restored): while it stands still, what the database
// holds has not changed. Only the handler's transactions write to it.
func (d *DB) Version() uint64 {
	if d.q.version == nil {
		return 0
	}
	return d.q.version.Load()
}

// Path returns where the database lives.
func (d *DB) Path() string { return d.path }

// Close closes the database.
func (d *DB) Close() error {
	d.q.cache.close()
	d.anchor.Close()
	err := d.db.Close()
	// SQLite's own locks are gone once its connections are: only then may
	// the lock's descriptor be closed (closing any descriptor of a file
	// drops a process's POSIX locks on it).
	d.lock.release()
	return err
}

// Begin starts a write transaction (BEGIN IMMEDIATE).
func (d *DB) Begin(ctx context.Context) (handler.Tx, error) {
	return begin(ctx, d.db, &d.q)
}

// beginner is the pool or one connection of it.
type beginner interface {
	BeginTx(ctx context.Context, opts *sql.TxOptions) (*sql.Tx, error)
}

func begin(ctx context.Context, c beginner, q *queries) (handler.Tx, error) {
	tx, err := c.BeginTx(ctx, nil)
	if err != nil {
		return nil, wrap("begin", err)
	}
	return &txn{tx: tx, q: q}, nil
}

type txn struct {
	tx *sql.Tx
	q  *queries
}

// queryRow runs one of the handler's queries in the transaction, prepared
// once per connection when the database caches its statements.
func (t *txn) queryRow(ctx context.Context, query string, args ...any) *sql.Row {
	if s := t.q.cache.get(query); s != nil {
		return t.tx.StmtContext(ctx, s).QueryRowContext(ctx, args...)
	}
	return t.tx.QueryRowContext(ctx, query, args...)
}

func (t *txn) exec(ctx context.Context, query string, args ...any) (sql.Result, error) {
	if s := t.q.cache.get(query); s != nil {
		return t.tx.StmtContext(ctx, s).ExecContext(ctx, args...)
	}
	return t.tx.ExecContext(ctx, query, args...)
}

func (t *txn) Marker(ctx context.Context, eventID, consumer string) (handler.Marker, bool, error) {
	m := handler.Marker{EventID: eventID, Consumer: consumer}
	var at string
	err := t.queryRow(ctx, t.q.marker, eventID, consumer).Scan(&m.Identity, &m.BusinessKey, &at)
	if errors.Is(err, sql.ErrNoRows) {
		return m, false, nil
	}
	if err != nil {
		return m, false, fmt.Errorf("look up marker: %w", err)
	}
	m.At, _ = parseTime(at)
	return m, true, nil
}

func (t *txn) InsertMarker(ctx context.Context, m handler.Marker) error {
	_, err := t.exec(ctx, t.q.insertMarker, m.EventID, m.Consumer, m.Identity, m.BusinessKey, formatTime(m.At))
	return wrap("insert marker", err)
}

func (t *txn) InsertEffect(ctx context.Context, e handler.Effect) (int64, error) {
	r, err := t.exec(ctx, t.q.insertEffect, e.EventID, e.Consumer, e.BusinessKey, e.Payload, formatTime(e.At))
	if err != nil {
		return 0, wrap("insert effect", err)
	}
	return r.LastInsertId()
}

func (t *txn) EffectOf(ctx context.Context, eventID, consumer string) (int64, bool, error) {
	var id int64
	err := t.queryRow(ctx, t.q.effectOf, eventID, consumer).Scan(&id)
	if errors.Is(err, sql.ErrNoRows) {
		return 0, false, nil
	}
	return id, err == nil, wrap("look up effect", err)
}

func (t *txn) EffectByKey(ctx context.Context, key string) (int64, string, bool, error) {
	var id int64
	var ev string
	err := t.queryRow(ctx, t.q.effectByKey, key).Scan(&id, &ev)
	if errors.Is(err, sql.ErrNoRows) {
		return 0, "", false, nil
	}
	return id, ev, err == nil, wrap("look up effect by key", err)
}

func (t *txn) PurgeMarkers(ctx context.Context, before time.Time) error {
	_, err := t.exec(ctx, t.q.purge, formatTime(before))
	return wrap("purge markers", err)
}

func (t *txn) Commit() error {
	if t.q.version != nil {
		// Counted even when the commit fails: it may have written.
		defer t.q.version.Add(1)
	}
	return wrap("commit", t.tx.Commit())
}
func (t *txn) Rollback() error { return t.tx.Rollback() }

func wrap(what string, err error) error {
	if err == nil {
		return nil
	}
	// The driver's *sqlite.Error, or the replay store's *rawError.
	var se interface{ Code() int }
	if errors.As(err, &se) {
		switch se.Code() {
		case sqlite3.SQLITE_CONSTRAINT_UNIQUE, sqlite3.SQLITE_CONSTRAINT_PRIMARYKEY:
			return fmt.Errorf("%s: %w", what, handler.ErrUnique)
		}
		if se.Code()&0xff == sqlite3.SQLITE_BUSY {
			return fmt.Errorf("%s: gave up after %d ms waiting for another worker's write lock (SQLITE_BUSY): %w", what, busyTimeout, handler.ErrBusy)
		}
	}
	return fmt.Errorf("%s: %w", what, err)
}

func countQuery(table string) string { return `SELECT count(*) FROM "` + table + `"` }

const markersQuery = `SELECT event_id, consumer, identity, COALESCE(business_key, ''), processed_at FROM processed ORDER BY rowid`

func effectsQuery(effect string) string {
	return `SELECT id, event_id, consumer, COALESCE(business_key, ''), payload, created_at FROM "` + effect + `" ORDER BY id`
}

// Count returns the number of rows in a table of the handler: "processed"
// or the effect table.
func (d *DB) Count(ctx context.Context, table string) (int64, error) {
	if table != handler.MarkerTable && table != d.effect {
		return 0, fmt.Errorf("no table %q", table)
	}
	var n int64
	rows, err := d.query(ctx, countQuery(table))
	if err != nil {
		return 0, err
	}
	defer rows.Close()
	if !rows.Next() {
		if err := rows.Err(); err != nil {
			return 0, err
		}
		return 0, sql.ErrNoRows
	}
	if err := rows.Scan(&n); err != nil {
		return 0, err
	}
	return n, rows.Close()
}

// Markers returns every marker, in insertion order.
func (d *DB) Markers(ctx context.Context) ([]handler.Marker, error) {
	rows, err := d.query(ctx, markersQuery)
	if err != nil {
		return nil, fmt.Errorf("read markers: %w", err)
	}
	defer rows.Close()
	var out []handler.Marker
	for rows.Next() {
		var m handler.Marker
		var at string
		if err := rows.Scan(&m.EventID, &m.Consumer, &m.Identity, &m.BusinessKey, &at); err != nil {
			return nil, err
		}
		m.At, _ = parseTime(at)
		out = append(out, m)
	}
	return out, rows.Err()
}

// Effects returns every effect, by id.
func (d *DB) Effects(ctx context.Context) ([]handler.Effect, error) {
	rows, err := d.query(ctx, effectsQuery(d.effect))
	if err != nil {
		return nil, fmt.Errorf("read effects: %w", err)
	}
	defer rows.Close()
	var out []handler.Effect
	for rows.Next() {
		var e handler.Effect
		var at string
		if err := rows.Scan(&e.ID, &e.EventID, &e.Consumer, &e.BusinessKey, &e.Payload, &at); err != nil {
			return nil, err
		}
		e.At, _ = parseTime(at)
		out = append(out, e)
	}
	return out, rows.Err()
}
