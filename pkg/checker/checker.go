// Package checker decides whether a run kept the guarantees of an
// idempotent consumer: it reads the history of deliveries and what the
// store holds, and names every broken invariant of the catalogue
// (package invariant) with its event and rows.
package checker

import (
	"sort"
	"strconv"
	"time"

	"github.com/redeliver/redeliver/pkg/handler"
	"github.com/redeliver/redeliver/pkg/invariant"
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
	Invariant invariant.Name
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
	step := 0
	if v.By != nil {
		step = v.By.Step
	}
	return invariant.Sentence(v.Invariant, v.Detail, step)
}

type unit struct{ event, consumer string }

// Check reads the history and the state and returns every broken invariant,
// sorted by invariant and event.
func Check(strategy handler.Strategy, effectTable string, history []Record, st State) []Violation {
	c := &check{strategy: strategy, table: effectTable, history: history, st: st}
	c.index()
	c.duplicateEffects()
	// Invariant 2 holds wherever a business key is known: for the
	// strategies that dedup on it, and for any other whose handler names one
	// (recorded with every effect) — one business event, one effect,
	// whatever its ids.
	if c.checks(invariant.DuplicateKey) || c.keyed() {
		c.duplicateKeys()
	}
	c.charges()
	c.handled()
	c.duplicatesReturnOriginal()
	c.conflicts()
	sort.SliceStable(c.out, func(i, j int) bool {
		a, b := c.out[i], c.out[j]
		if a.Invariant != b.Invariant {
			return invariant.Order(a.Invariant) < invariant.Order(b.Invariant)
		}
		return a.EventID < b.EventID
	})
	return c.out
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

// checks says whether the catalogue has a run with this strategy check inv.
func (c *check) checks(inv *invariant.Invariant) bool {
	return inv.CheckedBy(invariant.Handler, c.strategy)
}

func ids(es []handler.Effect) []string {
	s := make([]string, len(es))
	for i, e := range es {
		s[i] = strconv.FormatInt(e.ID, 10)
	}
	return s
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
		c.add(Violation{Invariant: invariant.DuplicateEffect.Name, EventID: u.event, Consumer: u.consumer,
			Detail: invariant.DuplicateEffect.Say(invariant.Facts{Event: u.event, Consumer: u.consumer, Table: c.table, Rows: int64(len(es)), IDs: ids(es)}),
			By:     c.byEffectID[es[1].ID]})
	}
}

// keyed reports whether any effect carries a business key.
func (c *check) keyed() bool { return len(c.byKey) > 0 }

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
			c.add(Violation{Invariant: invariant.DuplicateKey.Name, EventID: es[1].EventID, Consumer: es[1].Consumer,
				Detail: invariant.DuplicateKey.Say(invariant.Facts{Key: k, Table: c.table, Rows: int64(len(es)), IDs: ids(es), Events: events}),
				By:     c.byEffectID[es[1].ID]})
		}
	}
}

// Invariants 2 (charges) and 6.
func (c *check) charges() {
	if !c.checks(invariant.DoubleCharge) {
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
			ids = append(ids, strconv.FormatInt(ch.ID, 10))
		}
		by := byCharge[chs[1].ID]
		ev := ""
		if by != nil {
			ev = by.EventID
		}
		c.add(Violation{Invariant: invariant.DoubleCharge.Name, EventID: ev, By: by,
			Detail: invariant.DoubleCharge.Say(invariant.Facts{Key: ref, Rows: int64(len(chs)), IDs: ids, By: ev})})
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
				c.add(Violation{Invariant: invariant.SharedKey.Name, EventID: r.EventID, Consumer: r.Consumer,
					Detail: invariant.SharedKey.Say(invariant.Facts{Event: r.EventID, Key: r.Key, OtherKey: owner, IdempotencyKeys: []string{x.IdempotencyKey}}),
					By:     r})
				keyOwner[x.IdempotencyKey] = r.Key // report each new owner once
			} else if !ok {
				keyOwner[x.IdempotencyKey] = r.Key
			}
		}
		if len(keys) > 1 {
			c.add(Violation{Invariant: invariant.UnstableKey.Name, EventID: u.event, Consumer: u.consumer,
				Detail: invariant.UnstableKey.Say(invariant.Facts{Event: u.event, IdempotencyKeys: keys}),
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
				c.add(Violation{Invariant: invariant.HalfWritten.Name, EventID: u.event, Consumer: u.consumer,
					Detail: invariant.HalfWritten.Say(invariant.Facts{Event: u.event, Outcomes: outcomes(recs), Table: c.table, Rows: int64(len(own)), IDs: ids(own), Marker: c.markers[u]}),
					By:     last})
			}
			continue
		}
		reachable := len(own) > 0
		if !reachable && c.strategy.UsesKey() && handled.Key != "" {
			reachable = len(c.byKey[handled.Key]) > 0
		}
		if !reachable {
			c.add(Violation{Invariant: invariant.LostEffect.Name, EventID: u.event, Consumer: u.consumer,
				Detail: invariant.LostEffect.Say(invariant.Facts{Event: u.event, Outcome: string(handled.Result.Outcome), Table: c.table}),
				By:     handled})
		}
		// A marker written before the retention horizon may have been purged.
		if c.checks(invariant.MissingMarker) && !c.markers[u] && !first.At.Before(c.st.Horizon) {
			c.add(Violation{Invariant: invariant.MissingMarker.Name, EventID: u.event, Consumer: u.consumer,
				Detail: invariant.MissingMarker.Say(invariant.Facts{Event: u.event, Outcome: string(handled.Result.Outcome), Table: c.table}),
				By:     handled})
		}
	}
}

func outcomes(recs []*Record) []string {
	var s []string
	for _, r := range recs {
		s = append(s, string(r.Result.Outcome))
	}
	return s
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
				c.add(Violation{Invariant: invariant.WrongEffect.Name, EventID: u.event, Consumer: u.consumer,
					Detail: invariant.WrongEffect.Say(invariant.Facts{Event: u.event, Returned: r.Result.EffectID, Original: original[0].ID}),
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
			c.add(Violation{Invariant: invariant.ChangedByConflict.Name, EventID: r.EventID, Consumer: r.Consumer,
				Detail: invariant.ChangedByConflict.Say(invariant.Facts{Event: r.EventID}),
				By:     r})
		}
	}
}
