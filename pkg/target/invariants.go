package target

import (
	"fmt"
	"sort"

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
		rs := byKey[k]
		v := invariant.Violation{Invariant: invariant.DuplicateEffect.Name, EventID: k, Detail: invariant.DuplicateEffect.Say(invariant.Facts{Key: k, Rows: int64(len(rs)), Table: table, Events: eventsOf(rs)})}
		if d := lastOfKey[k]; d != nil {
			v.EventID = d.EventID
			v.By = &d.Record
		}
		out = append(out, v)
	}
	// lost-effect: an acked delivery whose key has no row. A publish the
	// broker dropped as a duplicate never reached the consumer.
	lost := map[string]bool{}
	for _, d := range history {
		if d.Answer.Kind != Acked || d.Answer.Duplicate || len(byKey[d.Key]) > 0 || lost[d.EventID] {
			continue
		}
		lost[d.EventID] = true
		out = append(out, invariant.Violation{Invariant: invariant.LostEffect.Name, EventID: d.EventID,
			Detail: invariant.LostEffect.Say(invariant.Facts{Event: d.EventID, Outcome: string(Acked), Key: d.Key, Table: table}), By: &d.Record})
	}
	// changed-by-conflict: a conflict answer that changed the key's rows.
	for _, d := range history {
		if d.Answer.Kind == Conflict && d.Changed != "" {
			out = append(out, invariant.Violation{Invariant: invariant.ChangedByConflict.Name, EventID: d.EventID,
				Detail: invariant.ChangedByConflict.Say(invariant.Facts{Event: d.EventID, Key: d.Key, Table: table, Change: d.Changed}), By: &d.Record})
		}
	}
	return out
}

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
			return fmt.Sprintf("%s became %s", before[i].Values, after[i].Values)
		}
	}
	return ""
}
