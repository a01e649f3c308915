// Package handler is the idempotent consumer under test: the deliveries it
// receives, the outcomes it returns, the fault points inside it, and the
// strategies a consumer can be written with. The transaction logic lives
// here once; the stores (sqlite, postgres) only run its statements.
//
// It also owns the simulated payment provider an external-key strategy
// calls (PaymentGateway, gateway.go). Of this module it imports only
// pkg/consumer and pkg/template, and it links no database driver or broker
// client: a store implements Store.
package handler

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/redeliver/redeliver/pkg/consumer"
)

// Marker is a row of the processed table.
type Marker struct {
	EventID     string
	Consumer    string
	Identity    string
	BusinessKey string
	At          time.Time
}

// Effect is a row of the effect table: the business effect of one event.
type Effect struct {
	ID          int64
	EventID     string
	Consumer    string
	BusinessKey string
	Payload     string
	At          time.Time
}

// ErrUnique is returned by a store when an insert breaks a unique constraint.
var ErrUnique = errors.New("unique constraint violated")

// ErrBusy is returned by a store that gave up waiting for a lock another
// worker held (SQLITE_BUSY after its bounded wait). The transaction was
// rolled back, so the delivery failed and nothing was lost: it is reported
// as a failed outcome, as a broker would see it, not as a broken run.
var ErrBusy = errors.New("database busy")

// InjectedError is the failure a fault point raises.
type InjectedError struct{ Point consumer.FaultPoint }

func (e *InjectedError) Error() string { return fmt.Sprintf("Injected failure at %s", e.Point) }

// ConflictError says a redelivery's identity differs from the stored one.
type ConflictError struct {
	EventID        string
	Stored, Gotten string
}

func (e *ConflictError) Error() string {
	return fmt.Sprintf("Event identity conflict: %s was processed with identity %s, redelivered with %s", e.EventID, e.Stored, e.Gotten)
}

// KeyError says a business key could not be made for a delivery.
type KeyError struct {
	Template, EventID string
}

func (e *KeyError) Error() string {
	return fmt.Sprintf("business key template %q gave an empty key for event %s", e.Template, e.EventID)
}

// StoreError wraps a failure of the database itself (not of the delivery):
// the run cannot be trusted past it.
type StoreError struct{ Err error }

func (e *StoreError) Error() string { return e.Err.Error() }
func (e *StoreError) Unwrap() error { return e.Err }

// Store opens transactions on the database the handler writes to.
type Store interface {
	// Begin starts a write transaction that holds the write lock from its
	// first statement (BEGIN IMMEDIATE on SQLite).
	Begin(ctx context.Context) (Tx, error)
}

// Tx is one transaction of the handler. Its methods are the handler's
// statements; every insert reports a unique violation as ErrUnique.
type Tx interface {
	Marker(ctx context.Context, eventID, consumer string) (Marker, bool, error)
	InsertMarker(ctx context.Context, m Marker) error
	InsertEffect(ctx context.Context, e Effect) (int64, error)
	// EffectOf returns the effect of an event for a consumer.
	EffectOf(ctx context.Context, eventID, consumer string) (int64, bool, error)
	// EffectByKey returns the effect for a business key and the event that made it.
	EffectByKey(ctx context.Context, key string) (id int64, eventID string, found bool, err error)
	// PurgeMarkers deletes markers written before the given time.
	PurgeMarkers(ctx context.Context, before time.Time) error
	Commit() error
	Rollback() error
}
