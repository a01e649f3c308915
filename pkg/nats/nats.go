// Package nats publishes deliveries into a NATS JetStream stream for a
// consumer under test to read, watches the consumer's durable until it has
// nothing pending or awaiting an ack, and reads a stream back as a
// captured log. It wraps github.com/nats-io/nats.go.
//
// It registers the nats: target of a scenario with pkg/broker (target.go)
// and nats:// as a capture source with pkg/capture. Of this module it
// imports pkg/broker, pkg/capture, pkg/problem, pkg/redact and
// pkg/scenario (whose NATSTarget it opens), and it links no database
// driver or store.
package nats

import (
	"context"
	"crypto/rand"
	"encoding/hex"
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
	// AckWait is how long the consumer has to ack before JetStream
	// delivers a message again. A durable that Create makes gets it
	// (DefaultAckWait when zero); an existing durable must already have
	// it, when it is set, or Open refuses.
	AckWait time.Duration
	// Duplicates is the duplicate window of a stream that Create makes
	// (default 2m, JetStream's own).
	Duplicates time.Duration
}

// DefaultAckWait is the AckWait of a durable redeliver creates when the
// target names none: short, so that a message an instance held when it
// was killed comes back within seconds, not JetStream's 30s.
const DefaultAckWait = 5 * time.Second

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

	// run makes every Nats-Msg-Id of this publisher its own (see Publish).
	run string

	mu sync.Mutex
	// What the durable held when we began: its delivered sequences, the
	// messages it had not yet delivered and those awaiting an ack. The
	// counts of a run are taken from there.
	base        jetstream.SequenceInfo
	basePending int64
	baseUnacked int64
	sent        int64 // publishes attempted, numbering the Nats-Msg-Ids
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
	b := make([]byte, 4)
	_, _ = rand.Read(b) // crypto/rand.Read does not fail
	p := &Publisher{cfg: cfg, nc: nc, run: hex.EncodeToString(b)}
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
			wait = DefaultAckWait
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
	if p.cfg.AckWait > 0 && info.Config.AckWait != p.cfg.AckWait {
		return &broker.Error{Msg: fmt.Sprintf("durable consumer %s on stream %s has an AckWait of %s, and the target says ack_wait: %s; change one to match (ack_wait sets only a durable redeliver creates)", p.cfg.Consumer, p.cfg.Stream, info.Config.AckWait, p.cfg.AckWait)}
	}
	p.base = info.Delivered
	p.basePending = int64(info.NumPending)
	p.baseUnacked = int64(info.NumAckPending)
	return nil
}

// Header is the NATS header a message carries: msgID as its Nats-Msg-Id,
// and in binary mode the CloudEvent attributes as ce-* headers.
func Header(m broker.Message, msgID string, mode broker.Mode) natsgo.Header {
	h := natsgo.Header{}
	h.Set(MsgIDHeader, msgID)
	h.Set(ContentTypeHeader, broker.ContentType(mode))
	if mode != broker.Structured {
		for _, a := range m.Attributes() {
			h.Set(AttributePrefix+a[0], a[1])
		}
	}
	return h
}

// MsgID is the Nats-Msg-Id of the nth publish of a run: the message's id,
// then the run and n, as in evt-1#5f3a9c01-3. Every publish has its own,
// in this run and any other, so JetStream's duplicate window, which drops
// a message whose Nats-Msg-Id it has seen within the window, never drops
// one: what a scenario or a capture asks to deliver reaches the consumer.
// The event's own id travels unchanged as ce-id (or in the body).
func MsgID(m broker.Message, run string, n int64) string {
	return fmt.Sprintf("%s#%s-%d", m.TransportID(), run, n)
}

// Publish stores one message in the stream and waits for JetStream's ack.
// Should JetStream still drop it as a duplicate, the receipt says so and
// the counts keep it.
func (p *Publisher) Publish(ctx context.Context, m broker.Message) (broker.Receipt, error) {
	p.mu.Lock()
	p.sent++
	id := MsgID(m, p.run, p.sent)
	p.mu.Unlock()
	msg := &natsgo.Msg{Subject: p.cfg.Subject.For(m), Header: Header(m, id, p.cfg.Mode), Data: m.Body(p.cfg.Mode)}
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
	return broker.Receipt{Seq: ack.Sequence, Duplicate: ack.Duplicate, MsgID: id}, nil
}

func (p *Publisher) countsLocked() broker.Counts {
	return broker.Counts{Published: p.published, Dropped: p.dropped, Unconfirmed: p.unconfirmed,
		Delivered: broker.Unknown, Redelivered: broker.Unknown, Acked: broker.Unknown, Pending: p.published, Unacked: broker.Unknown}
}

// Counts reads the durable consumer, measured from what it held at Open:
// the stream need not hold only this run's messages. The messages it has
// handed over since Open are those it had not yet delivered then, plus
// those published since, less those still pending. Redeliveries are its
// deliveries since Open beyond those (every redelivery takes a new
// consumer sequence); acks are what it had to deliver or was awaiting
// then, plus what was published since, less what is pending or awaiting
// an ack now. Pending and awaiting an ack are the durable's own: a run
// ends when the consumer has taken everything, older messages included.
func (p *Publisher) Counts(ctx context.Context) (broker.Counts, error) {
	c, _, err := p.look(ctx)
	return c, err
}

// look is Counts with the durable's info, nil without a durable.
func (p *Publisher) look(ctx context.Context) (broker.Counts, *jetstream.ConsumerInfo, error) {
	p.mu.Lock()
	c := p.countsLocked()
	p.mu.Unlock()
	if p.cfg.Consumer == "" {
		return c, nil, nil
	}
	cons, err := p.str.Consumer(ctx, p.cfg.Consumer)
	var info *jetstream.ConsumerInfo
	if err == nil {
		info, err = cons.Info(ctx)
	}
	if err != nil {
		return c, nil, &broker.Error{Msg: fmt.Sprintf("cannot read consumer %s on stream %s: %v", p.cfg.Consumer, p.cfg.Stream, err), Err: err, Counts: c}
	}
	c.Pending = int64(info.NumPending)
	c.Unacked = int64(info.NumAckPending)
	c.Delivered = int64(info.Delivered.Consumer - p.base.Consumer)
	handed := max(p.basePending+c.Published-c.Pending, 0) // handed over at least once since Open
	c.Redelivered = max(c.Delivered-handed, 0)
	c.Acked = max(p.basePending+p.baseUnacked+c.Published-c.Pending-c.Unacked, 0)
	return c, info, nil
}

// Waiting says how many pull requests the durable holds open: how many
// fetches of its consumers wait for a message now.
func (p *Publisher) Waiting(ctx context.Context) (int, error) {
	_, info, err := p.look(ctx)
	if err != nil || info == nil {
		return 0, err
	}
	return info.NumWaiting, nil
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
	seen := history{broker.Window[durableLook]{Span: stallWindow}}
	counts := func(ctx context.Context) (broker.Counts, error) {
		c, info, err := p.look(ctx)
		if err == nil {
			seen.add(lookOf(time.Now(), info))
		}
		return c, err
	}
	return broker.WaitDrained(ctx, o, counts,
		func(c broker.Counts) bool { return c.Pending == 0 && c.Unacked == 0 },
		func(c broker.Counts, d time.Duration) *broker.Error {
			return &broker.Error{Msg: fmt.Sprintf("consumer %s did not drain stream %s within %s: %s%s", p.cfg.Consumer, p.cfg.Stream, d, c, seen.stalled(time.Now())), Counts: c}
		})
}

// Close disconnects; it deletes nothing, created or not.
func (p *Publisher) Close() error {
	p.nc.Close()
	return nil
}
