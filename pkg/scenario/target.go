package scenario

import (
	"encoding/base64"
	"errors"
	"fmt"
	"math"
	"net/url"
	"os"
	"regexp"
	"strings"
	"time"

	"github.com/redeliver/redeliver/pkg/redact"
	"github.com/redeliver/redeliver/pkg/template"
	"go.yaml.in/yaml/v3"
)

// Target is the user's own consumer, reached the way production reaches
// it: over HTTP or as a process per delivery, optionally started (and
// crashed, and restarted) by redeliver.
type Target struct {
	Pos   Pos
	HTTP  *HTTPTarget
	Exec  *ExecTarget
	NATS  *NATSTarget
	AMQP  *AMQPTarget
	Kafka *KafkaTarget
	Start *Start
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

// Start is a long-running consumer redeliver starts, crashes and restarts.
type Start struct {
	Pos     Pos
	Command []string
	// Shown is Command as messages show it (see ExecTarget.Shown).
	Shown []string
	Env   map[string]string
	Dir   string
	// Ready is one of: an HTTP URL answering 2xx, a tcp://HOST:PORT
	// accepting connections, or a line on stdout containing ReadyLine.
	ReadyURL     string
	ReadyTCP     string
	ReadyLine    string
	ReadyTimeout time.Duration
	// Instances is how many copies of the consumer run at once (default
	// 1); more than one needs a broker target, which shares the work out.
	Instances    int
	InstancesPos Pos
}

// Effects is where the consumer's business effects land, and how a
// delivery names the effect it should make.
type Effects struct {
	Pos   Pos
	DB    string
	DBPos Pos
	Reset []string
	// ResetPos is where reset is written; AllowReset are the hosts
	// besides this machine and one-label service hosts that reset may
	// empty (the effects package holds reset to them).
	ResetPos   Pos
	AllowReset []string
	Table      string // table + Key (+ Event), or Query
	Key        string
	Event      string
	Query      string
	QueryPos   Pos
	KeyOf      template.Template
	// IgnoreColumns are columns a consumer may change on a duplicate or a
	// conflict (such as updated_at): rows are compared without them.
	IgnoreColumns []string
	// Proxy: redeliver relays the consumer's PostgreSQL connections
	// (through ${REDELIVER_DB_URL}) and sees every statement.
	Proxy    bool
	ProxyPos Pos
}

// Crash kinds.
const (
	CrashAfter  = "after"  // kill that long after the delivery was sent
	CrashRandom = "random" // kill after a random delay within the timeout
	CrashSweep  = "sweep"  // kill at 0, 1, 2, 4 … ms until the delivery completes first
	// CrashStatement kills at one statement boundary the effects proxy
	// holds: before the statement Words begin reaches the database, or
	// after its answer (AfterStatement), before the consumer sees it.
	CrashStatement = "statement"
	// CrashStatements kills at every statement boundary of the delivery,
	// one fresh trial each.
	CrashStatements = "statements"
	// CrashExternal kills the consumer at a call to an external's
	// stand-in: {before|after: "POST /v1/charges"}.
	CrashExternal = "external"
)

// DBURLVar is the variable a started consumer's command and env use for
// its database address through the effects proxy.
const DBURLVar = "REDELIVER_DB_URL"

// JDBCURLVar is the same address as a PgJDBC URL
// (jdbc:postgresql://HOST:PORT/DB?user=…&password=…&currentSchema=…), for
// a consumer on the JVM, whose driver cannot read a libpq URL.
const JDBCURLVar = "REDELIVER_JDBC_URL"

// Crash kills the started consumer during a delivery.
type Crash struct {
	Pos   Pos
	Kind  string
	After time.Duration
	// A statement crash: the statement's leading words, and whether the
	// kill comes after its answer rather than before it runs. A crash at
	// an external call (CrashExternal) is after when the call's effect
	// is performed and its answer withheld.
	Words          string
	AfterStatement bool
	// Method and Path name the external call of a CrashExternal.
	Method, Path string
}

// Statement reports whether the crash lands at statement boundaries,
// which the effects proxy holds.
func (c *Crash) Statement() bool {
	return c != nil && (c.Kind == CrashStatement || c.Kind == CrashStatements)
}

// Answers are the words a target-mode delivery expect may name.
var Answers = []string{"acked", "conflict", "rejected", "unacked"}

// Channel names the way the target is reached: http, exec, nats, amqp or
// kafka.
func (t *Target) Channel() string {
	switch {
	case t.HTTP != nil:
		return "http"
	case t.NATS != nil:
		return "nats"
	case t.AMQP != nil:
		return "amqp"
	case t.Kafka != nil:
		return "kafka"
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

var envRef = regexp.MustCompile(`\$\{([^}]*)\}`)
var envName = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

// ExpandEnv replaces ${VAR} and ${VAR:-default} with values from lookup.
// An unset VAR without a default is an error naming it.
func ExpandEnv(s string, lookup func(string) (string, bool)) (string, error) {
	var err error
	out := envRef.ReplaceAllStringFunc(s, func(m string) string {
		inner := m[2 : len(m)-1]
		name, def, hasDef := strings.Cut(inner, ":-")
		if !envName.MatchString(name) {
			if err == nil {
				err = fmt.Errorf("${%s} is not a variable reference; write ${NAME} or ${NAME:-default}", inner)
			}
			return m
		}
		v, ok := lookup(name)
		if hasDef && (!ok || v == "") {
			return def
		}
		if !ok {
			if err == nil {
				err = fmt.Errorf("the environment variable %s is not set (write ${%s:-default} for a default)", name, name)
			}
			return m
		}
		return v
	})
	return out, err
}

// xstr reads a string and expands environment variables in it.
func (l *loader) xstr(n *yaml.Node, what string) (string, bool) {
	s, ok := l.str(n, what)
	if !ok {
		return "", false
	}
	v, err := ExpandEnv(s, func(name string) (string, bool) {
		if name == DBURLVar || name == JDBCURLVar {
			// Known only once the proxy listens: the consumer's start
			// fills it in.
			if l.dbURLNode == nil {
				l.dbURLNode = n
				l.dbURLVar = name
			}
			return "${" + name + "}", true
		}
		v, ok := os.LookupEnv(name)
		if l.externalVars[name] || !ok && externalRef.MatchString(name) {
			// An external's stand-in, known once it listens; or one
			// the file should declare (validateExternals says so). A
			// variable of that form the environment sets, and no
			// external declares, is the environment's.
			if l.externalRefs == nil {
				l.externalRefs = map[string]*yaml.Node{}
			}
			if l.externalRefs[name] == nil {
				l.externalRefs[name] = n
			}
			return "${" + name + "}", true
		}
		if ok && redact.SecretName(name) {
			l.secret(v)
		}
		return v, ok
	})
	if err != nil {
		l.errorf(n, "%s: %v", what, err)
		return "", false
	}
	l.secret(redact.Found(v)...)
	if p := Placeholder(v); p != "" {
		l.errorf(n, "%s is still the placeholder %s: replace it with your own value%s", what, p, placeholderVar(s))
		return "", false
	}
	return v, true
}

// placeholderRef is a placeholder redeliver init writes where only the
// user knows the value: "<fill in: what goes here>".
var placeholderRef = regexp.MustCompile(`<fill in:[^>]*>`)

// Placeholder returns the first "<fill in: …>" placeholder in s, or "".
func Placeholder(s string) string { return placeholderRef.FindString(s) }

// placeholderVar says which variable a placeholder is the default of,
// when it is one: ", or set NAME".
func placeholderVar(raw string) string {
	for _, m := range envRef.FindAllStringSubmatch(raw, -1) {
		if name, def, ok := strings.Cut(m[1], ":-"); ok && Placeholder(def) != "" && envName.MatchString(name) {
			return ", or set " + name
		}
	}
	return ""
}

func (l *loader) xstrs(n *yaml.Node, what string) []string {
	if n.Kind != yaml.SequenceNode {
		l.errorf(n, "%s must be a list of strings such as [bin/consumer, --listen, \"127.0.0.1:8080\"], not %s", what, describe(n))
		return nil
	}
	var out []string
	for _, e := range n.Content {
		if s, ok := l.xstr(resolve(e), what+" entry"); ok {
			out = append(out, s)
		}
	}
	if len(n.Content) == 0 {
		l.errorf(n, "%s is empty; it needs at least the program to run", what)
	} else if len(out) > 0 && out[0] == "" {
		l.errorf(n, "%s names no program: its first entry is empty", what)
	}
	return out
}

// secret records values of the configuration that are secrets, for
// every output to mask.
func (l *loader) secret(values ...string) {
	for _, v := range values {
		if v != "" && l.s != nil {
			l.s.Secrets = append(l.s.Secrets, v)
		}
	}
}

// shown expands a command's entries as messages show them: a variable
// whose name holds a secret expands to xxxxx, whatever its value. (The
// mistakes in them are xstrs's to report.)
func shown(n *yaml.Node) []string {
	if n.Kind != yaml.SequenceNode {
		return nil
	}
	lookup := func(name string) (string, bool) {
		v, ok := os.LookupEnv(name)
		if ok && v != "" && redact.SecretName(name) {
			return redact.Mask, true
		}
		return v, ok
	}
	var out []string
	for _, e := range n.Content {
		v, _ := ExpandEnv(resolve(e).Value, lookup)
		out = append(out, v)
	}
	return out
}

func (l *loader) xmap(n *yaml.Node, what string) map[string]string {
	out := map[string]string{}
	l.mappingAny(n, what, func(k, v *yaml.Node) {
		if s, ok := l.xstr(v, what+" "+k.Value); ok {
			if redact.SecretName(k.Value) || strings.EqualFold(k.Value, "Authorization") {
				l.secret(s)
			}
			out[k.Value] = s
		}
	})
	return out
}

// dir reads the directory a consumer runs in, which must exist: a
// relative one resolves against the current directory.
func (l *loader) dir(n *yaml.Node, what string) string {
	d, ok := l.xstr(n, what)
	if !ok || d == "" {
		return d
	}
	st, err := os.Stat(d)
	switch {
	case err != nil && os.IsNotExist(err):
		l.errorf(n, "%s %q does not exist (a relative dir resolves against the current directory)", what, d)
	case err != nil:
		l.errorf(n, "%s %q cannot be used: %v", what, d, errors.Unwrap(err))
	case !st.IsDir():
		l.errorf(n, "%s %q is a file; expected the directory the consumer runs in", what, d)
	}
	return d
}

// timeout reads a positive duration such as 2s.
func (l *loader) timeout(n *yaml.Node, what string) time.Duration {
	s, ok := l.xstr(n, what)
	if !ok {
		return 0
	}
	d, err := time.ParseDuration(s)
	if err != nil || d <= 0 {
		l.errorf(n, "%s must be a positive duration such as 500ms or 5s, not %q", what, s)
		return 0
	}
	return d
}

// delay reads a duration that may be zero, such as 0ms or 5ms.
func (l *loader) delay(n *yaml.Node, what string) time.Duration {
	s, ok := l.str(n, what)
	if !ok {
		return 0
	}
	d, err := time.ParseDuration(s)
	if err != nil || d < 0 || d > time.Hour {
		l.errorf(n, "%s must be a duration from 0ms to 1h such as 5ms, not %q", what, s)
		return 0
	}
	return d
}

func (l *loader) target(n *yaml.Node) {
	t := &Target{Pos: l.pos(n)}
	l.s.Target = t
	var channels []*yaml.Node
	l.mapping(n, "the target", []field{
		{"http", func(k, v *yaml.Node) { channels = append(channels, k); t.HTTP = l.httpTarget(v) }},
		{"exec", func(k, v *yaml.Node) { channels = append(channels, k); t.Exec = l.execTarget(v) }},
		{"nats", func(k, v *yaml.Node) { channels = append(channels, k); t.NATS = l.natsTarget(v) }},
		{"amqp", func(k, v *yaml.Node) { channels = append(channels, k); t.AMQP = l.amqpTarget(v) }},
		{"kafka", func(k, v *yaml.Node) { channels = append(channels, k); t.Kafka = l.kafkaTarget(v) }},
		{"start", func(k, v *yaml.Node) { t.Start = l.start(v) }},
	})
	switch {
	case n.Kind != yaml.MappingNode:
	case len(channels) == 0:
		l.errorf(n, "the target names no channel; expected http: (a URL the consumer listens on), exec: (a command run once per delivery), nats: (a JetStream stream), amqp: (a RabbitMQ queue) or kafka: (a Kafka topic and consumer group)")
	case len(channels) > 1:
		l.errorf(channels[1], "the target has two channels; choose one of http, exec, nats, amqp or kafka")
	}
}

func (l *loader) httpTarget(n *yaml.Node) *HTTPTarget {
	h := &HTTPTarget{Pos: l.pos(n), Method: "POST", Timeout: DefaultTimeout, Mode: ModeStructured}
	var urlSeen bool
	var idHeaderNode, secretNode, modeNode *yaml.Node
	l.mapping(n, "target http", []field{
		{"url", func(k, v *yaml.Node) {
			urlSeen = true
			if s, ok := l.xstr(v, "url"); ok {
				u, err := url.Parse(s)
				if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
					l.errorf(v, "url must be an http:// or https:// URL such as http://127.0.0.1:8080/events, not %s", redact.URL(s))
				}
				h.URL = s
			}
		}},
		{"method", func(k, v *yaml.Node) {
			if s, ok := l.xstr(v, "method"); ok {
				switch strings.ToUpper(s) {
				case "POST", "PUT", "PATCH":
					h.Method = strings.ToUpper(s)
				default:
					l.errorf(v, "method must be POST, PUT or PATCH (a delivery carries a body), not %q", s)
				}
			}
		}},
		{"headers", func(k, v *yaml.Node) {
			h.Headers = l.xmap(v, "header")
			l.httpHeaders(v, h.Headers)
		}},
		{"timeout", func(k, v *yaml.Node) { h.Timeout = l.timeout(v, "timeout") }},
		{"mode", func(k, v *yaml.Node) {
			modeNode = v
			if s, ok := l.xstr(v, "mode"); ok {
				for _, m := range HTTPModes {
					if m == s {
						h.Mode = s
						return
					}
				}
				l.errorf(v, "unknown mode %q; expected %s", s, oneOf(HTTPModes))
			}
		}},
		{"id_header", func(k, v *yaml.Node) {
			idHeaderNode = k
			if s, ok := l.xstr(v, "id_header"); ok {
				if !headerName.MatchString(s) {
					l.errorf(v, "id_header must be a header name such as Idempotency-Key, not %q", s)
				}
				h.IDHeader = s
			}
		}},
		{"secret_env", func(k, v *yaml.Node) {
			secretNode = k
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
		}},
	})
	if n.Kind != yaml.MappingNode {
		return h
	}
	if !urlSeen {
		l.errorf(n, "target http needs url: the address the consumer listens on, such as http://127.0.0.1:8080/events")
	}
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
	return h
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

func (l *loader) start(n *yaml.Node) *Start {
	s := &Start{Pos: l.pos(n), ReadyTimeout: DefaultReadyTimeout, Instances: 1}
	var cmdSeen, readySeen bool
	l.mapping(n, "target start", []field{
		{"command", func(k, v *yaml.Node) { cmdSeen = true; s.Command, s.Shown = l.xstrs(v, "command"), shown(v) }},
		{"env", func(k, v *yaml.Node) { s.Env = l.xmap(v, "env") }},
		{"dir", func(k, v *yaml.Node) { s.Dir = l.dir(v, "start dir") }},
		{"ready", func(k, v *yaml.Node) { readySeen = true; l.ready(s, v) }},
		{"ready_timeout", func(k, v *yaml.Node) { s.ReadyTimeout = l.timeout(v, "ready_timeout") }},
		{"instances", func(k, v *yaml.Node) {
			s.InstancesPos = l.pos(k)
			s.Instances, _ = l.integer(v, "instances", 1, MaxInstances)
			if s.Instances == 0 {
				s.Instances = 1
			}
		}},
	})
	if n.Kind != yaml.MappingNode {
		return s
	}
	if !cmdSeen {
		l.errorf(n, "target start needs command: the program that runs the consumer and its arguments")
	}
	if !readySeen {
		l.errorf(n, "target start needs ready: an HTTP URL such as http://127.0.0.1:8080/healthz, tcp://HOST:PORT, or {stdout: \"a line the consumer prints\"}")
	}
	return s
}

func (l *loader) ready(s *Start, n *yaml.Node) {
	if n.Kind == yaml.MappingNode {
		l.mapping(n, "ready", []field{
			{"stdout", func(k, v *yaml.Node) {
				if line, ok := l.xstr(v, "ready stdout"); ok {
					if line == "" {
						l.errorf(v, "ready stdout must not be empty")
					}
					s.ReadyLine = line
				}
			}},
		})
		if s.ReadyLine == "" && len(n.Content) == 0 {
			l.errorf(n, "ready needs stdout: the text of a line the consumer prints once it is ready")
		}
		return
	}
	v, ok := l.xstr(n, "ready")
	if !ok {
		return
	}
	u, err := url.Parse(v)
	switch {
	case err == nil && (u.Scheme == "http" || u.Scheme == "https") && u.Host != "":
		s.ReadyURL = v
	case err == nil && u.Scheme == "tcp" && u.Host != "" && u.Port() != "":
		s.ReadyTCP = u.Host
	default:
		l.errorf(n, "ready must be an HTTP URL such as http://127.0.0.1:8080/healthz, tcp://HOST:PORT, or {stdout: \"a line\"}, not %s", redact.URL(v))
	}
}

var identifier = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)?$`)
var column = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

func (l *loader) effects(n *yaml.Node) {
	e := &Effects{Pos: l.pos(n)}
	l.s.Effects = e
	var dbSeen, keyOfSeen bool
	var tableNode, keyNode, eventNode, queryNode, resetNode, allowNode *yaml.Node
	l.mapping(n, "effects", []field{
		{"db", func(k, v *yaml.Node) {
			dbSeen = true
			e.DBPos = l.pos(v)
			if s, ok := l.xstr(v, "db"); ok {
				if s == "" {
					l.errorf(v, "db is empty; expected postgres://…, mysql://… or a SQLite file path")
				} else if i := strings.Index(s, "://"); i > 0 && !knownDB(s[:i]) {
					l.errorf(v, "db %s: unknown database %q; expected postgres://…, mysql://… or a SQLite file path", redact.URL(s), s[:i])
				} else if i > 0 && s[:i] != "sqlite" && s[:i] != "file" {
					if _, err := url.Parse(s); err != nil {
						l.errorf(v, "db is not a valid URL: %v", redact.Error(err))
					}
				}
				e.DB = s
			}
		}},
		{"reset", func(k, v *yaml.Node) {
			resetNode, e.ResetPos = k, l.pos(k)
			if v.Kind != yaml.SequenceNode {
				l.errorf(v, "reset must be a list of SQL statements such as [\"DELETE FROM payments\"], not %s", describe(v))
				return
			}
			for _, sn := range v.Content {
				if s, ok := l.xstr(resolve(sn), "reset statement"); ok {
					if strings.TrimSpace(s) == "" {
						l.errorf(sn, "reset statement is empty")
						continue
					}
					e.Reset = append(e.Reset, s)
				}
			}
		}},
		{"allow_reset", func(k, v *yaml.Node) {
			allowNode = k
			if v.Kind != yaml.SequenceNode {
				l.errorf(v, "allow_reset must be a list of database hosts such as [db.ci.internal], not %s", describe(v))
				return
			}
			for _, hn := range v.Content {
				if h, ok := l.xstr(resolve(hn), "allow_reset entry"); ok {
					if strings.TrimSpace(h) == "" || strings.ContainsAny(h, "/@ ") {
						l.errorf(hn, "allow_reset entry must be a host name or IP such as db.ci.internal, not %q", h)
						continue
					}
					e.AllowReset = append(e.AllowReset, h)
				}
			}
		}},
		{"table", func(k, v *yaml.Node) { tableNode = v; e.Table = l.name(v, "table", identifier) }},
		{"key", func(k, v *yaml.Node) { keyNode = v; e.Key = l.name(v, "key", column) }},
		{"event", func(k, v *yaml.Node) { eventNode = v; e.Event = l.name(v, "event", column) }},
		{"query", func(k, v *yaml.Node) {
			queryNode, e.QueryPos = v, l.pos(v)
			if s, ok := l.xstr(v, "query"); ok {
				if !strings.HasPrefix(strings.ToUpper(strings.TrimSpace(s)), "SELECT") && !strings.HasPrefix(strings.ToUpper(strings.TrimSpace(s)), "WITH") {
					l.errorf(v, "query must be a SELECT returning a key column (and optionally event), not %q", s)
				} else if more, ok := oneStatement(s); !ok {
					l.errorf(v, "query must be one statement, and a ; is followed by more (%q): a second statement may write where the first only reads", more)
				}
				e.Query = s
			}
		}},
		{"key_of", func(k, v *yaml.Node) { keyOfSeen = true; e.KeyOf = l.keyOf(v) }},
		{"ignore_columns", func(k, v *yaml.Node) { e.IgnoreColumns = l.columns(v) }},
		{"proxy", func(k, v *yaml.Node) { e.Proxy, e.ProxyPos = l.boolean(v, "proxy"), l.pos(k) }},
	})
	if n.Kind != yaml.MappingNode {
		return
	}
	if !dbSeen {
		l.errorf(n, "effects needs db: where the consumer writes (postgres://…, mysql://… or a SQLite file path)")
	}
	if !keyOfSeen {
		l.errorf(n, "effects needs key_of: the template naming the effect a delivery should make, such as \"{data.orderId}\"")
	}
	switch {
	case queryNode != nil && tableNode != nil:
		l.errorf(queryNode, "effects takes table and key, or query, not both")
	case queryNode != nil:
		for _, x := range []*yaml.Node{keyNode, eventNode} {
			if x != nil {
				l.errorf(x, "with query, the key and event are the query's columns named key and event; remove this field")
			}
		}
	case tableNode == nil:
		l.errorf(n, "effects needs table: the table of the business effect (with key: its key column), or query: a SELECT returning a key column")
	case keyNode == nil:
		l.errorf(tableNode, "effects needs key: the column of %s that identifies one business effect", e.Table)
	}
	if allowNode != nil && resetNode == nil {
		l.errorf(allowNode, "allow_reset names the hosts reset may empty, and effects has no reset; remove allow_reset")
	}
}

// columns reads ignore_columns: a list of column names, each once.
func (l *loader) columns(n *yaml.Node) []string {
	if n.Kind != yaml.SequenceNode {
		l.errorf(n, "ignore_columns must be a list of column names such as [updated_at], not %s", describe(n))
		return nil
	}
	var out []string
	for _, cn := range n.Content {
		c := l.name(resolve(cn), "an ignore_columns entry", column)
		if c == "" {
			continue
		}
		for _, o := range out {
			if strings.EqualFold(o, c) {
				l.errorf(cn, "ignore_columns names %s twice", c)
			}
		}
		out = append(out, c)
	}
	return out
}

func knownDB(scheme string) bool {
	switch scheme {
	case "postgres", "postgresql", "mysql", "sqlite", "file":
		return true
	}
	return false
}

func (l *loader) name(n *yaml.Node, what string, re *regexp.Regexp) string {
	s, ok := l.xstr(n, what)
	if !ok {
		return ""
	}
	if !re.MatchString(s) {
		l.errorf(n, "%s must be a name of letters, digits and underscores, not %q", what, s)
	}
	return s
}

// keyOfFields are the placeholders key_of may use besides paths under data
// and headers.
var keyOfFields = []string{"id", "source", "type", "subject", "schema", "time"}

func (l *loader) keyOf(n *yaml.Node) template.Template {
	if p := Placeholder(n.Value); n.Kind == yaml.ScalarNode && p != "" {
		l.errorf(n, "key_of is still the placeholder %s: replace it with your own value", p)
		return template.Template{}
	}
	t := l.tmpl(n, "key_of")
	if t.IsZero() {
		if n.Kind == yaml.ScalarNode {
			l.errorf(n, "key_of is empty; it names the effect a delivery should make, such as \"{data.orderId}\"")
		}
		return t
	}
	for _, f := range t.Fields() {
		if !KeyOfField(f) {
			l.errorf(n, "key_of uses unknown placeholder {%s}; expected a path under data (such as {data.orderId}) or headers, or one of %s", f, strings.Join(braced(keyOfFields), ", "))
		}
	}
	return t
}

// KeyOfField reports whether a key_of placeholder names a part of an event.
func KeyOfField(f string) bool {
	for _, k := range keyOfFields {
		if f == k {
			return true
		}
	}
	for _, prefix := range []string{"data", "headers"} {
		if rest, ok := strings.CutPrefix(f, prefix+"."); ok && pathSyntax.MatchString(rest) {
			return true
		}
	}
	return f == "data"
}

// crash reads `crash: {after: D}`, `crash: random`, `crash: sweep`,
// `crash: statements`, or `crash: {before: WORDS}` / `{after: WORDS}` (a
// statement's leading words; an after that reads as a duration is one,
// a before that does is refused).
func (l *loader) crash(n *yaml.Node) *Crash {
	c := &Crash{Pos: l.pos(n)}
	if n.Kind == yaml.MappingNode {
		seen := 0
		words := func(v *yaml.Node, what string) string {
			s, ok := l.str(v, what)
			if !ok {
				return ""
			}
			if strings.TrimSpace(s) == "" {
				l.errorf(v, "%s names no statement: write its leading words, such as \"INSERT INTO payments\" or commit", what)
			}
			return strings.Join(strings.Fields(s), " ")
		}
		l.mapping(n, "crash", []field{
			{"after", func(k, v *yaml.Node) {
				seen++
				if v.Kind == yaml.ScalarNode && looksLikeDuration(v.Value) {
					c.Kind = CrashAfter
					c.After = l.delay(v, "crash after")
					return
				}
				c.Kind, c.AfterStatement, c.Words = CrashStatement, true, words(v, "crash after")
				if m, p, ok := externalCall(c.Words); ok {
					c.Kind, c.Method, c.Path = CrashExternal, m, p
				}
			}},
			{"before", func(k, v *yaml.Node) {
				seen++
				if v.Kind == yaml.ScalarNode && looksLikeDuration(v.Value) {
					// No statement begins with a number: this is a time,
					// and a kill comes a time after a delivery, not before.
					l.errorf(v, "crash before takes a statement's leading words, such as \"INSERT INTO payments\", not a duration (%s): to kill the consumer a time after the delivery was sent, write crash: {after: %s}", strings.TrimSpace(v.Value), strings.TrimSpace(v.Value))
					return
				}
				c.Kind, c.Words = CrashStatement, words(v, "crash before")
				if m, p, ok := externalCall(c.Words); ok {
					c.Kind, c.Method, c.Path = CrashExternal, m, p
				}
			}},
		})
		switch seen {
		case 0:
			l.errorf(n, "crash needs after: how long after the delivery was sent to kill the consumer, such as 5ms, or the statement to kill it at: {before: \"INSERT INTO payments\"}, {after: commit}")
		case 2:
			l.errorf(n, "crash takes before or after, not both")
		}
		return c
	}
	s, ok := l.str(n, "crash")
	if !ok {
		return nil
	}
	switch s {
	case CrashRandom, CrashSweep, CrashStatements:
		c.Kind = s
	default:
		l.errorf(n, "crash must be {after: DURATION}, random, sweep, statements, or {before: STATEMENT} / {after: STATEMENT}, not %q", s)
		return nil
	}
	return c
}

// looksLikeDuration reports whether s is written as a duration (5ms, 1.5s,
// 0) rather than as a statement's words.
func looksLikeDuration(s string) bool {
	s = strings.TrimSpace(s)
	if s == "" {
		return false
	}
	if _, err := time.ParseDuration(s); err == nil {
		return true
	}
	return s[0] >= '0' && s[0] <= '9' || s[0] == '-' || s[0] == '.'
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

// keyCounts reads a check's `effects: {KEY: N}`.
func (l *loader) keyCounts(n *yaml.Node) []KeyCount {
	var out []KeyCount
	l.mappingAny(n, "effects", func(k, v *yaml.Node) {
		if c, ok := l.integer(v, "effects of "+k.Value, 0, math.MaxInt); ok {
			out = append(out, KeyCount{Key: k.Value, N: int64(c), Pos: l.pos(k)})
		}
	})
	return out
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
	if st := s.Target.Start; st != nil && st.Instances > 1 && !s.Target.Broker() {
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

// oneStatement reports whether a query is one statement: nothing but
// spaces and semicolons after its first ";". A read-only transaction
// holds one statement, but a driver that runs several (pgx's simple
// protocol, MySQL's multiStatements, SQLite) would run a COMMIT and a
// DELETE after it. A ";" inside a string literal or a comment counts
// too: telling them apart as each database does is not worth the risk.
// When it is not, more is what follows the ";".
func oneStatement(q string) (more string, ok bool) {
	i := strings.IndexByte(q, ';')
	if i < 0 || strings.Trim(q[i:], "; \t\r\n") == "" {
		return "", true
	}
	return q[i+1:], false
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

// String writes a crash as the file does: statements, {before: WORDS}.
func (c *Crash) String() string {
	switch {
	case c.Kind == CrashExternal && c.AfterStatement:
		return fmt.Sprintf("{after: %s %s}", c.Method, c.Path)
	case c.Kind == CrashExternal:
		return fmt.Sprintf("{before: %s %s}", c.Method, c.Path)
	case c.Kind == CrashStatement && c.AfterStatement:
		return fmt.Sprintf("{after: %s}", c.Words)
	case c.Kind == CrashStatement:
		return fmt.Sprintf("{before: %s}", c.Words)
	case c.Kind == CrashAfter:
		return fmt.Sprintf("{after: %s}", c.After)
	}
	return c.Kind
}
