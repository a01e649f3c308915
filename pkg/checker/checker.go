package checker

import (
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/redeliver/redeliver/pkg/handler"
)

// Record is one delivery of the history and what came back.
type Record struct {
	Seq      int // 1-based position in the history
	EventID  string
	Consumer string // the consumer the marker and effect are written for
	Key      string // the business key, where the strategy uses one
	Result   handler.Result
	At       time.Time // the scenario clock when it was delivered
	// ChangedStore is set when a conflict left the store different.
	ChangedStore bool
	// Where the delivery came from, for the report.
	Check, Step int
	Pos         handler.Location
}

// State is what the stores hold when the checker looks.
type State struct {
	Markers []handler.Marker
	Effects []handler.Effect
	Charges []Charge
	// Horizon: markers written before it may have been purged by retention.
	Horizon time.Time
}

// Charge is one charge of the external provider's ledger.
type Charge struct {
	ID             int64
	IdempotencyKey string
	OrderRef       string
}

// Violation is one broken invariant, with the event, the rows and the delivery behind it.
type Violation struct {
	Invariant Invariant
	EventID   string
	Consumer  string
	Detail    string
	By        *Record // the delivery that broke it, when one did
}

// Key identifies a violation across checks, so each is reported once.
func (v Violation) Key() string {
	return string(v.Invariant) + "\x00" + v.EventID + "\x00" + v.Consumer
}

func (v Violation) String() string {
	s := fmt.Sprintf("invariant %s broken: %s", v.Invariant, v.Detail)
	if v.By != nil && v.By.Step > 0 {
		s += fmt.Sprintf(", by step %d", v.By.Step)
	}
	return s
}

type unit struct{ event, consumer string }

// Check reads the history and the state and returns every broken invariant,
// sorted by invariant and event.
func Check(strategy handler.Strategy, effectTable string, history []Record, st State) []Violation {
	c := &check{strategy: strategy, table: effectTable, history: history, st: st}
	c.index()
	c.duplicateEffects()
	// Invariant 2 holds wherever a business key is known: the strategies
	// that dedup on it, and any other whose handler names one (recorded with
	// every effect) — one business event, one effect, whatever its ids.
	c.duplicateKeys()
	c.charges()
	c.handled()
	c.duplicatesReturnOriginal()
	c.conflicts()
	sort.SliceStable(c.out, func(i, j int) bool {
		a, b := c.out[i], c.out[j]
		if a.Invariant != b.Invariant {
			return order(a.Invariant) < order(b.Invariant)
		}
		return a.EventID < b.EventID
	})
	return c.out
}

func order(i Invariant) int {
	for n, x := range Invariants {
		if x == i {
			return n
		}
	}
	return len(Invariants)
}

type check struct {
	strategy handler.Strategy
	table    string
	history  []Record
	st       State
	out      []Violation

	units      []unit // in order of first delivery
	byUnit     map[unit][]*Record
	effects    map[unit][]handler.Effect
	byKey      map[string][]handler.Effect
	markers    map[unit]bool
	byEffectID map[int64]*Record
}

func (c *check) index() {
	c.byUnit = map[unit][]*Record{}
	c.effects = map[unit][]handler.Effect{}
	c.byKey = map[string][]handler.Effect{}
	c.markers = map[unit]bool{}
	c.byEffectID = map[int64]*Record{}
	for i := range c.history {
		r := &c.history[i]
		u := unit{r.EventID, r.Consumer}
		if _, seen := c.byUnit[u]; !seen {
			c.units = append(c.units, u)
		}
		c.byUnit[u] = append(c.byUnit[u], r)
		if o := r.Result.Outcome; (o == handler.Processed || o == handler.Crashed) && r.Result.EffectID != 0 {
			if _, seen := c.byEffectID[r.Result.EffectID]; !seen {
				c.byEffectID[r.Result.EffectID] = r
			}
		}
	}
	for _, e := range c.st.Effects {
		u := unit{e.EventID, e.Consumer}
		c.effects[u] = append(c.effects[u], e)
		if e.BusinessKey != "" {
			c.byKey[e.BusinessKey] = append(c.byKey[e.BusinessKey], e)
		}
	}
	for _, m := range c.st.Markers {
		c.markers[unit{m.EventID, m.Consumer}] = true
	}
}

func (c *check) add(v Violation) { c.out = append(c.out, v) }

func ids(es []handler.Effect) string {
	s := make([]string, len(es))
	for i, e := range es {
		s[i] = fmt.Sprint(e.ID)
	}
	return strings.Join(s, ", ")
}

func rows(n int) string {
	if n == 1 {
		return "1 row"
	}
	return fmt.Sprintf("%d rows", n)
}

// Invariant 1.
func (c *check) duplicateEffects() {
	keys := make([]unit, 0, len(c.effects))
	for u := range c.effects {
		keys = append(keys, u)
	}
	sort.Slice(keys, func(i, j int) bool { return c.effects[keys[i]][0].ID < c.effects[keys[j]][0].ID })
	for _, u := range keys {
		es := c.effects[u]
		if len(es) < 2 {
			continue
		}
		c.add(Violation{Invariant: DuplicateEffect, EventID: u.event, Consumer: u.consumer,
			Detail: fmt.Sprintf("event %s has %s in %s (ids %s) for consumer %s", u.event, rows(len(es)), c.table, ids(es), u.consumer),
			By:     c.byEffectID[es[1].ID]})
	}
}

// byConsumer splits the effects of one key by consumer: a strategy that
// does not dedup on the key guards each consumer on its own, so each
// consumer must keep to one effect per key (the business-key strategies'
// guard is one effect per key, whatever the consumer).
func byConsumer(es []handler.Effect) [][]handler.Effect {
	var out [][]handler.Effect
	at := map[string]int{}
	for _, e := range es {
		i, ok := at[e.Consumer]
		if !ok {
			i = len(out)
			at[e.Consumer] = i
			out = append(out, nil)
		}
		out[i] = append(out[i], e)
	}
	return out
}

// Invariant 2, effects.
func (c *check) duplicateKeys() {
	keys := make([]string, 0, len(c.byKey))
	for k := range c.byKey {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		groups := [][]handler.Effect{c.byKey[k]}
		if !c.strategy.UsesKey() {
			groups = byConsumer(c.byKey[k])
		}
		for _, es := range groups {
			if len(es) < 2 {
				continue
			}
			var events []string
			for _, e := range es {
				events = append(events, e.EventID)
			}
			c.add(Violation{Invariant: DuplicateKeyEffect, EventID: es[1].EventID, Consumer: es[1].Consumer,
				Detail: fmt.Sprintf("business key %s has %s in %s (ids %s, events %s)", k, rows(len(es)), c.table, ids(es), strings.Join(events, ", ")),
				By:     c.byEffectID[es[1].ID]})
		}
	}
}

// Invariants 2 (charges) and 6.
func (c *check) charges() {
	if !c.strategy.CallsOut() {
		return
	}
	byRef := map[string][]Charge{}
	var refs []string
	for _, ch := range c.st.Charges {
		if _, seen := byRef[ch.OrderRef]; !seen {
			refs = append(refs, ch.OrderRef)
		}
		byRef[ch.OrderRef] = append(byRef[ch.OrderRef], ch)
	}
	byCharge := map[int64]*Record{}
	for i := range c.history {
		r := &c.history[i]
		if x := r.Result.External; x != nil && x.ChargeID != 0 && !x.Replayed {
			byCharge[x.ChargeID] = r
		}
	}
	for _, ref := range refs {
		chs := byRef[ref]
		if len(chs) < 2 {
			continue
		}
		var ids []string
		for _, ch := range chs {
			ids = append(ids, fmt.Sprint(ch.ID))
		}
		by := byCharge[chs[1].ID]
		ev, detail := "", fmt.Sprintf("business key %s was charged %d times by the gateway (charges %s)", ref, len(chs), strings.Join(ids, ", "))
		if by != nil {
			ev = by.EventID
			detail += ", the second for event " + ev
		}
		c.add(Violation{Invariant: DoubleCharge, EventID: ev, Detail: detail, By: by})
	}
	// Invariant 6: one event, one key; one key, one business key.
	keyOwner := map[string]string{}
	for _, u := range c.units {
		var keys []string
		var first *Record
		for _, r := range c.byUnit[u] {
			x := r.Result.External
			if x == nil {
				continue
			}
			if !contains(keys, x.IdempotencyKey) {
				keys = append(keys, x.IdempotencyKey)
				if len(keys) == 2 {
					first = r
				}
			}
			if owner, ok := keyOwner[x.IdempotencyKey]; ok && owner != r.Key {
				c.add(Violation{Invariant: SharedKey, EventID: r.EventID, Consumer: r.Consumer,
					Detail: fmt.Sprintf("idempotency key %q was sent for business key %s and for %s (event %s)", x.IdempotencyKey, owner, r.Key, r.EventID),
					By:     r})
				keyOwner[x.IdempotencyKey] = r.Key // report each new owner once
			} else if !ok {
				keyOwner[x.IdempotencyKey] = r.Key
			}
		}
		if len(keys) > 1 {
			q := make([]string, len(keys))
			for i, k := range keys {
				q[i] = fmt.Sprintf("%q", k)
			}
			c.add(Violation{Invariant: UnstableKey, EventID: u.event, Consumer: u.consumer,
				Detail: fmt.Sprintf("event %s sent %d idempotency keys: %s", u.event, len(keys), strings.Join(q, ", ")),
				By:     first})
		}
	}
}

func contains(xs []string, s string) bool {
	for _, x := range xs {
		if x == s {
			return true
		}
	}
	return false
}

func handledOutcome(o handler.Outcome) bool {
	return o == handler.Processed || o == handler.Duplicate || o == handler.Crashed
}

// Invariant 3: nothing lost, nothing half-written.
func (c *check) handled() {
	for _, u := range c.units {
		recs := c.byUnit[u]
		var handled, first *Record
		for _, r := range recs {
			if handledOutcome(r.Result.Outcome) {
				handled = r
				if first == nil {
					first = r
				}
			}
		}
		last := recs[len(recs)-1]
		own := c.effects[u]
		if handled == nil {
			if len(own) > 0 || c.markers[u] {
				what := []string{}
				if len(own) > 0 {
					what = append(what, fmt.Sprintf("%s in %s (ids %s)", rows(len(own)), c.table, ids(own)))
				}
				if c.markers[u] {
					what = append(what, "a processed marker")
				}
				c.add(Violation{Invariant: HalfWritten, EventID: u.event, Consumer: u.consumer,
					Detail: fmt.Sprintf("event %s was never handled (%s), yet left %s", u.event, outcomes(recs), strings.Join(what, " and ")),
					By:     last})
			}
			continue
		}
		reachable := len(own) > 0
		if !reachable && c.strategy.UsesKey() && handled.Key != "" {
			reachable = len(c.byKey[handled.Key]) > 0
		}
		if !reachable {
			c.add(Violation{Invariant: LostEffect, EventID: u.event, Consumer: u.consumer,
				Detail: fmt.Sprintf("event %s was %s but has no row in %s", u.event, handled.Result.Outcome, c.table),
				By:     handled})
		}
		// A marker written before the retention horizon may have been purged.
		if c.strategy.KeepsMarkers() && !c.markers[u] && !first.At.Before(c.st.Horizon) {
			c.add(Violation{Invariant: MissingMarker, EventID: u.event, Consumer: u.consumer,
				Detail: fmt.Sprintf("event %s was %s but has no processed marker", u.event, handled.Result.Outcome),
				By:     handled})
		}
	}
}

func outcomes(recs []*Record) string {
	var s []string
	for _, r := range recs {
		s = append(s, string(r.Result.Outcome))
	}
	return strings.Join(s, ", ")
}

// Invariant 4.
func (c *check) duplicatesReturnOriginal() {
	for _, u := range c.units {
		for _, r := range c.byUnit[u] {
			if r.Result.Outcome != handler.Duplicate {
				continue
			}
			original := c.effects[u]
			if c.strategy.UsesKey() && r.Key != "" && len(c.byKey[r.Key]) > 0 {
				original = c.byKey[r.Key]
			}
			if len(original) == 0 {
				continue // invariant 3 names it
			}
			if r.Result.EffectID != original[0].ID {
				c.add(Violation{Invariant: WrongEffect, EventID: u.event, Consumer: u.consumer,
					Detail: fmt.Sprintf("a duplicate of event %s returned effect %d, the original is %d", u.event, r.Result.EffectID, original[0].ID),
					By:     r})
				break
			}
		}
	}
}

// Invariant 5.
func (c *check) conflicts() {
	for i := range c.history {
		r := &c.history[i]
		if r.Result.Outcome == handler.Conflict && r.ChangedStore {
			c.add(Violation{Invariant: ChangedByConflict, EventID: r.EventID, Consumer: r.Consumer,
				Detail: fmt.Sprintf("the conflicting redelivery of event %s changed what is stored", r.EventID),
				By:     r})
		}
	}
}
