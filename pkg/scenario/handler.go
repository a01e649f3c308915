package scenario

import (
	"regexp"
	"strings"

	"github.com/redeliver/redeliver/pkg/consumer"
	"github.com/redeliver/redeliver/pkg/handler"
	"go.yaml.in/yaml/v3"
)

// The scenario's top level and its handler block.

func (l *loader) scenario(doc *yaml.Node) *Scenario {
	root := resolve(doc)
	s := &Scenario{File: l.file}
	l.s = s
	s.Handler.Config = handler.Config{Strategy: handler.DefaultStrategy, Consumer: handler.DefaultConsumer, Effect: handler.DefaultEffect}
	s.Handler.Pos = l.pos(root)
	var versionSeen bool
	var checksNode, handlerNode, effectsNode, externalsNode *yaml.Node
	l.targetMode = hasKey(root, "target")
	// A file with a target and neither checks nor a handler is what
	// replay --target reads, and is checked as one.
	if l.targetMode && !hasKey(root, "checks") && !hasKey(root, "handler") {
		l.targetFile = true
	}
	s.TargetFile = l.targetFile
	l.externalVars = declaredVars(root)
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
		{"externals", func(k, v *yaml.Node) { externalsNode = k; l.externals(v) }},
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
	l.validateFile(root, handlerNode, effectsNode, externalsNode)
	return s
}

// validateFile checks, once the whole file is read, what one part of it
// says against the others; handlerNode, effectsNode and externalsNode are
// where those blocks are written, or nil.
func (l *loader) validateFile(root, handlerNode, effectsNode, externalsNode *yaml.Node) {
	l.validateTarget(root, handlerNode, effectsNode)
	l.validateExternals(externalsNode)
	for _, st := range l.stateChecks {
		l.validateState(st)
	}
	l.validateCrashSteps()
	l.validateProxy()
	l.validateFaultSteps()
	l.validateDeliverSteps()
	l.validateConsumerSteps()
}

// validateCrashSteps checks each crash against the rest of the file:
// whom it can kill, and where it can land.
func (l *loader) validateCrashSteps() {
	s := l.s
	for _, st := range l.crashSteps {
		if s.Target != nil && s.Target.Start == nil && s.Target.Exec == nil && s.Target.Broker == nil {
			l.errs = append(l.errs, errorf(st.Crash.Pos, "crash kills the consumer redeliver started, and this target has no start: add target start (command and ready) so it can be killed and restarted (an exec target's own process is killed without one)"))
		}
		if m, p, ok := strings.Cut(st.Crash.Words, " "); st.Crash.Kind == CrashStatement && ok && httpMethods[strings.ToUpper(m)] && s.callsOut() && !strings.HasPrefix(p, "/") {
			l.errs = append(l.errs, errorf(st.Crash.Pos, "crash: %s reads as a statement's words; a call to an external is METHOD /path, its path with its leading /: %s /%s", st.Crash, strings.ToUpper(m), strings.TrimSpace(p)))
			continue
		}
		if s.Target != nil && st.Crash.Statement() && (s.Effects == nil || !s.Effects.Proxy) && !(st.Crash.Kind == CrashStatements && s.callsOut()) {
			l.errs = append(l.errs, errorf(st.Crash.Pos, "crash: %s lands at the consumer's SQL statements, which redeliver sees only through its proxy: add proxy: true to effects, and point the consumer at ${%s}", st.Crash, DBURLVar))
		}
	}
}

// validateProxy checks that the database proxy a file names is one it
// can have: asked for, and relaying a consumer redeliver starts.
func (l *loader) validateProxy() {
	s := l.s
	if l.dbURLNode != nil && s.Target != nil && (s.Effects == nil || !s.Effects.Proxy) {
		l.errorf(l.dbURLNode, "${%s} is the database address through redeliver's proxy; add proxy: true to effects", l.dbURLVar)
	}
	if s.Effects != nil && s.Effects.Proxy && s.Target != nil && s.Target.Start == nil && s.Target.Exec == nil {
		l.errs = append(l.errs, errorf(s.Effects.ProxyPos, "proxy: true relays the connections of a consumer redeliver starts, and this target has no start: add target start with ${%s} in its env", DBURLVar))
	}
}

// validateFaultSteps checks that the handler's strategy reaches each
// fault point a step fails or holds at.
func (l *loader) validateFaultSteps() {
	s := l.s
	if s.Target == nil {
		for _, st := range l.faultSteps {
			for _, p := range []struct {
				point consumer.FaultPoint
				what  string
			}{{st.Fail, "fail"}, {st.Interleave, "interleave"}} {
				if p.point != "" && !s.Handler.Strategy.Reaches(p.point) {
					l.errs = append(l.errs, errorf(st.Pos, "%s: %s is never reached by strategy %s (%s), so nothing would be injected there", p.what, p.point, s.Handler.Strategy, unreachable(p.point)))
				}
			}
		}
	}
}

// validateConsumerSteps checks that a step naming its consumer runs a
// consumer-scoped handler, the strategy that keeps several consumers.
func (l *loader) validateConsumerSteps() {
	s := l.s
	for _, st := range l.consumerSteps {
		if s.Handler.Strategy != handler.ConsumerScoped {
			l.errs = append(l.errs, errorf(st.Pos, "consumer on a step needs strategy consumer-scoped; a %s handler is one consumer (set handler.consumer)", s.Handler.Strategy))
		}
	}
}

func (l *loader) handler(n *yaml.Node) {
	h := &l.s.Handler
	h.Pos = l.pos(n)
	var keyNode, externalNode, retentionNode, strategyNode *yaml.Node
	l.mapping(n, "the handler", []field{
		{"strategy", func(k, v *yaml.Node) { strategyNode = v; l.strategy(h, v) }},
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

// strategy reads the handler's strategy, one of those it knows.
func (l *loader) strategy(h *Handler, v *yaml.Node) {
	s, ok := l.str(v, "strategy")
	if !ok {
		return
	}
	if known, ok := handler.ParseStrategy(s); ok {
		h.Strategy = known
		return
	}
	l.errorf(v, "unknown strategy %q; expected %s", s, oneOf(words(handler.Strategies)))
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

func validTable(s string) bool { return handler.ValidEffectTable(s) }

// unreachable says why a strategy never reaches a fault point.
func unreachable(p consumer.FaultPoint) string {
	switch p {
	case consumer.AfterExternal:
		return "only external-key calls out"
	case consumer.AfterCheck:
		return "it looks no marker up"
	}
	return "it writes no marker"
}
