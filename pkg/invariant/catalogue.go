package invariant

import (
	"fmt"
	"strconv"
	"strings"
)

// Facts are what a checker knows about one breach. A checker fills in what
// it has; Say words the breach from those facts, and leaves out what is
// not known.
type Facts struct {
	Event    string // the event the breach is about
	Consumer string // the consumer its marker and effect are written for
	Key      string // the business key (in a user's database: the key column's value)
	Table    string // the effect table
	Rows     int64  // how many rows were found
	IDs      []string
	Events   []string // the events of the rows
	// Outcome is what the delivery that matters came back with, when a
	// history is kept; empty when the breach is read from stored rows only.
	Outcome  string
	Outcomes []string // every outcome of the event's deliveries
	Marker   bool     // a processed marker is stored
	// IdempotencyKeys are the keys sent to the external provider.
	IdempotencyKeys []string
	// OtherKey is the business key an idempotency key was first sent for.
	OtherKey string
	// Returned and Original are effect ids: what a duplicate returned,
	// and what the first delivery wrote.
	Returned, Original int64
	// By is the event of the delivery that caused the breach, when it is
	// another than Event.
	By string
	// Change says how a stored row changed, when a checker saw it.
	Change string
	// Deliveries is how many times the event was delivered.
	Deliveries int64
	// AtOnce: the deliveries were made at once (a concurrent step).
	AtOnce bool
	// External is the stand-in a breach of an external effect is at,
	// Calls its calls that show it ("call 2 (POST /v1/charges, by
	// evt-1)"), Header the idempotency header it dedupes by.
	External string
	Calls    []string
	Header   string
}

// All is the catalogue, in the order reports list invariants.
var All = []*Invariant{DuplicateEffect, ChangedByDuplicate, DuplicateKey, DoubleCharge, LostEffect, NeverAcked, MissingMarker, HalfWritten, WrongEffect, ChangedByConflict, UnstableKey, SharedKey,
	ExternalDuplicate, ExternalLost, UnstableIdempotencyKey, UnkeyedExternalCall}

// Strategy predicates, by the guard the invariant needs.
var (
	usesKey      = func(g Guard) bool { return g.UsesKey() }
	callsOut     = func(g Guard) bool { return g.CallsOut() }
	keepsMarkers = func(g Guard) bool { return g.KeepsMarkers() }
)

// The invariants.
var (
	DuplicateEffect = &Invariant{
		Name: "duplicate-effect", Number: 1,
		Meaning:      "a consumer has more than one effect for one event id",
		decide:       (*check).duplicateEffects,
		judgeRows:    (*rowsCheck).duplicateEffects,
		judgeJournal: (*journalCheck).duplicateEffects,
		rules:        map[Kind]func(Guard) bool{Handler: nil, Replay: nil, Database: nil},
		say: func(f Facts) string {
			if f.Event == "" { // a user's database: rows counted by key
				return fmt.Sprintf("key %s has %s in %s%s", f.Key, rows(f.Rows), f.Table, idList(f.IDs, f.Events))
			}
			return fmt.Sprintf("event %s has %s in %s (ids %s) for consumer %s", f.Event, rows(f.Rows), f.Table, strings.Join(f.IDs, ", "), f.Consumer)
		},
	}
	// ChangedByDuplicate is a second effect that adds no row: a
	// redelivery of an event whose effect was already committed (acked, or
	// seen in its key's rows) that changed them again, or copies delivered
	// at once that left them other than one copy does (an upsert that adds
	// the amount again). Only a user's database decides it, by reading
	// the key's rows around each redelivery, and after a concurrent step
	// against a trial that delivered one copy.
	ChangedByDuplicate = &Invariant{
		Name: "changed-by-duplicate", Number: 1,
		Meaning:      "a redelivery of an event whose effect was already committed changed what is stored",
		judgeRows:    (*rowsCheck).changedByDuplicate,
		judgeJournal: (*journalCheck).changedByDuplicate,
		rules:        map[Kind]func(Guard) bool{Database: nil},
		say: func(f Facts) string {
			s := fmt.Sprintf("the redelivery of event %s, whose effect was already committed, changed the rows of key %s in %s", f.Event, f.Key, f.Table)
			if f.AtOnce {
				s = fmt.Sprintf("the %d deliveries of event %s at once left the rows of key %s in %s other than one delivery leaves them", f.Deliveries, f.Event, f.Key, f.Table)
			}
			if f.Change != "" {
				s += ": " + f.Change
			}
			return s
		},
	}
	// DuplicateKey is always checked for the strategies that dedup on the
	// key; the checker and the replay also check it for every other
	// strategy whenever a business key is known (a handler that names one,
	// a capture that gives them), one effect per key and consumer there.
	DuplicateKey = &Invariant{
		Name: "duplicate-key", Number: 2,
		Meaning: "more than one effect for one business key",
		decide:  (*check).duplicateKeys,
		Keyed:   true,
		rules:   map[Kind]func(Guard) bool{Handler: usesKey, Replay: usesKey},
		say: func(f Facts) string {
			return fmt.Sprintf("business key %s has %s in %s (ids %s, events %s)", f.Key, rows(f.Rows), f.Table, strings.Join(f.IDs, ", "), strings.Join(f.Events, ", "))
		},
	}
	DoubleCharge = &Invariant{
		Name: "double-charge", Number: 2,
		Meaning: "more than one external charge for one business key",
		decide:  (*check).doubleCharges,
		rules:   map[Kind]func(Guard) bool{Handler: callsOut},
		say: func(f Facts) string {
			s := fmt.Sprintf("business key %s was charged %d times by the gateway (charges %s)", f.Key, f.Rows, strings.Join(f.IDs, ", "))
			if f.By != "" {
				s += ", the second for event " + f.By
			}
			return s
		},
	}
	LostEffect = &Invariant{
		Name: "lost-effect", Number: 3,
		Meaning:      "an event that was handled has no effect",
		decide:       (*check).lostEffects,
		judgeRows:    (*rowsCheck).lostEffects,
		judgeJournal: (*journalCheck).lostEffects,
		rules:        map[Kind]func(Guard) bool{Handler: nil, Replay: keepsMarkers, Database: nil},
		say: func(f Facts) string {
			switch {
			case f.Event == "": // a user's database: an acked key without its row
				return fmt.Sprintf("key %s was acked but has no row in %s", f.Key, f.Table)
			case f.Outcome == "acked":
				return fmt.Sprintf("event %s was acked but key %s has no row in %s", f.Event, f.Key, f.Table)
			case f.Outcome == "":
				return fmt.Sprintf("event %s is marked processed but has no row in %s", f.Event, f.Table)
			}
			return fmt.Sprintf("event %s was %s but has no row in %s", f.Event, f.Outcome, f.Table)
		},
	}
	// NeverAcked is an event a user's consumer never took: it rejected
	// it, answered it only as a conflict while its key had no row to
	// conflict with, or answered none of its deliveries and redeliveries
	// with an ack. A broker would give up on it (a dead-letter queue at best): its
	// effect is lost.
	NeverAcked = &Invariant{
		Name: "never-acked", Number: 3,
		Meaning:      "an event was rejected, or never acked however often it was redelivered",
		judgeRows:    (*rowsCheck).neverAcked,
		judgeJournal: (*journalCheck).neverAcked,
		rules:        map[Kind]func(Guard) bool{Database: nil},
		say: func(f Facts) string {
			s := "event " + f.Event + " was never acked"
			switch n := f.Deliveries; {
			case n == 1:
				s += " in 1 delivery"
			case n == 2:
				s += " in 2 deliveries (redelivered once)"
			case n > 2:
				s += fmt.Sprintf(" in %d deliveries (redelivered %d times)", n, n-1)
			}
			if len(f.Outcomes) > 0 {
				s += ": " + strings.Join(f.Outcomes, ", ")
			}
			return s
		},
	}
	MissingMarker = &Invariant{
		Name: "missing-marker", Number: 3,
		Meaning: "an event has an effect but no processed marker",
		decide:  (*check).missingMarkers,
		rules:   map[Kind]func(Guard) bool{Handler: keepsMarkers, Replay: keepsMarkers},
		say: func(f Facts) string {
			if f.Outcome == "" {
				return fmt.Sprintf("event %s has a row in %s (id %s) but no processed marker", f.Event, f.Table, strings.Join(f.IDs, ", "))
			}
			return fmt.Sprintf("event %s was %s but has no processed marker", f.Event, f.Outcome)
		},
	}
	HalfWritten = &Invariant{
		Name: "half-written", Number: 3,
		Meaning: "an event none of whose deliveries succeeded left rows behind",
		decide:  (*check).halfWritten,
		rules:   map[Kind]func(Guard) bool{Handler: nil},
		say: func(f Facts) string {
			var what []string
			if f.Rows > 0 {
				what = append(what, fmt.Sprintf("%s in %s (ids %s)", rows(f.Rows), f.Table, strings.Join(f.IDs, ", ")))
			}
			if f.Marker {
				what = append(what, "a processed marker")
			}
			return fmt.Sprintf("event %s was never handled (%s), yet left %s", f.Event, strings.Join(f.Outcomes, ", "), strings.Join(what, " and "))
		},
	}
	WrongEffect = &Invariant{
		Name: "wrong-effect", Number: 4,
		Meaning: "a duplicate returned another effect id than the original's",
		decide:  (*check).wrongEffects,
		rules:   map[Kind]func(Guard) bool{Handler: nil},
		say: func(f Facts) string {
			return fmt.Sprintf("a duplicate of event %s returned effect %d, the original is %d", f.Event, f.Returned, f.Original)
		},
	}
	ChangedByConflict = &Invariant{
		Name: "changed-by-conflict", Number: 5,
		Meaning:      "a conflicting redelivery changed what is stored",
		decide:       (*check).changedByConflict,
		judgeRows:    (*rowsCheck).changedByConflict,
		judgeJournal: (*journalCheck).changedByConflict,
		rules:        map[Kind]func(Guard) bool{Handler: nil, Database: nil},
		say: func(f Facts) string {
			if f.Key != "" && f.Table != "" {
				s := fmt.Sprintf("the conflicting redelivery of event %s changed the row of key %s in %s", f.Event, f.Key, f.Table)
				if f.Change != "" {
					s += ": " + f.Change
				}
				return s
			}
			return fmt.Sprintf("the conflicting redelivery of event %s changed what is stored", f.Event)
		},
	}
	UnstableKey = &Invariant{
		Name: "unstable-key", Number: 6,
		Meaning: "retries of one event sent different idempotency keys",
		decide:  (*check).unstableKeys,
		rules:   map[Kind]func(Guard) bool{Handler: callsOut},
		say: func(f Facts) string {
			q := make([]string, len(f.IdempotencyKeys))
			for i, k := range f.IdempotencyKeys {
				q[i] = strconv.Quote(k)
			}
			return fmt.Sprintf("event %s sent %d idempotency keys: %s", f.Event, len(q), strings.Join(q, ", "))
		},
	}
	SharedKey = &Invariant{
		Name: "shared-key", Number: 6,
		Meaning: "different business keys sent the same idempotency key",
		decide:  (*check).sharedKeys,
		rules:   map[Kind]func(Guard) bool{Handler: callsOut},
		say: func(f Facts) string {
			k := ""
			if len(f.IdempotencyKeys) > 0 {
				k = f.IdempotencyKeys[0]
			}
			return fmt.Sprintf("idempotency key %q was sent for business key %s and for %s (event %s)", k, f.OtherKey, f.Key, f.Event)
		},
	}
)

// rows says "1 row" or "N rows".
func rows(n int64) string {
	if n == 1 {
		return "1 row"
	}
	return itoa(n) + " rows"
}

func idList(ids, events []string) string {
	var parts []string
	if len(ids) > 0 {
		parts = append(parts, "ids "+strings.Join(ids, ", "))
	}
	if len(events) > 0 {
		parts = append(parts, "events "+strings.Join(events, ", "))
	}
	if len(parts) == 0 {
		return ""
	}
	return " (" + strings.Join(parts, ", ") + ")"
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }
