// Package handler is the idempotent consumer under test: the deliveries it
// receives, the outcomes it returns, the fault points inside it, and the
// strategies a consumer can be written with. The transaction logic lives
// here once; the stores (sqlite, postgres) only run its statements.
package handler

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/redeliver/redeliver/pkg/problem"
)

// MaxIDBytes is the longest event id any store accepts. PostgreSQL cannot
// index a key of more than about 2.7 KB, so one limit below that holds for
// every store, and files are refused at validation rather than half-way
// through a run.
const MaxIDBytes = 1024

// Outcome is what one delivery did.
type Outcome string

// The outcomes a delivery can have.
const (
	Processed Outcome = "processed" // a new effect was written
	Duplicate Outcome = "duplicate" // marker found, same identity: the original effect id is returned
	Conflict  Outcome = "conflict"  // marker found, different identity: rejected, nothing written
	Failed    Outcome = "failed"    // an injected or real error: rolled back
	Crashed   Outcome = "crashed"   // committed, then crashed before the ack
)

// Outcomes lists every outcome word, in report order.
var Outcomes = []Outcome{Processed, Duplicate, Conflict, Failed, Crashed}

// FaultPoint names a place inside the handler where a delivery can be made to fail.
type FaultPoint string

// The fault points, in the order a delivery reaches them.
const (
	BeforeBegin   FaultPoint = "before-begin"
	AfterCheck    FaultPoint = "after-check"
	AfterMarker   FaultPoint = "after-marker"
	AfterEffect   FaultPoint = "after-effect"
	AfterExternal FaultPoint = "after-external"
	AfterCommit   FaultPoint = "after-commit"
)

// FaultPoints lists every fault point in the order a delivery reaches them.
var FaultPoints = []FaultPoint{BeforeBegin, AfterCheck, AfterMarker, AfterEffect, AfterExternal, AfterCommit}

// Location is where a delivery came from: a scenario step or a capture line.
type Location = problem.Pos

// Delivery is one attempt to hand an event to a consumer.
type Delivery struct {
	EventID  string
	Source   string
	Consumer string
	Schema   string
	// Envelope is the event as one JSON object: id, source, type, subject,
	// schema, headers and data. Key and identity paths ("data.orderId") are
	// read from it.
	Envelope []byte
	Attempt  int
	At       Location
	// Identity, when not empty, is Config.IdentityOf of this delivery,
	// computed already by whoever made it; the handler then does not read
	// the envelope for it again.
	Identity string
	// BusinessKey, when not empty, is the business key the delivery came
	// with (a replayed capture names one per record); the handler uses it
	// instead of expanding its key template.
	BusinessKey string
}

// Result is what the handler returned for one delivery.
type Result struct {
	Outcome  Outcome
	EffectID int64  // the effect written (processed, crashed) or returned (duplicate)
	Key      string // the business key, where the strategy uses one
	Err      error  // why it failed or conflicted
	// DuplicateOf names the event whose effect a duplicate returned, when it
	// is another event (a business-key duplicate under a new event id).
	DuplicateOf string
	// External records the call to the payment gateway, if one was made.
	External *ExternalCall
}

// ExternalCall is one call to the external provider.
type ExternalCall struct {
	IdempotencyKey string
	Amount         string
	ChargeID       int64
	Replayed       bool  // the provider returned an earlier charge for the key
	Err            error // a key conflict (the provider's 422) or another refusal
}

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
type InjectedError struct{ Point FaultPoint }

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
