package main

import (
	"context"
	"database/sql"
	_ "embed"
	"errors"
	"fmt"
	"io"
	"net/url"
	"regexp"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	_ "github.com/jackc/pgx/v5/stdlib" // database/sql driver "pgx"
	// go-sql-driver/mysql as patched here (docs/dependencies.md); a
	// consumer of your own imports github.com/go-sql-driver/mysql.
	mysql "github.com/redeliver/redeliver/pkg/_mysqldriver"
	_ "modernc.org/sqlite" // database/sql driver "sqlite"
)

//go:embed schema_postgres.sql
var schemaPostgres string

//go:embed schema_sqlite.sql
var schemaSQLite string

//go:embed schema_mysql.sql
var schemaMySQL string

// store is the consumer's database: its marker, its payments and the
// simulated provider's charges.
type store struct {
	db       *sql.DB
	postgres bool
	// mysql: MySQL or MariaDB, whose statements take ? for $N and have no
	// ON CONFLICT … RETURNING (see q and insertIgnored).
	mysql bool
}

// openStore connects and creates the schema. A PostgreSQL URL may carry
// search_path=SCHEMA: that schema is created if missing, so parallel runs
// can each have their own.
func openStore(ctx context.Context, dsn string) (*store, error) {
	if strings.HasPrefix(dsn, "postgres://") || strings.HasPrefix(dsn, "postgresql://") {
		return openPostgres(ctx, dsn)
	}
	if strings.HasPrefix(dsn, "mysql://") || goMySQL.MatchString(dsn) {
		return openMySQL(ctx, dsn)
	}
	return openSQLite(ctx, strings.TrimPrefix(dsn, "sqlite:"))
}

func openPostgres(ctx context.Context, dsn string) (*store, error) {
	cfg, err := pgx.ParseConfig(dsn)
	if err != nil {
		return nil, errors.New("--db is not a PostgreSQL URL the consumer can use")
	}
	db, err := sql.Open("pgx", dsn)
	if err != nil {
		return nil, err
	}
	db.SetMaxOpenConns(32)
	db.SetMaxIdleConns(32)
	s := &store{db: db, postgres: true}
	err = s.inTx(ctx, func(tx *sql.Tx) error {
		// Several --exec processes may start at once: one creates the schema.
		if _, err := tx.ExecContext(ctx, "SELECT pg_advisory_xact_lock(7340412)"); err != nil {
			return err
		}
		if schema := cfg.RuntimeParams["search_path"]; schema != "" && !strings.ContainsAny(schema, ", ") {
			if _, err := tx.ExecContext(ctx, "CREATE SCHEMA IF NOT EXISTS "+pgx.Identifier{schema}.Sanitize()); err != nil {
				return err
			}
		}
		_, err := tx.ExecContext(ctx, schemaPostgres)
		return err
	})
	if err != nil {
		db.Close()
		return nil, fmt.Errorf("create the schema on PostgreSQL: %w", err)
	}
	return s, nil
}

// goMySQL is a Go MySQL driver DSN: [user[:password]@]tcp(host:port)/db.
var goMySQL = regexp.MustCompile(`^([^/]*@)?(tcp|tcp4|tcp6|unix)\([^)]*\)/`)

// openMySQL connects to MySQL or MariaDB, given a mysql:// URL or the Go
// driver's own DSN, and creates the tables.
func openMySQL(ctx context.Context, dsn string) (*store, error) {
	cfg, err := mysqlConfig(dsn)
	if err != nil {
		return nil, err
	}
	conn, err := mysql.NewConnector(cfg)
	if err != nil {
		return nil, err
	}
	db := sql.OpenDB(conn)
	db.SetMaxOpenConns(32)
	db.SetMaxIdleConns(32)
	s := &store{db: db, mysql: true}
	// Several --exec processes may start at once: one creates the tables,
	// holding a named lock on a connection of its own (DDL commits, so no
	// transaction would serialize it).
	err = func() error {
		c, err := db.Conn(ctx)
		if err != nil {
			return err
		}
		defer c.Close()
		if _, err := c.ExecContext(ctx, "SELECT GET_LOCK('redeliver-consumer-schema', 60)"); err != nil {
			return err
		}
		defer c.ExecContext(context.Background(), "SELECT RELEASE_LOCK('redeliver-consumer-schema')")
		for _, stmt := range strings.Split(schemaMySQL, ";\n") {
			if strings.TrimSpace(stripComments(stmt)) == "" {
				continue
			}
			if _, err := c.ExecContext(ctx, stmt); err != nil {
				return err
			}
		}
		return nil
	}()
	if err != nil {
		db.Close()
		return nil, fmt.Errorf("create the tables on MySQL: %w", err)
	}
	return s, nil
}

// mysqlConfig reads a mysql://USER:PASSWORD@HOST:PORT/DB?PARAMS URL, or a
// Go MySQL DSN as it is.
func mysqlConfig(dsn string) (*mysql.Config, error) {
	if goMySQL.MatchString(dsn) {
		cfg, err := mysql.ParseDSN(dsn)
		if err != nil {
			return nil, errors.New("--db is not a MySQL DSN the consumer can use")
		}
		return cfg, nil
	}
	u, err := url.Parse(dsn)
	if err != nil {
		return nil, errors.New("--db is not a mysql:// URL the consumer can use")
	}
	host := u.Host
	if u.Port() == "" {
		host += ":3306"
	}
	user := u.User.Username()
	if pw, ok := u.User.Password(); ok {
		user += ":" + pw
	}
	cfg, err := mysql.ParseDSN(user + "@tcp(" + host + ")/" + strings.TrimPrefix(u.Path, "/") + "?" + u.RawQuery)
	if err != nil {
		return nil, fmt.Errorf("--db is not a mysql:// URL the consumer can use: %v", err)
	}
	return cfg, nil
}

// stripComments drops the -- comment lines of a schema statement.
func stripComments(s string) string {
	var out []string
	for _, l := range strings.Split(s, "\n") {
		if !strings.HasPrefix(strings.TrimSpace(l), "--") {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}

// placeholder is PostgreSQL's $N.
var placeholder = regexp.MustCompile(`\$[0-9]+`)

// q is a statement written with PostgreSQL's $1, $2 … in the store's
// dialect: ? on MySQL, where every statement here takes its arguments in
// order.
func (s *store) q(query string) string {
	if !s.mysql {
		return query
	}
	return placeholder.ReplaceAllString(query, "?")
}

func openSQLite(ctx context.Context, path string) (*store, error) {
	if path == "" || path == ":memory:" {
		return nil, errors.New("--db needs a SQLite file (redeliver reads the same file), not memory")
	}
	// WAL lets redeliver read while the consumer writes; every transaction
	// takes the write lock at BEGIN (immediate), so two deliveries of one
	// event queue up instead of failing. synchronous=NORMAL keeps a commit
	// through a process crash (SIGKILL), not through a power cut.
	db, err := sql.Open("sqlite", path+"?_pragma=busy_timeout(60000)&_pragma=journal_mode(WAL)&_pragma=synchronous(NORMAL)&_txlock=immediate")
	if err != nil {
		return nil, err
	}
	s := &store{db: db}
	if err := s.inTx(ctx, func(tx *sql.Tx) error {
		_, err := tx.ExecContext(ctx, schemaSQLite)
		return err
	}); err != nil {
		db.Close()
		return nil, fmt.Errorf("create the schema in %s: %w", path, err)
	}
	return s, nil
}

func (s *store) close() { s.db.Close() }

// poll is a background job on the consumer's own pool, as many services
// run one (a lease renewed, a queue polled): an UPDATE of the locks table
// every interval, carrying no event's id — autocommitted, or in a
// transaction of its own when inTx, as a job that reads and then writes
// would. It stops when the returned function is called.
func (s *store) poll(every time.Duration, inTx bool, log io.Writer) (stop func()) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		tick := time.NewTicker(every)
		defer tick.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
			}
			beat := func(ctx context.Context, db interface {
				ExecContext(context.Context, string, ...any) (sql.Result, error)
			}) error {
				_, err := db.ExecContext(ctx, `UPDATE locks SET beat = beat + 1 WHERE name = 'poller'`)
				return err
			}
			var err error
			if inTx {
				err = s.inTx(ctx, func(tx *sql.Tx) error { return beat(ctx, tx) })
			} else {
				err = beat(ctx, s.db)
			}
			if err != nil && ctx.Err() == nil {
				fmt.Fprintln(log, "consumer: poller:", err)
			}
		}
	}()
	return func() { cancel(); <-done }
}

func (s *store) inTx(ctx context.Context, f func(*sql.Tx) error) error {
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	if err := f(tx); err != nil {
		tx.Rollback()
		return err
	}
	return tx.Commit()
}

// result is what the consumer did with one delivery.
type result struct {
	Outcome   string `json:"outcome"` // processed | duplicate | conflict
	PaymentID int64  `json:"payment_id,omitempty"`
}

// errConflict: the event id (or the provider's idempotency key) was seen
// with another payload.
var errConflict = errors.New("conflict")

// marker looks the processed marker up (outside any transaction).
func (s *store) marker(ctx context.Context, ev event) (result, bool, error) {
	return s.markerIn(ctx, s.db, ev)
}

// querier is a database or a transaction.
type querier interface {
	QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row
	ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error)
}

func (s *store) markerIn(ctx context.Context, q querier, ev event) (result, bool, error) {
	var payload string
	var payment sql.NullInt64
	err := q.QueryRowContext(ctx, s.q(`SELECT m.payload, (SELECT min(p.id) FROM payments p WHERE p.event_id = m.event_id)
		FROM processed_messages m WHERE m.event_id = $1`), ev.id).Scan(&payload, &payment)
	if errors.Is(err, sql.ErrNoRows) {
		return result{}, false, nil
	}
	if err != nil {
		return result{}, false, fmt.Errorf("look up the marker of %s: %w", ev.id, err)
	}
	if payload != ev.payload {
		return result{Outcome: "conflict"}, true, nil
	}
	return result{Outcome: "duplicate", PaymentID: payment.Int64}, true, nil
}

// commit writes the marker and the payment in one transaction. guarded
// says whether an existing marker stops it (the safe consumer) or is
// ignored (INSERT … ON CONFLICT DO NOTHING, result unread: the flaw).
func (s *store) commit(ctx context.Context, ev event, charge int64, guarded bool) (result, error) {
	var r result
	err := s.inTx(ctx, func(tx *sql.Tx) error {
		err := s.insertMarker(ctx, tx, ev)
		switch {
		case errors.Is(err, sql.ErrNoRows) && guarded:
			// Another delivery of this event committed first.
			prev, _, err := s.markerIn(ctx, tx, ev)
			r = prev
			if err == nil {
				err = errAlreadyDone
			}
			return err
		case errors.Is(err, sql.ErrNoRows):
		case err != nil:
			return fmt.Errorf("insert the marker of %s: %w", ev.id, err)
		}
		id, err := s.insertPayment(ctx, tx, ev, charge)
		r = result{Outcome: "processed", PaymentID: id}
		return err
	})
	if errors.Is(err, errAlreadyDone) {
		return r, nil
	}
	return r, err
}

var errAlreadyDone = errors.New("already processed")

// uncommitted writes the marker and the payment in a transaction it
// leaves open: commit ends it (commit-after-answer). A marker already
// there rolls it back and answers as the safe consumer does.
func (s *store) uncommitted(ctx context.Context, ev event, charge int64) (result, func() error, error) {
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return result{}, nil, err
	}
	err = s.insertMarker(ctx, tx, ev)
	if errors.Is(err, sql.ErrNoRows) {
		prev, _, err := s.markerIn(ctx, tx, ev)
		tx.Rollback()
		return prev, func() error { return nil }, err
	}
	if err != nil {
		tx.Rollback()
		return result{}, nil, fmt.Errorf("insert the marker of %s: %w", ev.id, err)
	}
	id, err := s.insertPayment(ctx, tx, ev, charge)
	if err != nil {
		tx.Rollback()
		return result{}, nil, err
	}
	return result{Outcome: "processed", PaymentID: id}, tx.Commit, nil
}

// commitEffect writes the payment alone (marker-after-effect's first
// transaction).
func (s *store) commitEffect(ctx context.Context, ev event, charge int64) (int64, error) {
	var id int64
	err := s.inTx(ctx, func(tx *sql.Tx) error {
		var err error
		id, err = s.insertPayment(ctx, tx, ev, charge)
		return err
	})
	return id, err
}

// commitMarker writes the marker alone (marker-after-effect's second
// transaction).
func (s *store) commitMarker(ctx context.Context, ev event) error {
	q := `INSERT INTO processed_messages (event_id, payload) VALUES ($1, $2) ON CONFLICT (event_id) DO NOTHING`
	if s.mysql {
		q = `INSERT INTO processed_messages (event_id, payload) VALUES (?, ?) ON DUPLICATE KEY UPDATE event_id = event_id`
	}
	_, err := s.db.ExecContext(ctx, q, ev.id, ev.payload)
	if err != nil {
		return fmt.Errorf("insert the marker of %s: %w", ev.id, err)
	}
	return nil
}

// insertPaymentAlone writes the payment in a statement of its own, no
// transaction around it (marker-after-autocommit's first statement).
func (s *store) insertPaymentAlone(ctx context.Context, ev event, charge int64) (int64, error) {
	return s.insertPayment(ctx, s.db, ev, charge)
}

// insertMarker inserts the processed marker; sql.ErrNoRows when it is
// already there (after waiting for a transaction that wrote it to end).
func (s *store) insertMarker(ctx context.Context, tx querier, ev event) error {
	if s.mysql {
		// An existing key changes nothing and counts no row affected.
		res, err := tx.ExecContext(ctx, `INSERT INTO processed_messages (event_id, payload) VALUES (?, ?)
			ON DUPLICATE KEY UPDATE event_id = event_id`, ev.id, ev.payload)
		if err != nil {
			return err
		}
		if n, err := res.RowsAffected(); err != nil || n == 0 {
			return cmpErr(err, sql.ErrNoRows)
		}
		return nil
	}
	var got string
	return tx.QueryRowContext(ctx, `INSERT INTO processed_messages (event_id, payload) VALUES ($1, $2)
		ON CONFLICT (event_id) DO NOTHING RETURNING event_id`, ev.id, ev.payload).Scan(&got)
}

// cmpErr is err, or other when err is nil.
func cmpErr(err, other error) error {
	if err != nil {
		return err
	}
	return other
}

func (s *store) insertPayment(ctx context.Context, tx querier, ev event, charge int64) (int64, error) {
	var id int64
	var err error
	if s.mysql {
		var res sql.Result
		res, err = tx.ExecContext(ctx, `INSERT INTO payments (order_id, event_id, amount, charge_id) VALUES (?, ?, ?, ?)`,
			ev.orderID, ev.id, ev.amount, charge)
		if err == nil {
			id, err = res.LastInsertId()
		}
	} else {
		err = tx.QueryRowContext(ctx, `INSERT INTO payments (order_id, event_id, amount, charge_id) VALUES ($1, $2, $3, $4) RETURNING id`,
			ev.orderID, ev.id, ev.amount, charge).Scan(&id)
	}
	if err != nil {
		return 0, fmt.Errorf("insert the payment of %s: %w", ev.id, err)
	}
	return id, nil
}

// charge asks the simulated payment provider to charge an order. Like a
// real provider (and the IETF Idempotency-Key draft) it answers a known key
// with the first charge, refuses a known key with another request, and
// makes a new charge for every call without a key. It writes in its own
// transaction: a rollback of the consumer's does not undo a charge.
func (s *store) charge(ctx context.Context, key string, ev event) (int64, error) {
	// A call without a key is stored with none (NULL), which no unique
	// key matches: every one is a new charge.
	var bound any = key
	if key == "" {
		bound = nil
	}
	request := fmt.Sprintf("order=%s amount=%s", ev.orderID, ev.amount)
	var id int64
	var err error
	if s.mysql {
		var res sql.Result
		res, err = s.db.ExecContext(ctx, `INSERT INTO provider_charges (idempotency_key, order_id, amount, request) VALUES (?, ?, ?, ?)
			ON DUPLICATE KEY UPDATE id = id`, bound, ev.orderID, ev.amount, request)
		var n int64
		if err == nil {
			n, err = res.RowsAffected()
		}
		if err == nil && n == 0 {
			err = sql.ErrNoRows
		} else if err == nil {
			id, err = res.LastInsertId()
		}
	} else {
		err = s.db.QueryRowContext(ctx, `INSERT INTO provider_charges (idempotency_key, order_id, amount, request) VALUES ($1, $2, $3, $4)
			ON CONFLICT (idempotency_key) DO NOTHING RETURNING id`, bound, ev.orderID, ev.amount, request).Scan(&id)
	}
	if err == nil {
		return id, nil
	}
	if !errors.Is(err, sql.ErrNoRows) {
		return 0, fmt.Errorf("provider: charge %s: %w", key, err)
	}
	var first string
	if err := s.db.QueryRowContext(ctx, s.q(`SELECT id, request FROM provider_charges WHERE idempotency_key = $1`), key).Scan(&id, &first); err != nil {
		return 0, fmt.Errorf("provider: charge %s: %w", key, err)
	}
	if first != request {
		return 0, fmt.Errorf("provider: idempotency key %s was used for %q: %w", key, first, errConflict)
	}
	return id, nil
}
