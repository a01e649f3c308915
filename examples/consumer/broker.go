package main

// The consumer behind a real broker: JetStream (a pull consumer on a
// durable, explicit ack after commit, a short AckWait) or RabbitMQ (manual
// ack, a prefetch window). The handler is the same as over HTTP, flaws
// included; ack-before-commit acks first and then works, so a kill in
// between loses an event the broker has forgotten.

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"mime"
	"os"
	"os/signal"
	"strings"
	"sync"
	"syscall"
	"time"

	natsgo "github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	amqp091 "github.com/rabbitmq/amqp091-go"
)

// brokerConfig is what the broker flags say.
type brokerConfig struct {
	nats     string // nats://HOST:PORT
	stream   string
	durable  string
	subject  string // filter subject of the durable ("" = the whole stream)
	ackWait  time.Duration
	amqp     string // amqp://USER:PASS@HOST:PORT/
	queue    string
	prefetch int
	kafka    string // HOST:PORT[,HOST:PORT…]
	topic    string
	group    string
	// sessionTimeout is how long the group waits for a member's
	// heartbeat before it takes the member for dead and rebalances.
	sessionTimeout time.Duration
	// take is how long a delivery waits once taken, before its first
	// statement: a consumer slow to start on what it took.
	take time.Duration
}

func (b *brokerConfig) flags(fs *flag.FlagSet) {
	fs.StringVar(&b.nats, "nats", "", "consume from NATS JetStream at this URL (with --stream and --durable)")
	fs.StringVar(&b.stream, "stream", "", "JetStream: the stream to read")
	fs.StringVar(&b.durable, "durable", "", "JetStream: the durable pull consumer (created or updated at start)")
	fs.StringVar(&b.subject, "subject", "", "JetStream: the durable's filter subject (default: the whole stream)")
	fs.DurationVar(&b.ackWait, "ack-wait", 2*time.Second, "JetStream: how long a delivery may stay unacked before JetStream redelivers it")
	fs.StringVar(&b.amqp, "amqp", "", "consume from RabbitMQ at this URL (with --queue)")
	fs.StringVar(&b.queue, "queue", "", "RabbitMQ: the queue to read (declared durable at start)")
	fs.IntVar(&b.prefetch, "prefetch", 8, "deliveries in flight at once (JetStream pull batch, RabbitMQ prefetch, Kafka records per poll), each handled concurrently (Kafka: one partition's in order)")
	fs.StringVar(&b.kafka, "kafka", "", "consume from Kafka at these brokers, HOST:PORT[,HOST:PORT…] (with --topic and --group)")
	fs.StringVar(&b.topic, "topic", "", "Kafka: the topic to read")
	fs.StringVar(&b.group, "group", "", "Kafka: the consumer group to read it as (offsets committed after each batch's transactions)")
	fs.DurationVar(&b.sessionTimeout, "session-timeout", 6*time.Second, "Kafka: how long the group waits for a member's heartbeat before it rebalances its partitions away (at least the cluster's group.min.session.timeout.ms)")
	fs.DurationVar(&b.take, "take", 0, "wait this long after taking a delivery before its first statement, as a consumer slow to start on it does (0: none)")
}

func (b *brokerConfig) on() bool { return b.nats != "" || b.amqp != "" || b.kafka != "" }

func (b *brokerConfig) check() error {
	switch {
	case (b.nats != "") && (b.amqp != "") || (b.nats != "" || b.amqp != "") && b.kafka != "":
		return errors.New("give one of --nats, --amqp and --kafka")
	case b.kafka != "" && (b.topic == "" || b.group == ""):
		return errors.New("--kafka needs --topic and --group")
	case b.take < 0:
		return errors.New("--take must not be negative")
	case b.kafka != "" && b.sessionTimeout <= 0:
		return errors.New("--session-timeout must be positive")
	case b.nats != "" && (b.stream == "" || b.durable == ""):
		return errors.New("--nats needs --stream and --durable")
	case b.amqp != "" && b.queue == "":
		return errors.New("--amqp needs --queue")
	case b.prefetch < 1:
		return errors.New("--prefetch must be at least 1")
	case b.ackWait <= 0:
		return errors.New("--ack-wait must be positive")
	}
	return nil
}

// delivery is one message from a broker, with the three ways to settle it.
type delivery struct {
	headers     func(name string) string // case-insensitive
	body        []byte
	redelivered bool
	ack         func() error // processed (or a duplicate): forget it
	reject      func() error // refused for good (bad event, conflict)
	retry       func() error // not done: deliver it again
}

// handleDelivery is the broker-side twin of handleEvent.
func (c *consumer) handleDelivery(ctx context.Context, d delivery) {
	if c.take > 0 {
		select {
		case <-time.After(c.take):
		case <-ctx.Done():
		}
	}
	if d.redelivered {
		c.store.noteRedelivery(ctx)
	}
	ev, err := decodeBrokerMessage(d.headers, d.body)
	if err != nil {
		c.logf("rejected: %v", err)
		c.settle(d.reject, "reject")
		return
	}
	if c.flaw == flawAckBeforeCommit {
		// The flaw: the ack goes out first. A kill before the commit
		// below loses an event the broker will never deliver again.
		c.settle(d.ack, "ack")
		if _, err := c.processAs(ctx, ev, flawSafe); err != nil {
			c.logf("event %s, acknowledged, then: %v", ev.id, err)
		}
		return
	}
	res, err := c.process(ctx, ev)
	switch {
	case errors.Is(err, errConflict) || (err == nil && res.Outcome == "conflict"):
		c.logf("event %s: conflict", ev.id)
		c.settle(d.reject, "reject")
	case err != nil:
		c.logf("event %s: %v", ev.id, err)
		c.settle(d.retry, "retry")
	default:
		c.settle(d.ack, "ack") // after the commit: the safe order
	}
}

func (c *consumer) settle(f func() error, what string) {
	if err := f(); err != nil {
		c.logf("%s: %v", what, err)
	}
}

// decodeBrokerMessage reads an event in the CloudEvents NATS, AMQP or
// Kafka binding: structured (application/cloudevents+json) or binary (the
// attributes in ce-*, cloudEvents_* or ce_* headers, data as the body).
func decodeBrokerMessage(header func(string) string, body []byte) (event, error) {
	ct, _, _ := mime.ParseMediaType(header("Content-Type"))
	if ct == "application/cloudevents+json" {
		return decodeCloudEvent(body)
	}
	for _, prefix := range []string{"ce-", "ce_", "cloudEvents_", "cloudEvents:"} {
		if v := header(prefix + "specversion"); v != "" {
			if v != "1.0" {
				return event{}, rejectf("%sspecversion %q is not 1.0", prefix, v)
			}
			return decodeData(header(prefix+"id"), body)
		}
	}
	return event{}, rejectf("not a CloudEvent: no ce-specversion or cloudEvents_specversion header, and not application/cloudevents+json")
}

// consumeBroker runs until SIGTERM or SIGINT, or until the broker
// connection is lost (exit 75: the supervisor restarts it).
func consumeBroker(ctx context.Context, c *consumer, b brokerConfig, stdout, stderr io.Writer) int {
	ctx, stop := signal.NotifyContext(ctx, syscall.SIGTERM, os.Interrupt)
	defer stop()
	if err := c.store.createRedeliveries(ctx); err != nil {
		fmt.Fprintln(stderr, "consumer:", err)
		return exitTempFail
	}
	var err error
	switch {
	case b.nats != "":
		err = consumeJetStream(ctx, c, b, stdout)
	case b.kafka != "":
		err = consumeKafka(ctx, c, b, stdout)
	default:
		err = consumeRabbitMQ(ctx, c, b, stdout)
	}
	c.background.Wait()
	if err != nil && ctx.Err() == nil {
		fmt.Fprintln(stderr, "consumer:", err)
		return exitTempFail
	}
	return 0
}

// workers runs handle on up to n deliveries at once.
type workers struct {
	sem chan struct{}
	wg  sync.WaitGroup
}

func newWorkers(n int) *workers { return &workers{sem: make(chan struct{}, n)} }

func (w *workers) do(f func()) {
	w.sem <- struct{}{}
	w.run(f)
}

// free waits for a free worker and keeps it for run: a consumer that
// asks its broker for a message only then holds none it cannot work on.
func (w *workers) free() { w.sem <- struct{}{} }

// unkept gives back the worker free kept, when no message came for it.
func (w *workers) unkept() { <-w.sem }

// run runs f on the worker free kept.
func (w *workers) run(f func()) {
	w.wg.Add(1)
	go func() {
		defer func() { <-w.sem; w.wg.Done() }()
		f()
	}()
}

func consumeJetStream(ctx context.Context, c *consumer, b brokerConfig, stdout io.Writer) error {
	nc, err := natsgo.Connect(b.nats, natsgo.Name("example-consumer"), natsgo.Timeout(10*time.Second))
	if err != nil {
		return fmt.Errorf("connect to NATS at %s: %w", b.nats, err)
	}
	defer nc.Close()
	js, err := jetstream.New(nc)
	if err != nil {
		return err
	}
	cons, err := js.CreateOrUpdateConsumer(ctx, b.stream, jetstream.ConsumerConfig{
		Durable:       b.durable,
		AckPolicy:     jetstream.AckExplicitPolicy,
		AckWait:       b.ackWait,
		FilterSubject: b.subject,
		MaxAckPending: -1,
	})
	if err != nil {
		return fmt.Errorf("durable %s on stream %s: %w", b.durable, b.stream, err)
	}
	msgs, err := cons.Messages(jetstream.PullMaxMessages(b.prefetch))
	if err != nil {
		return err
	}
	defer msgs.Stop()
	go func() { <-ctx.Done(); msgs.Stop() }()
	fmt.Fprintf(stdout, "consuming %s/%s as %s (%s)\n", b.stream, b.durable, b.nats, c.flaw)
	w := newWorkers(b.prefetch)
	defer w.wg.Wait()
	for {
		// The next message is asked for once a worker is free: with
		// --prefetch 1, an instance at work holds no second message, and
		// JetStream gives it to another instance.
		w.free()
		m, err := msgs.Next()
		if err != nil {
			w.unkept()
			if errors.Is(err, jetstream.ErrMsgIteratorClosed) {
				return nil
			}
			return err
		}
		md, _ := m.Metadata()
		h := m.Headers()
		d := delivery{
			headers:     func(name string) string { return headerGet(h, name) },
			body:        m.Data(),
			redelivered: md != nil && md.NumDelivered > 1,
			ack:         func() error { return m.DoubleAck(context.Background()) },
			reject:      m.Term,
			retry:       m.Nak,
		}
		w.run(func() { c.handleDelivery(ctx, d) })
	}
}

// headerGet looks a NATS header up by name, in any case.
func headerGet(h natsgo.Header, name string) string {
	if v := h.Get(name); v != "" {
		return v
	}
	for k, vs := range h {
		if strings.EqualFold(k, name) && len(vs) > 0 {
			return vs[0]
		}
	}
	return ""
}

func consumeRabbitMQ(ctx context.Context, c *consumer, b brokerConfig, stdout io.Writer) error {
	conn, err := amqp091.Dial(b.amqp)
	if err != nil {
		return fmt.Errorf("connect to RabbitMQ: %w", err)
	}
	defer conn.Close()
	ch, err := conn.Channel()
	if err != nil {
		return err
	}
	if _, err := ch.QueueDeclare(b.queue, true, false, false, false, nil); err != nil {
		return fmt.Errorf("queue %s: %w", b.queue, err)
	}
	if err := ch.Qos(b.prefetch, 0, false); err != nil {
		return err
	}
	deliveries, err := ch.ConsumeWithContext(ctx, b.queue, "", false, false, false, false, nil)
	if err != nil {
		return fmt.Errorf("consume %s: %w", b.queue, err)
	}
	fmt.Fprintf(stdout, "consuming %s (%s)\n", b.queue, c.flaw)
	w := newWorkers(b.prefetch)
	defer w.wg.Wait()
	for m := range deliveries {
		m := m
		d := delivery{
			headers: func(name string) string {
				if strings.EqualFold(name, "Content-Type") {
					return m.ContentType
				}
				for k, v := range m.Headers {
					if s, ok := v.(string); ok && strings.EqualFold(k, name) {
						return s
					}
				}
				return ""
			},
			body:        m.Body,
			redelivered: m.Redelivered,
			ack:         func() error { return m.Ack(false) },
			reject:      func() error { return m.Reject(false) },
			retry:       func() error { return m.Nack(false, true) },
		}
		w.do(func() { c.handleDelivery(ctx, d) })
	}
	if ctx.Err() != nil {
		return nil
	}
	return errors.New("the RabbitMQ channel closed")
}

// createRedeliveries makes the table where the consumer counts the
// deliveries the broker flagged as redelivered (RabbitMQ's redelivered
// bit, JetStream's delivery count above one): what the broker did, as the
// consumer saw it.
func (s *store) createRedeliveries(ctx context.Context) error {
	_, err := s.db.ExecContext(ctx, `CREATE TABLE IF NOT EXISTS broker_redeliveries (seen_at TIMESTAMP NOT NULL DEFAULT CURRENT_TIMESTAMP)`)
	if err != nil {
		return fmt.Errorf("create broker_redeliveries: %w", err)
	}
	return nil
}

func (s *store) noteRedelivery(ctx context.Context) {
	q := `INSERT INTO broker_redeliveries DEFAULT VALUES`
	if s.mysql {
		q = `INSERT INTO broker_redeliveries () VALUES ()`
	}
	_, _ = s.db.ExecContext(ctx, q)
}
