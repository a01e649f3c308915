package scenario

import (
	"encoding/base64"
	"fmt"
	"net/url"
	"os"
	"regexp"
	"strings"
	"time"

	"github.com/redeliver/redeliver/pkg/broker"
	"github.com/redeliver/redeliver/pkg/redact"
	"go.yaml.in/yaml/v3"
)

// Target is the user's own consumer, reached the way production reaches
// it: over HTTP or as a process per delivery, optionally started (and
// crashed, and restarted) by redeliver.
type Target struct {
	Pos  Pos
	HTTP *HTTPTarget
	Exec *ExecTarget
	// Broker is the broker the deliveries are published into, for the
	// consumer to read (a *NATSTarget, *AMQPTarget or *KafkaTarget):
	// the broker, not redeliver, then decides when a check ends.
	Broker broker.Target
	Start  *Start
}

// HTTP modes: how an event is put on the wire.
const (
	ModeStructured       = "structured"        // CloudEvents structured JSON
	ModeBinary           = "binary"            // CloudEvents binary: ce-* headers, data as the body
	ModeRaw              = "raw"               // data as the body, the event id in a header
	ModeStandardWebhooks = "standard-webhooks" // signed webhook-id / webhook-timestamp / webhook-signature
)

// HTTPModes lists the HTTP modes.
var HTTPModes = []string{ModeStructured, ModeBinary, ModeRaw, ModeStandardWebhooks}

// Default timeouts of target mode.
const (
	DefaultTimeout      = 5 * time.Second
	DefaultReadyTimeout = 10 * time.Second
)

// HTTPTarget posts one request per delivery.
type HTTPTarget struct {
	Pos      Pos
	URL      string
	Method   string
	Headers  map[string]string
	Timeout  time.Duration
	Mode     string
	IDHeader string // raw mode: the header carrying the event id
	// SecretEnv names the environment variable holding the signing secret
	// (standard-webhooks); Secret is its value when the file was loaded.
	SecretEnv string
	Secret    string
}

// ExecTarget runs one process per delivery, the event on its stdin.
type ExecTarget struct {
	Pos     Pos
	Command []string
	// Shown is Command as messages show it: a ${VAR} whose name holds a
	// secret (redact.SecretName) is there as xxxxx.
	Shown   []string
	Env     map[string]string
	Dir     string
	Timeout time.Duration
}

// Answers are the words a target-mode delivery expect may name.
var Answers = []string{"acked", "conflict", "rejected", "unacked"}

// Channel names the way the target is reached: http, exec, nats, amqp or
// kafka.
func (t *Target) Channel() string {
	switch {
	case t.HTTP != nil:
		return "http"
	case t.Broker != nil:
		return t.Broker.Kind()
	}
	return "exec"
}

// Timeout is how long one delivery may take.
func (t *Target) Timeout() time.Duration {
	switch {
	case t.HTTP != nil:
		return t.HTTP.Timeout
	case t.Exec != nil:
		return t.Exec.Timeout
	}
	return DefaultTimeout
}

// brokerTargets are the brokers a target may publish into, by their key
// in the file, each with what it names (for a message) and the parser of
// its fields into its type, a broker.Target; the broker's adapter
// registers the same key with pkg/broker to open it.
var brokerTargets = []struct {
	key, what string
	parse     func(l *loader, v *yaml.Node) broker.Target
}{
	{"nats", "a JetStream stream", func(l *loader, v *yaml.Node) broker.Target { return l.natsTarget(v) }},
	{"amqp", "a RabbitMQ queue", func(l *loader, v *yaml.Node) broker.Target { return l.amqpTarget(v) }},
	{"kafka", "a Kafka topic and consumer group", func(l *loader, v *yaml.Node) broker.Target { return l.kafkaTarget(v) }},
}

func (l *loader) target(n *yaml.Node) {
	t := &Target{Pos: l.pos(n)}
	l.s.Target = t
	var channels []*yaml.Node
	keys := []string{"http", "exec"}
	expected := []string{"http: (a URL the consumer listens on)", "exec: (a command run once per delivery)"}
	fields := []field{
		{"http", func(k, v *yaml.Node) { channels = append(channels, k); t.HTTP = l.httpTarget(v) }},
		{"exec", func(k, v *yaml.Node) { channels = append(channels, k); t.Exec = l.execTarget(v) }},
	}
	for _, b := range brokerTargets {
		keys = append(keys, b.key)
		expected = append(expected, b.key+": ("+b.what+")")
		fields = append(fields, field{b.key, func(k, v *yaml.Node) { channels = append(channels, k); t.Broker = b.parse(l, v) }})
	}
	fields = append(fields, field{"start", func(k, v *yaml.Node) { t.Start = l.start(v) }})
	l.mapping(n, "the target", fields)
	switch {
	case n.Kind != yaml.MappingNode:
	case len(channels) == 0:
		l.errorf(n, "the target names no channel; expected %s", orList(expected))
	case len(channels) > 1:
		l.errorf(channels[1], "the target has two channels; choose one of %s", orList(keys))
	}
}

// orList joins xs as "a, b or c".
func orList(xs []string) string {
	if len(xs) < 2 {
		return strings.Join(xs, "")
	}
	return strings.Join(xs[:len(xs)-1], ", ") + " or " + xs[len(xs)-1]
}

func (l *loader) httpTarget(n *yaml.Node) *HTTPTarget {
	h := &HTTPTarget{Pos: l.pos(n), Method: "POST", Timeout: DefaultTimeout, Mode: ModeStructured}
	var urlSeen bool
	var idHeaderNode, secretNode, modeNode *yaml.Node
	l.mapping(n, "target http", []field{
		{"url", func(k, v *yaml.Node) { urlSeen = true; l.httpURL(h, v) }},
		{"method", func(k, v *yaml.Node) { l.httpMethod(h, v) }},
		{"headers", func(k, v *yaml.Node) {
			h.Headers = l.xmap(v, "header")
			l.httpHeaders(v, h.Headers)
		}},
		{"timeout", func(k, v *yaml.Node) { h.Timeout = l.timeout(v, "timeout") }},
		{"mode", func(k, v *yaml.Node) { modeNode = v; l.wireMode(h, v) }},
		{"id_header", func(k, v *yaml.Node) {
			idHeaderNode = k
			if s, ok := l.xstr(v, "id_header"); ok {
				if !headerName.MatchString(s) {
					l.errorf(v, "id_header must be a header name such as Idempotency-Key, not %q", s)
				}
				h.IDHeader = s
			}
		}},
		{"secret_env", func(k, v *yaml.Node) { secretNode = k; l.secretEnv(h, v) }},
	})
	if n.Kind != yaml.MappingNode {
		return h
	}
	if !urlSeen {
		l.errorf(n, "target http needs url: the address the consumer listens on, such as http://127.0.0.1:8080/events")
	}
	l.httpMode(n, h, idHeaderNode, secretNode, modeNode)
	return h
}

// httpURL reads the URL an HTTP target listens on: http:// or https://,
// with a host.
func (l *loader) httpURL(h *HTTPTarget, v *yaml.Node) {
	if s, ok := l.xstr(v, "url"); ok {
		u, err := url.Parse(s)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			l.errorf(v, "url must be an http:// or https:// URL such as http://127.0.0.1:8080/events, not %s", redact.URL(s))
		}
		h.URL = s
	}
}

// httpMethod reads the method a delivery is sent with, one that carries a
// body.
func (l *loader) httpMethod(h *HTTPTarget, v *yaml.Node) {
	if s, ok := l.xstr(v, "method"); ok {
		switch strings.ToUpper(s) {
		case "POST", "PUT", "PATCH":
			h.Method = strings.ToUpper(s)
		default:
			l.errorf(v, "method must be POST, PUT or PATCH (a delivery carries a body), not %q", s)
		}
	}
}

// wireMode reads an HTTP target's mode, how an event is put on the wire:
// one of HTTPModes.
func (l *loader) wireMode(h *HTTPTarget, v *yaml.Node) {
	if s, ok := l.xstr(v, "mode"); ok {
		for _, m := range HTTPModes {
			if m == s {
				h.Mode = s
				return
			}
		}
		l.errorf(v, "unknown mode %q; expected %s", s, oneOf(HTTPModes))
	}
}

// secretEnv reads secret_env: the environment variable holding a
// standard-webhooks signing secret, which must be set to one.
func (l *loader) secretEnv(h *HTTPTarget, v *yaml.Node) {
	s, ok := l.str(v, "secret_env")
	if !ok {
		return
	}
	if !envName.MatchString(s) {
		l.errorf(v, "secret_env must name an environment variable such as WEBHOOK_SECRET, not %q", s)
		return
	}
	h.SecretEnv = s
	secret, set := os.LookupEnv(s)
	if !set || secret == "" {
		l.errorf(v, "the environment variable %s (secret_env) is not set; it holds the webhook signing secret", s)
		return
	}
	if err := CheckSecret(secret); err != nil {
		l.errorf(v, "the secret in %s: %v", s, err)
		return
	}
	h.Secret = secret
	l.secret(secret)
}

// httpMode checks the fields that belong to one mode against the mode
// an HTTP target has (idHeaderNode, secretNode and modeNode are where
// id_header, secret_env and mode are written, or nil), and gives mode
// raw its default id header.
func (l *loader) httpMode(n *yaml.Node, h *HTTPTarget, idHeaderNode, secretNode, modeNode *yaml.Node) {
	if h.Mode == ModeRaw && h.IDHeader == "" {
		h.IDHeader = "Idempotency-Key"
	}
	if idHeaderNode != nil && h.Mode != ModeRaw {
		l.errorf(idHeaderNode, "id_header is for mode raw, where the body is only the data; mode %s carries the id itself", h.Mode)
	}
	if h.Mode == ModeStandardWebhooks && secretNode == nil {
		at := n
		if modeNode != nil {
			at = modeNode
		}
		l.errorf(at, "mode standard-webhooks signs every delivery: add secret_env: NAME, the environment variable holding the secret")
	}
	if secretNode != nil && h.Mode != ModeStandardWebhooks {
		l.errorf(secretNode, "secret_env is for mode standard-webhooks, which signs deliveries; mode %s does not", h.Mode)
	}
}

var headerName = regexp.MustCompile("^[!#$%&'*+.^_`|~0-9A-Za-z-]+$")

func (l *loader) execTarget(n *yaml.Node) *ExecTarget {
	e := &ExecTarget{Pos: l.pos(n), Timeout: DefaultTimeout}
	var cmdSeen bool
	l.mapping(n, "target exec", []field{
		{"command", func(k, v *yaml.Node) { cmdSeen = true; e.Command, e.Shown = l.xstrs(v, "command"), shown(v) }},
		{"env", func(k, v *yaml.Node) { e.Env = l.xmap(v, "env") }},
		{"dir", func(k, v *yaml.Node) { e.Dir = l.dir(v, "exec dir") }},
		{"timeout", func(k, v *yaml.Node) { e.Timeout = l.timeout(v, "timeout") }},
	})
	if n.Kind == yaml.MappingNode && !cmdSeen {
		l.errorf(n, "target exec needs command: the program and its arguments, run once per delivery with the event on stdin")
	}
	return e
}

// answer reads a target-mode delivery expect: a word or {status: N} / {answer: WORD}.
func (l *loader) answer(n *yaml.Node) *Expectation {
	e := &Expectation{Pos: l.pos(n)}
	word := func(v *yaml.Node) {
		s, ok := l.str(v, "answer")
		if !ok {
			return
		}
		for _, a := range Answers {
			if a == s {
				e.Answer = s
				return
			}
		}
		l.errorf(v, "unknown answer %q; a consumer's answer is %s, or {status: N}", s, oneOf(Answers))
	}
	if n.Kind == yaml.ScalarNode {
		word(n)
		return e
	}
	l.mapping(n, "a delivery's expect", []field{
		{"answer", func(k, v *yaml.Node) { word(v) }},
		{"status", func(k, v *yaml.Node) { e.Status, _ = l.integer(v, "status", 100, 599) }},
	})
	if e.Status != 0 && l.s.Target != nil && l.s.Target.Exec != nil {
		l.errorf(n, "status is an HTTP status, and this target is exec; expect acked, conflict, rejected or unacked")
	}
	return e
}

// hasKey reports whether a mapping node has the key.
func hasKey(n *yaml.Node, key string) bool {
	n = resolve(n)
	if n.Kind != yaml.MappingNode {
		return false
	}
	for i := 0; i+1 < len(n.Content); i += 2 {
		if n.Content[i].Value == key {
			return true
		}
	}
	return false
}

// validateTarget checks what depends on the whole file in target mode.
func (l *loader) validateTarget(root *yaml.Node, handlerNode, effectsNode *yaml.Node) {
	s := l.s
	if s.Target == nil {
		if effectsNode != nil {
			l.errorf(effectsNode, "effects describes a target's database; add target: (the consumer under test) or remove effects")
		}
		return
	}
	if st := s.Target.Start; st != nil && st.Instances > 1 && s.Target.Broker == nil {
		l.errs = append(l.errs, errorf(st.InstancesPos, "instances: %d needs a broker target (nats, amqp or kafka), where the copies share one queue; %s copies would each need their own address", st.Instances, s.Target.Channel()))
	}
	if handlerNode != nil {
		l.errorf(handlerNode, "a scenario tests either the built-in handler or your own target, not both: remove handler or target")
	}
	if s.Effects == nil {
		l.errorf(root, "a target needs effects: the database the consumer writes to, its effect table and key_of")
	}
}

// CheckSecret checks a standard-webhooks secret: whsec_ followed by
// base64, or any other non-empty string used as the key bytes.
func CheckSecret(secret string) error {
	_, err := SecretKey(secret)
	return err
}

// SecretKey is the HMAC key of a standard-webhooks secret: the
// base64-decoded part after whsec_, or else the secret's bytes.
func SecretKey(secret string) ([]byte, error) {
	if secret == "" {
		return nil, fmt.Errorf("it is empty")
	}
	rest, ok := strings.CutPrefix(secret, "whsec_")
	if !ok {
		return []byte(secret), nil
	}
	key, err := base64.StdEncoding.DecodeString(rest)
	if err != nil || len(key) == 0 {
		return nil, fmt.Errorf("the part after whsec_ must be base64, as Standard Webhooks secrets are")
	}
	return key, nil
}

// targetStep checks a step of a target-mode file.
func (l *loader) targetStep(n *yaml.Node, st *Step, handlerOnly map[string]bool) {
	for _, f := range []string{"fail", "consumer", "interleave"} {
		if handlerOnly[f] {
			l.errorf(n, "%s is for the built-in handler; a target is tested with faults from outside: times, concurrent, drop, crash, delay", f)
		}
	}
	if st.Advance > 0 {
		l.errorf(n, "advance moves the built-in handler's clock; a target keeps its own, so there is nothing to advance")
	}
	if st.Crash != nil {
		l.crashSteps = append(l.crashSteps, st)
		if st.Crash.Statement() && st.Times > 1 {
			l.errorf(n, "a step that crashes at a statement delivers once: write times on a step of its own")
		}
		if st.Concurrent > 0 {
			l.errorf(n, "a step takes crash or concurrent, not both: one kill ends every delivery in flight, so write the concurrent step and the crash step apart")
		}
		if st.Drop {
			l.errorf(n, "a step takes crash or drop, not both: each loses the answer its own way")
		}
	}
}

// validateTargetState checks a state check of a target-mode file.
func (l *loader) validateTargetState(st *State) {
	for _, r := range st.Rows {
		if !identifier.MatchString(r.Table) {
			l.errs = append(l.errs, errorf(r.Pos, "rows counts a table of the consumer's database: %q must be a table name of letters, digits and underscores", r.Table))
		}
	}
	if len(st.Processed)+len(st.NotProcessed) > 0 {
		l.errs = append(l.errs, errorf(st.Pos, "processed and not_processed read the built-in handler's markers; for a target, count effects: {KEY: N} or rows: {TABLE: N}"))
	}
	if st.Charges != nil {
		l.errs = append(l.errs, errorf(st.ChargesPos, "charges counts the built-in payment gateway's charges; for a target, count rows: {TABLE: N} of your provider table"))
	}
}

// httpHeaders checks the headers of a mapping that go on an HTTP
// delivery: a name HTTP cannot carry, or a value with a control
// character, would fail every delivery before it left, and the consumer
// would be blamed for never answering. values holds them as expanded,
// or is nil to read them off the nodes. A value is never quoted: it may
// be a secret.
func (l *loader) httpHeaders(n *yaml.Node, values map[string]string) {
	if n == nil || n.Kind != yaml.MappingNode {
		return
	}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], resolve(n.Content[i+1])
		if !headerName.MatchString(k.Value) {
			l.errorf(k, "header name %q is not one HTTP can carry: letters, digits and !#$%%&'*+-.^_`|~, without spaces or colons", k.Value)
			continue
		}
		val, ok := values[k.Value]
		if values == nil && v.Kind == yaml.ScalarNode {
			val, ok = v.Value, true
		}
		if ok && !headerValue(val) {
			l.errorf(v, "the value of header %s holds a control character (a newline, a NUL), which HTTP cannot carry", k.Value)
		}
	}
}

// headerValue reports whether s can be an HTTP field value: no control
// character but a tab.
func headerValue(s string) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < ' ' && c != '\t' || c == 0x7f {
			return false
		}
	}
	return true
}
