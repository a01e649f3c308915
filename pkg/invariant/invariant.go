// Package invariant is the catalogue of the guarantees a safe consumer keeps.
// It is the one place where an invariant is named, explained, assigned to
// the strategies and the kinds of target that check it, worded when it
// breaks, and decided: the in-memory checker over a run's history of the
// built-in handler (check.go), the judge of a user's own consumer over its
// history and effect rows (database.go) and the same judge over the
// journal a long replay into it keeps instead (journal.go) each ask every
// invariant they check for its own decision, registered beside its
// wording. Only the built-in replay's decisions are made elsewhere: they
// are aggregate queries of the SQLite store's own schema (pkg/sqlite),
// which report each breach here, by name and with its facts. Every report
// renders from what this package says.
//
// Of this module it imports only pkg/consumer, pkg/escape and pkg/handler,
// and it links no database driver or broker client.
//
// # Using the catalogue
//
//	for _, inv := range invariant.Checked(invariant.Replay, strategy) { … }
//	detail := invariant.LostEffect.Say(invariant.Facts{Event: "evt-1", Table: "effects"})
//	inv, ok := invariant.Lookup("duplicate-key")
//	breaches := invariant.JudgeRows(history, rows, "payments")
//
// Each Invariant has a stable Name (what scenario files write under
// `violations:` and what JSON reports carry), a Number (the guarantee of
// the product contract it belongs to), a one-line Meaning, and a rule for
// each Kind of target that checks it: which strategies it applies to there.
// Say words one breach from its Facts; the wording chooses among the facts
// it is given, so a checker that knows a delivery's outcome and one that
// only sees stored rows both word the same breach from what they know.
//
// # Adding an invariant
//
// Add a variable in catalogue.go, list it in All (its position there is
// the order reports use), give it a rule for each Kind that checks it, a
// Say, and the decisions of those kinds: for Handler a decide (a method
// of check, check.go); for Database a judgeRows (a method of rowsCheck,
// database.go) and a judgeJournal (a method of journalCheck, journal.go)
// that finds the same breaches over JournalSchema's tables, and a place in
// judged, the order a user's consumer's breaches are reported in. A
// Database invariant that needs a fact the deliveries do not carry yet
// adds it to Answered (and its caller in pkg/external fills it in); one
// that needs a fact the journal does not keep adds a column to
// JournalSchema, which the journal's writes in pkg/external fill in. A
// Replay rule needs its query in pkg/sqlite. The catalogue's own tests
// then require it to be worded, described, decided for every kind it has
// a rule for (TestEveryKindDecides) and shown breakable by the checker of
// every kind that claims it; pkg/external's TestJournalJudgesAsHistory
// requires the journal to find what the history finds.
package invariant

import "github.com/redeliver/redeliver/pkg/escape"

// Name is the stable name of an invariant, as scenario files write it in
// `violations:` and reports print it.
type Name string

// Kind is a kind of target an invariant is checked against.
type Kind string

// The kinds of target.
const (
	// Handler is the built-in handler, judged over the whole history of a
	// run kept in memory (redeliver run).
	Handler Kind = "handler"
	// Replay is the built-in handler during a replay, judged by aggregate
	// queries over the stored rows: no history is kept.
	Replay Kind = "replay"
	// Database is a user's own consumer, judged by the rows its own
	// database ends up with (target mode).
	Database Kind = "database"
)

// Guard is what the catalogue needs to know about a strategy to say which
// invariants apply to it; handler.Strategy is one.
type Guard interface {
	KeepsMarkers() bool // writes a processed marker
	UsesKey() bool      // keeps one effect per business key
	CallsOut() bool     // calls an external provider with an idempotency key
}

// Invariant is one guarantee of the catalogue.
type Invariant struct {
	Name    Name
	Number  int    // the guarantee of the product contract it belongs to, 1 to 6
	Meaning string // what breaking it means, in one line
	// rules says, per kind of target that checks it, for which strategies
	// (nil: for every strategy, and for a user's consumer, which has none).
	rules map[Kind]func(Guard) bool
	// Keyed: a run also checks it, whatever the strategy, whenever a
	// business key is known (recorded with the effects).
	Keyed bool
	say   func(Facts) string
	// decide finds the invariant's breaches in a run's history and state
	// (check.go); set for every invariant with a Handler rule.
	decide func(*check, *Invariant)
	// judgeRows finds them in the history of a user's consumer and its
	// effect rows (database.go), judgeJournal in the journal a replay too
	// long to keep its deliveries keeps instead (journal.go): the same
	// breaches, in the same order. Both set for every invariant with a
	// Database rule, which judged lists in the order reports give them.
	judgeRows    func(*rowsCheck, *Invariant)
	judgeJournal func(*journalCheck, *Invariant) error
	// judgeCalls finds them in the calls a user's consumer made to the
	// stand-ins of the services it calls (external.go); set for every
	// invariant with an Externals rule.
	judgeCalls func(*callsCheck, *Invariant)
}

// String returns the invariant's name.
func (i *Invariant) String() string { return string(i.Name) }

// Say words one breach of the invariant from its facts.
//
// Every value in the facts that came from input (ids, keys, consumer
// names, table names) is written through escape.Input, so that none can
// break the line or reach a terminal raw.
func (i *Invariant) Say(f Facts) string {
	for _, v := range []*string{&f.Event, &f.Consumer, &f.Key, &f.Table, &f.By, &f.OtherKey, &f.External, &f.Header} {
		*v = escape.Input(*v)
	}
	for _, vs := range []*[]string{&f.IDs, &f.Events, &f.Outcomes, &f.Calls} {
		escaped := make([]string, len(*vs))
		for j, v := range *vs {
			escaped[j] = escape.Input(v)
		}
		*vs = escaped
	}
	return i.say(f)
}

// CheckedBy reports whether a kind of target checks the invariant, with
// the strategy g (nil for a user's consumer).
func (i *Invariant) CheckedBy(k Kind, g Guard) bool {
	applies, ok := i.rules[k]
	if !ok {
		return false
	}
	return applies == nil || g == nil || applies(g)
}

// Kinds lists the kinds of target that check the invariant, in the order
// Handler, Replay, Database, Externals.
func (i *Invariant) Kinds() []Kind {
	var out []Kind
	for _, k := range []Kind{Handler, Replay, Database, Externals} {
		if _, ok := i.rules[k]; ok {
			out = append(out, k)
		}
	}
	return out
}

// Lookup returns the invariant with the name.
func Lookup(name string) (*Invariant, bool) {
	for _, i := range All {
		if string(i.Name) == name {
			return i, true
		}
	}
	return nil, false
}

// Known reports whether name is an invariant's.
func Known(name string) bool {
	_, ok := Lookup(name)
	return ok
}

// Names lists the names of all invariants, in catalogue order.
func Names() []string {
	out := make([]string, len(All))
	for n, i := range All {
		out[n] = string(i.Name)
	}
	return out
}

// Order is the invariant's position in the catalogue, the order reports
// list invariants in; an unknown name sorts last.
func Order(name Name) int {
	for n, i := range All {
		if i.Name == name {
			return n
		}
	}
	return len(All)
}

// BuiltIn lists the invariants a run of the built-in handler is reported
// against, in catalogue order: every one but those judged over the calls
// a user's consumer makes to its stand-ins alone, which the built-in
// handler makes none of.
func BuiltIn() []*Invariant {
	var out []*Invariant
	for _, i := range All {
		if ks := i.Kinds(); len(ks) == 1 && ks[0] == Externals {
			continue
		}
		out = append(out, i)
	}
	return out
}

// Checked lists the invariants a kind of target checks with the strategy g
// (nil for a user's consumer), in catalogue order.
func Checked(k Kind, g Guard) []*Invariant {
	var out []*Invariant
	for _, i := range All {
		if i.CheckedBy(k, g) {
			out = append(out, i)
		}
	}
	return out
}

// Sentence is how a report states one breach: the invariant's name, its
// detail and, when a scenario step caused it, the step.
func Sentence(name Name, detail string, step int) string {
	s := "invariant " + string(name) + " broken: " + detail
	if step > 0 {
		s += ", by step " + itoa(int64(step))
	}
	return s
}
