package main

import (
	"context"
	"crypto/rand"
	"database/sql"
	_ "embed"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	_ "github.com/jackc/pgx/v5/stdlib" // database/sql driver "pgx"
	_ "modernc.org/sqlite"             // database/sql driver "sqlite"
)

//go:embed schema_postgres.sql
var schemaPostgres string

//go:embed schema_sqlite.sql
var schemaSQLite string

// store is the consumer's database: its marker, its payments and the
// simulated provider's charges.
type store struct {
	db       *sql.DB
	postgres bool
}

// openStore connects and creates the schema. A PostgreSQL URL may carry
// search_path=SCHEMA: that schema is created if missing, so parallel runs
// can each have their own.
func openStore(ctx context.Context, dsn string) (*store, error) {
	if strings.HasPrefix(dsn, "postgres://") || strings.HasPrefix(dsn, "postgresql://") {
		return openPostgres(ctx, dsn)
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
	return markerIn(ctx, s.db, ev)
}

type querier interface {
	QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row
}

func markerIn(ctx context.Context, q querier, ev event) (result, bool, error) {
	var payload string
	var payment sql.NullInt64
	err := q.QueryRowContext(ctx, `SELECT m.payload, (SELECT min(p.id) FROM payments p WHERE p.event_id = m.event_id)
		FROM processed_messages m WHERE m.event_id = $1`, ev.id).Scan(&payload, &payment)
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
		var got string
		err := tx.QueryRowContext(ctx, `INSERT INTO processed_messages (event_id, payload) VALUES ($1, $2)
			ON CONFLICT (event_id) DO NOTHING RETURNING event_id`, ev.id, ev.payload).Scan(&got)
		switch {
		case errors.Is(err, sql.ErrNoRows) && guarded:
			// Another delivery of this event committed first.
			prev, _, err := markerIn(ctx, tx, ev)
			r = prev
			if err == nil {
				err = errAlreadyDone
			}
			return err
		case errors.Is(err, sql.ErrNoRows):
		case err != nil:
			return fmt.Errorf("insert the marker of %s: %w", ev.id, err)
		}
		id, err := insertPayment(ctx, tx, ev, charge)
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
	var got string
	err = tx.QueryRowContext(ctx, `INSERT INTO processed_messages (event_id, payload) VALUES ($1, $2)
		ON CONFLICT (event_id) DO NOTHING RETURNING event_id`, ev.id, ev.payload).Scan(&got)
	if errors.Is(err, sql.ErrNoRows) {
		prev, _, err := markerIn(ctx, tx, ev)
		tx.Rollback()
		return prev, func() error { return nil }, err
	}
	if err != nil {
		tx.Rollback()
		return result{}, nil, fmt.Errorf("insert the marker of %s: %w", ev.id, err)
	}
	id, err := insertPayment(ctx, tx, ev, charge)
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
		id, err = insertPayment(ctx, tx, ev, charge)
		return err
	})
	return id, err
}

// commitMarker writes the marker alone (marker-after-effect's second
// transaction).
func (s *store) commitMarker(ctx context.Context, ev event) error {
	_, err := s.db.ExecContext(ctx, `INSERT INTO processed_messages (event_id, payload) VALUES ($1, $2)
		ON CONFLICT (event_id) DO NOTHING`, ev.id, ev.payload)
	if err != nil {
		return fmt.Errorf("insert the marker of %s: %w", ev.id, err)
	}
	return nil
}

// insertPaymentAlone writes the payment in a statement of its own, no
// transaction around it (marker-after-autocommit's first statement).
func (s *store) insertPaymentAlone(ctx context.Context, ev event, charge int64) (int64, error) {
	return insertPayment(ctx, s.db, ev, charge)
}

func insertPayment(ctx context.Context, tx querier, ev event, charge int64) (int64, error) {
	var id int64
	err := tx.QueryRowContext(ctx, `INSERT INTO payments (order_id, event_id, amount, charge_id) VALUES ($1, $2, $3, $4) RETURNING id`,
		ev.orderID, ev.id, ev.amount, charge).Scan(&id)
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
	if key == "" {
		var b [12]byte
		rand.Read(b[:])
		key = "unkeyed-" + hex.EncodeToString(b[:])
	}
	request := fmt.Sprintf("order=%s amount=%s", ev.orderID, ev.amount)
	var id int64
	err := s.db.QueryRowContext(ctx, `INSERT INTO provider_charges (idempotency_key, order_id, amount, request) VALUES ($1, $2, $3, $4)
		ON CONFLICT (idempotency_key) DO NOTHING RETURNING id`, key, ev.orderID, ev.amount, request).Scan(&id)
	if err == nil {
		return id, nil
	}
	if !errors.Is(err, sql.ErrNoRows) {
		return 0, fmt.Errorf("provider: charge %s: %w", key, err)
	}
	var first string
	if err := s.db.QueryRowContext(ctx, `SELECT id, request FROM provider_charges WHERE idempotency_key = $1`, key).Scan(&id, &first); err != nil {
		return 0, fmt.Errorf("provider: charge %s: %w", key, err)
	}
	if first != request {
		return 0, fmt.Errorf("provider: idempotency key %s was used for %q: %w", key, first, errConflict)
	}
	return id, nil
}
