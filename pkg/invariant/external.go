package invariant

import (
	"fmt"
	"sort"
	"strconv"
	"strings"
	"time"
)

// Externals is a user's consumer judged by the calls it made to the
// stand-ins redeliver ran for the services it calls (a payment provider,
// a mail server): what they performed, under which idempotency keys.
const Externals Kind = "externals"

// Call is what the judge needs of one call a stand-in received.
type Call struct {
	External string // the external's name
	Seq      int    // its number at that external, 1-based
	What     string // "POST /v1/charges", "mail"
	Delivery string // the event whose delivery was in flight ("" none)
	Key      string // the effect key the call makes
	// IdemKey is the idempotency key it carried; Keyed says the
	// external dedupes by one (Header names it).
	IdemKey string
	Keyed   bool
	Header  string
	// Performed: the stand-in performed it, an effect (not an answer
	// replayed from a stored key, not a refusal).
	Performed bool
	// At is when the stand-in received it, Answer what it answered in
	// words ("201 (ch_1)", "201 replayed", "409", "no answer",
	// "accepted"), and NoAnswer says it sent none (a timeout fault, a
	// call cut while held). The judge reads none of them: they place the
	// call on its check's timeline.
	At       time.Time
	Answer   string
	NoAnswer bool
}

// name says the call in a sentence: "call 2 (POST /v1/charges, by evt-1)".
func (c Call) name() string {
	by := ""
	if c.Delivery != "" {
		by = ", by " + c.Delivery
	}
	return fmt.Sprintf("call %d (%s%s)", c.Seq, c.What, by)
}

// The invariants of external effects.
var (
	ExternalDuplicate = &Invariant{
		Name: "external-duplicate", Number: 2,
		Meaning:    "a service the consumer calls performed one business effect more than once",
		judgeCalls: (*callsCheck).duplicates,
		rules:      map[Kind]func(Guard) bool{Externals: nil},
		say: func(f Facts) string {
			return fmt.Sprintf("%s performed %d effects for key %s: %s", f.External, len(f.Calls), f.Key, strings.Join(f.Calls, ", "))
		},
	}
	ExternalLost = &Invariant{
		Name: "external-lost", Number: 3,
		Meaning:    "an event was acked and a service it must reach performed nothing for it",
		judgeCalls: (*callsCheck).lost,
		rules:      map[Kind]func(Guard) bool{Externals: nil},
		say: func(f Facts) string {
			if len(f.Calls) == 0 {
				return fmt.Sprintf("event %s was acked, and %s received no call for it", f.Event, f.External)
			}
			return fmt.Sprintf("event %s was acked, and %s performed nothing for it (%s)", f.Event, f.External, strings.Join(f.Calls, ", "))
		},
	}
	UnstableIdempotencyKey = &Invariant{
		Name: "unstable-idempotency-key", Number: 6,
		Meaning:    "one business effect was asked of a service under more than one idempotency key",
		judgeCalls: (*callsCheck).unstable,
		rules:      map[Kind]func(Guard) bool{Externals: nil},
		say: func(f Facts) string {
			q := make([]string, len(f.IdempotencyKeys))
			for i, k := range f.IdempotencyKeys {
				q[i] = strconv.Quote(k)
			}
			return fmt.Sprintf("key %s was asked of %s under %d idempotency keys: %s (%s)", f.Key, f.External, len(q), strings.Join(q, ", "), strings.Join(f.Calls, ", "))
		},
	}
	UnkeyedExternalCall = &Invariant{
		Name: "unkeyed-external-call", Number: 6,
		Meaning:    "a call to a service that dedupes by idempotency key carried none",
		judgeCalls: (*callsCheck).unkeyed,
		rules:      map[Kind]func(Guard) bool{Externals: nil},
		say: func(f Facts) string {
			return fmt.Sprintf("%s to %s carried no %s header (key %s)", strings.Join(f.Calls, ", "), f.External, f.Header, f.Key)
		},
	}
)

// externalJudged is the order a user's consumer's external breaches are
// reported in.
var externalJudged = []*Invariant{ExternalDuplicate, UnstableIdempotencyKey, UnkeyedExternalCall, ExternalLost}

// Acked is an event the consumer acked, and its business key.
type Acked struct{ Event, Key string }

// callsCheck is the judge of a consumer's external calls.
type callsCheck struct {
	calls    []Call
	acked    []Acked  // events the consumer acked
	required []string // externals every acked event must reach
	out      []Violation
}

// breach records a broken invariant about event, by the call by (nil:
// none) among the calls it names.
func (c *callsCheck) breach(inv *Invariant, event string, f Facts, named []Call, by *Call) {
	v := Violation{Invariant: inv.Name, EventID: event, External: f.External, Detail: inv.Say(f)}
	for _, call := range named {
		v.Calls = append(v.Calls, call.Seq)
	}
	if by != nil {
		v.Call = by.Seq
	}
	c.out = append(c.out, v)
}

// JudgeCalls judges the calls the stand-ins received: acked lists the
// events the consumer acked, required the externals each of them must
// have made an effect at — one made during its delivery, or one whose
// effect key is its business key (what a consumer publishes after it
// answered carries no delivery). Breaches come in externalJudged's
// order, then by external and key.
func JudgeCalls(calls []Call, acked []Acked, required []string) []Violation {
	c := &callsCheck{calls: calls, acked: acked, required: required}
	for _, inv := range externalJudged {
		inv.judgeCalls(c, inv)
	}
	return c.out
}

// byKey groups the calls by external and effect key, in the order each
// group first came.
func (c *callsCheck) byKey(keep func(Call) bool) [][]Call {
	index := map[[2]string]int{}
	var out [][]Call
	for _, call := range c.calls {
		if !keep(call) || call.Key == "" {
			continue
		}
		k := [2]string{call.External, call.Key}
		i, ok := index[k]
		if !ok {
			i = len(out)
			index[k] = i
			out = append(out, nil)
		}
		out[i] = append(out[i], call)
	}
	return out
}

func names(calls []Call) []string {
	out := make([]string, len(calls))
	for i, c := range calls {
		out[i] = c.name()
	}
	return out
}

// duplicates: more than one performed call for one effect key.
func (c *callsCheck) duplicates(inv *Invariant) {
	for _, g := range c.byKey(func(call Call) bool { return call.Performed }) {
		if len(g) > 1 {
			c.breach(inv, g[1].Delivery, Facts{External: g[0].External, Key: g[0].Key, Calls: names(g)}, g, &g[1])
		}
	}
}

// unstable: one effect key under two idempotency keys or more.
func (c *callsCheck) unstable(inv *Invariant) {
	for _, g := range c.byKey(func(call Call) bool { return call.Keyed && call.IdemKey != "" }) {
		var keys []string
		var first []Call
		for _, call := range g {
			if !contains(keys, call.IdemKey) {
				keys = append(keys, call.IdemKey)
				first = append(first, call)
			}
		}
		if len(keys) > 1 {
			c.breach(inv, first[1].Delivery, Facts{External: g[0].External, Key: g[0].Key, IdempotencyKeys: keys, Calls: names(first)}, first, &first[1])
		}
	}
}

// unkeyed: calls without the header an external dedupes by, one breach
// per external and effect key.
func (c *callsCheck) unkeyed(inv *Invariant) {
	for _, g := range c.byKey(func(call Call) bool { return call.Keyed && call.IdemKey == "" }) {
		c.breach(inv, g[0].Delivery, Facts{External: g[0].External, Key: g[0].Key, Header: g[0].Header, Calls: names(g)}, g, &g[0])
	}
}

// lost: an acked event with no performed call at a required external.
func (c *callsCheck) lost(inv *Invariant) {
	for _, ext := range c.required {
		performed, keyed := map[string]bool{}, map[string]bool{}
		tried := map[string][]Call{}
		for _, call := range c.calls {
			if call.External != ext {
				continue
			}
			if call.Performed {
				performed[call.Delivery] = true
				if call.Key != "" {
					keyed[call.Key] = true
				}
			}
			tried[call.Delivery] = append(tried[call.Delivery], call)
		}
		events := append([]Acked(nil), c.acked...)
		sort.Slice(events, func(i, j int) bool { return events[i].Event < events[j].Event })
		for _, ev := range events {
			if !performed[ev.Event] && (ev.Key == "" || !keyed[ev.Key]) {
				c.breach(inv, ev.Event, Facts{Event: ev.Event, External: ext, Calls: names(tried[ev.Event])}, nil, nil)
			}
		}
	}
}
