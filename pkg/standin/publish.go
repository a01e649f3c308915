package standin

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	natsgo "github.com/nats-io/nats.go"
	amqp091 "github.com/rabbitmq/amqp091-go"
	"github.com/redeliver/redeliver/pkg/template"
	"github.com/tidwall/gjson"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// publishTimeout bounds what StartPublished does on the network (connect,
// subscribe, list offsets) when ctx has no earlier deadline.
const publishTimeout = 15 * time.Second

// PublishConfig names where the consumer publishes; exactly one of NATS,
// AMQP, Kafka is set.
type PublishConfig struct {
	NATS    string // nats://HOST:PORT; with Subject (core NATS subscription; wildcards allowed)
	Subject string
	AMQP    string // amqp://user:pass@HOST:PORT/vhost; with Queue (declared if missing: durable=false, auto-delete=false; consumed with auto-ack)
	Queue   string
	Kafka   []string // bootstrap brokers HOST:PORT; with Topic (read from the end of each partition's log as it was at the start; no consumer group)
	Topic   string
}

// The headers an event id is taken from, first found, before a structured
// CloudEvent body's "id" (see publishedEnvelope). AMQP's MessageId
// property comes before its headers.
var (
	natsIDHeaders  = []string{"Nats-Msg-Id", "ce-id"}
	amqpIDHeaders  = []string{"cloudEvents_id", "cloudEvents:id"}
	kafkaIDHeaders = []string{"ce_id"}
)

// Published is a stand-in for what a consumer publishes downstream: it
// subscribes where the consumer publishes (a NATS subject, a RabbitMQ
// queue or a Kafka topic) and records each message as a Call with Method
// "PUBLISH". A message is performed (an effect a downstream cannot
// dedupe) when it has no event id, or an id not seen before with the same
// Key; a message repeating an id already seen for its Key is Replayed.
type Published struct {
	name  string
	key   template.Template
	where string // what the stand-in reads, for messages

	stop      func() error  // ends the subscription and the connection
	done      chan struct{} // closed when no more message can be recorded
	closeOnce sync.Once
	closeErr  error

	mu       sync.Mutex
	closed   bool
	lost     error // the subscription ended before Close
	seq      int
	delivery string
	// after is the delivery that was in flight alone until ended (see
	// Ended), which labels a message arriving within LateWindow with
	// none in flight.
	after string
	ended time.Time
	calls []*Call
	seen  map[[2]string]bool // {Key, id} of the messages recorded
	last  time.Time          // when the last message arrived
}

// StartPublished subscribes a stand-in named name where cfg says and
// returns once it is subscribed: a message published after it returns is
// recorded. key is the effect key template, expanded with gjson paths over
// the message's envelope JSON ({data.orderId}, {id}, {subject},
// {headers.ce-type}, {body}; see publishedEnvelope).
func StartPublished(ctx context.Context, name string, cfg PublishConfig, key template.Template) (*Published, error) {
	set := 0
	for _, on := range []bool{cfg.NATS != "", cfg.AMQP != "", len(cfg.Kafka) > 0} {
		if on {
			set++
		}
	}
	if set != 1 {
		return nil, fmt.Errorf("stand-in %s: exactly one of NATS, AMQP and Kafka is to be set, %d are", name, set)
	}
	p := &Published{name: name, key: key, done: make(chan struct{}), seen: map[[2]string]bool{}}
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, publishTimeout)
		defer cancel()
	}
	var err error
	switch {
	case cfg.NATS != "":
		err = p.startNATS(ctx, cfg.NATS, cfg.Subject)
	case cfg.AMQP != "":
		err = p.startAMQP(ctx, cfg.AMQP, cfg.Queue)
	default:
		err = p.startKafka(ctx, cfg.Kafka, cfg.Topic)
	}
	if err != nil {
		return nil, fmt.Errorf("stand-in %s: %w", name, err)
	}
	return p, nil
}

func (p *Published) startNATS(ctx context.Context, server, subject string) error {
	if subject == "" {
		return errors.New("NATS needs a subject")
	}
	p.where = "NATS subject " + subject
	opts := []natsgo.Option{
		natsgo.Name("redeliver stand-in " + p.name),
		natsgo.Timeout(timeLeft(ctx)),
		// A message published while disconnected is lost to a core
		// subscription: Settle says so.
		natsgo.DisconnectErrHandler(func(_ *natsgo.Conn, err error) {
			if err != nil {
				p.setLost(fmt.Errorf("disconnected from NATS: %w", err))
			}
		}),
	}
	nc, err := natsgo.Connect(server, opts...)
	if err != nil {
		return fmt.Errorf("cannot connect to NATS at %s: %w", server, err)
	}
	sub, err := nc.Subscribe(subject, func(m *natsgo.Msg) {
		p.record(m.Subject, m.Header, m.Data, "", natsIDHeaders)
	})
	if err == nil {
		_ = sub.SetPendingLimits(-1, -1) // never drop a message as a slow consumer
		// The subscription is known to the server once a round trip after it returns.
		err = nc.FlushWithContext(ctx)
	}
	if err != nil {
		nc.Close()
		return fmt.Errorf("cannot subscribe to NATS subject %s: %w", subject, err)
	}
	p.stop = func() error {
		nc.Close() // callbacks may still run: record drops them once closed
		close(p.done)
		return nil
	}
	return nil
}

func (p *Published) startAMQP(ctx context.Context, server, queue string) error {
	if queue == "" {
		return errors.New("AMQP needs a queue")
	}
	p.where = "AMQP queue " + queue
	conn, err := amqp091.DialConfig(server, amqp091.Config{
		Dial:       amqp091.DefaultDial(timeLeft(ctx)),
		Properties: amqp091.Table{"connection_name": "redeliver stand-in " + p.name},
	})
	if err != nil {
		return fmt.Errorf("cannot connect to RabbitMQ at %s: %w", redactURL(server), err)
	}
	fail := func(format string, err error) error {
		_ = conn.Close()
		return fmt.Errorf(format, queue, err)
	}
	ch, err := conn.Channel()
	if err != nil {
		return fail("cannot open a channel for queue %s: %w", err)
	}
	// A queue that exists is taken as it is; a missing one (which closes
	// the channel) is declared on a new channel.
	if _, err := ch.QueueDeclarePassive(queue, false, false, false, false, nil); err != nil {
		var ae *amqp091.Error
		if !errors.As(err, &ae) || ae.Code != amqp091.NotFound {
			return fail("cannot look up queue %s: %w", err)
		}
		if ch, err = conn.Channel(); err != nil {
			return fail("cannot open a channel for queue %s: %w", err)
		}
		if _, err := ch.QueueDeclare(queue, false, false, false, false, nil); err != nil {
			return fail("cannot declare queue %s: %w", err)
		}
	}
	// Consume returns once the server confirmed the consumer.
	deliveries, err := ch.Consume(queue, "redeliver-standin-"+p.name, true, false, false, false, nil)
	if err != nil {
		return fail("cannot consume queue %s: %w", err)
	}
	closed := conn.NotifyClose(make(chan *amqp091.Error, 1))
	go p.consumeAMQP(queue, deliveries, closed)
	p.stop = func() error {
		err := conn.Close()
		if errors.Is(err, amqp091.ErrClosed) {
			err = nil // the server closed it first; Settle said so
		}
		<-p.done
		return err
	}
	return nil
}

// consumeAMQP records each message of the queue as it is delivered,
// until the consumer ends; then it says why: the connection was lost
// (closed says how), or RabbitMQ ended the consumer.
func (p *Published) consumeAMQP(queue string, deliveries <-chan amqp091.Delivery, closed <-chan *amqp091.Error) {
	defer close(p.done)
	for d := range deliveries {
		p.record(queue, amqpHeader(d), d.Body, d.MessageId, amqpIDHeaders)
	}
	if err, ok := <-closed; ok && err != nil {
		p.setLost(fmt.Errorf("RabbitMQ connection lost: %w", err))
	} else {
		p.setLost(errors.New("RabbitMQ ended the consumer"))
	}
}

// amqpHeader is a delivery's headers: its table headers as strings, and
// its Message-Id, Content-Type and Type properties, which win over table
// headers of the same names.
func amqpHeader(d amqp091.Delivery) map[string][]string {
	h := make(map[string][]string, len(d.Headers)+3)
	for k, v := range d.Headers {
		h[k] = []string{tableString(v)}
	}
	for _, kv := range [][2]string{{"Message-Id", d.MessageId}, {"Content-Type", d.ContentType}, {"Type", d.Type}} {
		if kv[1] != "" {
			h[kv[0]] = []string{kv[1]}
		}
	}
	return h
}

// tableString is an AMQP table value as a string: a string or bytes as
// they are, anything else as fmt prints it.
func tableString(v any) string {
	switch v := v.(type) {
	case string:
		return v
	case []byte:
		return string(v)
	case nil:
		return ""
	default:
		return fmt.Sprint(v)
	}
}

func (p *Published) startKafka(ctx context.Context, brokers []string, topic string) error {
	if topic == "" {
		return errors.New("a Kafka stand-in needs a topic")
	}
	p.where = "Kafka topic " + topic
	opts := []kgo.Opt{
		kgo.SeedBrokers(brokers...),
		kgo.ClientID("redeliver-standin"),
		kgo.DialTimeout(5 * time.Second),
	}
	parts, err := kafkaEnds(ctx, opts, topic)
	if err != nil {
		return err
	}
	cl, err := kgo.NewClient(append(opts, kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: parts}))...)
	if err != nil {
		return fmt.Errorf("cannot reach Kafka: %w", err)
	}
	pctx, cancel := context.WithCancel(context.Background())
	go p.consumeKafka(pctx, cl)
	p.stop = func() error {
		cancel()
		<-p.done
		cl.Close()
		return nil
	}
	return nil
}

// kafkaEnds is where the stand-in starts reading each partition of the
// topic: at its end as it is now.
func kafkaEnds(ctx context.Context, opts []kgo.Opt, topic string) (map[int32]kgo.Offset, error) {
	adm, err := kgo.NewClient(opts...)
	if err != nil {
		return nil, fmt.Errorf("cannot reach Kafka: %w", err)
	}
	ends, err := kadm.NewClient(adm).ListEndOffsets(ctx, topic)
	adm.Close()
	if err == nil {
		err = ends.Error()
	}
	if err != nil {
		return nil, fmt.Errorf("cannot read the end offsets of Kafka topic %s: %w", topic, err)
	}
	// Each partition is read directly from its end as it is now: a record
	// produced after Start returns has an offset at or past it.
	parts := map[int32]kgo.Offset{}
	for part, o := range ends[topic] {
		parts[part] = kgo.NewOffset().At(o.Offset)
	}
	if len(parts) == 0 {
		return nil, fmt.Errorf("the Kafka topic %s has no partitions", topic)
	}
	return parts, nil
}

// consumeKafka records each record the client fetches, until ctx ends
// or the client is closed.
func (p *Published) consumeKafka(ctx context.Context, cl *kgo.Client) {
	defer close(p.done)
	for {
		fs := cl.PollFetches(ctx)
		if ctx.Err() != nil || fs.IsClientClosed() {
			return
		}
		// Fetch errors are retried by the client; records come in
		// offset order per partition.
		fs.EachRecord(func(r *kgo.Record) {
			h := make(map[string][]string, len(r.Headers))
			for _, rh := range r.Headers {
				h[rh.Key] = append(h[rh.Key], string(rh.Value))
			}
			p.record(r.Topic, h, r.Value, "", kafkaIDHeaders)
		})
	}
}

// timeLeft is how long ctx still has, at least a second.
func timeLeft(ctx context.Context) time.Duration {
	d, ok := ctx.Deadline()
	if !ok {
		return publishTimeout
	}
	return max(time.Until(d), time.Second)
}

// redactURL is u with its password hidden.
func redactURL(u string) string {
	pu, err := url.Parse(u)
	if err != nil {
		return "the AMQP URL"
	}
	return pu.Redacted()
}

// record keeps a message as a Call. id is an event id the transport
// carries apart from the headers ("" none); idHeaders are the headers
// looked in after it.
func (p *Published) record(path string, header map[string][]string, body []byte, id string, idHeaders []string) {
	env, id := publishedEnvelope(path, header, body, id, idHeaders)
	c := &Call{
		External: p.name,
		At:       time.Now(),
		Method:   "PUBLISH",
		Path:     path,
		Header:   header,
		Body:     body,
		Key:      expandKey(p.key, env),
		IdemKey:  id,
	}
	if c.Header == nil {
		c.Header = map[string][]string{}
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return
	}
	p.seq++
	c.Seq = p.seq
	c.Delivery = p.delivery
	if c.Delivery == "" && p.after != "" && c.At.Sub(p.ended) < LateWindow {
		c.Delivery = p.after
	}
	c.Performed = true
	if id != "" {
		k := [2]string{c.Key, id}
		if p.seen[k] {
			c.Performed, c.Replayed = false, true
		}
		p.seen[k] = true
	}
	p.calls = append(p.calls, c)
	p.last = c.At
}

func (p *Published) setLost(err error) {
	p.mu.Lock()
	if !p.closed && p.lost == nil {
		p.lost = err
	}
	p.mu.Unlock()
}

// Name is the stand-in's name.
func (p *Published) Name() string { return p.name }

// Calls returns a copy of the messages recorded since the start or the
// last Reset, in arrival order.
func (p *Published) Calls() []Call {
	p.mu.Lock()
	defer p.mu.Unlock()
	return copyCalls(p.calls)
}

// Reset forgets the messages, the event ids seen and the numbering.
func (p *Published) Reset() {
	p.mu.Lock()
	p.seq = 0
	p.calls = nil
	p.seen = map[[2]string]bool{}
	p.mu.Unlock()
}

// SetDelivery labels the messages that arrive from now on with id ("" none).
func (p *Published) SetDelivery(id string) {
	p.mu.Lock()
	p.delivery, p.after = id, ""
	p.mu.Unlock()
}

// LateWindow is how long after the end of a delivery that was in flight
// alone a message arriving with none in flight is still labelled with
// it: publishing is asynchronous, and what a delivery published may reach
// the subscriber after its answer (a loaded broker or machine takes
// hundreds of milliseconds).
const LateWindow = 2 * time.Second

// Ended says that the delivery id, in flight alone, ended with no other
// in flight: a message arriving within LateWindow, before another
// delivery, is labelled with it.
func (p *Published) Ended(id string) {
	p.mu.Lock()
	p.after, p.ended = id, time.Now()
	p.mu.Unlock()
}

// Settle waits until no message arrived for quiet, counted from the call
// or from the last message, whichever is later: publishing is
// asynchronous, so the caller settles before it reads Calls to judge. It
// returns ctx's error if ctx ends first, and an error if the subscription
// was lost (messages may then be missing).
func (p *Published) Settle(ctx context.Context, quiet time.Duration) error {
	from := time.Now()
	t := time.NewTimer(quiet)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-t.C:
		}
		p.mu.Lock()
		last, lost := p.last, p.lost
		p.mu.Unlock()
		if lost != nil {
			return fmt.Errorf("stand-in %s: %s: %w", p.name, p.where, lost)
		}
		if last.Before(from) {
			last = from
		}
		wait := time.Until(last.Add(quiet))
		if wait <= 0 {
			return nil
		}
		t.Reset(wait)
	}
}

// Close ends the subscription and the connection; no message is recorded
// after it returns. It is idempotent.
func (p *Published) Close() error {
	p.closeOnce.Do(func() {
		p.mu.Lock()
		p.closed = true
		p.mu.Unlock()
		p.closeErr = p.stop()
	})
	return p.closeErr
}

// publishedEnvelope is the JSON a key template reads for a published
// message, and the message's event id:
//
//	{"subject":…,"headers":{lower-case name: first value},"id":…,"body":…,"data":…}
//
// The id is id when it is not "", else the first of idHeaders (matched in
// any case) present with a value, else the top-level "id" of a structured
// CloudEvent body (a JSON object with "specversion"), else "". The body is
// the payload as JSON when it is valid JSON (and valid UTF-8), else a
// string; data is the structured CloudEvent's "data" member (null when it
// has none), else the body. The result is always valid JSON.
func publishedEnvelope(subject string, header map[string][]string, body []byte, id string, idHeaders []string) ([]byte, string) {
	headers := firstValues(header, true)
	if id == "" {
		for _, h := range idHeaders {
			if v := headers[strings.ToLower(h)]; v != "" {
				id = v
				break
			}
		}
	}
	var bodyJS, data json.RawMessage
	if utf8.Valid(body) && json.Valid(body) {
		bodyJS = body
		data = body
		if r := gjson.ParseBytes(body); r.IsObject() && objectHas(r, "specversion") {
			if id == "" {
				if v := member(r, "id"); v.Exists() && v.Type != gjson.Null {
					id = v.String()
				}
			}
			data = json.RawMessage("null")
			if v := member(r, "data"); v.Exists() {
				data = json.RawMessage(v.Raw)
			}
		}
	} else {
		bodyJS, _ = json.Marshal(string(body))
		data = bodyJS
	}
	b, err := json.Marshal(struct {
		Subject string            `json:"subject"`
		Headers map[string]string `json:"headers"`
		ID      string            `json:"id"`
		Body    json.RawMessage   `json:"body"`
		Data    json.RawMessage   `json:"data"`
	}{subject, headers, id, bodyJS, data})
	if err != nil {
		// Cannot happen: the body and data are valid JSON.
		b, _ = json.Marshal(map[string]string{"subject": subject, "id": id})
	}
	return b, id
}

// member is the top-level member name of the JSON object r, the first if
// it repeats; unlike r.Get, no gjson path syntax applies to name.
func member(r gjson.Result, name string) gjson.Result {
	var out gjson.Result
	r.ForEach(func(k, v gjson.Result) bool {
		if k.String() == name {
			out = v
			return false
		}
		return true
	})
	return out
}

func objectHas(r gjson.Result, name string) bool { return member(r, name).Exists() }
