// Package nats publishes deliveries into a NATS JetStream stream for a
// consumer under test to read, watches the consumer's durable until it has
// nothing pending or awaiting an ack, and reads a stream back as a
// captured log. It wraps github.com/nats-io/nats.go.
package nats

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	natsgo "github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/redeliver/redeliver/pkg/broker"
	"github.com/redeliver/redeliver/pkg/redact"
)

// Config names the stream and durable consumer a target uses.
type Config struct {
	URL      string       // nats://HOST:PORT
	Stream   string       // the JetStream stream the subject is stored in
	Subject  broker.Route // where each delivery is published, e.g. orders.{type}
	Consumer string       // the durable consumer whose pending and unacknowledged messages end the run
	Mode     broker.Mode  // binary (ce-* headers, the default) or structured
	// Create makes the stream (subjects: the Subject with its placeholders
	// as wildcards) and the durable consumer (pull, explicit ack) when
	// they do not exist. Without it, redeliver creates nothing.
	Create bool
	// AckWait and Duplicates apply to what Create makes: how long the
	// consumer has to ack before a redelivery (default 30s) and the
	// stream's duplicate window (default 2m, JetStream's own).
	AckWait, Duplicates time.Duration
}

// The headers of the CloudEvents NATS binding and of JetStream.
const (
	MsgIDHeader       = natsgo.MsgIdHdr // Nats-Msg-Id
	ContentTypeHeader = "Content-Type"
	AttributePrefix   = "ce-"
)

// Publisher publishes into one stream and watches one durable consumer.
type Publisher struct {
	cfg Config
	nc  *natsgo.Conn
	js  jetstream.JetStream
	str jetstream.Stream

	mu          sync.Mutex
	base        jetstream.SequenceInfo // the consumer's delivered sequences when we began
	published   int64
	dropped     int64
	unconfirmed int64
}

var _ broker.Publisher = (*Publisher)(nil)

// Open connects, finds (or, with Create, makes) the stream and the durable
// consumer, and remembers how far the consumer had got. Every failure is a
// *broker.Error: one sentence, a runtime error.
func Open(ctx context.Context, cfg Config) (*Publisher, error) {
	if cfg.Mode == "" {
		cfg.Mode = broker.Binary
	}
	nc, err := connect(cfg.URL)
	if err != nil {
		return nil, err
	}
	p := &Publisher{cfg: cfg, nc: nc}
	if err := p.open(ctx); err != nil {
		nc.Close()
		return nil, err
	}
	return p, nil
}

func connect(url string) (*natsgo.Conn, error) {
	nc, err := natsgo.Connect(url, natsgo.Name("redeliver"), natsgo.Timeout(5*time.Second), natsgo.RetryOnFailedConnect(false))
	if err != nil {
		return nil, &broker.Error{Msg: fmt.Sprintf("NATS at %s cannot be reached (%v); start nats-server with -js, or fix the url", redact.String(url), err), Err: err}
	}
	return nc, nil
}

func (p *Publisher) open(ctx context.Context) error {
	js, err := jetstream.New(p.nc)
	if err != nil {
		return &broker.Error{Msg: fmt.Sprintf("NATS at %s: %v", redact.String(p.cfg.URL), err), Err: err}
	}
	p.js = js
	p.str, err = js.Stream(ctx, p.cfg.Stream)
	switch {
	case errors.Is(err, jetstream.ErrStreamNotFound) && p.cfg.Create:
		p.str, err = js.CreateStream(ctx, jetstream.StreamConfig{
			Name:       p.cfg.Stream,
			Subjects:   []string{p.cfg.Subject.Pattern("*", ">")},
			Duplicates: p.cfg.Duplicates,
		})
		if err != nil {
			return &broker.Error{Msg: fmt.Sprintf("cannot create JetStream stream %s on %s: %v", p.cfg.Stream, redact.String(p.cfg.URL), err), Err: err}
		}
	case errors.Is(err, jetstream.ErrStreamNotFound):
		return &broker.Error{Msg: fmt.Sprintf("JetStream stream %s does not exist on %s; create it, or set create: true", p.cfg.Stream, redact.String(p.cfg.URL)), Err: err}
	case errors.Is(err, jetstream.ErrJetStreamNotEnabled):
		return &broker.Error{Msg: fmt.Sprintf("NATS at %s has no JetStream; start nats-server with -js", redact.String(p.cfg.URL)), Err: err}
	case err != nil:
		return &broker.Error{Msg: fmt.Sprintf("cannot look up JetStream stream %s on %s: %v", p.cfg.Stream, redact.String(p.cfg.URL), err), Err: err}
	}
	if p.cfg.Consumer == "" {
		return nil
	}
	c, err := p.str.Consumer(ctx, p.cfg.Consumer)
	switch {
	case errors.Is(err, jetstream.ErrConsumerNotFound) && p.cfg.Create:
		wait := p.cfg.AckWait
		if wait <= 0 {
			wait = 30 * time.Second
		}
		c, err = p.str.CreateConsumer(ctx, jetstream.ConsumerConfig{
			Durable:       p.cfg.Consumer,
			AckPolicy:     jetstream.AckExplicitPolicy,
			AckWait:       wait,
			FilterSubject: p.cfg.Subject.Pattern("*", ">"),
		})
		if err != nil {
			return &broker.Error{Msg: fmt.Sprintf("cannot create durable consumer %s on stream %s: %v", p.cfg.Consumer, p.cfg.Stream, err), Err: err}
		}
	case errors.Is(err, jetstream.ErrConsumerNotFound):
		return &broker.Error{Msg: fmt.Sprintf("JetStream stream %s has no durable consumer %s; start the consumer first, or set create: true", p.cfg.Stream, p.cfg.Consumer), Err: err}
	case err != nil:
		return &broker.Error{Msg: fmt.Sprintf("cannot look up consumer %s on stream %s: %v", p.cfg.Consumer, p.cfg.Stream, err), Err: err}
	}
	info, err := c.Info(ctx)
	if err != nil {
		return &broker.Error{Msg: fmt.Sprintf("cannot read consumer %s on stream %s: %v", p.cfg.Consumer, p.cfg.Stream, err), Err: err}
	}
	p.base = info.Delivered
	return nil
}

// Header is the NATS header a message carries: its message id, and in
// binary mode the CloudEvent attributes as ce-* headers.
func Header(m broker.Message, mode broker.Mode) natsgo.Header {
	h := natsgo.Header{}
	h.Set(MsgIDHeader, m.TransportID())
	h.Set(ContentTypeHeader, broker.ContentType(mode))
	if mode != broker.Structured {
		for _, a := range m.Attributes() {
			h.Set(AttributePrefix+a[0], a[1])
		}
	}
	return h
}

// Publish stores one message in the stream and waits for JetStream's ack.
// A message whose id JetStream already holds inside its duplicate window
// is dropped by the server: the receipt says so and the counts keep it.
func (p *Publisher) Publish(ctx context.Context, m broker.Message) (broker.Receipt, error) {
	msg := &natsgo.Msg{Subject: p.cfg.Subject.For(m), Header: Header(m, p.cfg.Mode), Data: m.Body(p.cfg.Mode)}
	ack, err := p.js.PublishMsg(ctx, msg)
	p.mu.Lock()
	defer p.mu.Unlock()
	if err != nil {
		p.unconfirmed++
		why := err.Error()
		if errors.Is(err, jetstream.ErrNoStreamResponse) || errors.Is(err, natsgo.ErrNoResponders) {
			why = "no JetStream stream stores that subject"
		}
		return broker.Receipt{}, &broker.Error{Msg: fmt.Sprintf("JetStream did not store event %s published on %s (%s)", m.ID, msg.Subject, why), Err: err, Counts: p.countsLocked()}
	}
	if ack.Stream != p.cfg.Stream {
		p.unconfirmed++
		return broker.Receipt{}, &broker.Error{Msg: fmt.Sprintf("subject %s is stored by stream %s, not by %s", msg.Subject, ack.Stream, p.cfg.Stream), Counts: p.countsLocked()}
	}
	if ack.Duplicate {
		p.dropped++
	} else {
		p.published++
	}
	return broker.Receipt{Seq: ack.Sequence, Duplicate: ack.Duplicate}, nil
}

func (p *Publisher) countsLocked() broker.Counts {
	return broker.Counts{Published: p.published, Dropped: p.dropped, Unconfirmed: p.unconfirmed,
		Delivered: broker.Unknown, Redelivered: broker.Unknown, Acked: broker.Unknown, Pending: p.published, Unacked: broker.Unknown}
}

// Counts reads the durable consumer. Redeliveries are the consumer's
// deliveries since Open beyond the messages it has been handed at least
// once; every redelivery takes a new consumer sequence.
func (p *Publisher) Counts(ctx context.Context) (broker.Counts, error) {
	p.mu.Lock()
	c := p.countsLocked()
	p.mu.Unlock()
	if p.cfg.Consumer == "" {
		return c, nil
	}
	cons, err := p.str.Consumer(ctx, p.cfg.Consumer)
	var info *jetstream.ConsumerInfo
	if err == nil {
		info, err = cons.Info(ctx)
	}
	if err != nil {
		return c, &broker.Error{Msg: fmt.Sprintf("cannot read consumer %s on stream %s: %v", p.cfg.Consumer, p.cfg.Stream, err), Err: err, Counts: c}
	}
	c.Pending = int64(info.NumPending)
	c.Unacked = int64(info.NumAckPending)
	c.Delivered = int64(info.Delivered.Consumer - p.base.Consumer)
	seen := max(c.Published-c.Pending, 0) // messages handed over at least once
	c.Redelivered = max(c.Delivered-seen, 0)
	c.Acked = max(c.Published-c.Pending-c.Unacked, 0)
	return c, nil
}

// Drain waits until the durable consumer has nothing pending and nothing
// awaiting an ack, on two looks in a row. JetStream's counts are exact, so
// it need not settle longer: a message held by a killed instance stays
// awaiting an ack until AckWait passes and it is delivered again.
func (p *Publisher) Drain(ctx context.Context, o broker.DrainOptions) (broker.Counts, error) {
	if p.cfg.Consumer == "" {
		c, _ := p.Counts(ctx)
		return c, &broker.Error{Msg: "a NATS target needs the durable consumer to watch (consumer:)", Counts: c}
	}
	if o.Settle <= 0 {
		o.Settle = time.Nanosecond
	}
	return broker.WaitDrained(ctx, o, p.Counts,
		func(c broker.Counts) bool { return c.Pending == 0 && c.Unacked == 0 },
		func(c broker.Counts, d time.Duration) *broker.Error {
			return &broker.Error{Msg: fmt.Sprintf("consumer %s did not drain stream %s within %s: %s", p.cfg.Consumer, p.cfg.Stream, d, c), Counts: c}
		})
}

// Close disconnects; it deletes nothing, created or not.
func (p *Publisher) Close() error {
	p.nc.Close()
	return nil
}
