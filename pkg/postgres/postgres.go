// Package postgres is the shared store: the handler's tables on a
// PostgreSQL server through pgx, each scenario file in a schema of its own.
//
// Transactions run at READ COMMITTED. The handler's guarantee comes from
// its unique constraints, not from snapshot isolation: when racing workers
// both miss the marker, the second insert waits for the first transaction
// on the unique index and is then refused (23505), and the handler's safety
// net reads the winner's rows in a fresh transaction, which READ COMMITTED
// shows it. REPEATABLE READ or SERIALIZABLE would add serialization
// failures (40001) that a consumer has to retry, and protect nothing the
// constraints do not; an unsafe strategy without constraints races at any
// level, which is what the negative controls show.
//
// Of this module it imports pkg/handler and pkg/redact; it links pgx, and
// no broker client or other store.
package postgres

import (
	"context"
	"crypto/rand"
	_ "embed"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"text/template"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/redeliver/redeliver/pkg/handler"
	"github.com/redeliver/redeliver/pkg/redact"
)

//go:embed schema.sql
var schemaSQL string

var schema = template.Must(template.New("schema").Parse(schemaSQL))

// maxConns is enough for the most workers one step may start, the
// handler's own connection and the checker's reads.
const maxConns = 72

// IsDSN reports whether db names a PostgreSQL database (a postgres:// or
// postgresql:// URL) rather than a SQLite path.
func IsDSN(db string) bool {
	return strings.HasPrefix(db, "postgres://") || strings.HasPrefix(db, "postgresql://")
}

// Server is the PostgreSQL database a run works in: one pool of
// connections, shared by every scenario file of the run, each file in a
// schema of its own.
type Server struct {
	pool  *pgxpool.Pool
	where string // user@host:port/database, for messages
	user  string
	db    string
	run   string // this run's part of every schema name
	keep  bool

	mu   sync.Mutex
	seq  int
	kept []string
}

// Connect opens a pool on dsn and checks that the server answers. With
// keep, the schemas the run creates are left for inspection.
func Connect(ctx context.Context, dsn string, keep bool) (*Server, error) {
	cfg, err := pgxpool.ParseConfig(dsn)
	if err != nil {
		reason := unwrapAll(err)
		var ue *url.Error
		if errors.As(err, &ue) {
			// Its own words quote the URL, password and all.
			reason = redact.Error(ue).Error()
		}
		return nil, fmt.Errorf("--db is not a PostgreSQL URL redeliver can use (%s); write it as postgres://USER:PASSWORD@HOST:PORT/DATABASE", redact.String(reason))
	}
	cfg.MaxConns = maxConns
	if cfg.ConnConfig.RuntimeParams["application_name"] == "" {
		cfg.ConnConfig.RuntimeParams["application_name"] = "redeliver"
	}
	if cfg.ConnConfig.ConnectTimeout == 0 {
		cfg.ConnConfig.ConnectTimeout = 10 * time.Second
	}
	cc := cfg.ConnConfig
	s := &Server{
		where: fmt.Sprintf("%s@%s:%d/%s", cc.User, cc.Host, cc.Port, cc.Database),
		user:  cc.User, db: cc.Database, keep: keep,
	}
	var id [4]byte
	if _, err := rand.Read(id[:]); err != nil {
		return nil, err
	}
	s.run = time.Now().UTC().Format("20060102_150405") + "_" + hex.EncodeToString(id[:])
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, s.connectError(err)
	}
	if err := pool.Ping(ctx); err != nil {
		pool.Close()
		return nil, s.connectError(err)
	}
	s.pool = pool
	return s, nil
}

// connectError says in one sentence why the server could not be used.
func (s *Server) connectError(err error) error {
	var pe *pgconn.PgError
	if errors.As(err, &pe) {
		switch pe.Code {
		case "28P01", "28000":
			return fmt.Errorf("PostgreSQL at %s refused the login (%s); check the user and password in --db", s.where, pe.Message)
		case "3D000":
			return fmt.Errorf("PostgreSQL at %s has no database %q; create it or name another in --db", s.where, s.db)
		}
		return fmt.Errorf("PostgreSQL at %s refused the connection: %s (SQLSTATE %s)", s.where, pe.Message, pe.Code)
	}
	if errors.Is(err, context.Canceled) {
		return err
	}
	return fmt.Errorf("cannot reach PostgreSQL at %s (%s); is the server running, and is --db right?", s.where, unwrapAll(err))
}

// unwrapAll returns the cause worth showing: for a network failure the
// system's words ("connect: connection refused"), otherwise the innermost
// error's first line.
func unwrapAll(err error) string {
	var op *net.OpError
	if errors.As(err, &op) && op.Err != nil {
		return op.Err.Error()
	}
	for {
		next := errors.Unwrap(err)
		if next == nil {
			break
		}
		err = next
	}
	line, _, _ := strings.Cut(err.Error(), "\n")
	return line
}

// Where says which server and database the run uses, without a password.
func (s *Server) Where() string { return s.where }

// Kept lists the schemas left for inspection (with keep), in order.
func (s *Server) Kept() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.kept...)
}

// Close closes the pool.
func (s *Server) Close() { s.pool.Close() }

// DB is one scenario file's database: its own schema on the server.
type DB struct {
	srv    *Server
	schema string // quoted
	name   string
	effect string
	q      queries
}

type queries struct {
	marker, insertMarker, insertEffect, effectOf, effectByKey, purge string
}

// Create makes a fresh schema with the tables of cfg's strategy, in one
// transaction.
func (s *Server) Create(ctx context.Context, cfg handler.Config) (*DB, error) {
	if !validTable(cfg.Effect) {
		return nil, fmt.Errorf("effect table name %q is not a plain SQL identifier", cfg.Effect)
	}
	s.mu.Lock()
	s.seq++
	name := "redeliver_" + s.run + "_" + strconv.Itoa(s.seq)
	s.mu.Unlock()
	d := &DB{srv: s, name: name, schema: pgx.Identifier{name}.Sanitize(), effect: cfg.Effect}
	d.q = makeQueries(d.schema, pgx.Identifier{cfg.Effect}.Sanitize())
	st := cfg.Strategy
	var b strings.Builder
	err := schema.Execute(&b, map[string]any{
		"Schema":       d.schema,
		"Effect":       cfg.Effect,
		"MarkerKey":    st != handler.CheckThenAct,
		"EffectUnique": st.Safe(),
		"KeyUnique":    st.Safe() && st.UsesKey(),
		"UsesKey":      st.UsesKey(),
	})
	if err != nil {
		return nil, err
	}
	tx, err := s.pool.Begin(ctx)
	if err != nil {
		return nil, s.runError("create a schema", err)
	}
	defer tx.Rollback(ctx)
	if _, err := tx.Exec(ctx, b.String()); err != nil {
		var pe *pgconn.PgError
		if errors.As(err, &pe) && pe.Code == "42501" {
			return nil, fmt.Errorf("user %s may not create a schema in database %s; grant it (GRANT CREATE ON DATABASE %s TO %s) or use another --db", s.user, s.db, s.db, s.user)
		}
		return nil, s.runError("create schema "+name, err)
	}
	if _, err := tx.Exec(ctx, `INSERT INTO `+d.schema+`.redeliver_meta(key, value) VALUES ('strategy', $1), ('effect', $2)`, string(st), cfg.Effect); err != nil {
		return nil, s.runError("create schema "+name, err)
	}
	if err := tx.Commit(ctx); err != nil {
		return nil, s.runError("create schema "+name, err)
	}
	return d, nil
}

// validTable is the handler's rule for effect tables, checked again
// because a name becomes part of SQL text.
func validTable(name string) bool { return handler.ValidEffectTable(name) }

func makeQueries(schema, effect string) queries {
	t := schema + "." + effect
	p := schema + ".processed"
	return queries{
		marker:       `SELECT identity, COALESCE(business_key, ''), processed_at FROM ` + p + ` WHERE event_id = $1 AND consumer = $2 LIMIT 1`,
		insertMarker: `INSERT INTO ` + p + `(event_id, consumer, identity, business_key, processed_at) VALUES ($1, $2, $3, NULLIF($4, ''), $5)`,
		insertEffect: `INSERT INTO ` + t + `(event_id, consumer, business_key, payload, created_at) VALUES ($1, $2, NULLIF($3, ''), $4, $5) RETURNING id`,
		effectOf:     `SELECT id FROM ` + t + ` WHERE event_id = $1 AND consumer = $2 ORDER BY id LIMIT 1`,
		effectByKey:  `SELECT id, event_id FROM ` + t + ` WHERE business_key = $1 ORDER BY id LIMIT 1`,
		purge:        `DELETE FROM ` + p + ` WHERE processed_at < $1`,
	}
}

// Reset empties the tables and restarts the effect ids, for the next
// repetition of the file: as fresh as a new schema, without creating and
// dropping one per repetition (which, a thousand times over, would mostly
// time the server's catalog).
func (d *DB) Reset(ctx context.Context) error {
	_, err := d.srv.pool.Exec(ctx, `TRUNCATE `+d.schema+`.processed, `+d.schema+`.`+pgx.Identifier{d.effect}.Sanitize()+` RESTART IDENTITY`)
	return d.srv.runError("empty schema "+d.name, err)
}

// Schema names the schema the file's tables are in.
func (d *DB) Schema() string { return d.name }

// Close drops the schema, unless the run keeps it.
func (d *DB) Close() error {
	if d.srv.keep {
		d.srv.mu.Lock()
		d.srv.kept = append(d.srv.kept, d.name)
		d.srv.mu.Unlock()
		return nil
	}
	// The run's context may be cancelled by now; dropping is still owed.
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := d.srv.pool.Exec(ctx, `DROP SCHEMA `+d.schema+` CASCADE`); err != nil {
		return d.srv.runError("drop schema "+d.name, err)
	}
	return nil
}

// beginner is a pool or one connection of it.
type beginner interface {
	BeginTx(ctx context.Context, opts pgx.TxOptions) (pgx.Tx, error)
}

var txOptions = pgx.TxOptions{IsoLevel: pgx.ReadCommitted}

func (s *Server) begin(ctx context.Context, b beginner, q *queries) (handler.Tx, error) {
	tx, err := b.BeginTx(ctx, txOptions)
	if err != nil {
		return nil, s.runError("begin", err)
	}
	return &txn{tx: tx, q: q, srv: s}, nil
}

// Begin starts a transaction on a connection of the pool.
func (d *DB) Begin(ctx context.Context) (handler.Tx, error) {
	return d.srv.begin(ctx, d.srv.pool, &d.q)
}

// WriteLockOnBegin reports false: a PostgreSQL transaction makes others
// wait only on the rows and index entries it has written.
func (d *DB) WriteLockOnBegin() bool { return false }

// Worker is the store one worker of a concurrent step writes through: a
// connection of the pool held for the step.
type Worker struct {
	conn *pgxpool.Conn
	d    *DB
}

// Worker takes a connection of its own for one concurrent worker; the
// caller closes it (the returned store is an io.Closer).
func (d *DB) Worker(ctx context.Context) (handler.Store, error) {
	c, err := d.srv.pool.Acquire(ctx)
	if err != nil {
		return nil, d.srv.runError("open a worker connection", err)
	}
	return &Worker{conn: c, d: d}, nil
}

// Begin starts a transaction on the worker's connection.
func (w *Worker) Begin(ctx context.Context) (handler.Tx, error) {
	return w.d.srv.begin(ctx, w.conn, &w.d.q)
}

// Close gives the connection back to the pool.
func (w *Worker) Close() error {
	w.conn.Release()
	return nil
}

type txn struct {
	tx  pgx.Tx
	q   *queries
	srv *Server
}

func (t *txn) Marker(ctx context.Context, eventID, consumer string) (handler.Marker, bool, error) {
	m := handler.Marker{EventID: eventID, Consumer: consumer}
	err := t.tx.QueryRow(ctx, t.q.marker, eventID, consumer).Scan(&m.Identity, &m.BusinessKey, &m.At)
	if errors.Is(err, pgx.ErrNoRows) {
		return m, false, nil
	}
	if err != nil {
		return m, false, t.srv.runError("look up marker", err)
	}
	m.At = m.At.UTC()
	return m, true, nil
}

func (t *txn) InsertMarker(ctx context.Context, m handler.Marker) error {
	_, err := t.tx.Exec(ctx, t.q.insertMarker, m.EventID, m.Consumer, m.Identity, m.BusinessKey, m.At.UTC())
	return t.srv.runError("insert marker", err)
}

func (t *txn) InsertEffect(ctx context.Context, e handler.Effect) (int64, error) {
	var id int64
	err := t.tx.QueryRow(ctx, t.q.insertEffect, e.EventID, e.Consumer, e.BusinessKey, e.Payload, e.At.UTC()).Scan(&id)
	return id, t.srv.runError("insert effect", err)
}

func (t *txn) EffectOf(ctx context.Context, eventID, consumer string) (int64, bool, error) {
	var id int64
	err := t.tx.QueryRow(ctx, t.q.effectOf, eventID, consumer).Scan(&id)
	if errors.Is(err, pgx.ErrNoRows) {
		return 0, false, nil
	}
	return id, err == nil, t.srv.runError("look up effect", err)
}

func (t *txn) EffectByKey(ctx context.Context, key string) (int64, string, bool, error) {
	var id int64
	var ev string
	err := t.tx.QueryRow(ctx, t.q.effectByKey, key).Scan(&id, &ev)
	if errors.Is(err, pgx.ErrNoRows) {
		return 0, "", false, nil
	}
	return id, ev, err == nil, t.srv.runError("look up effect by key", err)
}

func (t *txn) PurgeMarkers(ctx context.Context, before time.Time) error {
	_, err := t.tx.Exec(ctx, t.q.purge, before.UTC())
	return t.srv.runError("purge markers", err)
}

func (t *txn) Commit() error {
	return t.srv.runError("commit", t.tx.Commit(context.Background()))
}

func (t *txn) Rollback() error {
	err := t.tx.Rollback(context.Background())
	if errors.Is(err, pgx.ErrTxClosed) {
		return nil
	}
	return err
}

// runError turns a driver error into the handler's terms: a unique
// violation is handler.ErrUnique (the safety net), a lost connection says
// so in words.
func (s *Server) runError(what string, err error) error {
	if err == nil {
		return nil
	}
	var pe *pgconn.PgError
	if errors.As(err, &pe) {
		switch {
		case pe.Code == "23505":
			return fmt.Errorf("%s: %w", what, handler.ErrUnique)
		case strings.HasPrefix(pe.Code, "57P"), strings.HasPrefix(pe.Code, "08"):
			return fmt.Errorf("PostgreSQL at %s ended the connection (%s, SQLSTATE %s)", s.where, pe.Message, pe.Code)
		}
		return fmt.Errorf("%s: %w", what, err)
	}
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return err
	}
	return fmt.Errorf("lost the connection to PostgreSQL at %s (%s): %w", s.where, unwrapAll(err), err)
}

// Count returns the number of rows in a table of the handler: "processed"
// or the effect table.
func (d *DB) Count(ctx context.Context, table string) (int64, error) {
	if table != handler.MarkerTable && table != d.effect {
		return 0, fmt.Errorf("no table %q", table)
	}
	var n int64
	err := d.srv.pool.QueryRow(ctx, `SELECT count(*) FROM `+d.schema+`.`+pgx.Identifier{table}.Sanitize()).Scan(&n)
	return n, d.srv.runError("count "+table, err)
}

// Markers returns every marker, in insertion order.
func (d *DB) Markers(ctx context.Context) ([]handler.Marker, error) {
	rows, err := d.srv.pool.Query(ctx, `SELECT event_id, consumer, identity, COALESCE(business_key, ''), processed_at FROM `+d.schema+`.processed ORDER BY seq`)
	if err != nil {
		return nil, d.srv.runError("read markers", err)
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (handler.Marker, error) {
		var m handler.Marker
		err := r.Scan(&m.EventID, &m.Consumer, &m.Identity, &m.BusinessKey, &m.At)
		m.At = m.At.UTC()
		return m, err
	})
	return out, d.srv.runError("read markers", err)
}

// Effects returns every effect, by id.
func (d *DB) Effects(ctx context.Context) ([]handler.Effect, error) {
	rows, err := d.srv.pool.Query(ctx, `SELECT id, event_id, consumer, COALESCE(business_key, ''), payload, created_at FROM `+d.schema+`.`+pgx.Identifier{d.effect}.Sanitize()+` ORDER BY id`)
	if err != nil {
		return nil, d.srv.runError("read effects", err)
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (handler.Effect, error) {
		var e handler.Effect
		err := r.Scan(&e.ID, &e.EventID, &e.Consumer, &e.BusinessKey, &e.Payload, &e.At)
		e.At = e.At.UTC()
		return e, err
	})
	return out, d.srv.runError("read effects", err)
}
