package invariant

import (
	"fmt"

	"github.com/redeliver/redeliver/pkg/handler"
)

// Reconciliation compares the external provider's ledger with the local
// effects, the way a nightly reconciliation job would: the third line of
// defence after the outbox and the provider's idempotency key.
type Reconciliation struct {
	// OrphanCharges were charged, but no local effect has their business key:
	// typically a crash after the external call that was never retried.
	OrphanCharges []Charge
	// Uncharged effects have no charge for their business key.
	Uncharged []handler.Effect
}

// Reconcile matches charges and effects by business key.
func Reconcile(st State) Reconciliation {
	var r Reconciliation
	effects := map[string]bool{}
	for _, e := range st.Effects {
		effects[e.BusinessKey] = true
	}
	charged := map[string]bool{}
	for _, c := range st.Charges {
		charged[c.OrderRef] = true
		if !effects[c.OrderRef] {
			r.OrphanCharges = append(r.OrphanCharges, c)
		}
	}
	for _, e := range st.Effects {
		if !charged[e.BusinessKey] {
			r.Uncharged = append(r.Uncharged, e)
		}
	}
	return r
}

// Findings says each mismatch in one line.
func (r Reconciliation) Findings(effectTable string) []string {
	var out []string
	for _, c := range r.OrphanCharges {
		out = append(out, fmt.Sprintf("charge %d (idempotency key %q, business key %s) has no row in %s", c.ID, c.IdempotencyKey, c.OrderRef, effectTable))
	}
	for _, e := range r.Uncharged {
		out = append(out, fmt.Sprintf("row %d in %s (event %s, business key %s) has no charge", e.ID, effectTable, e.EventID, e.BusinessKey))
	}
	return out
}
