// Package scenario is the scenario file format, version 1: its types, and
// a strict loader that names file:line:column for every mistake.
//
// Of this module it imports pkg/broker (broker addresses and topic names),
// pkg/consumer, pkg/handler, pkg/invariant, pkg/problem, pkg/redact and
// pkg/template, and it links no database driver, store or broker client.
package scenario

import (
	"time"

	"github.com/redeliver/redeliver/pkg/consumer"
	"github.com/redeliver/redeliver/pkg/handler"
	"github.com/redeliver/redeliver/pkg/template"
)

// Pos is a place in a scenario file.
type Pos = consumer.Location

// Scenario is one file: one story with one database.
type Scenario struct {
	File    string
	Name    string
	Handler Handler
	Checks  []*Check
	// Target and Effects are set instead of Handler when the file tests
	// the user's own consumer (target mode).
	Target  *Target
	Effects *Effects
	// Externals are the services the consumer calls that redeliver
	// stands in for, in the order the file declares them.
	Externals []*External
	// TargetFile is set for a --target file (version, target and
	// effects, no checks): replay --target reads it, run has nothing to
	// run in it.
	TargetFile bool
	// Secrets are the secret values its configuration holds: what each
	// ${VAR} whose name says it is secret expanded to, the passwords of
	// its URLs and DSNs, the values of env and header entries under a
	// secret name. Every output masks them (redact.Secrets).
	Secrets []string
}

// Handler is the handler block.
type Handler struct {
	handler.Config
	Pos Pos
}

// Check is one named check; checks run in order and share the database.
type Check struct {
	Name   string
	Pos    Pos
	Steps  []*Step
	Expect *State // checked after the last step
	Say    template.Template
	// Violations are the invariants this check must break, exactly; set
	// only when the check declares them.
	Violations         []string
	ViolationsDeclared bool
	ViolationsPos      Pos
}

// StepKind tells what a step does.
type StepKind int

// The step kinds.
const (
	Deliver StepKind = iota // deliver one event
	Inspect                 // check the stored state
	Advance                 // move the scenario clock
)

// Step is one step of a check.
type Step struct {
	Kind       StepKind
	Pos        Pos
	Event      *Event              // Deliver
	Fail       consumer.FaultPoint // Deliver: where the delivery fails
	Consumer   string              // Deliver: the consumer, for consumer-scoped handlers
	Times      int                 // Deliver: how many times in a row (default 1)
	Concurrent int                 // Deliver: how many workers at once (0: not concurrent)
	Interleave consumer.FaultPoint // Deliver, concurrent: the point every worker is held at until all have reached it
	InOrder    bool                // Deliver, interleave: let held workers go one at a time, in worker order
	Label      string              // Deliver: a name for the first delivery's result
	Expect     *Expectation        // Deliver: what each delivery must return
	State      *State              // Inspect
	Advance    time.Duration       // Advance
	// Target mode only.
	Drop  bool          // Deliver: the answer is cut off, then the event is redelivered
	Crash *Crash        // Deliver: kill the started consumer during the delivery
	Delay time.Duration // Deliver: wait this long before each delivery
	// MessageID is the broker's message id (broker targets): the event id
	// unless the step republishes the event under another.
	MessageID string
}

// Event is the event a deliver step hands over.
type Event struct {
	ID     string
	Source string
	Schema string
	Pos    Pos
	// Envelope is the event as JSON: id, source, type, subject, schema,
	// headers and data, as the handler reads it.
	Envelope []byte
}

// Expectation is what a delivery must return.
type Expectation struct {
	Pos          Pos
	Outcome      consumer.Outcome // empty: any
	Error        string           // a substring of the error
	SameEffectAs string           // a label defined earlier
	// Target mode: the consumer's answer (acked, conflict, rejected,
	// unacked) or an exact HTTP status.
	Answer string
	Status int
}

// State is a check of what the store holds.
type State struct {
	Pos          Pos
	Rows         []RowCount
	Processed    []EventRef
	NotProcessed []EventRef
	Charges      *int
	ChargesPos   Pos
	// Effects (target mode) expects a business key to have N rows in the
	// effect table.
	Effects []KeyCount
	// Externals (target mode) expects an external to have performed N
	// effects under a business key.
	Externals []ExternalCount
}

// KeyCount expects a business key to have N effect rows.
type KeyCount struct {
	Key string
	N   int64
	Pos Pos
}

// RowCount expects a table to hold N rows.
type RowCount struct {
	Table string
	N     int64
	Pos   Pos
}

// EventRef names an event (and, for consumer-scoped handlers, a consumer).
type EventRef struct {
	ID       string
	Consumer string
	Pos      Pos
}
