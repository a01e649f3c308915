// Package consumer is redeliver's vocabulary, shared by every kind of
// consumer it tests — the built-in handler on its store and the user's own
// consumer over HTTP, as a process or behind a broker: the delivery of an
// event, the outcome it had, the fault points a delivery can be failed
// at, where a delivery came from, and the counters a run keeps.
//
// Of this module it imports only pkg/problem, and it links no database
// driver or broker client, so that every other package may import it.
package consumer

import (
	"time"

	"github.com/redeliver/redeliver/pkg/problem"
)

// StopGrace is how long a consumer redeliver started has to exit after
// SIGTERM before its process group is killed.
const StopGrace = 5 * time.Second

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

// The answers of a user's consumer, as a broker reads them (a conflict is
// Conflict).
const (
	Acked    Outcome = "acked"    // 2xx, or exit 0: the broker forgets the event
	Rejected Outcome = "rejected" // another 4xx, or exit 66: refused for good
	Unacked  Outcome = "unacked"  // 5xx, 429, a timeout, a reset, a kill: the broker will redeliver
)

// Outcomes lists every outcome of the built-in handler, in report order.
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
	// Payload, when not empty, is the raw JSON of the envelope's "data",
	// read already by whoever made the delivery; the handler then does
	// not look for it in the envelope again.
	Payload string
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
	// A user's consumer's answer: its HTTP or exit status (0 when none
	// came), and the answer in words, as an expectation quotes it.
	Status int
	Said   string
}

// ExternalCall is one call to the external provider.
type ExternalCall struct {
	IdempotencyKey string
	Amount         string
	ChargeID       int64
	Replayed       bool  // the provider returned an earlier charge for the key
	Err            error // a key conflict (the provider's 422) or another refusal
}

// ParseFaultPoint returns the fault point named s.
func ParseFaultPoint(s string) (FaultPoint, bool) {
	for _, p := range FaultPoints {
		if string(p) == s {
			return p, true
		}
	}
	return "", false
}

// Counters are the figures worth monitoring in an idempotent consumer.
type Counters struct {
	Deliveries          int `json:"deliveries"`
	Processed           int `json:"processed"`
	Duplicates          int `json:"duplicates"` // skipped duplicates: the handler found the marker
	Conflicts           int `json:"conflicts"`  // identity conflicts
	Failed              int `json:"failed"`
	Crashed             int `json:"crashed"`
	Effects             int `json:"effects"`               // effects written
	Redeliveries        int `json:"redeliveries"`          // deliveries of an event already delivered
	KeyConflicts        int `json:"key_conflicts"`         // idempotency-key conflicts at the gateway
	FailedAfterExternal int `json:"failed_after_external"` // failures after the external call was made
	OrphanCharges       int `json:"orphan_charges"`        // reconciliation: charges with no local effect
	UnchargedEffects    int `json:"uncharged_effects"`     // reconciliation: effects with no charge
	// A broker target's publishes, and what the broker did with them.
	Published         int  `json:"published,omitempty"`          // stored (JetStream) or confirmed (RabbitMQ)
	BrokerRedelivered int  `json:"broker_redelivered,omitempty"` // JetStream's redeliveries to the consumer
	Uncounted         bool `json:"-"`                            // the broker does not count its redeliveries (RabbitMQ)
	// HeldBack counts the messages a check's instances still held
	// unacknowledged when they were stopped at a settle, behind a broker
	// that shows no acks (RabbitMQ): the broker put them back, and
	// HeldBackRestarts counts the restarts that took them. KilledAtStop
	// counts the instances that did not end within the grace of those
	// stops after their SIGTERM, and were killed.
	HeldBack         int `json:"held_back,omitempty"`
	HeldBackRestarts int `json:"held_back_restarts,omitempty"`
	KilledAtStop     int `json:"killed_at_stop,omitempty"`
	// Apart counts the statements the database proxy let through while a
	// delivery was watched that were not the delivery's (a background
	// job's): never counted in its boundaries, never crashed at.
	Apart int `json:"-"`
	// A target's crashes, by when the kill came against the consumer's
	// answer; the rest of Crashed are not known (a broker's instance
	// kills). The reports write them as a target check's crashes.
	CrashedBeforeAnswer int `json:"-"`
	CrashedAfterAnswer  int `json:"-"`
	// CrashedInWork counts the crashes after the answer that came at a
	// statement boundary while the consumer still worked on the
	// delivery in the database (a transaction of it open, a statement
	// of it not run yet): they interrupted that work.
	CrashedInWork int `json:"-"`
	// Unraced counts the schedules of a race behind a broker whose held
	// worker raced nothing: no statement of another copy ran while it
	// was held (the broker handed the copies to one instance, which
	// took them one at a time).
	Unraced int `json:"-"`
	// CrashedSpent counts the crashes after the answer at the boundary
	// after the delivery's last statement, every transaction of it over
	// (as the recording of crash: statements saw): they interrupted
	// nothing.
	CrashedSpent int `json:"-"`
}

// Interrupted words a target's crashes: how many came before the
// consumer's answer (they interrupted a delivery), how many after it,
// and how many redeliver cannot place.
func (c Counters) Interrupted() (before, after, unknown int) {
	return c.CrashedBeforeAnswer, c.CrashedAfterAnswer, c.Crashed - c.CrashedBeforeAnswer - c.CrashedAfterAnswer
}

// InterruptedNone reports whether a target's check crashed the consumer
// only after its answers, and none of those kills came while it still
// worked on the delivery in the database: none of its kills interrupted
// anything.
func (c Counters) InterruptedNone() bool {
	return c.Crashed > 0 && c.CrashedAfterAnswer == c.Crashed && c.CrashedInWork == 0
}

// Add adds o to c.
func (c *Counters) Add(o Counters) {
	c.Deliveries += o.Deliveries
	c.Processed += o.Processed
	c.Duplicates += o.Duplicates
	c.Conflicts += o.Conflicts
	c.Failed += o.Failed
	c.Crashed += o.Crashed
	c.Effects += o.Effects
	c.Redeliveries += o.Redeliveries
	c.KeyConflicts += o.KeyConflicts
	c.FailedAfterExternal += o.FailedAfterExternal
	c.OrphanCharges += o.OrphanCharges
	c.UnchargedEffects += o.UnchargedEffects
	c.Published += o.Published
	c.BrokerRedelivered += o.BrokerRedelivered
	c.Uncounted = c.Uncounted || o.Uncounted
	c.HeldBack += o.HeldBack
	c.HeldBackRestarts += o.HeldBackRestarts
	c.KilledAtStop += o.KilledAtStop
	c.Apart += o.Apart
	c.CrashedBeforeAnswer += o.CrashedBeforeAnswer
	c.CrashedAfterAnswer += o.CrashedAfterAnswer
	c.CrashedInWork += o.CrashedInWork
	c.CrashedSpent += o.CrashedSpent
	c.Unraced += o.Unraced
}

// Statement is one SQL statement a consumer sent its database during a
// delivery, as the database proxy saw it, with the answer it got.
type Statement struct {
	// Worker is the connection it came on, numbered 1, 2, … in the order
	// the delivery's connections first sent a statement.
	Worker int
	Text   string
	// Answer is the command tag ("INSERT 0 1", "SELECT 0"), "ERROR
	// 23505", or empty when none came.
	Answer string
	// Held marks the statement a fault held: before it reached the
	// database (Before) or after its answer. The consumer was killed
	// there, or, when Released, let go once the other workers had run.
	Held     bool
	Before   bool
	Released bool
	// Lane is the worker (Span.Lane) whose delivery used the
	// connection, when redeliver knows it; 0 when it does not.
	Lane int
	// Extended: it came in the extended protocol, prepared as Name (""
	// for the unnamed statement); Sync numbers the Sync that ended it on
	// its connection (0: none came), so that the statements one Sync
	// ended together can be told.
	Extended bool
	Name     string
	Sync     int
	// Binary: it came in MySQL's binary protocol, a COM_STMT_EXECUTE of
	// the statement prepared as Name (its id); each execute ends itself.
	Binary bool
	// Implicit: it came on a MySQL connection with autocommit off (SET
	// autocommit = 0 before the delivery, as drivers such as Python's
	// MySQLdb send on connecting): outside a transaction it opened one,
	// which lasts until a COMMIT or ROLLBACK.
	Implicit bool
	// External, when set, makes this a call to that external's
	// stand-in, not an SQL statement: Text is the call ("POST
	// /v1/charges Idempotency-Key: payment-O-1"), Answer what the
	// stand-in answered ("201 (ch_1)", "201 replayed", "no answer").
	External string
	// AnsweredBefore, when set, is the consumer's answer to the delivery
	// ("202", "exit 0", a broker's "acked" or "offset committed"), which
	// came just before this statement: it and
	// the ones after it ran after the answer. It is set on one statement
	// of a trace at most.
	AnsweredBefore string
	// AckUnseen, when set, names the broker (RabbitMQ) the delivery came
	// through, which shows no other client a consumer's ack: where the
	// ack came is not known. It is set on the first statement of such a
	// trace, where another broker's would mark the ack.
	AckUnseen string
	// Instance is the started instance (1, 2, …) whose process held the
	// connection, behind a broker with several instances; 0 when there
	// is one, or it is not known.
	Instance int
	// Redelivery marks a statement of the delivery made again after the
	// kill and the restart, until it was answered and its connections
	// were idle: the statements of a trace before the first so marked
	// are the killed attempt's, those after it the redelivery's.
	Redelivery bool
	// Params are the values bound to the statement, in order, where the
	// proxy saw them (PostgreSQL's Bind, MySQL's COM_STMT_EXECUTE); nil
	// for a statement that binds none or whose values were not seen.
	Params []Param
}

// Param is one value bound to a statement.
type Param struct {
	// Text is the value as text (a number in decimal, a string as it
	// is); empty for a NULL, and the bytes in hex when Undecoded.
	Text string
	Null bool
	// Undecoded: the value came in a binary format of a type redeliver
	// does not read; Text holds its bytes in hex, and nothing is read
	// from it.
	Undecoded bool
}
