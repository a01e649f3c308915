package scenario

import (
	"net"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/redeliver/redeliver/pkg/broker"
	"go.yaml.in/yaml/v3"
)

// MaxInstances bounds start.instances.
const MaxInstances = 64

// DefaultDrainTimeout is how long a broker target's consumer may take to
// drain what a check published.
const DefaultDrainTimeout = 60 * time.Second

// NATSTarget publishes every delivery into a JetStream stream, for the
// consumer reading the durable to take.
type NATSTarget struct {
	Pos     Pos
	URL     string
	Stream  string
	Subject broker.Route
	Durable string
	Create  bool
	Mode    broker.Mode
	Drain   time.Duration
	// AckWait is how long the consumer has to ack before JetStream
	// delivers a message again: a durable that create makes gets it
	// (0: redeliver's short default), an existing one must have it.
	AckWait time.Duration
}

// MinAckWait is the shortest ack_wait a file may ask for: below it
// JetStream redelivers before any consumer could answer, again and again.
const MinAckWait = 100 * time.Millisecond

// AMQPTarget publishes every delivery to a RabbitMQ exchange, for the
// consumer reading the queue to take.
type AMQPTarget struct {
	Pos        Pos
	URL        string
	Exchange   string
	RoutingKey broker.Route
	Queue      string
	Create     bool
	Mode       broker.Mode
	Drain      time.Duration
}

// KafkaTarget produces every delivery to a Kafka topic, keyed by its
// business key, for the consumer group to read.
type KafkaTarget struct {
	Pos     Pos
	Brokers []string // HOST:PORT of the bootstrap brokers
	Topic   string
	Group   string // the consumer group whose committed offsets end a check
	Create  bool
	// Partitions is how many partitions create gives the topic (0: the
	// cluster's default).
	Partitions int
	Mode       broker.Mode
	Drain      time.Duration
}

// MaxPartitions bounds the partitions a file may ask create for.
const MaxPartitions = 1024

// Kind is the target's key, nats; DrainTimeout how long its consumer
// may take to drain a check.
func (t *NATSTarget) Kind() string                { return "nats" }
func (t *NATSTarget) DrainTimeout() time.Duration { return t.Drain }

// Kind is the target's key, amqp; DrainTimeout how long its consumer
// may take to drain a check.
func (t *AMQPTarget) Kind() string                { return "amqp" }
func (t *AMQPTarget) DrainTimeout() time.Duration { return t.Drain }

// Kind is the target's key, kafka; DrainTimeout how long its consumer
// may take to drain a check.
func (t *KafkaTarget) Kind() string                { return "kafka" }
func (t *KafkaTarget) DrainTimeout() time.Duration { return t.Drain }

// DrainTimeout is how long a broker target's consumer may take to drain.
func (t *Target) DrainTimeout() time.Duration {
	if t.Broker == nil {
		return 0
	}
	return t.Broker.DrainTimeout()
}

func (l *loader) boolean(n *yaml.Node, what string) bool {
	if n.Kind != yaml.ScalarNode || n.Tag != "!!bool" {
		l.errorf(n, "%s must be true or false, not %s", what, describe(n))
		return false
	}
	return n.Value == "true"
}

func (l *loader) route(n *yaml.Node, what string) broker.Route {
	s, ok := l.xstr(n, what)
	if !ok {
		return broker.Route{}
	}
	if strings.TrimSpace(s) == "" {
		l.errorf(n, "%s is empty", what)
		return broker.Route{}
	}
	r, err := broker.ParseRoute(s)
	if err != nil {
		l.errorf(n, "%s: %v", what, err)
	}
	return r
}

func (l *loader) brokerMode(n *yaml.Node) broker.Mode {
	s, ok := l.xstr(n, "mode")
	if !ok {
		return broker.Binary
	}
	m, err := broker.ParseMode(s)
	if err != nil {
		l.errorf(n, "%v", err)
		return broker.Binary
	}
	return m
}

func (l *loader) brokerURL(n *yaml.Node, schemes []string, example string) string {
	s, ok := l.xstr(n, "url")
	if !ok {
		return ""
	}
	u, err := url.Parse(s)
	if err != nil || u.Host == "" || !contains(schemes, u.Scheme) {
		l.errorf(n, "url must be a %s:// URL such as %s", schemes[0], example)
	}
	return s
}

func (l *loader) nonEmpty(n *yaml.Node, what string) string {
	s, ok := l.xstr(n, what)
	if ok && strings.TrimSpace(s) == "" {
		l.errorf(n, "%s is empty", what)
	}
	return s
}

func (l *loader) natsTarget(n *yaml.Node) *NATSTarget {
	t := &NATSTarget{Pos: l.pos(n), Mode: broker.Binary, Drain: DefaultDrainTimeout}
	seen := map[string]bool{}
	l.mapping(n, "target nats", []field{
		{"url", func(k, v *yaml.Node) {
			seen["url"] = true
			t.URL = l.brokerURL(v, []string{"nats", "tls"}, "nats://127.0.0.1:4222")
		}},
		{"stream", func(k, v *yaml.Node) { seen["stream"] = true; t.Stream = l.nonEmpty(v, "stream") }},
		{"subject", func(k, v *yaml.Node) { seen["subject"] = true; t.Subject = l.route(v, "subject") }},
		{"durable", func(k, v *yaml.Node) { seen["durable"] = true; t.Durable = l.nonEmpty(v, "durable") }},
		{"create", func(k, v *yaml.Node) { t.Create = l.boolean(v, "create") }},
		{"mode", func(k, v *yaml.Node) { t.Mode = l.brokerMode(v) }},
		{"drain_timeout", func(k, v *yaml.Node) { t.Drain = l.timeout(v, "drain_timeout") }},
		{"ack_wait", func(k, v *yaml.Node) {
			t.AckWait = l.timeout(v, "ack_wait")
			if t.AckWait > 0 && t.AckWait < MinAckWait {
				l.errorf(v, "ack_wait must be at least %s, not %s: JetStream would redeliver before a consumer could answer", MinAckWait, t.AckWait)
			}
		}},
	})
	if n.Kind != yaml.MappingNode {
		return t
	}
	for _, need := range []struct{ field, what string }{
		{"url", "the server, such as nats://127.0.0.1:4222"},
		{"stream", "the JetStream stream the deliveries are stored in"},
		{"subject", "where each delivery is published, a template such as orders.{type}"},
		{"durable", "the durable consumer your consumer reads, whose pending and unacknowledged messages end a check"},
	} {
		if !seen[need.field] {
			l.errorf(n, "target nats needs %s: %s", need.field, need.what)
		}
	}
	return t
}

func (l *loader) amqpTarget(n *yaml.Node) *AMQPTarget {
	t := &AMQPTarget{Pos: l.pos(n), Mode: broker.Binary, Drain: DefaultDrainTimeout}
	seen := map[string]bool{}
	l.mapping(n, "target amqp", []field{
		{"url", func(k, v *yaml.Node) {
			seen["url"] = true
			t.URL = l.brokerURL(v, []string{"amqp", "amqps"}, "amqp://guest:guest@127.0.0.1:5672/")
		}},
		{"exchange", func(k, v *yaml.Node) { t.Exchange, _ = l.xstr(v, "exchange") }},
		{"routing_key", func(k, v *yaml.Node) { t.RoutingKey = l.route(v, "routing_key") }},
		{"queue", func(k, v *yaml.Node) { seen["queue"] = true; t.Queue = l.nonEmpty(v, "queue") }},
		{"create", func(k, v *yaml.Node) { t.Create = l.boolean(v, "create") }},
		{"mode", func(k, v *yaml.Node) { t.Mode = l.brokerMode(v) }},
		{"drain_timeout", func(k, v *yaml.Node) { t.Drain = l.timeout(v, "drain_timeout") }},
	})
	if n.Kind != yaml.MappingNode {
		return t
	}
	if !seen["url"] {
		l.errorf(n, "target amqp needs url: the server, such as amqp://guest:guest@127.0.0.1:5672/")
	}
	if !seen["queue"] {
		l.errorf(n, "target amqp needs queue: the queue your consumer reads, which must stay empty for a check to end")
	}
	if t.Exchange != "" && t.RoutingKey.IsZero() {
		l.errorf(n, "target amqp publishes to exchange %s, so it needs routing_key: a template such as orders.{type}", t.Exchange)
	}
	return t
}

func (l *loader) kafkaTarget(n *yaml.Node) *KafkaTarget {
	t := &KafkaTarget{Pos: l.pos(n), Mode: broker.Binary, Drain: DefaultDrainTimeout}
	seen := map[string]bool{}
	l.mapping(n, "target kafka", []field{
		{"brokers", func(k, v *yaml.Node) {
			seen["brokers"] = true
			t.Brokers = l.kafkaBrokers(v)
		}},
		{"topic", func(k, v *yaml.Node) {
			seen["topic"] = true
			t.Topic = l.nonEmpty(v, "topic")
			if t.Topic != "" && !broker.TopicName(t.Topic) {
				l.errorf(v, "topic %q is not a Kafka topic name: at most 249 of the letters, digits, '.', '_' and '-', and not . or ..", t.Topic)
			}
		}},
		{"group", func(k, v *yaml.Node) { seen["group"] = true; t.Group = l.nonEmpty(v, "group") }},
		{"create", func(k, v *yaml.Node) { t.Create = l.boolean(v, "create") }},
		{"partitions", func(k, v *yaml.Node) {
			t.Partitions, _ = l.integer(v, "partitions", 1, MaxPartitions)
			seen["partitions"] = true
		}},
		{"mode", func(k, v *yaml.Node) { t.Mode = l.brokerMode(v) }},
		{"drain_timeout", func(k, v *yaml.Node) { t.Drain = l.timeout(v, "drain_timeout") }},
	})
	if n.Kind != yaml.MappingNode {
		return t
	}
	for _, need := range []struct{ field, what string }{
		{"brokers", "the bootstrap brokers, such as [127.0.0.1:9092]"},
		{"topic", "the topic each delivery is produced to"},
		{"group", "the consumer group your consumer reads with, whose committed offsets end a check"},
	} {
		if !seen[need.field] {
			l.errorf(n, "target kafka needs %s: %s", need.field, need.what)
		}
	}
	if seen["partitions"] && !t.Create {
		l.errorf(n, "target kafka sets partitions, which only create: true uses (redeliver never changes a topic that exists)")
	}
	return t
}

// kafkaBrokers reads the bootstrap brokers: a list of HOST:PORT (or one).
func (l *loader) kafkaBrokers(n *yaml.Node) []string {
	var items []*yaml.Node
	switch n.Kind {
	case yaml.SequenceNode:
		items = n.Content
	case yaml.ScalarNode:
		items = []*yaml.Node{n}
	default:
		l.errorf(n, "brokers must be a list of HOST:PORT such as [127.0.0.1:9092], not %s", describe(n))
		return nil
	}
	if len(items) == 0 {
		l.errorf(n, "brokers is empty: name at least one, such as [127.0.0.1:9092]")
	}
	var out []string
	for _, it := range items {
		v, ok := l.xstr(it, "brokers entry")
		if !ok {
			continue
		}
		// One entry may hold several, comma-separated, as a variable
		// such as ${KAFKA_BROKERS} often does.
		for _, s := range strings.Split(v, ",") {
			s = strings.TrimSpace(s)
			host, port, err := net.SplitHostPort(s)
			if err != nil || host == "" || port == "" || strings.Contains(s, "/") {
				l.errorf(it, "brokers entry %q must be HOST:PORT such as 127.0.0.1:9092 (no scheme)", s)
				continue
			}
			if p, err := strconv.Atoi(port); err != nil || p < 1 || p > 65535 {
				l.errorf(it, "brokers entry %q has no port from 1 to 65535", s)
				continue
			}
			out = append(out, s)
		}
	}
	return out
}

// brokerStep checks a deliver step of a broker target: the broker, not
// redeliver, hands the event to the consumer, so only publishing faults
// apply, and kills: by the clock, or at a statement the effects proxy
// holds (one instance: the one that holds the connection).
func (l *loader) brokerStep(n *yaml.Node, st *Step) {
	switch {
	case st.Drop:
		l.errorf(n, "drop cuts off an answer, and a broker target has none to cut: a publish is stored or the run stops")
	case st.Crash != nil && l.s.Target.Start == nil:
		l.errorf(n, "crash kills a consumer instance redeliver started, and this target has no start: add target start (command and ready; instances: N for several)")
	case st.Crash.Statement() && l.s.Target.Start.Instances > 1 && !ownersKnown:
		l.errs = append(l.errs, errorf(st.Crash.Pos, "crash: %s kills the instance that holds the delivery's connection, and with instances: %d redeliver tells which one that is from /proc, which only Linux has: run one instance (drop instances) for statement faults, or use crash: {after: DURATION} or crash: random", st.Crash, l.s.Target.Start.Instances))
	case st.Crash != nil && st.Crash.Kind == CrashExternal && l.s.Target.Start.Instances > 1 && !ownersKnown:
		l.errs = append(l.errs, errorf(st.Crash.Pos, "crash: %s kills the instance that made the call, and with instances: %d redeliver tells which one that is from /proc, which only Linux has: run one instance (drop instances) for a crash at a call, or use crash: {after: DURATION} or crash: random", st.Crash, l.s.Target.Start.Instances))
	case st.Crash != nil && st.Crash.Kind == CrashStatements && l.s.callsOut() && (l.s.Effects == nil || !l.s.Effects.Proxy):
		// Elsewhere the boundaries may be the external calls' alone;
		// behind a broker they are the statements' (without the proxy,
		// the check of the effects says so for every statement crash).
		l.errs = append(l.errs, errorf(st.Crash.Pos, "crash: statements behind a broker lands at the consumer's SQL statements, which redeliver sees only through its proxy: add proxy: true to effects, and point the consumer at ${%s}", DBURLVar))
	case st.Crash != nil && st.Crash.Kind == CrashSweep:
		l.errorf(n, "crash: sweep waits for an answer, and a broker target has none; use crash: {after: DURATION} or crash: random")
	case st.Concurrent > 0:
		l.brokerRace(n, st)
	}
	if st.Expect != nil && (st.Expect.Status != 0 || (st.Expect.Answer != "" && st.Expect.Answer != "acked")) {
		l.errorf(n, "a broker target has no answer per delivery: the publish is acked by the broker (expect: acked) or the run stops; judge the consumer with a state check")
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

func (l *loader) channel() string {
	if l.s.Target == nil {
		return "the built-in handler"
	}
	return l.s.Target.Channel()
}

// deliverStep is a target-mode deliver step, checked at the end of the
// file against the target.
type deliverStep struct {
	n, messageID *yaml.Node
	st           *Step
}

// valueOf is the value of key in mapping n, aliases resolved, or nil.
func valueOf(n *yaml.Node, key string) *yaml.Node {
	if n == nil || n.Kind != yaml.MappingNode {
		return nil
	}
	for i := 0; i+1 < len(n.Content); i += 2 {
		if n.Content[i].Value == key {
			return resolve(n.Content[i+1])
		}
	}
	return nil
}

func (l *loader) validateDeliverSteps() {
	for _, d := range l.deliverSteps {
		switch {
		case l.s.Target == nil:
		case l.s.Target.Broker != nil:
			l.brokerStep(d.n, d.st)
		case d.messageID != nil:
			l.errorf(d.messageID, "message_id is the id a broker target publishes under; this target is %s", l.channel())
		}
		if h := l.s.Target; h != nil && h.HTTP != nil {
			// The event's own headers go on the request too, and so do
			// its attributes in every mode but structured.
			ev := valueOf(d.n, "deliver")
			l.httpHeaders(valueOf(ev, "headers"), nil)
			for _, a := range headerAttributes(h.HTTP) {
				if v := valueOf(ev, a.field); v != nil && v.Kind == yaml.ScalarNode && !headerValue(v.Value) {
					l.errorf(v, "%s holds a control character (a newline, a NUL), and mode %s carries it in a header (%s), which HTTP cannot", a.field, h.HTTP.Mode, a.header)
				}
			}
		}
	}
}

// headerAttributes are the event attributes an HTTP target's mode sends
// as headers, with the header each goes in.
func headerAttributes(h *HTTPTarget) []struct{ field, header string } {
	switch h.Mode {
	case ModeBinary:
		return []struct{ field, header string }{{"id", "ce-id"}, {"source", "ce-source"}, {"type", "ce-type"}, {"subject", "ce-subject"}, {"time", "ce-time"}}
	case ModeRaw:
		return []struct{ field, header string }{{"id", h.IDHeader}}
	case ModeStandardWebhooks:
		return []struct{ field, header string }{{"id", "webhook-id"}}
	}
	return nil
}
