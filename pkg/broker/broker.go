// Package broker is what redeliver asks of a real message broker that a
// consumer under test reads from: publish one delivery, say what became of
// the deliveries so far, and decide — from the broker's own counters, not
// a sleep — when the consumer has drained them. The adapters live beside
// it, named for what they wrap: nats (JetStream), amqp (RabbitMQ) and
// kafka. Each registers the scenario targets of its kind (Register,
// target.go): the file format parses a target's fields into a type that
// is a Target, and whoever publishes opens it through AdapterOf, never
// naming a broker.
//
// Of this module it imports only pkg/redact and pkg/template, and it links
// no broker client: the file format, the replay and the reports check
// broker addresses and topic names here.
package broker

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"
)

// Mode is how a CloudEvent travels in a broker message.
type Mode string

// The content modes of the CloudEvents NATS and AMQP bindings.
const (
	// Binary carries the attributes in headers (ce-* on NATS,
	// cloudEvents_* on AMQP) and the data alone as the body.
	Binary Mode = "binary"
	// Structured carries the whole event as application/cloudevents+json.
	Structured Mode = "structured"
)

// ParseMode reads a mode name; empty is Binary.
func ParseMode(s string) (Mode, error) {
	switch Mode(s) {
	case "", Binary:
		return Binary, nil
	case Structured:
		return Structured, nil
	}
	return "", fmt.Errorf("unknown mode %q; expected binary or structured", s)
}

// Message is one delivery handed to a broker.
type Message struct {
	// ID, Source, Type, Subject and Time are the CloudEvent's attributes.
	ID, Source, Type, Subject, Time string
	// Data is the event's JSON payload.
	Data json.RawMessage
	// MsgID is the broker's message id (AMQP message_id; on JetStream the
	// start of Nats-Msg-Id, which also names the run and the publish): the
	// event id unless a step republishes the event under a new one, as an
	// outbox that publishes twice does.
	MsgID string
	// Route is the NATS subject or AMQP routing key; empty means the one
	// the target names.
	Route string
	// Key is the delivery's business key: a Kafka record's key, which
	// keeps one key's records in one partition, in order.
	Key string
}

// TransportID is the message id the broker sees.
func (m Message) TransportID() string {
	if m.MsgID != "" {
		return m.MsgID
	}
	return m.ID
}

// Structured returns the event as one application/cloudevents+json document.
func (m Message) Structured() []byte {
	ev := struct {
		SpecVersion     string          `json:"specversion"`
		ID              string          `json:"id"`
		Source          string          `json:"source"`
		Type            string          `json:"type"`
		Subject         string          `json:"subject,omitempty"`
		Time            string          `json:"time,omitempty"`
		DataContentType string          `json:"datacontenttype"`
		Data            json.RawMessage `json:"data"`
	}{"1.0", m.ID, m.Source, m.Type, m.Subject, m.Time, "application/json", m.data()}
	b, _ := json.Marshal(ev) // strings and valid raw JSON always marshal
	return b
}

func (m Message) data() json.RawMessage {
	if len(m.Data) == 0 {
		return json.RawMessage("null")
	}
	return m.Data
}

// Body is the message body in the given mode.
func (m Message) Body(mode Mode) []byte {
	if mode == Structured {
		return m.Structured()
	}
	return m.data()
}

// Attributes are the CloudEvent attributes a binary-mode message carries
// in headers, by attribute name (without the binding's prefix).
func (m Message) Attributes() [][2]string {
	a := [][2]string{{"specversion", "1.0"}, {"id", m.ID}, {"source", m.Source}, {"type", m.Type}}
	if m.Subject != "" {
		a = append(a, [2]string{"subject", m.Subject})
	}
	if m.Time != "" {
		a = append(a, [2]string{"time", m.Time})
	}
	return a
}

// ContentType is the message's content type in the given mode.
func ContentType(mode Mode) string {
	if mode == Structured {
		return "application/cloudevents+json"
	}
	return "application/json"
}

// Receipt is what the broker answered to one publish.
type Receipt struct {
	// Seq is the stream sequence the message was stored at (JetStream).
	Seq uint64
	// Duplicate is set when the broker dropped the message as a duplicate
	// of one it already holds under the same message id.
	Duplicate bool
	// MsgID is the message id the broker saw, where it is not the
	// message's own (JetStream: see nats.MsgID).
	MsgID string
}

// Unknown marks a count the broker does not report.
const Unknown = -1

// Counts is what the broker did with a run's deliveries.
type Counts struct {
	Published   int64 // stored (JetStream) or confirmed (RabbitMQ) by the broker
	Dropped     int64 // dropped by the duplicate window (JetStream)
	Unconfirmed int64 // publishes the broker refused or never confirmed
	Delivered   int64 // deliveries to the consumer, redeliveries included; Unknown where the broker does not say
	Redelivered int64 // deliveries beyond the first of a message; Unknown where the broker does not say
	Acked       int64 // messages the consumer acknowledged; Unknown where the broker does not say
	Pending     int64 // messages not yet delivered
	Unacked     int64 // messages delivered and awaiting an ack; Unknown where the broker does not say
}

// String says the counts in the words of a report line.
func (c Counts) String() string {
	parts := []string{fmt.Sprintf("%d published", c.Published)}
	if c.Dropped > 0 {
		parts = append(parts, fmt.Sprintf("%d dropped by the duplicate window", c.Dropped))
	}
	if c.Unconfirmed > 0 {
		parts = append(parts, fmt.Sprintf("%d unconfirmed", c.Unconfirmed))
	}
	if c.Acked != Unknown {
		parts = append(parts, fmt.Sprintf("%d acked", c.Acked))
	}
	pending := fmt.Sprintf("%d still pending", c.Pending)
	if c.Unacked != Unknown {
		pending = fmt.Sprintf("%d still pending, %d awaiting an ack", c.Pending, c.Unacked)
	}
	parts = append(parts, pending)
	if c.Redelivered != Unknown {
		parts = append(parts, fmt.Sprintf("%d redelivered by the broker", c.Redelivered))
	}
	return strings.Join(parts, ", ")
}

// Error is a broker that failed the run: unreachable, a stream or queue
// that does not exist, a publish not confirmed, a consumer that never
// drained. It is a runtime error (exit status 3) and carries the counts so
// far, so the report can say what was published, acked and left pending.
type Error struct {
	Msg    string // one sentence
	Counts Counts
	Err    error // the cause, if any
}

func (e *Error) Error() string { return e.Msg }
func (e *Error) Unwrap() error { return e.Err }

// Publisher publishes deliveries into a broker for a consumer to read, and
// watches the consumer drain them. Implementations are safe for concurrent
// use.
type Publisher interface {
	// Publish hands one message to the broker and returns once the broker
	// has stored (or dropped, or refused) it. A refused or unconfirmed
	// publish is an *Error.
	Publish(ctx context.Context, m Message) (Receipt, error)
	// Counts asks the broker how far the consumer has got.
	Counts(ctx context.Context) (Counts, error)
	// Drain returns once the broker says the consumer has nothing left,
	// or an *Error when it still has something after the timeout.
	Drain(ctx context.Context, o DrainOptions) (Counts, error)
	// Close disconnects. It deletes nothing.
	Close() error
}

// DrainOptions say how long to wait for a consumer to drain.
type DrainOptions struct {
	// Timeout is how long the consumer may take in all (default 60s).
	Timeout time.Duration
	// Settle is how long the broker must stay drained before the run
	// ends (default 1s): a RabbitMQ queue looks empty while an instance
	// still holds unacknowledged messages, which come back if it dies.
	Settle time.Duration
	// Poll is how often the broker is asked (default 50ms).
	Poll time.Duration
}

// DefaultSettle is how long a broker must stay drained, by default,
// before a run ends.
const DefaultSettle = time.Second

func (o *DrainOptions) defaults() {
	if o.Timeout <= 0 {
		o.Timeout = 60 * time.Second
	}
	if o.Settle <= 0 {
		o.Settle = DefaultSettle
	}
	if o.Poll <= 0 {
		o.Poll = 50 * time.Millisecond
	}
}

// WaitDrained asks counts every Poll until drained says the consumer has
// nothing left for Settle without a break, or Timeout passes (an *Error
// naming what is left, made by late).
func WaitDrained(ctx context.Context, o DrainOptions, counts func(context.Context) (Counts, error), drained func(Counts) bool, late func(Counts, time.Duration) *Error) (Counts, error) {
	o.defaults()
	deadline := time.Now().Add(o.Timeout)
	var since time.Time
	for {
		c, err := counts(ctx)
		if err != nil {
			return c, err
		}
		now := time.Now()
		if drained(c) {
			if since.IsZero() {
				since = now
			}
			if now.Sub(since) >= o.Settle {
				return c, nil
			}
		} else {
			since = time.Time{}
		}
		if now.After(deadline) {
			return c, late(c, o.Timeout)
		}
		t := time.NewTimer(o.Poll)
		select {
		case <-ctx.Done():
			t.Stop()
			return c, ctx.Err()
		case <-t.C:
		}
	}
}
