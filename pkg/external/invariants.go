package external

import (
	"context"
	"fmt"

	"github.com/redeliver/redeliver/pkg/effects"
	"github.com/redeliver/redeliver/pkg/invariant"
)

// Invariants are the catalogue's invariants a target is judged by, over
// its own effect table.
var Invariants = invariant.Checked(invariant.Database, nil)

// Delivery is one delivery to the target and what came back.
type Delivery struct {
	invariant.Record
	Answer Answer
	// Changed describes how a conflict answer changed the key's rows
	// ("" when it did not).
	Changed string
	// Duplicated describes how a redelivery of an event whose effect was
	// committed changed the key's rows without adding or removing one,
	// or how a concurrent step's copies left them other than one copy
	// does ("" when it did not, or when the rows were not compared).
	Duplicated string
	// AtOnce is how many copies a concurrent step delivered, when
	// Duplicated compares them with one copy.
	AtOnce int64
	// Expected: the scenario step expects an answer, and its expectation
	// judges this delivery; never-acked does not.
	Expected bool
	// nth is which delivery of its event this is (1 for the first), in a
	// replay.
	nth int64
}

// afterAll says a redelivery's change with how many deliveries of the
// event there had been by then; no change says nothing.
func (d *Delivery) afterAll(change string) string {
	if change == "" || d.nth < 2 {
		return change
	}
	return fmt.Sprintf("%s after %d deliveries", change, d.nth)
}

// Event is the delivery's event id, and whether the consumer acked it: a
// journal.Delivery.
func (d *Delivery) Event() (id string, acked bool) { return d.EventID, d.Answer.consumerAcked() }

// Answered is what the catalogue's judge needs of the delivery.
func (d *Delivery) Answered() invariant.Answered {
	return invariant.Answered{Record: &d.Record, Answer: d.Answer.Kind, ConsumerAcked: d.Answer.consumerAcked(),
		Said: d.Answer.Short(), Changed: d.Changed, Duplicated: d.Duplicated, AtOnce: d.AtOnce, Expected: d.Expected}
}

// answeredAll is answered of each delivery of a history.
func answeredAll(history []*Delivery) []invariant.Answered {
	out := make([]invariant.Answered, len(history))
	for i, d := range history {
		out[i] = d.Answered()
	}
	return out
}

// judge reads the history and the effect rows and returns every broken
// invariant, as the catalogue decides them.
func judge(history []*Delivery, rows []effects.Row, table string) []invariant.Violation {
	return invariant.JudgeRows(answeredAll(history), rowsOf(rows), table)
}

// eachRow gives each effect row of db, as the catalogue's judge reads
// it, to the function it is given: what a journal judges.
func eachRow(ctx context.Context, db *effects.DB) func(func(invariant.Row) error) error {
	return func(f func(invariant.Row) error) error {
		return db.EachRow(ctx, nil, func(r effects.Row) error { return f(invariant.Row(r)) })
	}
}

// rowsOf is effect rows as the catalogue's judge reads them.
func rowsOf(rs []effects.Row) []invariant.Row {
	if rs == nil {
		return nil
	}
	out := make([]invariant.Row, len(rs))
	for i, r := range rs {
		out[i] = invariant.Row(r)
	}
	return out
}

// changed says how a key's rows changed across a delivery, or "".
func changed(before, after []effects.Row) string {
	return invariant.Changed(rowsOf(before), rowsOf(after))
}

// duplicated says how redeliveries of an event whose effect was committed
// changed a key's rows without adding or removing one, or "".
func duplicated(before, after []effects.Row) string {
	return invariant.Duplicated(rowsOf(before), rowsOf(after))
}
