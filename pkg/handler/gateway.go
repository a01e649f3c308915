package handler

// The simulated external provider an external-key handler calls (its
// Gateway): a payment gateway with its own store, outside the handler's
// transaction, that honours idempotency keys the way the IETF
// Idempotency-Key draft describes.

import (
	"context"
	"fmt"
	"sync"
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

// PaymentGateway is the provider. Its ledger is its own, in memory, so a
// rollback of the handler's transaction never undoes a charge.
type PaymentGateway struct {
	mu      sync.Mutex
	charges []Charge
	byKey   map[string]int // idempotency key → index in charges
}

// NewPaymentGateway opens an empty gateway.
func NewPaymentGateway() (*PaymentGateway, error) {
	return &PaymentGateway{byKey: map[string]int{}}, nil
}

// Close releases the ledger.
func (g *PaymentGateway) Close() error { return nil }

// Charge charges amount for orderRef. A request without a key is not
// idempotent: every call charges. A known key with the same request returns
// the first charge; with a different amount or order it is refused.
func (g *PaymentGateway) Charge(ctx context.Context, key, amount, orderRef string) (int64, bool, error) {
	if err := ctx.Err(); err != nil {
		return 0, false, fmt.Errorf("gateway: %w", err)
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	if i, ok := g.byKey[key]; ok && key != "" {
		c := g.charges[i]
		if c.Amount != amount || c.OrderRef != orderRef {
			return 0, false, &KeyConflictError{Key: key, StoredAmount: c.Amount, Amount: amount, StoredOrder: c.OrderRef, GottenOrder: orderRef}
		}
		return c.ID, true, nil
	}
	c := Charge{ID: int64(len(g.charges)) + 1, IdempotencyKey: key, Amount: amount, OrderRef: orderRef}
	if key != "" {
		g.byKey[key] = len(g.charges)
	}
	g.charges = append(g.charges, c)
	return c.ID, false, nil
}

// Charges returns the ledger, in order.
func (g *PaymentGateway) Charges(ctx context.Context) ([]Charge, error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if len(g.charges) == 0 {
		return nil, nil
	}
	return append([]Charge(nil), g.charges...), nil
}

// GatewayLedger is a copy of the gateway's ledger, to put back with Restore.
type GatewayLedger struct {
	charges []Charge
	byKey   map[string]int
}

// Snapshot copies the ledger.
func (g *PaymentGateway) Snapshot() GatewayLedger {
	g.mu.Lock()
	defer g.mu.Unlock()
	l := GatewayLedger{charges: append([]Charge(nil), g.charges...), byKey: make(map[string]int, len(g.byKey))}
	for k, v := range g.byKey {
		l.byKey[k] = v
	}
	return l
}

// Restore puts back a ledger Snapshot copied: the gateway then holds
// exactly what it held then.
func (g *PaymentGateway) Restore(l GatewayLedger) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.charges = append([]Charge(nil), l.charges...)
	g.byKey = make(map[string]int, len(l.byKey))
	for k, v := range l.byKey {
		g.byKey[k] = v
	}
}
