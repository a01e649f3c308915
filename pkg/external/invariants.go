package external

import (
	"encoding/json"
	"fmt"
	"sort"
	"strings"

	"github.com/redeliver/redeliver/pkg/effects"
	"github.com/redeliver/redeliver/pkg/escape"
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
	// Duplicated describes how a redelivery of an event already acked
	// changed the key's rows without adding or removing one ("" when it
	// did not, or when the rows were not compared).
	Duplicated string
	// Expected: the scenario step expects an answer, and its expectation
	// judges this delivery; never-acked does not.
	Expected bool
}

// judge reads the history and the effect rows and returns every broken
// invariant, sorted by invariant and event.
func judge(history []*Delivery, rows []effects.Row, table string) []invariant.Violation {
	var out []invariant.Violation
	byKey := map[string][]effects.Row{}
	for _, r := range rows {
		byKey[r.Key] = append(byKey[r.Key], r)
	}
	lastOfKey := map[string]*Delivery{}
	for _, d := range history {
		lastOfKey[d.Key] = d
	}
	// duplicate-effect: a key with more than one row.
	var keys []string
	for k, rs := range byKey {
		if len(rs) > 1 {
			keys = append(keys, k)
		}
	}
	sort.Strings(keys)
	for _, k := range keys {
		var by *invariant.Record
		if d := lastOfKey[k]; d != nil {
			by = &d.Record
		}
		out = append(out, duplicateEffect(k, int64(len(byKey[k])), eventsOf(byKey[k]), table, by))
	}
	// lost-effect: an acked delivery whose key has no row.
	lost := map[string]bool{}
	for _, d := range history {
		if d.Answer.Kind != Acked || len(byKey[d.Key]) > 0 || lost[d.EventID] {
			continue
		}
		lost[d.EventID] = true
		out = append(out, lostEffect(&d.Record, table))
	}
	for _, d := range history {
		if d.Answer.Kind == Conflict && d.Changed != "" {
			out = append(out, changedByConflict(d, table))
		}
	}
	for _, d := range history {
		if d.Duplicated != "" {
			out = append(out, changedByDuplicate(d, table))
		}
	}
	out = append(out, neverAcked(history, func(key string) bool { return len(byKey[key]) > 0 }, table)...)
	return out
}

// neverAcked finds the events no delivery of which was acked (or answered
// as a conflict), when one of their deliveries was rejected or unacked
// without the scenario expecting it; and the events answered only as a
// conflict, unexpectedly, whose key has no row (hasRow) for them to
// conflict with: a consumer answering 409 to everything took nothing.
func neverAcked(history []*Delivery, hasRow func(key string) bool, table string) []invariant.Violation {
	type event struct {
		settled, unexpected bool
		acked, conflicted   bool
		n                   int64
		answers             []string
		last                *Delivery
	}
	events := map[string]*event{}
	var order []string
	for _, d := range history {
		e := events[d.EventID]
		if e == nil {
			e = &event{}
			events[d.EventID] = e
			order = append(order, d.EventID)
		}
		e.n++
		e.last = d
		if d.Answer.consumerAcked() {
			e.acked = true
		}
		switch d.Answer.Kind {
		case Acked, Conflict:
			e.settled = true
			if d.Answer.Kind == Conflict && !d.Expected {
				e.conflicted = true
			}
		default:
			if !d.Expected {
				e.unexpected = true
			}
		}
		if a := d.Answer.Short(); !contains(e.answers, a) {
			e.answers = append(e.answers, a)
		}
	}
	var out []invariant.Violation
	for _, id := range order {
		e := events[id]
		switch {
		case !e.settled && e.unexpected:
			out = append(out, neverAckedOne(id, e.n, e.answers, &e.last.Record))
		case !e.acked && e.conflicted && !hasRow(e.last.Key):
			out = append(out, conflictWithNothing(neverAckedOne(id, e.n, e.answers, &e.last.Record), e.last.Key, table))
		}
	}
	return out
}

// conflictWithNothing says of a never-acked finding that the event was
// answered as a conflict, and its key has no row to conflict with.
func conflictWithNothing(v invariant.Violation, key, table string) invariant.Violation {
	v.Detail += fmt.Sprintf("; key %s has no row in %s for it to conflict with", key, table)
	return v
}

// duplicateEffect: key has rows rows (of events), by its last delivery.
func duplicateEffect(key string, rows int64, events []string, table string, by *invariant.Record) invariant.Violation {
	v := invariant.Violation{Invariant: invariant.DuplicateEffect.Name, EventID: key, Detail: invariant.DuplicateEffect.Say(invariant.Facts{Key: key, Rows: rows, Table: table, Events: events})}
	if by != nil {
		v.EventID, v.By = by.EventID, by
	}
	return v
}

// lostEffect: the acked delivery by left its key no row.
func lostEffect(by *invariant.Record, table string) invariant.Violation {
	return invariant.Violation{Invariant: invariant.LostEffect.Name, EventID: by.EventID,
		Detail: invariant.LostEffect.Say(invariant.Facts{Event: by.EventID, Outcome: string(Acked), Key: by.Key, Table: table}), By: by}
}

// changedByConflict: a conflict answer that changed the key's rows.
func changedByConflict(d *Delivery, table string) invariant.Violation {
	return invariant.Violation{Invariant: invariant.ChangedByConflict.Name, EventID: d.EventID,
		Detail: invariant.ChangedByConflict.Say(invariant.Facts{Event: d.EventID, Key: d.Key, Table: table, Change: d.Changed}), By: &d.Record}
}

// changedByDuplicate: a redelivery of an acked event that changed the
// key's rows.
func changedByDuplicate(d *Delivery, table string) invariant.Violation {
	return invariant.Violation{Invariant: invariant.ChangedByDuplicate.Name, EventID: d.EventID,
		Detail: invariant.ChangedByDuplicate.Say(invariant.Facts{Event: d.EventID, Key: d.Key, Table: table, Change: d.Duplicated}), By: &d.Record}
}

// neverAckedOne: event id had n deliveries, none acked, answered so, the
// last one by.
func neverAckedOne(id string, n int64, answers []string, by *invariant.Record) invariant.Violation {
	return invariant.Violation{Invariant: invariant.NeverAcked.Name, EventID: id,
		Detail: invariant.NeverAcked.Say(invariant.Facts{Event: id, Deliveries: n, Outcomes: answers}), By: by}
}

// splitAnswers reads the answers a journal keeps of an event.
func splitAnswers(s string) []string { return strings.Split(s, answerSep) }

func eventsOf(rs []effects.Row) []string {
	var ev []string
	for _, r := range rs {
		if r.Event != "" {
			ev = append(ev, r.Event)
		}
	}
	return ev
}

// changed compares a key's rows before and after a delivery and says how
// they changed, or "" when they did not.
func changed(before, after []effects.Row) string {
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

// duplicated compares a key's rows before and after a redelivery of an
// event already acked: a change that kept the number of rows is said; a row
// added or removed is left to duplicate-effect and lost-effect.
func duplicated(before, after []effects.Row) string {
	if len(before) != len(after) {
		return ""
	}
	return changed(before, after)
}

// columnsChanged names the columns of a row that changed, with their values
// before and after.
func columnsChanged(b, a effects.Row) string {
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
