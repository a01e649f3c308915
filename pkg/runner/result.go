package runner

import (
	"time"

	"github.com/redeliver/redeliver/pkg/handler"
	"github.com/redeliver/redeliver/pkg/invariant"
)

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
	// A target's crashes, by when the kill came against the consumer's
	// answer; the rest of Crashed are not known (a broker's instance
	// kills). The reports write them as a target check's crashes.
	CrashedBeforeAnswer int `json:"-"`
	CrashedAfterAnswer  int `json:"-"`
}

// Interrupted words a target's crashes: how many came before the
// consumer's answer (they interrupted a delivery), how many after it,
// and how many redeliver cannot place.
func (c Counters) Interrupted() (before, after, unknown int) {
	return c.CrashedBeforeAnswer, c.CrashedAfterAnswer, c.Crashed - c.CrashedBeforeAnswer - c.CrashedAfterAnswer
}

// InterruptedNone reports whether a target's check crashed the consumer
// only after its answers: none of its kills interrupted a delivery.
func (c Counters) InterruptedNone() bool {
	return c.Crashed > 0 && c.CrashedAfterAnswer == c.Crashed
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
	c.CrashedBeforeAnswer += o.CrashedBeforeAnswer
	c.CrashedAfterAnswer += o.CrashedAfterAnswer
}

// Failure is one way a check did not hold: an expectation or an invariant.
type Failure struct {
	Step     int // 1-based; 0 for the check itself
	Pos      handler.Location
	Message  string // one sentence, without the location
	Expected string
	Got      string
	// Invariant is set when the failure is a broken invariant.
	Invariant invariant.Name
}

// CheckResult is the outcome of one check.
type CheckResult struct {
	Name     string
	Pos      handler.Location
	Passed   bool
	Line     string // the report line: the check's say, or a plain summary
	Failures []Failure
	// Violations are the invariants this check broke (newly, in this check).
	Violations []invariant.Violation
	Declared   []string // the violations the check declared, if it did
	Counters   Counters
	History    []invariant.Record
	Duration   time.Duration // wall time of the check, for the reports that show it
	// Reconciliation lists the gateway mismatches when the check ended
	// (external-key handlers only).
	Reconciliation []string
	// Held lists the fault points at which a concurrent step's workers were
	// held (by interleave, or while the check was explored): reached.
	Held []handler.FaultPoint
	// Schedules is how many schedules the check was run under, when it was
	// explored (a concurrent step without interleave); 0 otherwise.
	Schedules int
}

// held records that workers were held at p.
func (c *CheckResult) held(p handler.FaultPoint) {
	for _, q := range c.Held {
		if q == p {
			return
		}
	}
	c.Held = append(c.Held, p)
}

// FileResult is the outcome of one scenario file.
type FileResult struct {
	File     string
	Name     string
	Strategy handler.Strategy
	Checks   []CheckResult
	Counters Counters
	// Target and Effects say, in words, which consumer and which database
	// a target-mode file tested; empty for the built-in handler.
	Target  string
	Effects string
	// Invariants are those the file was judged by, in catalogue order;
	// nil means every invariant of the catalogue (the built-in handler).
	Invariants []*invariant.Invariant
}

// Passed reports whether every check of the file passed.
func (f *FileResult) Passed() bool {
	for _, c := range f.Checks {
		if !c.Passed {
			return false
		}
	}
	return true
}

// Failed counts the checks that failed.
func (f *FileResult) Failed() int {
	n := 0
	for _, c := range f.Checks {
		if !c.Passed {
			n++
		}
	}
	return n
}
