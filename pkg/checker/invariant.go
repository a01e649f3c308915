// Package checker decides whether a run kept the guarantees of an
// idempotent consumer: it reads the history of deliveries and what the
// store holds, and names every broken invariant with its event and rows.
package checker

// Invariant is the stable name of a guarantee, as scenario files write it
// in `violations:`.
type Invariant string

// The invariants, by rule number.
const (
	DuplicateEffect    Invariant = "duplicate-effect"    // 1: one consumer, one event, more than one effect
	DuplicateKeyEffect Invariant = "duplicate-key"       // 2: more than one effect for one business key
	DoubleCharge       Invariant = "double-charge"       // 2: more than one external charge for one business key
	LostEffect         Invariant = "lost-effect"         // 3: a handled event without its effect
	MissingMarker      Invariant = "missing-marker"      // 3: an effect without its processed marker
	HalfWritten        Invariant = "half-written"        // 3: an event never handled, but something of it is stored
	WrongEffect        Invariant = "wrong-effect"        // 4: a duplicate returned another effect id than the original's
	ChangedByConflict  Invariant = "changed-by-conflict" // 5: a conflicting redelivery changed what is stored
	UnstableKey        Invariant = "unstable-key"        // 6: retries of one event sent different idempotency keys
	SharedKey          Invariant = "shared-key"          // 6: different business keys sent the same idempotency key
)

// Invariants lists every invariant, in rule order.
var Invariants = []Invariant{DuplicateEffect, DuplicateKeyEffect, DoubleCharge, LostEffect, MissingMarker, HalfWritten, WrongEffect, ChangedByConflict, UnstableKey, SharedKey}

// Describe says in words what breaking the invariant means.
func (i Invariant) Describe() string {
	switch i {
	case DuplicateEffect:
		return "a consumer has more than one effect for one event id"
	case DuplicateKeyEffect:
		return "more than one effect for one business key"
	case DoubleCharge:
		return "more than one external charge for one business key"
	case LostEffect:
		return "an event that was handled has no effect"
	case MissingMarker:
		return "an event has an effect but no processed marker"
	case HalfWritten:
		return "an event none of whose deliveries succeeded left rows behind"
	case WrongEffect:
		return "a duplicate returned another effect id than the original's"
	case ChangedByConflict:
		return "a conflicting redelivery changed what is stored"
	case UnstableKey:
		return "retries of one event sent different idempotency keys"
	case SharedKey:
		return "different business keys sent the same idempotency key"
	}
	return ""
}

// Known reports whether name is an invariant.
func Known(name string) bool {
	for _, i := range Invariants {
		if string(i) == name {
			return true
		}
	}
	return false
}
