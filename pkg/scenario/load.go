package scenario

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/redeliver/redeliver/pkg/handler"
	"github.com/redeliver/redeliver/pkg/invariant"
	"github.com/redeliver/redeliver/pkg/template"
	"gopkg.in/yaml.v3"
)

// MaxConcurrent is the most workers one step may start at once.
const MaxConcurrent = 64

// MaxTimes is the most deliveries one step may repeat.
const MaxTimes = 100000

// maxFileSize bounds what the loader reads: a scenario is written by hand.
const maxFileSize = 4 << 20

// LoadFile reads and validates one scenario file. A file with mistakes
// returns Errors listing all of them.
func LoadFile(path string) (*Scenario, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	src, err := io.ReadAll(io.LimitReader(f, maxFileSize+1))
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", path, err)
	}
	if len(src) > maxFileSize {
		return nil, Errors{errorf(Pos{File: path}, "the file is larger than %d MiB; a scenario file is written by hand", maxFileSize>>20)}
	}
	return Load(path, src)
}

var yamlLine = regexp.MustCompile(`^yaml: line (\d+): (.*)$`)

// Load parses and validates a scenario from src; file names it in errors.
func Load(file string, src []byte) (*Scenario, error) { return load(file, src, false) }

// LoadTarget parses and validates a target file: version, target and
// effects, without checks (redeliver replay --target).
func LoadTarget(file string, src []byte) (*Scenario, error) { return load(file, src, true) }

func load(file string, src []byte, targetFile bool) (*Scenario, error) {
	var doc yaml.Node
	dec := yaml.NewDecoder(bytes.NewReader(src))
	if err := dec.Decode(&doc); err != nil {
		if errors.Is(err, io.EOF) {
			return nil, Errors{errorf(Pos{File: file, Line: 1, Col: 1}, "the file is empty; expected a scenario starting with \"version: 1\"")}
		}
		return nil, Errors{syntaxError(file, err)}
	}
	var extra yaml.Node
	if err := dec.Decode(&extra); err == nil {
		return nil, Errors{errorf(pos(file, &extra), "a second YAML document starts here; a scenario file holds one document")}
	} else if !errors.Is(err, io.EOF) {
		return nil, Errors{syntaxError(file, err)}
	}
	l := &loader{file: file, labels: map[string]Pos{}, targetFile: targetFile}
	s := l.scenario(&doc)
	if len(l.errs) > 0 {
		l.errs.Sort()
		return nil, l.errs
	}
	return s, nil
}

func syntaxError(file string, err error) *Error {
	msg := strings.TrimPrefix(err.Error(), "yaml: ")
	line := 0
	if m := yamlLine.FindStringSubmatch(err.Error()); m != nil {
		line, _ = strconv.Atoi(m[1])
		msg = m[2]
	}
	return errorf(Pos{File: file, Line: line}, "invalid YAML: %s", msg)
}

func pos(file string, n *yaml.Node) Pos { return Pos{File: file, Line: n.Line, Col: n.Column} }

type loader struct {
	file   string
	errs   Errors
	labels map[string]Pos // labels defined so far, in file order
	s      *Scenario
	// stateChecks are validated once the handler block is known.
	stateChecks []*State
	// consumerSteps name a consumer, which only consumer-scoped handlers allow.
	consumerSteps []*Step
	faultSteps    []*Step // steps with fail or interleave, checked against the strategy at the end
	// targetMode is set when the file names a target: deliver steps then
	// expect a consumer's answers, not the built-in handler's outcomes.
	targetMode bool
	// crashSteps kill the started consumer, which needs target start.
	crashSteps []*Step
	// targetFile is set for a --target file: target and effects, no checks.
	targetFile bool
}

func (l *loader) errorf(n *yaml.Node, format string, args ...any) {
	l.errs = append(l.errs, errorf(pos(l.file, n), format, args...))
}

func (l *loader) pos(n *yaml.Node) Pos { return pos(l.file, n) }

// field is one allowed key of a mapping and what to do with its value.
type field struct {
	name string
	do   func(key, val *yaml.Node)
}

// mapping walks a mapping node: every key must be one of fields, once.
func (l *loader) mapping(n *yaml.Node, what string, fields []field) bool {
	n = resolve(n)
	if n.Kind != yaml.MappingNode {
		l.errorf(n, "%s must be a mapping, not %s", what, describe(n))
		return false
	}
	seen := map[string]bool{}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], n.Content[i+1]
		var f *field
		for j := range fields {
			if k.Kind == yaml.ScalarNode && fields[j].name == k.Value {
				f = &fields[j]
			}
		}
		if f == nil {
			names := make([]string, len(fields))
			for j := range fields {
				names[j] = fields[j].name
			}
			l.errorf(k, "unknown field %q in %s; expected %s", k.Value, what, oneOf(names))
			continue
		}
		if seen[k.Value] {
			l.errorf(k, "field %q appears twice in %s", k.Value, what)
			continue
		}
		seen[k.Value] = true
		f.do(k, resolve(v))
	}
	return true
}

func resolve(n *yaml.Node) *yaml.Node {
	for n.Kind == yaml.AliasNode && n.Alias != nil {
		n = n.Alias
	}
	if n.Kind == yaml.DocumentNode && len(n.Content) == 1 {
		return resolve(n.Content[0])
	}
	return n
}

func describe(n *yaml.Node) string {
	switch n.Kind {
	case yaml.MappingNode:
		return "a mapping"
	case yaml.SequenceNode:
		return "a list"
	case yaml.ScalarNode:
		switch n.ShortTag() {
		case "!!null":
			return "empty"
		case "!!int":
			return "the number " + n.Value
		case "!!float":
			return "the number " + n.Value
		case "!!bool":
			return "the boolean " + n.Value
		}
		return strconv.Quote(n.Value)
	}
	return "something else"
}

func oneOf(names []string) string {
	switch len(names) {
	case 0:
		return "nothing"
	case 1:
		return names[0]
	}
	return "one of " + strings.Join(names, ", ")
}

// str reads a string scalar. Numbers are accepted where a string is
// expected (an id written as 42 is the id "42"), lists and mappings are not.
func (l *loader) str(n *yaml.Node, what string) (string, bool) {
	if n.Kind != yaml.ScalarNode || n.ShortTag() == "!!null" {
		l.errorf(n, "%s must be a string, not %s", what, describe(n))
		return "", false
	}
	return n.Value, true
}

func (l *loader) integer(n *yaml.Node, what string, min, max int) (int, bool) {
	if n.Kind != yaml.ScalarNode || n.ShortTag() != "!!int" {
		l.errorf(n, "%s must be a whole number, not %s", what, describe(n))
		return 0, false
	}
	v, err := strconv.ParseInt(strings.ReplaceAll(n.Value, "_", ""), 0, 64)
	if err != nil || v < int64(min) || v > int64(max) {
		if max == math.MaxInt {
			l.errorf(n, "%s must be at least %d, not %s", what, min, n.Value)
		} else {
			l.errorf(n, "%s must be between %d and %d, not %s", what, min, max, n.Value)
		}
		return 0, false
	}
	return int(v), true
}

func (l *loader) tmpl(n *yaml.Node, what string) template.Template {
	s, ok := l.str(n, what)
	if !ok {
		return template.Template{}
	}
	t, err := template.Parse(s)
	if err != nil {
		l.errorf(n, "%s is not a valid template: %v", what, err)
	}
	return t
}

// ParseDuration reads a duration as Go writes it ("90s", "25h", "1h30m"),
// or a whole number of days ("7d").
func ParseDuration(s string) (time.Duration, error) {
	if d, ok := strings.CutSuffix(s, "d"); ok {
		n, err := strconv.Atoi(d)
		if err != nil || n < 0 || n > 100000 {
			return 0, fmt.Errorf("%q is not a duration", s)
		}
		return time.Duration(n) * 24 * time.Hour, nil
	}
	v, err := time.ParseDuration(s)
	if err != nil {
		return 0, fmt.Errorf("%q is not a duration", s)
	}
	return v, nil
}

func (l *loader) duration(n *yaml.Node, what string) (time.Duration, bool) {
	s, ok := l.str(n, what)
	if !ok {
		return 0, false
	}
	d, err := ParseDuration(s)
	if err != nil || d <= 0 {
		l.errorf(n, "%s must be a positive duration such as 30s, 25h or 7d, not %q", what, s)
		return 0, false
	}
	return d, true
}

func (l *loader) scenario(doc *yaml.Node) *Scenario {
	root := resolve(doc)
	s := &Scenario{File: l.file}
	l.s = s
	s.Handler.Config = handler.Config{Strategy: handler.EventID, Consumer: "default", Effect: "effects"}
	s.Handler.Pos = l.pos(root)
	var versionSeen bool
	var checksNode, handlerNode, effectsNode *yaml.Node
	l.targetMode = hasKey(root, "target")
	ok := l.mapping(root, "a scenario", []field{
		{"version", func(k, v *yaml.Node) {
			versionSeen = true
			if v.Kind != yaml.ScalarNode || v.ShortTag() != "!!int" || v.Value != "1" {
				l.errorf(v, "version must be 1, not %s; this redeliver reads scenario format version 1", describe(v))
			}
		}},
		{"name", func(k, v *yaml.Node) { s.Name, _ = l.str(v, "name") }},
		{"handler", func(k, v *yaml.Node) { handlerNode = k; l.handler(v) }},
		{"target", func(k, v *yaml.Node) { l.target(v) }},
		{"effects", func(k, v *yaml.Node) { effectsNode = k; l.effects(v) }},
		{"checks", func(k, v *yaml.Node) { checksNode = v }},
	})
	if !ok {
		return s
	}
	if !versionSeen {
		l.errorf(root, "version is missing; a scenario file starts with \"version: 1\"")
	}
	switch {
	case l.targetFile && checksNode != nil:
		l.errorf(checksNode, "a --target file holds version, target and effects; checks belong in a scenario file (redeliver run)")
	case l.targetFile && l.s.Target == nil:
		l.errorf(root, "target is missing; a --target file names the consumer under test (target:) and its database (effects:)")
	case l.targetFile:
	case checksNode == nil:
		l.errorf(root, "checks is missing; a scenario needs at least one check")
	default:
		l.checks(checksNode)
	}
	if s.Name == "" {
		base := l.file[strings.LastIndexAny(l.file, `/\`)+1:]
		s.Name = strings.TrimSuffix(strings.TrimSuffix(base, ".yaml"), ".yml")
	}
	l.validateTarget(root, handlerNode, effectsNode)
	for _, st := range l.stateChecks {
		l.validateState(st)
	}
	for _, st := range l.crashSteps {
		if s.Target != nil && s.Target.Start == nil && s.Target.Exec == nil {
			l.errs = append(l.errs, errorf(st.Crash.Pos, "crash kills the consumer redeliver started, and this target has no start: add target start (command and ready) so it can be killed and restarted (an exec target's own process is killed without one)"))
		}
	}
	if s.Target == nil {
		for _, st := range l.faultSteps {
			for _, p := range []struct {
				point handler.FaultPoint
				what  string
			}{{st.Fail, "fail"}, {st.Interleave, "interleave"}} {
				if p.point != "" && !s.Handler.Strategy.Reaches(p.point) {
					l.errs = append(l.errs, errorf(st.Pos, "%s: %s is never reached by strategy %s (%s), so nothing would be injected there", p.what, p.point, s.Handler.Strategy, unreachable(p.point)))
				}
			}
		}
	}
	for _, st := range l.consumerSteps {
		if s.Handler.Strategy != handler.ConsumerScoped {
			l.errs = append(l.errs, errorf(st.Pos, "consumer on a step needs strategy consumer-scoped; a %s handler is one consumer (set handler.consumer)", s.Handler.Strategy))
		}
	}
	return s
}

func (l *loader) handler(n *yaml.Node) {
	h := &l.s.Handler
	h.Pos = l.pos(n)
	var keyNode, externalNode, retentionNode, strategyNode *yaml.Node
	l.mapping(n, "the handler", []field{
		{"strategy", func(k, v *yaml.Node) {
			strategyNode = v
			s, ok := l.str(v, "strategy")
			if !ok {
				return
			}
			for _, known := range handler.Strategies {
				if string(known) == s {
					h.Strategy = known
					return
				}
			}
			l.errorf(v, "unknown strategy %q; expected %s", s, oneOf(words(handler.Strategies)))
		}},
		{"consumer", func(k, v *yaml.Node) {
			if s, ok := l.str(v, "consumer"); ok {
				if s == "" {
					l.errorf(v, "consumer must not be empty")
				}
				h.Consumer = s
			}
		}},
		{"effect", func(k, v *yaml.Node) {
			if s, ok := l.str(v, "effect"); ok {
				if !validTable(s) {
					l.errorf(v, "effect must name a table with letters, digits and underscores (not processed), not %q", s)
				}
				h.Effect = s
			}
		}},
		{"key", func(k, v *yaml.Node) { keyNode = v; h.Key = l.tmpl(v, "key") }},
		{"identity", func(k, v *yaml.Node) { l.identity(v) }},
		{"external", func(k, v *yaml.Node) {
			externalNode = v
			l.mapping(v, "external", []field{
				{"key", func(k, v *yaml.Node) { h.ExternalKey = l.tmpl(v, "external key") }},
				{"amount", func(k, v *yaml.Node) { h.ExternalAmount = l.tmpl(v, "external amount") }},
			})
		}},
		{"retention", func(k, v *yaml.Node) { retentionNode = v; h.Retention, _ = l.duration(v, "retention") }},
	})
	at := n
	if strategyNode != nil {
		at = strategyNode
	}
	if h.Strategy.UsesKey() && h.Key.IsZero() && keyNode == nil {
		l.errorf(at, "strategy %s needs a business key: add key: \"{data.orderId}\" (a template) to the handler", h.Strategy)
	}
	if externalNode != nil && !h.Strategy.CallsOut() {
		l.errorf(externalNode, "external is used only by strategy external-key, which calls a payment gateway; %s does not call out", h.Strategy)
	}
	if h.Strategy.CallsOut() && externalNode == nil {
		l.errorf(at, "strategy external-key needs an external block with the idempotency key and amount templates")
	}
	if retentionNode != nil && !h.Strategy.KeepsMarkers() {
		l.errorf(retentionNode, "retention purges processed markers, and strategy %s keeps none", h.Strategy)
	}
}

func (l *loader) identity(n *yaml.Node) {
	h := &l.s.Handler
	switch n.Kind {
	case yaml.SequenceNode:
		h.Identity = l.paths(n)
	case yaml.MappingNode:
		// Per schema version: {default: [...], v2: [...]}.
		h.IdentityBySchema = map[string][]string{}
		for i := 0; i+1 < len(n.Content); i += 2 {
			k, v := n.Content[i], resolve(n.Content[i+1])
			if v.Kind != yaml.SequenceNode {
				l.errorf(v, "identity for schema %q must be a list of paths, not %s", k.Value, describe(v))
				continue
			}
			if k.Value == "default" {
				h.Identity = l.paths(v)
			} else {
				h.IdentityBySchema[k.Value] = l.paths(v)
			}
		}
	default:
		l.errorf(n, "identity must be a list of paths such as [data.orderId], or a mapping from schema version to such a list, not %s", describe(n))
	}
}

var pathSyntax = regexp.MustCompile(`^[A-Za-z0-9_$@-]+(\.[A-Za-z0-9_$@-]+)*$`)

func (l *loader) paths(n *yaml.Node) []string {
	var out []string
	for _, e := range n.Content {
		e = resolve(e)
		s, ok := l.str(e, "identity path")
		if !ok {
			continue
		}
		if !pathSyntax.MatchString(s) {
			l.errorf(e, "identity path %q must be dot-separated names such as data.orderId", s)
			continue
		}
		out = append(out, s)
	}
	if len(out) == 0 && len(n.Content) == 0 {
		l.errorf(n, "identity must list at least one path; leave it out to compare the whole payload")
	}
	return out
}

func words[T ~string](xs []T) []string {
	out := make([]string, len(xs))
	for i, x := range xs {
		out[i] = string(x)
	}
	return out
}

var tableName = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

func validTable(s string) bool {
	low := strings.ToLower(s)
	return tableName.MatchString(s) && low != "processed" && !strings.HasPrefix(low, "redeliver_") && !strings.HasPrefix(low, "sqlite_") && !strings.HasPrefix(low, "pg_")
}

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
		{"name", func(k, v *yaml.Node) {
			nameSeen = true
			c.Name, _ = l.str(v, "check name")
			if strings.ContainsAny(c.Name, "\n\r") {
				l.errorf(v, "check name must be one line")
			}
		}},
		{"steps", func(k, v *yaml.Node) {
			stepsSeen = true
			if v.Kind != yaml.SequenceNode {
				l.errorf(v, "steps must be a list of steps, not %s", describe(v))
				return
			}
			if len(v.Content) == 0 {
				l.errorf(v, "steps is empty; a check needs at least one step")
			}
			for _, sn := range v.Content {
				if st := l.step(resolve(sn)); st != nil {
					c.Steps = append(c.Steps, st)
				}
			}
		}},
		{"expect", func(k, v *yaml.Node) { c.Expect = l.state(v, "the check's expect") }},
		{"say", func(k, v *yaml.Node) { c.Say = l.tmpl(v, "say"); l.sayFields(v, c.Say) }},
		{"violations", func(k, v *yaml.Node) {
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
		}},
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

var sayCounters = []string{"deliveries", "effects", "duplicates", "conflicts", "failures", "crashes", "violations", "charges", "key_conflicts", "orphan_charges", "uncharged_effects"}

func (l *loader) sayFields(n *yaml.Node, t template.Template) {
	for _, f := range t.Fields() {
		if strings.HasPrefix(f, "rows.") {
			l.stateChecks = append(l.stateChecks, &State{Pos: l.pos(n), Rows: []RowCount{{Table: strings.TrimPrefix(f, "rows."), N: -1, Pos: l.pos(n)}}})
			continue
		}
		known := false
		for _, c := range sayCounters {
			known = known || c == f
		}
		if !known {
			l.errorf(n, "say uses unknown placeholder {%s}; expected {rows.TABLE} or one of %s", f, strings.Join(braced(sayCounters), ", "))
		}
	}
}

func braced(xs []string) []string {
	out := make([]string, len(xs))
	for i, x := range xs {
		out[i] = "{" + x + "}"
	}
	return out
}

func (l *loader) step(n *yaml.Node) *Step {
	st := &Step{Pos: l.pos(n), Times: 1}
	var deliverNode, expectNode, advanceNode, interleaveNode *yaml.Node
	var modifiers []*yaml.Node  // fields that only a deliver step may have
	var targetOnly []*yaml.Node // fields that only a target-mode step may have
	handlerOnly := map[string]bool{}
	ok := l.mapping(n, "a step", []field{
		{"deliver", func(k, v *yaml.Node) { deliverNode = v; st.Event = l.event(v) }},
		{"fail", func(k, v *yaml.Node) {
			modifiers = append(modifiers, k)
			handlerOnly["fail"] = true
			s, ok := l.str(v, "fail")
			if !ok {
				return
			}
			for _, p := range handler.FaultPoints {
				if string(p) == s {
					st.Fail = p
					return
				}
			}
			l.errorf(v, "unknown fault point %q; expected %s", s, oneOf(words(handler.FaultPoints)))
		}},
		{"consumer", func(k, v *yaml.Node) {
			modifiers = append(modifiers, k)
			handlerOnly["consumer"] = true
			if s, ok := l.str(v, "consumer"); ok {
				st.Consumer = s
				if s == "" {
					l.errorf(v, "consumer must not be empty")
				}
			}
		}},
		{"times", func(k, v *yaml.Node) {
			modifiers = append(modifiers, k)
			st.Times, _ = l.integer(v, "times", 1, MaxTimes)
		}},
		{"concurrent", func(k, v *yaml.Node) {
			modifiers = append(modifiers, k)
			st.Concurrent, _ = l.integer(v, "concurrent", 2, MaxConcurrent)
		}},
		{"interleave", func(k, v *yaml.Node) {
			modifiers = append(modifiers, k)
			interleaveNode = k
			handlerOnly["interleave"] = true
			l.interleave(st, v)
		}},
		{"label", func(k, v *yaml.Node) {
			modifiers = append(modifiers, k)
			s, ok := l.str(v, "label")
			if !ok {
				return
			}
			if first, dup := l.labels[s]; dup {
				l.errorf(v, "label %q is already defined at line %d; labels must be unique in a file", s, first.Line)
				return
			}
			st.Label = s
		}},
		{"expect", func(k, v *yaml.Node) { expectNode = v }},
		{"advance", func(k, v *yaml.Node) { advanceNode = v; st.Advance, _ = l.duration(v, "advance") }},
		{"drop", func(k, v *yaml.Node) {
			modifiers = append(modifiers, k)
			targetOnly = append(targetOnly, k)
			if s, ok := l.str(v, "drop"); ok {
				if s != "response" {
					l.errorf(v, "drop must be response (the answer is cut off, so the delivery is redelivered), not %q", s)
				}
				st.Drop = true
			}
		}},
		{"crash", func(k, v *yaml.Node) {
			modifiers = append(modifiers, k)
			targetOnly = append(targetOnly, k)
			st.Crash = l.crash(v)
		}},
		{"delay", func(k, v *yaml.Node) {
			modifiers = append(modifiers, k)
			targetOnly = append(targetOnly, k)
			st.Delay = l.delay(v, "delay")
		}},
	})
	if !ok {
		return nil
	}
	if l.targetMode {
		l.targetStep(n, st, handlerOnly)
	} else {
		for _, k := range targetOnly {
			l.errorf(k, "%s is a fault from outside for a target (your own consumer); the built-in handler takes fail: POINT", k.Value)
		}
	}
	switch {
	case deliverNode != nil && advanceNode != nil:
		l.errorf(advanceNode, "a step either delivers or advances the clock, not both")
		return nil
	case deliverNode != nil:
		st.Kind = Deliver
		if expectNode != nil {
			if st.Concurrent > 0 {
				l.errorf(expectNode, "a concurrent step has one outcome per worker, so it takes no expect; the invariants check it, and a state check can follow it")
			} else if l.targetMode {
				st.Expect = l.answer(expectNode)
			} else {
				st.Expect = l.expectation(expectNode)
			}
		}
		if st.Concurrent > 0 && st.Times > 1 {
			l.errorf(n, "a step takes times or concurrent, not both")
		}
		if interleaveNode != nil && st.Concurrent == 0 {
			l.errorf(interleaveNode, "interleave holds concurrent workers at a fault point, so it needs concurrent: N (2 to %d) on the same step", MaxConcurrent)
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
		return st
	case advanceNode != nil:
		st.Kind = Advance
		if expectNode != nil {
			l.errorf(expectNode, "an advance step cannot have expect; put the state check in a step of its own")
		}
	case expectNode != nil:
		st.Kind = Inspect
		st.State = l.state(expectNode, "a state check")
	default:
		l.errorf(n, "this step does nothing; expected deliver, expect or advance")
		return nil
	}
	for _, m := range modifiers {
		l.errorf(m, "%s belongs to a deliver step", m.Value)
	}
	return st
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
				if s, ok := l.str(v, "event id"); ok {
					if s == "" {
						l.errorf(v, "event id must not be empty")
					}
					ev.ID = s
					env["id"] = s
				}
			case "headers":
				hs := map[string]string{}
				l.mappingAny(v, "headers", func(k, v *yaml.Node) {
					if s, ok := l.str(v, "header "+k.Value); ok {
						hs[k.Value] = s
					}
				})
				env["headers"] = hs
			case "data":
				raw, err := toJSON(v)
				if err != nil {
					l.errorf(v, "data cannot be written as JSON: %v", err)
					return
				}
				env["data"] = json.RawMessage(raw)
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

// mappingAny walks a mapping with free-form string keys.
func (l *loader) mappingAny(n *yaml.Node, what string, do func(k, v *yaml.Node)) {
	if n.Kind != yaml.MappingNode {
		l.errorf(n, "%s must be a mapping, not %s", what, describe(n))
		return
	}
	seen := map[string]bool{}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], resolve(n.Content[i+1])
		if seen[k.Value] {
			l.errorf(k, "%q appears twice in %s", k.Value, what)
			continue
		}
		seen[k.Value] = true
		do(k, v)
	}
}

var outcomeWords = words(handler.Outcomes)

func (l *loader) outcome(n *yaml.Node) handler.Outcome {
	s, ok := l.str(n, "outcome")
	if !ok {
		return ""
	}
	for _, o := range handler.Outcomes {
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
		if r.Table != "processed" && r.Table != h.Effect {
			l.errs = append(l.errs, errorf(r.Pos, "no table %q; expected processed or %s (the handler's effect table)", r.Table, h.Effect))
		}
	}
	if st.Charges != nil && !h.Strategy.CallsOut() {
		l.errs = append(l.errs, errorf(st.ChargesPos, "charges counts the payment gateway's charges, and only strategy external-key calls one (this handler is %s)", h.Strategy))
	}
}

// toJSON writes a YAML value as JSON. Mapping keys become strings; values
// JSON cannot hold (.inf, .nan, binary) are refused.
func toJSON(n *yaml.Node) ([]byte, error) {
	var b bytes.Buffer
	if err := writeJSON(&b, n, 0); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}

// maxDataSize bounds one event's data once aliases are expanded, so that a
// few lines of nested aliases cannot expand into gigabytes.
const maxDataSize = 1 << 20

func writeJSON(b *bytes.Buffer, n *yaml.Node, depth int) error {
	if depth > 100 {
		return errors.New("nested more than 100 levels deep")
	}
	if b.Len() > maxDataSize {
		return fmt.Errorf("it expands to more than %d KiB (aliases included)", maxDataSize>>10)
	}
	n = resolve(n)
	switch n.Kind {
	case yaml.MappingNode:
		b.WriteByte('{')
		seen := map[string]bool{}
		for i := 0; i+1 < len(n.Content); i += 2 {
			k := resolve(n.Content[i])
			if k.Kind != yaml.ScalarNode {
				return fmt.Errorf("line %d: a mapping key must be a plain value", k.Line)
			}
			if seen[k.Value] {
				return fmt.Errorf("line %d: key %q appears twice", k.Line, k.Value)
			}
			seen[k.Value] = true
			if i > 0 {
				b.WriteByte(',')
			}
			kj, _ := json.Marshal(k.Value)
			b.Write(kj)
			b.WriteByte(':')
			if err := writeJSON(b, n.Content[i+1], depth+1); err != nil {
				return err
			}
		}
		b.WriteByte('}')
	case yaml.SequenceNode:
		b.WriteByte('[')
		for i, e := range n.Content {
			if i > 0 {
				b.WriteByte(',')
			}
			if err := writeJSON(b, e, depth+1); err != nil {
				return err
			}
		}
		b.WriteByte(']')
	case yaml.ScalarNode:
		switch n.ShortTag() {
		case "!!null":
			b.WriteString("null")
		case "!!bool":
			var v bool
			if err := n.Decode(&v); err != nil {
				return err
			}
			b.WriteString(strconv.FormatBool(v))
		case "!!int":
			var v any
			if err := n.Decode(&v); err != nil {
				return err
			}
			b.WriteString(fmt.Sprint(v))
		case "!!float":
			var v float64
			if err := n.Decode(&v); err != nil {
				return err
			}
			if math.IsInf(v, 0) || math.IsNaN(v) {
				return fmt.Errorf("line %d: %s is not a JSON number", n.Line, n.Value)
			}
			if isJSONNumber(n.Value) {
				b.WriteString(n.Value) // keep the spelling; identity canonicalises it
			} else {
				b.WriteString(strconv.FormatFloat(v, 'g', -1, 64))
			}
		case "!!str":
			s, _ := json.Marshal(n.Value)
			b.Write(s)
		default:
			return fmt.Errorf("line %d: a %s value cannot be written as JSON", n.Line, n.ShortTag())
		}
	default:
		return fmt.Errorf("line %d: unsupported YAML node", n.Line)
	}
	return nil
}

var jsonNumber = regexp.MustCompile(`^-?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][-+]?[0-9]+)?$`)

func isJSONNumber(s string) bool { return jsonNumber.MatchString(s) }

// faultPoint reads the name of a fault point.
func (l *loader) faultPoint(n *yaml.Node, what string) handler.FaultPoint {
	s, ok := l.str(n, what)
	if !ok {
		return ""
	}
	for _, p := range handler.FaultPoints {
		if string(p) == s {
			return p
		}
	}
	l.errorf(n, "unknown fault point %q in %s; expected %s", s, what, oneOf(words(handler.FaultPoints)))
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

// unreachable says why a strategy never reaches a fault point.
func unreachable(p handler.FaultPoint) string {
	switch p {
	case handler.AfterExternal:
		return "only external-key calls out"
	case handler.AfterCheck:
		return "it looks no marker up"
	}
	return "it writes no marker"
}
