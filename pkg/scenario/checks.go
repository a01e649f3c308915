package scenario

import (
	"encoding/json"
	"math"
	"strings"

	"github.com/redeliver/redeliver/pkg/consumer"
	"github.com/redeliver/redeliver/pkg/handler"
	"github.com/redeliver/redeliver/pkg/invariant"
	"github.com/redeliver/redeliver/pkg/template"
	"go.yaml.in/yaml/v3"
)

// Checks, their steps, events, expectations and state checks.

func (l *loader) checks(n *yaml.Node) {
	if n.Kind != yaml.SequenceNode {
		l.errorf(n, "checks must be a list of checks, not %s", describe(n))
		return
	}
	if len(n.Content) == 0 {
		l.errorf(n, "checks is empty; a scenario needs at least one check")
	}
	names := map[string]Pos{}
	for _, cn := range n.Content {
		cn = resolve(cn)
		c := l.check(cn)
		if c == nil {
			continue
		}
		if c.Name != "" {
			if first, dup := names[c.Name]; dup {
				l.errorf(cn, "check name %q is already used at line %d; check names must be unique", c.Name, first.Line)
			} else {
				names[c.Name] = c.Pos
			}
		}
		l.s.Checks = append(l.s.Checks, c)
	}
}

func (l *loader) check(n *yaml.Node) *Check {
	c := &Check{Pos: l.pos(n)}
	var nameSeen, stepsSeen bool
	ok := l.mapping(n, "a check", []field{
		{"name", func(k, v *yaml.Node) { nameSeen = true; l.checkName(c, v) }},
		{"steps", func(k, v *yaml.Node) { stepsSeen = true; l.checkSteps(c, v) }},
		{"expect", func(k, v *yaml.Node) { c.Expect = l.state(v, "the check's expect") }},
		{"say", func(k, v *yaml.Node) { c.Say = l.tmpl(v, "say"); l.sayFields(v, c.Say) }},
		{"violations", func(k, v *yaml.Node) { l.checkViolations(c, v) }},
	})
	if !ok {
		return nil
	}
	if !nameSeen {
		l.errorf(n, "this check has no name; add name: followed by what it shows")
	}
	if !stepsSeen {
		l.errorf(n, "check %q has no steps", c.Name)
	}
	return c
}

// checkName reads a check's name: one line of a few words.
func (l *loader) checkName(c *Check, v *yaml.Node) {
	c.Name, _ = l.str(v, "check name")
	if strings.ContainsAny(c.Name, "\n\r") {
		l.errorf(v, "check name must be one line")
	} else if strings.TrimSpace(c.Name) == "" && v.Kind == yaml.ScalarNode {
		l.errorf(v, "check name is empty; expected a few words that say what the check shows")
	}
}

// checkSteps reads a check's list of steps, up to the file's bound on
// steps.
func (l *loader) checkSteps(c *Check, v *yaml.Node) {
	if v.Kind != yaml.SequenceNode {
		l.errorf(v, "steps must be a list of steps, not %s", describe(v))
		return
	}
	if len(v.Content) == 0 {
		l.errorf(v, "steps is empty; a check needs at least one step")
	}
	for _, sn := range v.Content {
		// Steps are counted as they are expanded: aliased checks
		// and step lists could otherwise make millions of them.
		if l.steps++; l.steps > maxFileSteps {
			if l.steps == maxFileSteps+1 {
				l.errorf(sn, "the file has more than %d steps here, aliases expanded; a scenario file is written by hand", maxFileSteps)
			}
			return
		}
		if st := l.step(resolve(sn)); st != nil {
			c.Steps = append(c.Steps, st)
		}
	}
}

// checkViolations reads the violations a check declares: the invariants
// it expects to break, each a known one.
func (l *loader) checkViolations(c *Check, v *yaml.Node) {
	c.ViolationsDeclared = true
	c.ViolationsPos = l.pos(v)
	if v.Kind != yaml.SequenceNode {
		l.errorf(v, "violations must be a list of invariant names, not %s", describe(v))
		return
	}
	for _, e := range v.Content {
		e = resolve(e)
		s, ok := l.str(e, "violation")
		if !ok {
			continue
		}
		if !invariant.Known(s) {
			l.errorf(e, "unknown invariant %q; expected %s", s, oneOf(invariant.Names()))
			continue
		}
		c.Violations = append(c.Violations, s)
	}
}

// SayPlaceholders are the placeholders a check's say line may use, besides
// {rows.TABLE}; runner.SayValues gives each its value.
var SayPlaceholders = []string{"deliveries", "effects", "duplicates", "conflicts", "failures", "crashes", "violations", "charges", "key_conflicts", "orphan_charges", "uncharged_effects"}

func (l *loader) sayFields(n *yaml.Node, t template.Template) {
	for _, f := range t.Fields() {
		if strings.HasPrefix(f, "rows.") {
			l.stateChecks = append(l.stateChecks, &State{Pos: l.pos(n), Rows: []RowCount{{Table: strings.TrimPrefix(f, "rows."), N: -1, Pos: l.pos(n)}}})
			continue
		}
		known := false
		for _, c := range SayPlaceholders {
			known = known || c == f
		}
		if !known {
			l.errorf(n, "say uses unknown placeholder {%s}; expected {rows.TABLE} or one of %s", f, strings.Join(braced(SayPlaceholders), ", "))
		}
	}
}

// stepNodes are the fields of a step as the loader reads them: those
// its kind is decided by, and those only one kind of step may have.
type stepNodes struct {
	deliver, expect, advance *yaml.Node
	interleave, messageID    *yaml.Node
	// modifiers are the fields only a deliver step may have, targetOnly
	// those only a target-mode step may have, handlerOnly those only the
	// built-in handler's steps may have.
	modifiers, targetOnly []*yaml.Node
	handlerOnly           map[string]bool
}

func (l *loader) step(n *yaml.Node) *Step {
	st := &Step{Pos: l.pos(n), Times: 1}
	f := &stepNodes{handlerOnly: map[string]bool{}}
	if !l.mapping(n, "a step", l.stepFields(st, f)) {
		return nil
	}
	if l.targetMode {
		l.targetStep(n, st, f.handlerOnly)
	} else {
		for _, k := range f.targetOnly {
			l.errorf(k, "%s is a fault from outside for a target (your own consumer); the built-in handler takes fail: POINT", k.Value)
		}
	}
	switch {
	case f.deliver != nil && f.advance != nil:
		l.errorf(f.advance, "a step either delivers or advances the clock, not both")
		return nil
	case f.deliver != nil:
		st.Kind = Deliver
		l.deliverChecks(n, st, f)
		return st
	case f.advance != nil:
		st.Kind = Advance
		if f.expect != nil {
			l.errorf(f.expect, "an advance step cannot have expect; put the state check in a step of its own")
		}
	case f.expect != nil:
		st.Kind = Inspect
		st.State = l.state(f.expect, "a state check")
	default:
		l.errorf(n, "this step does nothing; expected deliver, expect or advance")
		return nil
	}
	for _, m := range f.modifiers {
		l.errorf(m, "%s belongs to a deliver step", m.Value)
	}
	return st
}

// stepFields reads the fields of a step into st, keeping in f the nodes
// the step's kind and its checks need.
func (l *loader) stepFields(st *Step, f *stepNodes) []field {
	return []field{
		{"deliver", func(k, v *yaml.Node) { f.deliver = v; st.Event = l.event(v) }},
		{"fail", func(k, v *yaml.Node) {
			f.modifiers = append(f.modifiers, k)
			f.handlerOnly["fail"] = true
			l.stepFail(st, v)
		}},
		{"consumer", func(k, v *yaml.Node) {
			f.modifiers = append(f.modifiers, k)
			f.handlerOnly["consumer"] = true
			l.stepConsumer(st, v)
		}},
		{"times", func(k, v *yaml.Node) {
			f.modifiers = append(f.modifiers, k)
			st.Times, _ = l.integer(v, "times", 1, MaxTimes)
		}},
		{"concurrent", func(k, v *yaml.Node) {
			f.modifiers = append(f.modifiers, k)
			st.Concurrent, _ = l.integer(v, "concurrent", 2, MaxConcurrent)
		}},
		{"interleave", func(k, v *yaml.Node) {
			f.modifiers = append(f.modifiers, k)
			f.interleave = k
			f.handlerOnly["interleave"] = true
			l.interleave(st, v)
		}},
		{"label", func(k, v *yaml.Node) {
			f.modifiers = append(f.modifiers, k)
			l.stepLabel(st, v)
		}},
		{"expect", func(k, v *yaml.Node) { f.expect = v }},
		{"advance", func(k, v *yaml.Node) { f.advance = v; st.Advance, _ = l.duration(v, "advance") }},
		{"drop", func(k, v *yaml.Node) {
			f.modifiers = append(f.modifiers, k)
			f.targetOnly = append(f.targetOnly, k)
			l.stepDrop(st, v)
		}},
		{"crash", func(k, v *yaml.Node) {
			f.modifiers = append(f.modifiers, k)
			f.targetOnly = append(f.targetOnly, k)
			st.Crash = l.crash(v)
		}},
		{"delay", func(k, v *yaml.Node) {
			f.modifiers = append(f.modifiers, k)
			f.targetOnly = append(f.targetOnly, k)
			st.Delay = l.delay(v, "delay")
		}},
		{"message_id", func(k, v *yaml.Node) {
			f.modifiers = append(f.modifiers, k)
			f.targetOnly = append(f.targetOnly, k)
			f.messageID = k
			l.stepMessageID(st, v)
		}},
	}
}

// stepFail reads a step's fail: the fault point the built-in handler
// fails the delivery at.
func (l *loader) stepFail(st *Step, v *yaml.Node) {
	s, ok := l.str(v, "fail")
	if !ok {
		return
	}
	if p, ok := consumer.ParseFaultPoint(s); ok {
		st.Fail = p
		return
	}
	l.errorf(v, "unknown fault point %q; expected %s", s, oneOf(words(consumer.FaultPoints)))
}

// stepConsumer reads a step's consumer: the one of a consumer-scoped
// handler the delivery goes to.
func (l *loader) stepConsumer(st *Step, v *yaml.Node) {
	if s, ok := l.str(v, "consumer"); ok {
		st.Consumer = s
		if s == "" {
			l.errorf(v, "consumer must not be empty")
		}
	}
}

// stepLabel reads a step's label, which no other step of the file has.
func (l *loader) stepLabel(st *Step, v *yaml.Node) {
	s, ok := l.str(v, "label")
	if !ok {
		return
	}
	if first, dup := l.labels[s]; dup {
		l.errorf(v, "label %q is already defined at line %d; labels must be unique in a file", s, first.Line)
		return
	}
	st.Label = s
}

// stepDrop reads a step's drop, which cuts off the target's answer.
func (l *loader) stepDrop(st *Step, v *yaml.Node) {
	if s, ok := l.str(v, "drop"); ok {
		if s != "response" {
			l.errorf(v, "drop must be response (the answer is cut off, so the delivery is redelivered), not %q", s)
		}
		st.Drop = true
	}
}

// stepMessageID reads a step's message_id: the broker's message id the
// event is published under.
func (l *loader) stepMessageID(st *Step, v *yaml.Node) {
	if s, ok := l.str(v, "message_id"); ok {
		if strings.TrimSpace(s) == "" {
			l.errorf(v, "message_id is empty; it is the broker's message id to publish the event under")
		}
		st.MessageID = s
	}
}

// deliverChecks reads a deliver step's expect and checks what depends on
// its other fields, or (in the later checks) on the rest of the file.
func (l *loader) deliverChecks(n *yaml.Node, st *Step, f *stepNodes) {
	if f.expect != nil {
		if st.Concurrent > 0 {
			l.errorf(f.expect, "a concurrent step has one outcome per worker, so it takes no expect; the invariants check it, and a state check can follow it")
		} else if l.targetMode {
			st.Expect = l.answer(f.expect)
		} else {
			st.Expect = l.expectation(f.expect)
		}
	}
	if l.targetMode {
		// The target block may come later in the file: check at the end.
		l.deliverSteps = append(l.deliverSteps, deliverStep{n: n, messageID: f.messageID, st: st})
	}
	if st.Concurrent > 0 && st.Times > 1 {
		l.errorf(n, "a step takes times or concurrent, not both")
	}
	if f.interleave != nil && st.Concurrent == 0 {
		l.errorf(f.interleave, "interleave holds concurrent workers at a fault point, so it needs concurrent: N (2 to %d) on the same step", MaxConcurrent)
	}
	if st.Fail != "" || st.Interleave != "" {
		// The handler block may come later in the file: check at the end.
		l.faultSteps = append(l.faultSteps, st)
	}
	if st.Consumer != "" {
		// The handler block may come later in the file: check at the end.
		l.consumerSteps = append(l.consumerSteps, st)
	}
	if st.Label != "" {
		l.labels[st.Label] = st.Pos
	}
}

var eventFields = []string{"id", "source", "type", "subject", "schema", "time", "headers", "data"}

func (l *loader) event(n *yaml.Node) *Event {
	ev := &Event{Pos: l.pos(n)}
	env := map[string]any{}
	var idSeen bool
	fields := make([]field, 0, len(eventFields))
	for _, name := range eventFields {
		name := name
		fields = append(fields, field{name, func(k, v *yaml.Node) {
			switch name {
			case "id":
				idSeen = true
				l.eventID(ev, env, v)
			case "headers":
				l.eventHeaders(env, v)
			case "data":
				l.eventData(env, v)
			default:
				if s, ok := l.str(v, name); ok {
					env[name] = s
					switch name {
					case "source":
						ev.Source = s
					case "schema":
						ev.Schema = s
					}
				}
			}
		}})
	}
	if !l.mapping(n, "deliver", fields) {
		return nil
	}
	if !idSeen {
		l.errorf(n, "the event has no id; every delivered event needs id: (the message id the broker would carry)")
	}
	ev.Envelope, _ = json.Marshal(env) // keys are strings, values are marshalable
	return ev
}

// eventID reads an event's id into the event and its envelope: not empty,
// and no longer than a store keeps.
func (l *loader) eventID(ev *Event, env map[string]any, v *yaml.Node) {
	if s, ok := l.str(v, "event id"); ok {
		if s == "" {
			l.errorf(v, "event id must not be empty")
		} else if len(s) > consumer.MaxIDBytes {
			l.errorf(v, "event id is %d bytes long; ids are limited to %d bytes on every store", len(s), consumer.MaxIDBytes)
		}
		ev.ID = s
		env["id"] = s
	}
}

// eventHeaders reads an event's headers, each a string, into its envelope.
func (l *loader) eventHeaders(env map[string]any, v *yaml.Node) {
	hs := map[string]string{}
	l.mappingAny(v, "headers", func(k, v *yaml.Node) {
		if s, ok := l.str(v, "header "+k.Value); ok {
			hs[k.Value] = s
		}
	})
	env["headers"] = hs
}

// eventData reads an event's data into its envelope as JSON, as long as
// the data of the file's events stays within its bound.
func (l *loader) eventData(env map[string]any, v *yaml.Node) {
	if l.dataSize > maxFileDataSize {
		return // said once, where the file went over
	}
	raw, err := toJSON(v)
	if err != nil {
		l.errorf(v, "data cannot be written as JSON: %v", err)
		return
	}
	if l.dataSize += len(raw); l.dataSize > maxFileDataSize {
		l.errorf(v, "the events' data up to here expands to more than %d MiB in all (aliases included); a scenario file is written by hand", maxFileDataSize>>20)
		return
	}
	env["data"] = json.RawMessage(raw)
}

var outcomeWords = words(consumer.Outcomes)

func (l *loader) outcome(n *yaml.Node) consumer.Outcome {
	s, ok := l.str(n, "outcome")
	if !ok {
		return ""
	}
	for _, o := range consumer.Outcomes {
		if string(o) == s {
			return o
		}
	}
	l.errorf(n, "unknown outcome %q; expected %s", s, oneOf(outcomeWords))
	return ""
}

func (l *loader) expectation(n *yaml.Node) *Expectation {
	e := &Expectation{Pos: l.pos(n)}
	if n.Kind == yaml.ScalarNode {
		e.Outcome = l.outcome(n)
		return e
	}
	l.mapping(n, "a delivery's expect", []field{
		{"outcome", func(k, v *yaml.Node) { e.Outcome = l.outcome(v) }},
		{"error", func(k, v *yaml.Node) { e.Error, _ = l.str(v, "error") }},
		{"same_effect_as", func(k, v *yaml.Node) {
			s, ok := l.str(v, "same_effect_as")
			if !ok {
				return
			}
			if _, defined := l.labels[s]; !defined {
				l.errorf(v, "same_effect_as names label %q, which is not defined by an earlier step", s)
				return
			}
			e.SameEffectAs = s
		}},
	})
	return e
}

func (l *loader) state(n *yaml.Node, what string) *State {
	st := &State{Pos: l.pos(n)}
	l.mapping(n, what, []field{
		{"rows", func(k, v *yaml.Node) {
			l.mappingAny(v, "rows", func(k, v *yaml.Node) {
				if c, ok := l.integer(v, "rows of "+k.Value, 0, math.MaxInt); ok {
					st.Rows = append(st.Rows, RowCount{Table: k.Value, N: int64(c), Pos: l.pos(k)})
				}
			})
		}},
		{"processed", func(k, v *yaml.Node) { st.Processed = l.eventRefs(v, "processed") }},
		{"not_processed", func(k, v *yaml.Node) { st.NotProcessed = l.eventRefs(v, "not_processed") }},
		{"charges", func(k, v *yaml.Node) {
			if c, ok := l.integer(v, "charges", 0, math.MaxInt); ok {
				st.Charges = &c
				st.ChargesPos = l.pos(k)
			}
		}},
		{"effects", func(k, v *yaml.Node) {
			if !l.targetMode {
				l.errorf(k, "effects counts a target's effect rows by business key; the built-in handler counts rows: {TABLE: N}")
				return
			}
			st.Effects = l.keyCounts(v)
		}},
		{"externals", func(k, v *yaml.Node) {
			if !l.targetMode {
				l.errorf(k, "externals counts the effects a target's stand-ins performed; the built-in handler calls none")
				return
			}
			st.Externals = l.externalCounts(v)
		}},
	})
	l.stateChecks = append(l.stateChecks, st)
	return st
}

func (l *loader) eventRefs(n *yaml.Node, what string) []EventRef {
	if n.Kind != yaml.SequenceNode {
		l.errorf(n, "%s must be a list of event ids, not %s", what, describe(n))
		return nil
	}
	var out []EventRef
	for _, e := range n.Content {
		e = resolve(e)
		ref := EventRef{Pos: l.pos(e)}
		if e.Kind == yaml.MappingNode {
			l.mapping(e, what+" entry", []field{
				{"id", func(k, v *yaml.Node) { ref.ID, _ = l.str(v, "event id") }},
				{"consumer", func(k, v *yaml.Node) { ref.Consumer, _ = l.str(v, "consumer") }},
			})
			if ref.ID == "" {
				l.errorf(e, "%s entry needs an id", what)
				continue
			}
		} else if s, ok := l.str(e, what+" entry"); ok {
			ref.ID = s
		} else {
			continue
		}
		out = append(out, ref)
	}
	return out
}

// validateState checks table names and gateway counts once the handler is known.
func (l *loader) validateState(st *State) {
	if l.s.Target != nil {
		l.validateTargetState(st)
		return
	}
	h := l.s.Handler
	for _, r := range st.Rows {
		if r.Table != handler.MarkerTable && r.Table != h.Effect {
			l.errs = append(l.errs, errorf(r.Pos, "no table %q; expected processed or %s (the handler's effect table)", r.Table, h.Effect))
		}
	}
	if st.Charges != nil && !h.Strategy.CallsOut() {
		l.errs = append(l.errs, errorf(st.ChargesPos, "charges counts the payment gateway's charges, and only strategy external-key calls one (this handler is %s)", h.Strategy))
	}
}

// faultPoint reads the name of a fault point.
func (l *loader) faultPoint(n *yaml.Node, what string) consumer.FaultPoint {
	s, ok := l.str(n, what)
	if !ok {
		return ""
	}
	if p, ok := consumer.ParseFaultPoint(s); ok {
		return p
	}
	l.errorf(n, "unknown fault point %q in %s; expected %s", s, what, oneOf(words(consumer.FaultPoints)))
	return ""
}

// interleave reads `interleave: POINT` or `interleave: {at: POINT, release: together|in-order}`.
func (l *loader) interleave(st *Step, n *yaml.Node) {
	if n.Kind != yaml.MappingNode {
		st.Interleave = l.faultPoint(n, "interleave")
		return
	}
	var at *yaml.Node
	l.mapping(n, "interleave", []field{
		{"at", func(k, v *yaml.Node) { at = v; st.Interleave = l.faultPoint(v, "interleave at") }},
		{"release", func(k, v *yaml.Node) {
			s, ok := l.str(v, "release")
			switch {
			case !ok:
			case s == "together":
			case s == "in-order":
				st.InOrder = true
			default:
				l.errorf(v, "unknown release %q; expected together (all held workers at once) or in-order (one at a time, in worker order)", s)
			}
		}},
	})
	if at == nil {
		l.errorf(n, "interleave needs at: the fault point to hold the workers at")
	}
}
