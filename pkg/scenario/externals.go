package scenario

import (
	"fmt"
	"math"
	"regexp"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/redeliver/redeliver/pkg/broker"
	"github.com/redeliver/redeliver/pkg/template"
	"go.yaml.in/yaml/v3"
)

// External is a service the consumer under test calls, which redeliver
// stands in for (externals:): a payment provider over HTTP, a mail server
// over SMTP. The stand-in listens on a free port of 127.0.0.1, handed to
// the consumer as ${REDELIVER_<NAME>_URL} (HTTP) or ${REDELIVER_<NAME>_ADDR}
// (SMTP), records every call, and the check judges them.
type External struct {
	Name string
	Pos  Pos
	// HTTP is set for an HTTP provider; SMTP for a mail server;
	// Publish for what the consumer publishes downstream, which
	// redeliver subscribes to.
	HTTP    *ExternalHTTP
	SMTP    bool
	Publish *ExternalPublish
	// EffectKey says what one business effect is, over the call: a
	// request's {body.orderId}, {headers.idempotency-key}, {path}; a
	// mail's {to}, {subject}, {from}.
	EffectKey template.Template
	// Required: every event the consumer acked must have made an effect
	// there (external-lost).
	Required bool
}

// ExternalHTTP is how an HTTP stand-in answers.
type ExternalHTTP struct {
	// IdempotencyHeader is the header the provider dedupes by, as the
	// IETF Idempotency-Key draft describes ("" dedupes nothing).
	IdempotencyHeader string
	Status            int
	Body              string // {seq} is the number of effects so far
	Latency           time.Duration
	// FailAfterEffect is the uncertain failure: the effect is performed,
	// then the answer is lost (timeout) or an error (500), for the first
	// FailTimes effects.
	FailAfterEffect string
	FailTimes       int
}

// ExternalPublish is where the consumer publishes: a NATS subject, a
// RabbitMQ queue or a Kafka topic. Each message is an effect, unless it
// repeats the id of one already seen for its effect key (a downstream
// dedupes that).
type ExternalPublish struct {
	NATS, Subject string
	AMQP, Queue   string
	Kafka         []string
	Topic         string
}

// Var is the environment variable the consumer finds the stand-in at; a
// subscription to what it publishes has none.
func (e *External) Var() string {
	if e.Publish != nil {
		return ""
	}
	return externalVar(e.Name, e.SMTP)
}

func externalVar(name string, smtp bool) string {
	v := "REDELIVER_" + strings.ToUpper(strings.ReplaceAll(name, "-", "_"))
	if smtp {
		return v + "_ADDR"
	}
	return v + "_URL"
}

// callsOut reports whether the file declares an HTTP external: its calls
// are boundaries of crash: statements, with the effects proxy or
// without it.
func (s *Scenario) callsOut() bool {
	for _, e := range s.Externals {
		if e.HTTP != nil {
			return true
		}
	}
	return false
}

// ExternalByName is the file's external of that name, or nil.
func (s *Scenario) ExternalByName(name string) *External {
	for _, e := range s.Externals {
		if e.Name == name {
			return e
		}
	}
	return nil
}

// ExternalCount expects an external to have performed N effects under a
// business key (expect: {externals: {payments: {O-1: 1}}}).
type ExternalCount struct {
	External string
	Key      string
	N        int64
	Pos      Pos
}

var externalName = regexp.MustCompile(`^[A-Za-z][A-Za-z0-9_-]*$`)

// externalRef is a ${REDELIVER_…_URL|ADDR} a command or env entry uses.
var externalRef = regexp.MustCompile(`^REDELIVER_[A-Z0-9_]+_(URL|ADDR)$`)

// httpMethods are the methods a crash at an external call may name.
var httpMethods = map[string]bool{"GET": true, "POST": true, "PUT": true, "PATCH": true, "DELETE": true}

// declaredVars are the variables the externals under root would be at,
// both endings for each name: the strings of target, read before the
// externals may be, keep those for the stand-ins to fill in, and expand
// any other from the environment.
func declaredVars(root *yaml.Node) map[string]bool {
	out := map[string]bool{}
	if root.Kind != yaml.MappingNode {
		return out
	}
	for i := 0; i+1 < len(root.Content); i += 2 {
		if root.Content[i].Value != "externals" || resolve(root.Content[i+1]).Kind != yaml.MappingNode {
			continue
		}
		ext := resolve(root.Content[i+1])
		for j := 0; j+1 < len(ext.Content); j += 2 {
			if name := ext.Content[j].Value; externalName.MatchString(name) {
				out[externalVar(name, false)], out[externalVar(name, true)] = true, true
			}
		}
	}
	return out
}

// externals reads the externals: mapping.
func (l *loader) externals(n *yaml.Node) {
	vars := map[string]string{}
	l.mappingAny(n, "externals", func(k, v *yaml.Node) {
		if !externalName.MatchString(k.Value) {
			l.errorf(k, "external %q: a name has letters, digits, _ and - and starts with a letter (it names the variable REDELIVER_<NAME>_URL)", k.Value)
			return
		}
		e := l.external(k, v)
		if other, ok := vars[e.Var()]; ok && e.Var() != "" {
			l.errorf(k, "externals %s and %s would both be ${%s}; rename one", other, k.Value, e.Var())
			return
		}
		vars[e.Var()] = e.Name
		l.s.Externals = append(l.s.Externals, e)
	})
}

// external reads one external: its one kind, its effect key, whether it
// is required, and the faults of an HTTP one.
func (l *loader) external(k, v *yaml.Node) *External {
	e := &External{Name: k.Value, Pos: l.pos(k)}
	var channels []*yaml.Node
	var fail *yaml.Node
	keySeen := false
	l.mapping(v, "external "+k.Value, []field{
		{"http", func(k2, v2 *yaml.Node) { channels = append(channels, k2); e.HTTP = l.externalHTTP(v2, k.Value) }},
		{"smtp", func(k2, v2 *yaml.Node) {
			channels = append(channels, k2)
			e.SMTP = true
			if v2.Kind != yaml.MappingNode || len(v2.Content) > 0 {
				l.errorf(v2, "external %s: smtp takes no settings yet; write smtp: {}", k.Value)
			}
		}},
		{"nats", func(k2, v2 *yaml.Node) {
			channels = append(channels, k2)
			e.Publish = l.publishNATS(v2, k.Value)
		}},
		{"amqp", func(k2, v2 *yaml.Node) {
			channels = append(channels, k2)
			e.Publish = l.publishAMQP(v2, k.Value)
		}},
		{"kafka", func(k2, v2 *yaml.Node) {
			channels = append(channels, k2)
			e.Publish = l.publishKafka(v2, k.Value)
		}},
		{"effect_key", func(k2, v2 *yaml.Node) {
			keySeen = true
			e.EffectKey = l.tmpl(v2, "effect_key")
			if s, ok := l.str(v2, "effect_key"); ok && strings.TrimSpace(s) == "" {
				l.errorf(v2, "external %s: effect_key is empty; it says what one business effect is, such as \"{body.orderId}\"", k.Value)
			}
		}},
		{"required", func(k2, v2 *yaml.Node) { e.Required = l.boolean(v2, "required") }},
		{"fail", func(k2, v2 *yaml.Node) { fail = v2 }},
	})
	l.oneKind(k, v, channels)
	if keySeen {
		l.checkEffectKey(e)
	} else {
		l.errorf(k, "external %s needs effect_key: what one business effect is there, such as \"{body.orderId}\" (a request) or \"{to}|{subject}\" (a mail)", k.Value)
	}
	if fail != nil {
		if e.HTTP == nil {
			l.errorf(fail, "external %s: fail loses the answer of an HTTP call after its effect; an smtp external has none", k.Value)
		} else {
			l.externalFail(fail, e)
		}
	}
	return e
}

// oneKind says what is wrong when an external names no kind, or two
// (channels are the kind keys it has).
func (l *loader) oneKind(k, v *yaml.Node, channels []*yaml.Node) {
	switch len(channels) {
	case 0:
		if unknownField(v, "http", "smtp", "nats", "amqp", "kafka", "effect_key", "required", "fail") {
			// The unknown field is said already: a kind misspelt (smpt)
			// needs no second sentence.
			return
		}
		l.errorf(k, "external %s needs http: {…} (a provider called over HTTP), smtp: {} (a mail server), or nats, amqp or kafka: {…} (where the consumer publishes)", k.Value)
	case 1:
	default:
		l.errorf(channels[1], "external %s has two kinds; choose one of http, smtp, nats, amqp and kafka", k.Value)
	}
}

// effectKeyFields are the placeholders an effect key may use, by the
// external's kind: names alone, and roots a path goes under (body.orderId).
var effectKeyFields = map[string]struct{ names, roots []string }{
	"http":    {[]string{"method", "path", "body"}, []string{"body", "headers", "query"}},
	"smtp":    {[]string{"from", "to", "subject", "body"}, []string{"headers"}},
	"publish": {[]string{"subject", "id", "body", "data"}, []string{"body", "data", "headers"}},
}

// checkEffectKey refuses an effect key placeholder the external's calls
// cannot fill: it would expand empty for every call, and no call could be
// judged.
func (l *loader) checkEffectKey(e *External) {
	kind := "http"
	switch {
	case e.SMTP:
		kind = "smtp"
	case e.Publish != nil:
		kind = "publish"
	case e.HTTP == nil:
		return
	}
	f := effectKeyFields[kind]
	for _, name := range e.EffectKey.Fields() {
		root, _, path := strings.Cut(name, ".")
		if contains(f.names, name) || path && contains(f.roots, root) {
			continue
		}
		var allowed []string
		for _, n := range f.names {
			allowed = append(allowed, "{"+n+"}")
		}
		for _, r := range f.roots {
			allowed = append(allowed, "{"+r+".…}")
		}
		l.errs = append(l.errs, errorf(e.Pos, "external %s: effect_key placeholder {%s} names nothing in its calls; expected %s", e.Name, name, strings.Join(allowed, ", ")))
	}
}

// externalHTTP reads an external's http: {idempotency, respond, latency}.
func (l *loader) externalHTTP(n *yaml.Node, name string) *ExternalHTTP {
	h := &ExternalHTTP{Status: 200}
	l.mapping(n, "external "+name+" http", []field{
		{"idempotency", func(k, v *yaml.Node) {
			l.mapping(v, "idempotency", []field{
				{"header", func(k, v *yaml.Node) {
					s, ok := l.str(v, "idempotency header")
					if !ok {
						return
					}
					if !headerName.MatchString(s) {
						l.errorf(v, "idempotency header %q is not an HTTP header name (letters, digits and !#$%%&'*+.^_`|~-, no spaces or colons), such as Idempotency-Key", s)
						return
					}
					h.IdempotencyHeader = s
				}},
			})
			if h.IdempotencyHeader == "" && v.Kind == yaml.MappingNode && len(v.Content) == 0 {
				l.errorf(v, "idempotency needs header: the header the provider dedupes by, such as Idempotency-Key")
			}
		}},
		{"respond", func(k, v *yaml.Node) {
			l.mapping(v, "respond", []field{
				{"status", func(k, v *yaml.Node) {
					if s, ok := l.integer(v, "respond status", 200, 299); ok {
						h.Status = s
					}
				}},
				{"body", func(k, v *yaml.Node) { h.Body, _ = l.str(v, "respond body") }},
			})
		}},
		{"latency", func(k, v *yaml.Node) { h.Latency = l.delay(v, "latency") }},
	})
	return h
}

// publishNATS reads nats: {url, subject}.
func (l *loader) publishNATS(n *yaml.Node, name string) *ExternalPublish {
	p := &ExternalPublish{}
	l.mapping(n, "external "+name+" nats", []field{
		{"url", func(k, v *yaml.Node) { p.NATS = l.brokerURL(v, []string{"nats", "tls"}, "nats://127.0.0.1:4222") }},
		{"subject", func(k, v *yaml.Node) { p.Subject = l.nonEmpty(v, "subject") }},
	})
	if n.Kind == yaml.MappingNode && (p.NATS == "" || p.Subject == "") {
		l.errorf(n, "external %s nats needs url and subject: the server and the subject the consumer publishes to (wildcards allowed)", name)
	}
	return p
}

// publishAMQP reads amqp: {url, queue}.
func (l *loader) publishAMQP(n *yaml.Node, name string) *ExternalPublish {
	p := &ExternalPublish{}
	l.mapping(n, "external "+name+" amqp", []field{
		{"url", func(k, v *yaml.Node) {
			p.AMQP = l.brokerURL(v, []string{"amqp", "amqps"}, "amqp://guest:guest@127.0.0.1:5672/")
		}},
		{"queue", func(k, v *yaml.Node) { p.Queue = l.nonEmpty(v, "queue") }},
	})
	if n.Kind == yaml.MappingNode && (p.AMQP == "" || p.Queue == "") {
		l.errorf(n, "external %s amqp needs url and queue: the server and the queue what the consumer publishes is routed to (redeliver reads it, taking every message)", name)
	}
	return p
}

// publishKafka reads kafka: {brokers, topic}.
func (l *loader) publishKafka(n *yaml.Node, name string) *ExternalPublish {
	p := &ExternalPublish{}
	l.mapping(n, "external "+name+" kafka", []field{
		{"brokers", func(k, v *yaml.Node) { p.Kafka = l.kafkaBrokers(v) }},
		{"topic", func(k, v *yaml.Node) {
			p.Topic = l.nonEmpty(v, "topic")
			if p.Topic != "" && !broker.TopicName(p.Topic) {
				l.errorf(v, "topic %q is not a Kafka topic name: at most 249 of the letters, digits, '.', '_' and '-', and not . or ..", p.Topic)
			}
		}},
	})
	if n.Kind == yaml.MappingNode && (len(p.Kafka) == 0 || p.Topic == "") {
		l.errorf(n, "external %s kafka needs brokers and topic: where the consumer produces what it publishes", name)
	}
	return p
}

// externalFail reads fail: {after_effect: timeout | 500, times: N}.
func (l *loader) externalFail(n *yaml.Node, e *External) {
	seen := false
	l.mapping(n, "fail", []field{
		{"after_effect", func(k, v *yaml.Node) {
			seen = true
			s, ok := l.str(v, "after_effect")
			if !ok {
				return
			}
			if s != "timeout" && s != "500" {
				l.errorf(v, "after_effect must be timeout (the effect is performed and the answer lost) or 500 (performed, then an error), not %q", s)
				return
			}
			e.HTTP.FailAfterEffect = s
		}},
		{"times", func(k, v *yaml.Node) {
			if t, ok := l.integer(v, "times", 1, math.MaxInt32); ok {
				e.HTTP.FailTimes = t
			}
		}},
	})
	if !seen {
		l.errorf(n, "fail needs after_effect: timeout or 500 (the effect is performed, then its answer is lost or an error)")
	}
	if e.HTTP.FailTimes == 0 {
		e.HTTP.FailTimes = 1
	}
}

// externalCounts reads expect externals: {NAME: {KEY: N}}.
func (l *loader) externalCounts(n *yaml.Node) []ExternalCount {
	var out []ExternalCount
	l.mappingAny(n, "externals", func(k, v *yaml.Node) {
		l.mappingAny(v, "externals "+k.Value, func(k2, v2 *yaml.Node) {
			if c, ok := l.integer(v2, "effects of "+k2.Value+" at "+k.Value, 0, math.MaxInt); ok {
				out = append(out, ExternalCount{External: k.Value, Key: k2.Value, N: int64(c), Pos: l.pos(k2)})
			}
		})
	})
	return out
}

// externalCall reads a crash's "METHOD /path" words as a call to an HTTP
// external; ok is false for anything else (a statement's words).
func externalCall(words string) (method, path string, ok bool) {
	m, p, found := strings.Cut(strings.TrimSpace(words), " ")
	if !found || !httpMethods[strings.ToUpper(m)] || !strings.HasPrefix(strings.TrimSpace(p), "/") {
		return "", "", false
	}
	return strings.ToUpper(m), strings.TrimSpace(p), true
}

// validateExternals checks what the externals need of the whole file:
// a target to call them, every ${REDELIVER_…} a command uses declared,
// every count and crash naming one.
func (l *loader) validateExternals(externalsKey *yaml.Node) {
	s := l.s
	if externalsKey != nil && s.Target == nil && !l.targetMode {
		l.errorf(externalsKey, "externals are stand-ins for the services a consumer under test calls; they need a target (the built-in handler calls none)")
	}
	declared := map[string]bool{}
	for _, e := range s.Externals {
		if e.HTTP == nil && !e.SMTP && e.Publish == nil {
			// Its kind is missing or misspelt, which is said already:
			// either of its variables may be the one meant.
			declared[externalVar(e.Name, false)], declared[externalVar(e.Name, true)] = true, true
		} else if e.Var() != "" {
			declared[e.Var()] = true
		}
	}
	names := make([]string, 0, len(l.externalRefs))
	for name := range l.externalRefs {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		if declared[name] {
			continue
		}
		if other := otherKind(s.Externals, name); other != nil {
			l.errorf(l.externalRefs[name], "${%s} names no external: %s is an %s external, at ${%s}", name, other.Name, kindOf(other), other.Var())
			continue
		}
		l.errorf(l.externalRefs[name], "${%s} names no external: declare it under externals (%s)", name, externalHint(name))
	}
	for _, st := range l.stateChecks {
		for _, c := range st.Externals {
			if s.ExternalByName(c.External) == nil {
				l.errs = append(l.errs, errorf(c.Pos, "expect externals: %s is not an external of this file (externals: %s)", c.External, externalList(s.Externals)))
			}
		}
	}
	for _, st := range l.crashSteps {
		c := st.Crash
		if c.Kind != CrashExternal {
			continue
		}
		found := false
		for _, e := range s.Externals {
			found = found || e.HTTP != nil
		}
		if !found {
			l.errs = append(l.errs, errorf(c.Pos, "crash: %s names an HTTP call, and this file declares no http external for the consumer to call (externals: NAME: {http: {}, effect_key: …})", c))
		}
	}
}

// otherKind is the external whose variable is v but for its ending
// (_URL for _ADDR, or the other way), or nil.
func otherKind(es []*External, v string) *External {
	base := strings.TrimSuffix(strings.TrimSuffix(v, "_URL"), "_ADDR")
	for _, e := range es {
		if w := e.Var(); w != "" && w != v && strings.TrimSuffix(strings.TrimSuffix(w, "_URL"), "_ADDR") == base {
			return e
		}
	}
	return nil
}

func kindOf(e *External) string {
	if e.SMTP {
		return "smtp"
	}
	return "http"
}

func externalHint(v string) string {
	name := strings.ToLower(strings.TrimPrefix(v, "REDELIVER_"))
	if n, ok := strings.CutSuffix(name, "_addr"); ok {
		return fmt.Sprintf("%s: {smtp: {}, effect_key: …}", n)
	}
	return fmt.Sprintf("%s: {http: {}, effect_key: …}", strings.TrimSuffix(name, "_url"))
}

func externalList(es []*External) string {
	if len(es) == 0 {
		return "none"
	}
	var names []string
	for _, e := range es {
		names = append(names, e.Name)
	}
	return strings.Join(names, ", ")
}

// unknownField says whether mapping n has a key that is none of names.
func unknownField(n *yaml.Node, names ...string) bool {
	if n == nil || n.Kind != yaml.MappingNode {
		return false
	}
	for i := 0; i+1 < len(n.Content); i += 2 {
		if !slices.Contains(names, n.Content[i].Value) {
			return true
		}
	}
	return false
}
