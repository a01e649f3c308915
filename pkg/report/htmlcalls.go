package report

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/redeliver/redeliver/pkg/escape"
	"github.com/redeliver/redeliver/pkg/invariant"
)

// htmlMaxCalls is the most calls to externals one timeline draws, and
// htmlMaxExternals the most externals it draws a lane of; the page says
// how many more calls there were.
const (
	htmlMaxCalls     = 400
	htmlMaxExternals = 8
)

// htmlExternal is the lane of the calls to one external.
type htmlExternal struct {
	Lane  int // 1-based, in the order the externals first came
	Name  string
	Calls []htmlCall
}

// htmlCall is one call to an external, marked where it came on the
// timeline.
type htmlCall struct {
	ID     string
	Seq    int // its number at the external
	Left   string
	Kind   string // performed, answered or cut
	Glyph  string
	Label  string
	Title  string
	Broken []string // the invariants broken by calls that name it
}

// callRef names a call: its external, and its number there.
type callRef struct {
	external string
	seq      int
}

// callKinds lists every kind of call with its mark: a shape that reads
// without colour.
var callKinds = []htmlOutcome{
	{"performed", "●", "performed an effect"},
	{"answered", "○", "no effect: an answer replayed from its idempotency key, a refusal, a repeat"},
	{"cut", "∅", "no effect, no answer: cut before it was performed"},
}

// callKind is the mark of a call: an effect, whatever came of its answer;
// else an answer with no effect, or nothing at all.
func callKind(c invariant.Call) htmlOutcome {
	switch {
	case c.Performed:
		return callKinds[0]
	case c.NoAnswer:
		return callKinds[2]
	}
	return callKinds[1]
}

// callLegend lists the kinds of calls the page draws.
func callLegend(files []htmlFile) []htmlOutcome {
	seen := map[string]bool{}
	for _, f := range files {
		for _, c := range f.Checks {
			if c.Timeline == nil {
				continue
			}
			for _, e := range c.Timeline.Externals {
				for _, call := range e.Calls {
					seen[call.Kind] = true
				}
			}
		}
	}
	var out []htmlOutcome
	for _, k := range callKinds {
		if seen[k.Class] {
			out = append(out, k)
		}
	}
	return out
}

// placeCalls draws the calls to externals made while the timeline's
// deliveries ran, a lane per external, each call where the clock puts
// the time it came: from the first delivery's sending on (those before
// were made in an earlier check), a call after the last answer at the
// end (what the consumer published may come a little after its answer).
// A call that came between two bursts while a delivery was in flight was
// that of a delivery the timeline does not draw (another schedule of an
// explored check), and is left out; one that came while none was, at the
// end of the burst before it. When the timeline leaves deliveries out
// (omitted), the calls after its last drawn one are left out with them.
// It returns the marks by the call they stand for.
func (tl *htmlTimeline) placeCalls(id string, calls []invariant.Call, vs []invariant.Violation, clk *clock, t0 time.Time, omitted bool) map[callRef]*htmlCall {
	end := clk.bursts[len(clk.bursts)-1].to
	in := placedCalls(calls, clk, t0, end, omitted)
	if len(in) == 0 {
		return nil
	}
	broken := brokenBy(vs)
	var lanes []string
	var drawn, left, others int
	byLane := map[string]*htmlExternal{}
	for _, p := range in {
		c := p.c
		if drawn == htmlMaxCalls {
			left++
			continue
		}
		e := byLane[c.External]
		if e == nil {
			if len(lanes) == htmlMaxExternals {
				others++
				continue
			}
			lanes = append(lanes, c.External)
			e = &htmlExternal{Lane: len(lanes), Name: escape.Line(c.External)}
			byLane[c.External] = e
		}
		ref := callRef{c.External, c.Seq}
		k := callKind(c)
		m := htmlCall{ID: fmt.Sprintf("%s-e%d-%d", id, e.Lane, c.Seq), Seq: c.Seq, Left: percent(p.x), Kind: k.Class, Glyph: k.Glyph,
			Label: callLabel(c), Title: callTitle(c, t0, c.At.After(end)), Broken: broken[ref]}
		for _, inv := range m.Broken {
			m.Title += "; broke " + inv
		}
		e.Calls = append(e.Calls, m)
		drawn++
	}
	var said []string
	if left > 0 {
		said = append(said, fmt.Sprintf("and %s to externals after these, not drawn: a timeline draws at most %d calls", count(int64(left), "call", "calls"), htmlMaxCalls))
	}
	if others > 0 {
		said = append(said, fmt.Sprintf("%s to further externals, not drawn: a timeline draws the calls of at most %d externals", count(int64(others), "call", "calls"), htmlMaxExternals))
	}
	tl.CallsOmitted = strings.Join(said, "; ")
	for _, name := range lanes {
		tl.Externals = append(tl.Externals, *byLane[name])
	}
	marks := map[callRef]*htmlCall{}
	for li := range tl.Externals {
		e := &tl.Externals[li]
		for ci := range e.Calls {
			marks[callRef{lanes[li], e.Calls[ci].Seq}] = &e.Calls[ci]
		}
	}
	return marks
}

// A placedCall is a call and where the clock puts it.
type placedCall struct {
	c invariant.Call
	x float64
}

// placedCalls are the calls placeCalls draws, in the order they came,
// each where the clock puts it.
func placedCalls(calls []invariant.Call, clk *clock, t0, end time.Time, omitted bool) []placedCall {
	var in []placedCall
	for _, c := range calls {
		if c.At.IsZero() || c.At.Before(t0) || (omitted && c.At.After(end)) {
			continue
		}
		x, during := clk.place(c.At)
		if !during && c.Delivery != "" {
			continue
		}
		in = append(in, placedCall{c, x})
	}
	slices.SortStableFunc(in, func(a, b placedCall) int { return a.c.At.Compare(b.c.At) })
	return in
}

// brokenBy is, by call, the invariants whose violations name it.
func brokenBy(vs []invariant.Violation) map[callRef][]string {
	broken := map[callRef][]string{}
	for _, v := range vs {
		for _, seq := range v.Calls {
			ref := callRef{v.External, seq}
			if !slices.Contains(broken[ref], string(v.Invariant)) {
				broken[ref] = append(broken[ref], string(v.Invariant))
			}
		}
	}
	return broken
}

// callOf is the mark of the call a violation names as the one that made
// it a breach, else of the first call it names that is drawn.
func callOf(calls map[callRef]*htmlCall, v invariant.Violation) *htmlCall {
	if c := calls[callRef{v.External, v.Call}]; c != nil && v.Call != 0 {
		return c
	}
	for _, seq := range v.Calls {
		if c := calls[callRef{v.External, seq}]; c != nil {
			return c
		}
	}
	return nil
}

// callLabel is a call in a few words: "POST /v1/charges → 201 (ch_1)",
// "mail to a@x", "published to S as ID".
func callLabel(c invariant.Call) string {
	l := escape.Line(c.What)
	if c.Answer != "" && c.Answer != "accepted" {
		l += " → " + escape.Line(c.Answer)
	}
	return l
}

// callTitle is a call in words, for its mark's tooltip: its number at
// its external, what it asked, its idempotency key, the effect it makes,
// the delivery in flight, when it came and what was answered.
func callTitle(c invariant.Call, t0 time.Time, late bool) string {
	var b strings.Builder
	fmt.Fprintf(&b, "call %d at %s: %s", c.Seq, escape.Line(c.External), escape.Line(c.What))
	if c.Keyed {
		if c.IdemKey == "" {
			b.WriteString(", no " + escape.Line(c.Header) + " header")
		} else {
			b.WriteString(", " + escape.Line(c.Header) + ": " + escape.Input(c.IdemKey))
		}
	}
	if c.Key != "" {
		b.WriteString("; effect key " + escape.Input(c.Key))
	} else {
		b.WriteString("; no effect key")
	}
	if c.Delivery != "" {
		b.WriteString("; during the delivery of " + escape.Input(c.Delivery))
	} else {
		b.WriteString("; with no single delivery in flight (none, or several at once)")
	}
	fmt.Fprintf(&b, "; at +%s", span(c.At.Sub(t0)))
	if late {
		b.WriteString(", after the check's last answer (drawn at its end)")
	}
	switch {
	case c.NoAnswer:
		b.WriteString("; no answer was sent")
	case c.Answer != "":
		b.WriteString("; answered " + escape.Line(c.Answer))
	}
	switch {
	case c.Performed:
		b.WriteString("; performed an effect")
	case c.NoAnswer:
		b.WriteString("; not performed")
	default:
		b.WriteString("; not performed: no effect")
	}
	return b.String()
}

// place is where a call at t falls on the timeline: within a burst
// (deliveries in flight together, or a wait for a broker's consumer)
// where x puts it, during true; after the last burst, at the end, during
// true; between two bursts, at the end of the one before, during false.
func (c *clock) place(t time.Time) (x float64, during bool) {
	prev := -1
	for i, b := range c.bursts {
		if t.Before(b.from) {
			break
		}
		if !t.After(b.to) {
			return c.x(t), true
		}
		prev = i
	}
	switch prev {
	case len(c.bursts) - 1:
		return 100, true
	case -1:
		return 0, false
	}
	b := c.bursts[prev]
	return (b.at + b.w) / c.units * 100, false
}
