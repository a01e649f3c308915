// Package amqp publishes deliveries into RabbitMQ for a consumer under
// test to read, with publisher confirms so that no publish is lost
// silently, and watches the consumer's queue until it is empty and stays
// empty. It wraps github.com/rabbitmq/amqp091-go.
//
// It registers the amqp: target of a scenario with pkg/broker
// (target.go). Of this module it imports pkg/broker, pkg/redact and
// pkg/scenario (whose AMQPTarget it opens), and it links no database
// driver or store.
package amqp

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	amqp091 "github.com/rabbitmq/amqp091-go"
	"github.com/redeliver/redeliver/pkg/broker"
	"github.com/redeliver/redeliver/pkg/redact"
)

// Config names the exchange, routing key and queue a target uses.
type Config struct {
	URL        string       // amqp://USER:PASS@HOST:5672/VHOST
	Exchange   string       // "" is the default exchange, which routes by queue name
	RoutingKey broker.Route // e.g. orders.{type}; default: the queue's name
	Queue      string       // the queue the consumer reads: the run ends when it stays empty
	Mode       broker.Mode  // binary (cloudEvents_* headers, the default) or structured
	// Create declares the exchange (topic, durable) and the queue
	// (durable), and binds them, when they do not exist. Without it,
	// redeliver declares nothing.
	Create bool
}

// AttributePrefix starts the header of each CloudEvent attribute in
// binary mode (the AMQP binding's application properties).
const AttributePrefix = "cloudEvents_"

// Publisher publishes with confirms on one channel and looks at the queue
// on another.
type Publisher struct {
	cfg  Config
	name string // the URL without its password, for messages
	conn *amqp091.Connection

	pubMu    sync.Mutex // the publishing channel and returns
	pub      *amqp091.Channel
	returns  chan amqp091.Return
	returned map[string]int // message ids the broker routed to no queue

	inspMu sync.Mutex
	insp   *amqp091.Channel

	mu          sync.Mutex
	published   int64
	unconfirmed int64
}

var _ broker.Publisher = (*Publisher)(nil)

// Open connects and finds (or, with Create, declares) the exchange and
// queue. Every failure is a *broker.Error: one sentence, a runtime error.
func Open(ctx context.Context, cfg Config) (*Publisher, error) {
	if cfg.Mode == "" {
		cfg.Mode = broker.Binary
	}
	if cfg.RoutingKey.IsZero() {
		r, err := broker.ParseRoute(cfg.Queue)
		if err != nil {
			return nil, &broker.Error{Msg: fmt.Sprintf("queue name %q cannot be a routing key: %v", cfg.Queue, err)}
		}
		cfg.RoutingKey = r
	}
	p := &Publisher{cfg: cfg, name: redact.String(cfg.URL), returned: map[string]int{}}
	conn, err := amqp091.DialConfig(cfg.URL, amqp091.Config{Dial: amqp091.DefaultDial(5 * time.Second), Properties: amqp091.Table{"connection_name": "redeliver"}})
	if err != nil {
		return nil, &broker.Error{Msg: fmt.Sprintf("RabbitMQ at %s cannot be reached (%v); start it, or fix the url", p.name, err), Err: err}
	}
	p.conn = conn
	if err := p.open(); err != nil {
		conn.Close()
		return nil, err
	}
	return p, nil
}

// Name is the broker's URL without its password.
func (p *Publisher) Name() string { return p.name }

func (p *Publisher) fail(format string, args ...any) *broker.Error {
	var cause error
	for _, a := range args {
		if e, ok := a.(error); ok {
			cause = e
		}
	}
	return &broker.Error{Msg: fmt.Sprintf(format, args...), Err: cause, Counts: p.countsLocal()}
}

func notFound(err error) bool {
	var ae *amqp091.Error
	return errors.As(err, &ae) && ae.Code == amqp091.NotFound
}

func (p *Publisher) channel() (*amqp091.Channel, error) {
	ch, err := p.conn.Channel()
	if err != nil {
		return nil, p.fail("cannot open a channel to RabbitMQ at %s: %v", p.name, err)
	}
	return ch, nil
}

func (p *Publisher) open() error {
	var err error
	if p.insp, err = p.channel(); err != nil {
		return err
	}
	if p.cfg.Exchange != "" {
		err := p.insp.ExchangeDeclarePassive(p.cfg.Exchange, "topic", true, false, false, false, nil)
		switch {
		case notFound(err) && p.cfg.Create:
			if p.insp, err = p.channel(); err != nil {
				return err
			}
			if err := p.insp.ExchangeDeclare(p.cfg.Exchange, "topic", true, false, false, false, nil); err != nil {
				return p.fail("cannot declare exchange %s on %s: %v", p.cfg.Exchange, p.name, err)
			}
		case notFound(err):
			return p.fail("RabbitMQ exchange %s does not exist on %s; declare it, or set create: true", p.cfg.Exchange, p.name)
		case err != nil:
			return p.fail("cannot look up exchange %s on %s: %v", p.cfg.Exchange, p.name, err)
		}
	}
	if _, err := p.queue(); err != nil {
		if !notFound(errors.Unwrap(err)) || !p.cfg.Create {
			return err
		}
		if p.insp, err = p.channel(); err != nil {
			return err
		}
		if _, err := p.insp.QueueDeclare(p.cfg.Queue, true, false, false, false, nil); err != nil {
			return p.fail("cannot declare queue %s on %s: %v", p.cfg.Queue, p.name, err)
		}
		if p.cfg.Exchange != "" {
			if err := p.insp.QueueBind(p.cfg.Queue, p.cfg.RoutingKey.Pattern("*", "#"), p.cfg.Exchange, false, nil); err != nil {
				return p.fail("cannot bind queue %s to exchange %s: %v", p.cfg.Queue, p.cfg.Exchange, err)
			}
		}
	}
	if p.pub, err = p.channel(); err != nil {
		return err
	}
	if err := p.pub.Confirm(false); err != nil {
		return p.fail("RabbitMQ at %s refused publisher confirms: %v", p.name, err)
	}
	p.returns = p.pub.NotifyReturn(make(chan amqp091.Return, 256))
	return nil
}

// queue looks the queue up without declaring it. A passive declare of a
// missing queue closes the channel, so the next look opens another.
func (p *Publisher) queue() (amqp091.Queue, error) {
	p.inspMu.Lock()
	defer p.inspMu.Unlock()
	if p.insp == nil || p.insp.IsClosed() {
		ch, err := p.channel()
		if err != nil {
			return amqp091.Queue{}, err
		}
		p.insp = ch
	}
	q, err := p.insp.QueueDeclarePassive(p.cfg.Queue, true, false, false, false, nil)
	switch {
	case notFound(err):
		return q, &broker.Error{Msg: fmt.Sprintf("RabbitMQ queue %s does not exist on %s; declare it, or set create: true", p.cfg.Queue, p.name), Err: err, Counts: p.countsLocal()}
	case err != nil:
		return q, p.fail("cannot look up queue %s on %s: %v", p.cfg.Queue, p.name, err)
	}
	return q, nil
}

// Publishing is the AMQP message of one delivery: message_id from the
// transport id, persistent, and in binary mode the CloudEvent attributes
// as cloudEvents_* headers.
func Publishing(m broker.Message, mode broker.Mode) amqp091.Publishing {
	pub := amqp091.Publishing{
		MessageId:    m.TransportID(),
		ContentType:  broker.ContentType(mode),
		DeliveryMode: amqp091.Persistent,
		AppId:        "redeliver",
		Body:         m.Body(mode),
	}
	if mode != broker.Structured {
		pub.Headers = amqp091.Table{}
		for _, a := range m.Attributes() {
			pub.Headers[AttributePrefix+a[0]] = a[1]
		}
	}
	return pub
}

// Publish sends one persistent message with the mandatory flag and waits
// for the broker's confirm. A nack, a message routed to no queue, or no
// confirm before ctx ends is an *broker.Error, counted as unconfirmed.
func (p *Publisher) Publish(ctx context.Context, m broker.Message) (broker.Receipt, error) {
	key := p.cfg.RoutingKey.For(m)
	dc, err := p.pub.PublishWithDeferredConfirmWithContext(ctx, p.cfg.Exchange, key, true, false, Publishing(m, p.cfg.Mode))
	if err != nil {
		return broker.Receipt{}, p.unconfirmedErr("RabbitMQ did not take event %s (%v)", m.ID, err)
	}
	acked, err := dc.WaitContext(ctx)
	if err != nil {
		return broker.Receipt{}, p.unconfirmedErr("RabbitMQ did not confirm the publish of event %s (%v)", m.ID, err)
	}
	if !acked {
		return broker.Receipt{}, p.unconfirmedErr("RabbitMQ refused the publish of event %s (nack)", m.ID)
	}
	// A mandatory message nobody's queue takes comes back before its ack.
	if p.wasReturned(m.TransportID()) {
		where := "the default exchange"
		if p.cfg.Exchange != "" {
			where = "exchange " + p.cfg.Exchange
		}
		return broker.Receipt{}, p.unconfirmedErr("%s routed event %s (routing key %s) to no queue", where, m.ID, key)
	}
	p.mu.Lock()
	p.published++
	p.mu.Unlock()
	return broker.Receipt{}, nil
}

func (p *Publisher) wasReturned(id string) bool {
	p.pubMu.Lock()
	defer p.pubMu.Unlock()
	for {
		select {
		case r := <-p.returns:
			p.returned[r.MessageId]++
			continue
		default:
		}
		break
	}
	if p.returned[id] > 0 {
		p.returned[id]--
		return true
	}
	return false
}

func (p *Publisher) unconfirmedErr(format string, args ...any) error {
	p.mu.Lock()
	p.unconfirmed++
	p.mu.Unlock()
	return p.fail(format, args...)
}

func (p *Publisher) countsLocal() broker.Counts {
	p.mu.Lock()
	defer p.mu.Unlock()
	return broker.Counts{Published: p.published, Unconfirmed: p.unconfirmed,
		Delivered: broker.Unknown, Redelivered: broker.Unknown, Acked: broker.Unknown, Pending: p.published, Unacked: broker.Unknown}
}

// Counts reads the queue's ready messages. RabbitMQ does not tell an AMQP
// client how many are delivered and unacknowledged, nor how many it
// redelivered: those stay Unknown here.
func (p *Publisher) Counts(ctx context.Context) (broker.Counts, error) {
	c, _, err := p.look()
	return c, err
}

// look is Counts with the queue as the broker declared it.
func (p *Publisher) look() (broker.Counts, amqp091.Queue, error) {
	c := p.countsLocal()
	q, err := p.queue()
	if err != nil {
		return c, q, err
	}
	c.Pending = int64(q.Messages)
	return c, q, nil
}

// ReadyOnceGone waits, at most wait, until the queue has no consumer,
// then reports how many messages it holds ready. It is how an ack shows
// once the instance that took a message is gone: RabbitMQ shows another
// client no ack, but when a consumer's channel closes the queue drops its
// consumers and puts back what they had not acked in one step, so a queue
// with no consumer left and no message ready holds nothing an instance
// took and did not ack — it acked it (or rejected it for good, which
// looks the same) before it went. known is false when a consumer stayed
// (another instance, or one redeliver did not start) or the queue could
// not be read.
func (p *Publisher) ReadyOnceGone(ctx context.Context, wait time.Duration) (ready int, known bool) {
	deadline := time.Now().Add(wait)
	for {
		_, q, err := p.look()
		switch {
		case err != nil:
			return 0, false
		case q.Consumers == 0:
			return q.Messages, true
		case time.Now().After(deadline):
			return 0, false
		}
		select {
		case <-ctx.Done():
			return 0, false
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// Drain waits until the queue is empty and stays empty for the settle
// time: a killed instance's unacknowledged messages come back to the
// queue when its channel closes, so one empty look is not enough.
func (p *Publisher) Drain(ctx context.Context, o broker.DrainOptions) (broker.Counts, error) {
	seen := history{broker.Window[queueLook]{Span: stallWindow}}
	counts := func(context.Context) (broker.Counts, error) {
		c, q, err := p.look()
		if err == nil {
			seen.add(queueLook{at: time.Now(), ready: q.Messages, consumers: q.Consumers})
		}
		return c, err
	}
	return broker.WaitDrained(ctx, o, counts,
		func(c broker.Counts) bool { return c.Pending == 0 },
		func(c broker.Counts, d time.Duration) *broker.Error {
			return &broker.Error{Msg: fmt.Sprintf("queue %s was not drained within %s: %s%s", p.cfg.Queue, d, c, seen.stalled()), Counts: c}
		})
}

// Close disconnects; it deletes nothing, declared or not.
func (p *Publisher) Close() error {
	return p.conn.Close()
}
