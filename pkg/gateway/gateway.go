// Package gateway is the simulated external provider an external-key
// consumer calls: a payment gateway with its own store, outside the
// handler's transaction, that honours idempotency keys the way the IETF
// Idempotency-Key draft describes.
package gateway

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"sync"

	_ "modernc.org/sqlite" // the provider's own store
)

// Charge is one row of the provider's ledger.
type Charge struct {
	ID             int64
	IdempotencyKey string
	Amount         string
	OrderRef       string
}

// KeyConflictError is the provider's refusal (HTTP 422 in the draft) of a
// known idempotency key sent with a different request.
type KeyConflictError struct {
	Key                      string
	StoredAmount, Amount     string
	StoredOrder, GottenOrder string
}

func (e *KeyConflictError) Error() string {
	return fmt.Sprintf("idempotency key conflict (422): key %q was first used for order %s amount %s, now for order %s amount %s",
		e.Key, e.StoredOrder, e.StoredAmount, e.GottenOrder, e.Amount)
}

// Gateway is the provider. Its ledger lives in its own in-memory database,
// so a rollback of the handler's transaction never undoes a charge.
type Gateway struct {
	mu sync.Mutex
	db *sql.DB
}

// New opens an empty gateway.
func New() (*Gateway, error) {
	db, err := sql.Open("sqlite", ":memory:")
	if err != nil {
		return nil, err
	}
	db.SetMaxOpenConns(1)
	db.SetConnMaxLifetime(0)
	db.SetConnMaxIdleTime(0)
	_, err = db.Exec(`CREATE TABLE charges(
		id INTEGER PRIMARY KEY,
		idempotency_key TEXT,
		amount TEXT NOT NULL,
		order_ref TEXT NOT NULL
	);
	CREATE UNIQUE INDEX charges_key ON charges(idempotency_key) WHERE idempotency_key <> ''`)
	if err != nil {
		db.Close()
		return nil, fmt.Errorf("create gateway ledger: %w", err)
	}
	return &Gateway{db: db}, nil
}

// Close closes the ledger.
func (g *Gateway) Close() error { return g.db.Close() }

// Charge charges amount for orderRef. A request without a key is not
// idempotent: every call charges. A known key with the same request returns
// the first charge; with a different amount or order it is refused.
func (g *Gateway) Charge(ctx context.Context, key, amount, orderRef string) (int64, bool, error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if key != "" {
		var c Charge
		err := g.db.QueryRowContext(ctx, `SELECT id, amount, order_ref FROM charges WHERE idempotency_key = ?`, key).Scan(&c.ID, &c.Amount, &c.OrderRef)
		switch {
		case err == nil:
			if c.Amount != amount || c.OrderRef != orderRef {
				return 0, false, &KeyConflictError{Key: key, StoredAmount: c.Amount, Amount: amount, StoredOrder: c.OrderRef, GottenOrder: orderRef}
			}
			return c.ID, true, nil
		case !errors.Is(err, sql.ErrNoRows):
			return 0, false, fmt.Errorf("gateway: %w", err)
		}
	}
	r, err := g.db.ExecContext(ctx, `INSERT INTO charges(idempotency_key, amount, order_ref) VALUES (?, ?, ?)`, key, amount, orderRef)
	if err != nil {
		return 0, false, fmt.Errorf("gateway: %w", err)
	}
	id, err := r.LastInsertId()
	return id, false, err
}

// Charges returns the ledger, in order.
func (g *Gateway) Charges(ctx context.Context) ([]Charge, error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	rows, err := g.db.QueryContext(ctx, `SELECT id, idempotency_key, amount, order_ref FROM charges ORDER BY id`)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []Charge
	for rows.Next() {
		var c Charge
		if err := rows.Scan(&c.ID, &c.IdempotencyKey, &c.Amount, &c.OrderRef); err != nil {
			return nil, err
		}
		out = append(out, c)
	}
	return out, rows.Err()
}
