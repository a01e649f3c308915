package invariant

// The judge of a user's own consumer (the Database kind): it reads the
// history of the deliveries made to it, each with the consumer's answer,
// and the rows of its effect table, and asks every invariant a user's
// database checks (its judgeRows, in the catalogue) for its breaches. A
// replay too long to keep its deliveries asks the same invariants the same
// question over a journal instead (journal.go).

import (
	"encoding/json"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/redeliver/redeliver/pkg/consumer"
	"github.com/redeliver/redeliver/pkg/escape"
)

// Answered is one delivery to a user's consumer, with what the judge needs
// of the answer it got.
type Answered struct {
	// Record is the delivery; a breach it caused points at it.
	*Record
	// Answer is the answer, as a broker reads it: consumer.Acked,
	// Conflict, Rejected or Unacked.
	Answer consumer.Outcome
	// ConsumerAcked: the consumer acked, even if its answer was then
	// dropped on purpose (and Answer is not Acked).
	ConsumerAcked bool
	// Said is the answer in a few words on one line ("unacked (500)").
	Said string
	// Changed says how a conflict answer changed the key's rows ("" when
	// it did not); Duplicated how a redelivery of an event already acked
	// changed them without adding or removing one ("" when it did not, or
	// when the rows were not compared). Changed and Duplicated say it.
	Changed, Duplicated string
	// AtOnce is how many copies a concurrent step delivered, when
	// Duplicated compares what they left with what one copy leaves (0
	// for a redelivery made one at a time).
	AtOnce int64
	// Expected: the scenario step expects an answer, and its expectation
	// judges this delivery; never-acked does not.
	Expected bool
}

// settled: the consumer answered the delivery for good, with an ack or a
// conflict.
func (d *Answered) settled() bool { return d.Answer == consumer.Acked || d.Answer == consumer.Conflict }

// Row is one row of a user's effect table (or effects query), as the judge
// reads it.
type Row struct {
	Key    string
	Event  string
	Values string // a JSON array of the compared columns' values
	// Columns names the values, in order.
	Columns []string
}

// judged lists the invariants a user's consumer is judged by, each with
// its judgeRows and judgeJournal, in the order their breaches are
// reported.
var judged = []*Invariant{DuplicateEffect, LostEffect, ChangedByConflict, ChangedByDuplicate, NeverAcked}

// JudgeRows reads the history of a user's consumer and its effect rows
// (in the order of their values), the effect table named table, and
// returns every broken invariant: by invariant (in the order judged lists
// them), then as each decides.
func JudgeRows(history []Answered, rows []Row, table string) []Violation {
	c := &rowsCheck{history: history, table: table, byKey: map[string][]Row{}, lastOfKey: map[string]*Answered{}}
	for _, r := range rows {
		c.byKey[r.Key] = append(c.byKey[r.Key], r)
	}
	for i := range history {
		c.lastOfKey[history[i].Key] = &history[i]
	}
	for _, inv := range judged {
		inv.judgeRows(c, inv)
	}
	return c.out
}

// rowsCheck is a user's consumer's history and effect rows, indexed for
// the decisions.
type rowsCheck struct {
	history   []Answered
	table     string
	byKey     map[string][]Row
	lastOfKey map[string]*Answered
	out       []Violation
}

func (c *rowsCheck) hasRow(key string) bool { return len(c.byKey[key]) > 0 }

// duplicateEffects: a key with more than one row, by its last delivery.
func (c *rowsCheck) duplicateEffects(inv *Invariant) {
	var keys []string
	for k, rs := range c.byKey {
		if len(rs) > 1 {
			keys = append(keys, k)
		}
	}
	sort.Strings(keys)
	for _, k := range keys {
		var by *Record
		if d := c.lastOfKey[k]; d != nil {
			by = d.Record
		}
		c.out = append(c.out, duplicateEffect(inv, k, int64(len(c.byKey[k])), eventsOf(c.byKey[k]), c.table, by))
	}
}

// lostEffects: an acked delivery whose key has no row, the first of its
// event.
func (c *rowsCheck) lostEffects(inv *Invariant) {
	lost := map[string]bool{}
	for i := range c.history {
		d := &c.history[i]
		if d.Answer != consumer.Acked || c.hasRow(d.Key) || lost[d.EventID] {
			continue
		}
		lost[d.EventID] = true
		c.out = append(c.out, lostEffect(inv, d.Record, c.table))
	}
}

// changedByConflict: a conflict answer that changed the key's rows.
func (c *rowsCheck) changedByConflict(inv *Invariant) {
	c.out = append(c.out, changedByConflict(inv, c.history, c.table)...)
}

// changedByDuplicate: a redelivery of an acked event that changed the
// key's rows.
func (c *rowsCheck) changedByDuplicate(inv *Invariant) {
	c.out = append(c.out, changedByDuplicate(inv, c.history, c.table)...)
}

// neverAcked finds the events no delivery of which was acked (or answered
// as a conflict), when one of their deliveries was rejected or unacked
// without the scenario expecting it; and the events answered only as a
// conflict, unexpectedly, whose key has no row for them to conflict with:
// a consumer answering 409 to everything took nothing.
func (c *rowsCheck) neverAcked(inv *Invariant) {
	type event struct {
		settled, unexpected bool
		acked, conflicted   bool
		n                   int64
		answers             []string
		last                *Answered
	}
	events := map[string]*event{}
	var order []string
	for i := range c.history {
		d := &c.history[i]
		e := events[d.EventID]
		if e == nil {
			e = &event{}
			events[d.EventID] = e
			order = append(order, d.EventID)
		}
		e.n++
		e.last = d
		if d.ConsumerAcked {
			e.acked = true
		}
		switch {
		case d.settled():
			e.settled = true
			if d.Answer == consumer.Conflict && !d.Expected {
				e.conflicted = true
			}
		case !d.Expected:
			e.unexpected = true
		}
		if !contains(e.answers, d.Said) {
			e.answers = append(e.answers, d.Said)
		}
	}
	for _, id := range order {
		e := events[id]
		switch {
		case !e.settled && e.unexpected:
			c.out = append(c.out, neverAckedOne(inv, id, e.n, e.answers, e.last.Record))
		case !e.acked && e.conflicted && !c.hasRow(e.last.Key):
			c.out = append(c.out, conflictWithNothing(neverAckedOne(inv, id, e.n, e.answers, e.last.Record), e.last.Key, c.table))
		}
	}
}

// The breaches of a user's consumer, as both its judges word them.

// duplicateEffect: key has rows rows (of events), by its last delivery.
func duplicateEffect(inv *Invariant, key string, rows int64, events []string, table string, by *Record) Violation {
	v := Violation{Invariant: inv.Name, EventID: key, Detail: inv.Say(Facts{Key: key, Rows: rows, Table: table, Events: events})}
	if by != nil {
		v.EventID, v.By = by.EventID, by
	}
	return v
}

// lostEffect: the acked delivery by left its key no row.
func lostEffect(inv *Invariant, by *Record, table string) Violation {
	return Violation{Invariant: inv.Name, EventID: by.EventID,
		Detail: inv.Say(Facts{Event: by.EventID, Outcome: string(consumer.Acked), Key: by.Key, Table: table}), By: by}
}

// changedByConflict: each conflict answer of ds that changed its key's
// rows.
func changedByConflict(inv *Invariant, ds []Answered, table string) []Violation {
	var out []Violation
	for i := range ds {
		if d := &ds[i]; d.Answer == consumer.Conflict && d.Changed != "" {
			out = append(out, Violation{Invariant: inv.Name, EventID: d.EventID,
				Detail: inv.Say(Facts{Event: d.EventID, Key: d.Key, Table: table, Change: d.Changed}), By: d.Record})
		}
	}
	return out
}

// changedByDuplicate: each delivery of ds, a redelivery of an event whose
// effect was committed, that changed its key's rows, and each concurrent
// step whose copies left them other than one copy does.
func changedByDuplicate(inv *Invariant, ds []Answered, table string) []Violation {
	var out []Violation
	for i := range ds {
		if d := &ds[i]; d.Duplicated != "" {
			out = append(out, Violation{Invariant: inv.Name, EventID: d.EventID,
				Detail: inv.Say(Facts{Event: d.EventID, Key: d.Key, Table: table, Change: d.Duplicated, Deliveries: d.AtOnce, AtOnce: d.AtOnce > 0}), By: d.Record})
		}
	}
	return out
}

// neverAckedOne: event id had n deliveries, none acked, answered so, the
// last one by.
func neverAckedOne(inv *Invariant, id string, n int64, answers []string, by *Record) Violation {
	return Violation{Invariant: inv.Name, EventID: id,
		Detail: inv.Say(Facts{Event: id, Deliveries: n, Outcomes: answers}), By: by}
}

// conflictWithNothing says of a never-acked finding that the event was
// answered as a conflict, and its key has no row to conflict with.
func conflictWithNothing(v Violation, key, table string) Violation {
	v.Detail += fmt.Sprintf("; key %s has no row in %s for it to conflict with", key, table)
	return v
}

func eventsOf(rs []Row) []string {
	var ev []string
	for _, r := range rs {
		if r.Event != "" {
			ev = append(ev, r.Event)
		}
	}
	return ev
}

// Changed compares a key's rows before and after a delivery and says how
// they changed, or "" when they did not: what Answered.Changed says of a
// conflict answer.
func Changed(before, after []Row) string {
	if len(before) != len(after) {
		return fmt.Sprintf("%d rows before, %d after", len(before), len(after))
	}
	for i := range before {
		if before[i].Values != after[i].Values {
			return columnsChanged(before[i], after[i])
		}
	}
	return ""
}

// Duplicated compares a key's rows before and after a redelivery of an
// event already acked (what Answered.Duplicated says): a change that kept
// the number of rows is said; a row added or removed is left to
// duplicate-effect and lost-effect.
func Duplicated(before, after []Row) string {
	if len(before) != len(after) {
		return ""
	}
	return Changed(before, after)
}

// columnsChanged names the columns of a row that changed, with their values
// before and after.
func columnsChanged(b, a Row) string {
	var bv, av []string
	if json.Unmarshal([]byte(b.Values), &bv) != nil || json.Unmarshal([]byte(a.Values), &av) != nil || len(bv) != len(av) || len(b.Columns) != len(bv) {
		return fmt.Sprintf("%s became %s", b.Values, a.Values)
	}
	var parts []string
	for i := range bv {
		if bv[i] != av[i] {
			parts = append(parts, fmt.Sprintf("%s %s became %s", escape.Input(b.Columns[i]), escape.Input(bv[i]), escape.Input(av[i])))
		}
	}
	return strings.Join(parts, ", ")
}

// Reference is what one copy of an event left its key's rows, read in
// trials that delivered each event of the file once.
type Reference struct {
	Rows []Row
	// Unstable names the columns two such trials left different: the
	// database or the clock fills them (a serial id, a created_at), not
	// the event, so they say nothing about the copies.
	Unstable map[string]bool
}

// NewReference is the reference two trials give for one key: the rows
// of the first, every column the second left different unstable, and
// every column that holds a time: two trials within one second leave a
// created_at at second resolution alike, and the run a second later
// does not. Trials that left a different number of rows give none (ok
// false).
func NewReference(first, second []Row) (ref Reference, ok bool) {
	if len(first) != len(second) {
		return Reference{}, false
	}
	ref = Reference{Rows: first, Unstable: map[string]bool{}}
	for i := range first {
		b, a, ok := values(first[i], second[i])
		if !ok {
			return Reference{}, false
		}
		for j := range b {
			if b[j] != a[j] || clockValue(b[j]) {
				ref.Unstable[first[i].Columns[j]] = true
			}
		}
	}
	return ref, true
}

// clockLayouts are the forms a time takes in the rows a driver reads:
// PostgreSQL's and SQLite's text, Go's, RFC 3339, a date alone.
var clockLayouts = []string{
	time.RFC3339Nano,
	"2006-01-02 15:04:05.999999999Z07:00",
	"2006-01-02 15:04:05.999999999Z07",
	"2006-01-02 15:04:05.999999999 -0700 MST",
	"2006-01-02 15:04:05.999999999 -0700",
	"2006-01-02 15:04:05.999999999",
	"2006-01-02T15:04:05.999999999",
	"2006-01-02",
}

// clockValue reports whether a value reads as a time or a date: the
// clock fills it, not the event.
func clockValue(v string) bool {
	if len(v) < len("2006-01-02") || v[4] != '-' {
		return false
	}
	for _, layout := range clockLayouts {
		if _, err := time.Parse(layout, v); err == nil {
			return true
		}
	}
	return false
}

// Against says how a key's rows after several copies of an event differ
// from what one copy left, in the columns the reference holds stable
// ("balance 40 became 160"), or "" when they do not, or when a row was
// added or removed (duplicate-effect and lost-effect judge that).
func (r Reference) Against(after []Row) string {
	if len(r.Rows) != len(after) {
		return ""
	}
	var parts []string
	for i := range after {
		b, a, ok := values(r.Rows[i], after[i])
		if !ok {
			if r.Rows[i].Values != after[i].Values {
				return fmt.Sprintf("%s became %s", r.Rows[i].Values, after[i].Values)
			}
			continue
		}
		for j := range b {
			if col := r.Rows[i].Columns[j]; b[j] != a[j] && !r.Unstable[col] {
				parts = append(parts, fmt.Sprintf("%s %s became %s", escape.Input(col), escape.Input(b[j]), escape.Input(a[j])))
			}
		}
	}
	return strings.Join(parts, ", ")
}

// values decodes two rows' compared values, when both hold as many as
// the first names columns.
func values(b, a Row) (bv, av []string, ok bool) {
	if json.Unmarshal([]byte(b.Values), &bv) != nil || json.Unmarshal([]byte(a.Values), &av) != nil || len(bv) != len(av) || len(b.Columns) != len(bv) {
		return nil, nil, false
	}
	return bv, av, true
}
