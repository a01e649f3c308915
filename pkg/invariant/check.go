package invariant

// The in-memory checker: it reads the history of a run's deliveries and
// what the stores hold, and asks every invariant a run checks (its
// decide, in the catalogue) for its breaches.

import (
	"iter"
	"sort"
	"strconv"
	"time"

	"github.com/redeliver/redeliver/pkg/consumer"
	"github.com/redeliver/redeliver/pkg/handler"
)

// Record is one delivery of the history and what came back.
type Record struct {
	Seq      int // 1-based position in the history
	EventID  string
	Consumer string // the consumer the marker and effect are written for
	Key      string // the business key, where the strategy uses one
	Result   consumer.Result
	At       time.Time // the scenario clock when it was delivered
	// ChangedStore is set when a conflict left the store different.
	ChangedStore bool
	// Where the delivery came from, for the report.
	Check, Step int
	Pos         consumer.Location
	// Repeats counts the deliveries right after this one that were the
	// same in every way but their Seq (Seq+1 to Seq+Repeats): a run of
	// identical deliveries (one step's times:) is kept as one record.
	// Expand lists them one by one.
	Repeats int
	// Span is when and on which lane the delivery ran, for the timeline
	// report; the checker and the other reports do not read it.
	Span Span
}

// Span is when and where a delivery ran, by the wall clock: what a
// timeline draws. A record of repeats spans from the first one's Sent to
// the last one's Answered.
type Span struct {
	// Sent and Answered: the delivery was handed to the consumer, and
	// its answer came back (zero when not recorded).
	Sent, Answered time.Time
	// Lane is the worker that made the delivery, 1-based, for a
	// concurrent step's; 0 for a delivery made on its own.
	Lane int
	// HeldAt is the fault point the worker was held at, to force a
	// schedule, from Held until Released (through the database proxy, the
	// statement boundary in words: "after connection 1's statement 1");
	// empty when it was not held.
	HeldAt         consumer.FaultPoint
	Held, Released time.Time
	// Crash says that the consumer was killed during or after the
	// delivery, and when against its answer (before-answer,
	// after-answer, unknown); empty when it was not. The built-in
	// handler's crashes are its outcome crashed.
	Crash string
	// Killed is when that kill came, and Restarted when the consumer
	// redeliver had started was ready again after it; both zero when it
	// was not restarted (no crash, or an exec target's own process).
	Killed, Restarted time.Time
}

// Expand lists every delivery of a history, each run of repeats (see
// Record.Repeats) as that many records, Seq counting up, Repeats 0.
func Expand(history []Record) iter.Seq[Record] {
	return func(yield func(Record) bool) {
		for _, r := range history {
			n := r.Repeats
			r.Repeats = 0
			for i := 0; i <= n; i++ {
				if !yield(r) {
					return
				}
				r.Seq++
			}
		}
	}
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
	Invariant Name
	EventID   string
	Consumer  string
	// External is the stand-in a breach of an external effect is at.
	External string
	Detail   string
	By       *Record // the delivery that broke it, when one did
	// Calls are the calls at External a breach of an external effect
	// names, by their number there (Call.Seq), and Call the one that made
	// it a breach: the second effect, the first call under a second
	// idempotency key, the first call without one. external-lost, an
	// effect not made, names none.
	Calls []int
	Call  int
}

// Key identifies a violation across checks, so each is reported once.
func (v Violation) Key() string {
	return string(v.Invariant) + "\x00" + v.EventID + "\x00" + v.Consumer + "\x00" + v.External
}

func (v Violation) String() string {
	step := 0
	if v.By != nil {
		step = v.By.Step
	}
	return Sentence(v.Invariant, v.Detail, step)
}

type unit struct{ event, consumer string }

// Check reads the history and the state and returns every broken invariant,
// sorted by invariant and event: each invariant of the catalogue that a run
// with this strategy checks decides its own breaches (its decide).
func Check(strategy handler.Strategy, effectTable string, history []Record, st State) []Violation {
	c := &check{strategy: strategy, table: effectTable, history: history, st: st}
	c.index()
	for _, inv := range All {
		if inv.decide != nil && (inv.CheckedBy(Handler, strategy) || inv.Keyed && c.keyed()) {
			inv.decide(c, inv)
		}
	}
	sort.SliceStable(c.out, func(i, j int) bool {
		a, b := c.out[i], c.out[j]
		if a.Invariant != b.Invariant {
			return Order(a.Invariant) < Order(b.Invariant)
		}
		return a.EventID < b.EventID
	})
	return c.out
}

// check is a run's history and state, indexed for the decisions.
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
	byCharge   map[int64]*Record // the delivery that made each charge
}

func (c *check) index() {
	c.byUnit = map[unit][]*Record{}
	c.effects = map[unit][]handler.Effect{}
	c.byKey = map[string][]handler.Effect{}
	c.markers = map[unit]bool{}
	c.byEffectID = map[int64]*Record{}
	c.byCharge = map[int64]*Record{}
	for i := range c.history {
		r := &c.history[i]
		u := unit{r.EventID, r.Consumer}
		if _, seen := c.byUnit[u]; !seen {
			c.units = append(c.units, u)
		}
		c.byUnit[u] = append(c.byUnit[u], r)
		if o := r.Result.Outcome; (o == consumer.Processed || o == consumer.Crashed) && r.Result.EffectID != 0 {
			if _, seen := c.byEffectID[r.Result.EffectID]; !seen {
				c.byEffectID[r.Result.EffectID] = r
			}
		}
		if x := r.Result.External; x != nil && x.ChargeID != 0 && !x.Replayed {
			c.byCharge[x.ChargeID] = r
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

// breach records one breach of inv, worded from its facts.
func (c *check) breach(inv *Invariant, event, consumer string, f Facts, by *Record) {
	c.out = append(c.out, Violation{Invariant: inv.Name, EventID: event, Consumer: consumer, Detail: inv.Say(f), By: by})
}

func ids(es []handler.Effect) []string {
	s := make([]string, len(es))
	for i, e := range es {
		s[i] = strconv.FormatInt(e.ID, 10)
	}
	return s
}

// duplicateEffects: more than one effect for one event and consumer.
func (c *check) duplicateEffects(inv *Invariant) {
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
		c.breach(inv, u.event, u.consumer, Facts{Event: u.event, Consumer: u.consumer, Table: c.table, Rows: int64(len(es)), IDs: ids(es)}, c.byEffectID[es[1].ID])
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

// duplicateKeys: more than one effect for one business key.
func (c *check) duplicateKeys(inv *Invariant) {
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
			c.breach(inv, es[1].EventID, es[1].Consumer, Facts{Key: k, Table: c.table, Rows: int64(len(es)), IDs: ids(es), Events: events}, c.byEffectID[es[1].ID])
		}
	}
}

// doubleCharges: more than one charge at the provider for one business key.
func (c *check) doubleCharges(inv *Invariant) {
	byRef := map[string][]Charge{}
	var refs []string
	for _, ch := range c.st.Charges {
		if _, seen := byRef[ch.OrderRef]; !seen {
			refs = append(refs, ch.OrderRef)
		}
		byRef[ch.OrderRef] = append(byRef[ch.OrderRef], ch)
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
		by := c.byCharge[chs[1].ID]
		ev := ""
		if by != nil {
			ev = by.EventID
		}
		c.breach(inv, ev, "", Facts{Key: ref, Rows: int64(len(chs)), IDs: ids, By: ev}, by)
	}
}

// unstableKeys: the retries of one event sent more than one idempotency key.
func (c *check) unstableKeys(inv *Invariant) {
	for _, u := range c.units {
		var keys []string
		var second *Record
		for _, r := range c.byUnit[u] {
			if x := r.Result.External; x != nil && !contains(keys, x.IdempotencyKey) {
				keys = append(keys, x.IdempotencyKey)
				if len(keys) == 2 {
					second = r
				}
			}
		}
		if len(keys) > 1 {
			c.breach(inv, u.event, u.consumer, Facts{Event: u.event, IdempotencyKeys: keys}, second)
		}
	}
}

// sharedKeys: one idempotency key sent for more than one business key.
func (c *check) sharedKeys(inv *Invariant) {
	owner := map[string]string{}
	for _, u := range c.units {
		for _, r := range c.byUnit[u] {
			x := r.Result.External
			if x == nil {
				continue
			}
			was, ok := owner[x.IdempotencyKey]
			if !ok || was != r.Key {
				owner[x.IdempotencyKey] = r.Key // report each new owner once
			}
			if ok && was != r.Key {
				c.breach(inv, r.EventID, r.Consumer, Facts{Event: r.EventID, Key: r.Key, OtherKey: was, IdempotencyKeys: []string{x.IdempotencyKey}}, r)
			}
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

func handledOutcome(o consumer.Outcome) bool {
	return o == consumer.Processed || o == consumer.Duplicate || o == consumer.Crashed
}

// handled returns the last and the first delivery of u that handled the
// event, or nil when none did.
func (c *check) handled(u unit) (last, first *Record) {
	for _, r := range c.byUnit[u] {
		if handledOutcome(r.Result.Outcome) {
			last = r
			if first == nil {
				first = r
			}
		}
	}
	return last, first
}

// halfWritten: an event none of whose deliveries succeeded left rows behind.
func (c *check) halfWritten(inv *Invariant) {
	for _, u := range c.units {
		if last, _ := c.handled(u); last != nil {
			continue
		}
		recs, own := c.byUnit[u], c.effects[u]
		if len(own) > 0 || c.markers[u] {
			c.breach(inv, u.event, u.consumer, Facts{Event: u.event, Outcomes: outcomes(recs), Table: c.table, Rows: int64(len(own)), IDs: ids(own), Marker: c.markers[u]}, recs[len(recs)-1])
		}
	}
}

// lostEffects: an event that was handled has no effect (nor, on a
// strategy that dedups on the key, its key one).
func (c *check) lostEffects(inv *Invariant) {
	for _, u := range c.units {
		handled, _ := c.handled(u)
		if handled == nil {
			continue
		}
		reachable := len(c.effects[u]) > 0
		if !reachable && c.strategy.UsesKey() && handled.Key != "" {
			reachable = len(c.byKey[handled.Key]) > 0
		}
		if !reachable {
			c.breach(inv, u.event, u.consumer, Facts{Event: u.event, Outcome: string(handled.Result.Outcome), Table: c.table}, handled)
		}
	}
}

// missingMarkers: a handled event has no processed marker, unless it was
// first handled before the retention horizon (its marker may be purged).
func (c *check) missingMarkers(inv *Invariant) {
	for _, u := range c.units {
		handled, first := c.handled(u)
		if handled == nil || c.markers[u] || first.At.Before(c.st.Horizon) {
			continue
		}
		c.breach(inv, u.event, u.consumer, Facts{Event: u.event, Outcome: string(handled.Result.Outcome), Table: c.table}, handled)
	}
}

func outcomes(recs []*Record) []string {
	var s []string
	for _, r := range recs {
		for i := 0; i <= r.Repeats; i++ {
			s = append(s, string(r.Result.Outcome))
		}
	}
	return s
}

// wrongEffects: a duplicate returned another effect than the original's.
func (c *check) wrongEffects(inv *Invariant) {
	for _, u := range c.units {
		for _, r := range c.byUnit[u] {
			if r.Result.Outcome != consumer.Duplicate {
				continue
			}
			original := c.effects[u]
			if c.strategy.UsesKey() && r.Key != "" && len(c.byKey[r.Key]) > 0 {
				original = c.byKey[r.Key]
			}
			if len(original) == 0 {
				continue // lost-effect names it
			}
			if r.Result.EffectID != original[0].ID {
				c.breach(inv, u.event, u.consumer, Facts{Event: u.event, Returned: r.Result.EffectID, Original: original[0].ID}, r)
				break
			}
		}
	}
}

// changedByConflict: a conflicting redelivery changed what is stored.
func (c *check) changedByConflict(inv *Invariant) {
	for i := range c.history {
		r := &c.history[i]
		if r.Result.Outcome == consumer.Conflict && r.ChangedStore {
			c.breach(inv, r.EventID, r.Consumer, Facts{Event: r.EventID}, r)
		}
	}
}
