// Package kafka produces deliveries to a Kafka topic for a consumer group
// under test to read, watches the group's committed offsets until they
// reach the end of every partition, and reads a topic back as a captured
// log. It wraps github.com/twmb/franz-go (kgo, and kadm for the admin
// requests).
//
// It registers the kafka: target of a scenario with pkg/broker
// (target.go) and kafka:// as a capture source with pkg/capture. Of this
// module it imports pkg/broker, pkg/capture, pkg/problem and
// pkg/scenario (whose KafkaTarget it opens), and it links no database
// driver or store.
package kafka

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/redeliver/redeliver/pkg/broker"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
)

// Config names the topic and consumer group a target uses.
type Config struct {
	Brokers []string // HOST:PORT of the bootstrap brokers
	Topic   string
	Group   string      // the consumer group whose committed offsets end the run
	Mode    broker.Mode // binary (ce_* headers, the default) or structured
	// Create makes the topic when it does not exist, with Partitions
	// partitions (0: the cluster's default) and the cluster's default
	// replication. Without it, redeliver creates nothing.
	Create     bool
	Partitions int
}

// The headers of the CloudEvents Kafka binding.
const (
	AttributePrefix   = "ce_"
	ContentTypeHeader = "content-type"
)

// openTimeout bounds the first look at the cluster: a broker that does not
// answer is refused in one sentence, not retried for minutes.
const openTimeout = 15 * time.Second

// Publisher produces to one topic and watches one consumer group.
type Publisher struct {
	cfg  Config
	name string // the brokers, for messages
	cl   *kgo.Client
	adm  *kadm.Client

	mu sync.Mutex
	// base is each partition's committed offset (or, where the group has
	// none, its start) when we began: the records committed since count
	// as acked.
	base        map[int32]int64
	published   int64
	unconfirmed int64
	// manual produces to the partition a record names (PublishTo),
	// opened on first use.
	manual *kgo.Client
}

var _ broker.Publisher = (*Publisher)(nil)

// Name is the brokers as messages name them.
func Name(brokers []string) string { return strings.Join(brokers, ",") }

func newClient(brokers []string, opts ...kgo.Opt) (*kgo.Client, error) {
	opts = append([]kgo.Opt{
		kgo.SeedBrokers(brokers...),
		kgo.ClientID("redeliver"),
		kgo.DialTimeout(5 * time.Second),
	}, opts...)
	cl, err := kgo.NewClient(opts...)
	if err != nil {
		return nil, &broker.Error{Msg: fmt.Sprintf("cannot use Kafka brokers %s: %v", Name(brokers), err), Err: err}
	}
	return cl, nil
}

// Open connects, finds (or, with Create, makes) the topic, and remembers
// how far the group had committed. Every failure is a *broker.Error: one
// sentence, a runtime error.
func Open(ctx context.Context, cfg Config) (*Publisher, error) {
	if cfg.Mode == "" {
		cfg.Mode = broker.Binary
	}
	cl, err := newClient(cfg.Brokers,
		kgo.DefaultProduceTopic(cfg.Topic),
		kgo.RequiredAcks(kgo.AllISRAcks()), // acks=all: a record counts once every in-sync replica has it
		kgo.ProducerLinger(0),
		kgo.RecordDeliveryTimeout(30*time.Second),
	)
	if err != nil {
		return nil, err
	}
	p := &Publisher{cfg: cfg, name: Name(cfg.Brokers), cl: cl, adm: kadm.NewClient(cl)}
	if err := p.open(ctx); err != nil {
		cl.Close()
		return nil, err
	}
	return p, nil
}

// reach wraps a first request's failure: the cluster did not answer.
func reach(name string, err error) *broker.Error {
	return &broker.Error{Msg: fmt.Sprintf("Kafka at %s cannot be reached (%v); start it, or fix brokers", name, err), Err: err}
}

func (p *Publisher) open(ctx context.Context) error {
	octx, cancel := context.WithTimeout(ctx, openTimeout)
	defer cancel()
	if err := p.cl.Ping(octx); err != nil {
		return reach(p.name, err)
	}
	exists, err := topicExists(octx, p.adm, p.cfg.Topic)
	if err != nil {
		return &broker.Error{Msg: fmt.Sprintf("cannot look up Kafka topic %s on %s: %v", p.cfg.Topic, p.name, err), Err: err}
	}
	switch {
	case !exists && p.cfg.Create:
		parts := int32(-1)
		if p.cfg.Partitions > 0 {
			parts = int32(p.cfg.Partitions)
		}
		r, err := p.adm.CreateTopic(octx, parts, -1, nil, p.cfg.Topic)
		if err == nil {
			err = r.Err
		}
		if err != nil && !errors.Is(err, kerr.TopicAlreadyExists) {
			return &broker.Error{Msg: fmt.Sprintf("cannot create Kafka topic %s on %s: %v", p.cfg.Topic, p.name, err), Err: err}
		}
	case !exists:
		return &broker.Error{Msg: fmt.Sprintf("Kafka topic %s does not exist on %s; create it, or set create: true", p.cfg.Topic, p.name)}
	}
	// A topic just created takes a moment to be known to every broker
	// (and to this client's metadata): until then its offsets cannot be
	// read, nor a record produced to it.
	var off []partitionOffsets
	for {
		off, err = p.offsets(octx)
		if err == nil || !errors.Is(err, kerr.UnknownTopicOrPartition) || octx.Err() != nil {
			break
		}
		p.cl.ForceMetadataRefresh()
		time.Sleep(50 * time.Millisecond)
	}
	if err != nil {
		return err
	}
	if p.cfg.Group == "" {
		return nil
	}
	p.base = map[int32]int64{}
	for _, o := range off {
		p.base[o.partition] = o.committedOrStart()
	}
	return nil
}

// topicExists asks the cluster's metadata for the topic, without asking
// it to create one (as a produce or a fetch might, on a cluster that
// creates topics on first use).
func topicExists(ctx context.Context, adm *kadm.Client, topic string) (bool, error) {
	td, err := adm.ListTopics(ctx, topic)
	if err != nil {
		return false, err
	}
	d, ok := td[topic]
	if !ok || errors.Is(d.Err, kerr.UnknownTopicOrPartition) {
		return false, nil
	}
	if d.Err != nil {
		return false, d.Err
	}
	return len(d.Partitions) > 0, nil
}

// Headers are the Kafka headers a record carries: in binary mode the
// CloudEvent attributes as ce_* headers and content-type the data's; in
// structured mode content-type application/cloudevents+json alone.
func Headers(m broker.Message, mode broker.Mode) []kgo.RecordHeader {
	h := []kgo.RecordHeader{{Key: ContentTypeHeader, Value: []byte(broker.ContentType(mode))}}
	if mode != broker.Structured {
		for _, a := range m.Attributes() {
			h = append(h, kgo.RecordHeader{Key: AttributePrefix + a[0], Value: []byte(a[1])})
		}
	}
	return h
}

// Record is the Kafka record of one delivery: keyed by its business key
// (so that one key's records stay in one partition, in order), with the
// CloudEvents Kafka binding's headers.
func Record(m broker.Message, topic string, mode broker.Mode) *kgo.Record {
	r := &kgo.Record{Topic: topic, Headers: Headers(m, mode), Value: m.Body(mode)}
	if m.Key != "" {
		r.Key = []byte(m.Key)
	}
	return r
}

// Publish produces one record and waits until the cluster has it on every
// in-sync replica (acks=all). A refused or unconfirmed record is a
// *broker.Error, counted as unconfirmed.
func (p *Publisher) Publish(ctx context.Context, m broker.Message) (broker.Receipt, error) {
	return p.produce(ctx, p.cl, Record(m, p.cfg.Topic, p.cfg.Mode), m)
}

// produce produces r (the record of m) with cl and counts it.
func (p *Publisher) produce(ctx context.Context, cl *kgo.Client, rec *kgo.Record, m broker.Message) (broker.Receipt, error) {
	r, err := cl.ProduceSync(ctx, rec).First()
	p.mu.Lock()
	defer p.mu.Unlock()
	if err != nil {
		p.unconfirmed++
		why := err.Error()
		if errors.Is(err, kerr.UnknownTopicOrPartition) {
			why = "the topic does not exist"
		}
		return broker.Receipt{}, &broker.Error{Msg: fmt.Sprintf("Kafka did not take event %s for topic %s on %s (%s)", m.ID, p.cfg.Topic, p.name, why), Err: err, Counts: p.countsLocked()}
	}
	p.published++
	return broker.Receipt{Seq: uint64(r.Offset)}, nil
}

func (p *Publisher) countsLocked() broker.Counts {
	return broker.Counts{Published: p.published, Unconfirmed: p.unconfirmed,
		Delivered: broker.Unknown, Redelivered: broker.Unknown, Acked: broker.Unknown, Pending: p.published, Unacked: broker.Unknown}
}

// partitionOffsets is one partition as the drain sees it.
type partitionOffsets struct {
	partition  int32
	start, end int64 // the log's first offset and the one after its last
	committed  int64 // the group's committed offset, -1 for none
}

func (o partitionOffsets) committedOrStart() int64 {
	if o.committed < 0 {
		return o.start
	}
	return o.committed
}

// uncommitted is how many records the group has still to commit.
func (o partitionOffsets) uncommitted() int64 { return max(o.end-o.committedOrStart(), 0) }

// offsets reads every partition's start and end and the group's commits.
func (p *Publisher) offsets(ctx context.Context) ([]partitionOffsets, error) {
	fail := func(what string, err error) error {
		p.mu.Lock()
		c := p.countsLocked()
		p.mu.Unlock()
		return &broker.Error{Msg: fmt.Sprintf("cannot read the %s of Kafka topic %s on %s: %v", what, p.cfg.Topic, p.name, err), Err: err, Counts: c}
	}
	ends, err := p.adm.ListEndOffsets(ctx, p.cfg.Topic)
	if err == nil {
		err = ends.Error()
	}
	if err != nil {
		return nil, fail("end offsets", err)
	}
	starts, err := p.adm.ListStartOffsets(ctx, p.cfg.Topic)
	if err == nil {
		err = starts.Error()
	}
	if err != nil {
		return nil, fail("start offsets", err)
	}
	var committed kadm.OffsetResponses
	if p.cfg.Group != "" {
		committed, err = p.adm.FetchOffsetsForTopics(ctx, p.cfg.Group, p.cfg.Topic)
		if err != nil && !errors.Is(err, kerr.GroupIDNotFound) {
			return nil, fail(fmt.Sprintf("offsets consumer group %s committed on", p.cfg.Group), err)
		}
	}
	var out []partitionOffsets
	for part, e := range ends[p.cfg.Topic] {
		o := partitionOffsets{partition: part, end: e.Offset, committed: -1}
		if s, ok := starts.Lookup(p.cfg.Topic, part); ok {
			o.start = s.Offset
		}
		if c, ok := committed.Lookup(p.cfg.Topic, part); ok {
			if c.Err != nil {
				return nil, fail(fmt.Sprintf("offsets consumer group %s committed on", p.cfg.Group), c.Err)
			}
			o.committed = c.At
		}
		out = append(out, o)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].partition < out[j].partition })
	return out, nil
}

// Counts reads the topic's end offsets and the group's committed ones.
// Pending is the records of the topic the group has not committed, older
// ones included: a run ends when the group has taken everything. Acked is
// the records it committed since Open. Kafka does not say which of the
// uncommitted records a member holds, nor how often a record was fetched,
// so Unacked and the redeliveries stay Unknown.
func (p *Publisher) Counts(ctx context.Context) (broker.Counts, error) {
	c, _, err := p.look(ctx)
	return c, err
}

func (p *Publisher) look(ctx context.Context) (broker.Counts, []partitionOffsets, error) {
	p.mu.Lock()
	c := p.countsLocked()
	p.mu.Unlock()
	if p.cfg.Group == "" {
		return c, nil, nil
	}
	off, err := p.offsets(ctx)
	if err != nil {
		return c, nil, err
	}
	c.Pending, c.Acked = 0, 0
	for _, o := range off {
		c.Pending += o.uncommitted()
		base, ok := p.base[o.partition]
		if !ok {
			base = o.start
		}
		c.Acked += max(o.committedOrStart()-base, 0)
	}
	return c, off, nil
}

// Drain waits until the group's committed offsets reach the end of every
// partition, on two looks in a row. A member killed before it committed
// leaves its records uncommitted; the group rebalances and another member
// reads them again from the last commit, so the run ends only once every
// record has been committed by someone. When that never comes, the error
// names each partition still short of its end.
func (p *Publisher) Drain(ctx context.Context, o broker.DrainOptions) (broker.Counts, error) {
	if p.cfg.Group == "" {
		c, _ := p.Counts(ctx)
		return c, &broker.Error{Msg: "a Kafka target needs the consumer group to watch (group:)", Counts: c}
	}
	if o.Settle <= 0 {
		o.Settle = time.Nanosecond
	}
	var last []partitionOffsets
	seen := broker.Window[[]partitionOffsets]{Span: stallWindow}
	counts := func(ctx context.Context) (broker.Counts, error) {
		c, off, err := p.look(ctx)
		if err == nil {
			last = off
			seen.Add(time.Now(), off)
		}
		return c, err
	}
	return broker.WaitDrained(ctx, o, counts,
		func(c broker.Counts) bool { return c.Pending == 0 },
		func(c broker.Counts, d time.Duration) *broker.Error {
			first, _, over, _ := seen.Ends()
			why := stalled(p.cfg.Group, first, last, over, p.describe(ctx))
			return &broker.Error{Msg: fmt.Sprintf("consumer group %s did not commit to the end of topic %s within %s: %s (%d published)%s", p.cfg.Group, p.cfg.Topic, d, uncommitted(last), c.Published, why), Counts: c}
		})
}

// uncommitted says which partitions the group has not committed to their
// end: "partition 0 committed up to 12 of 20 (8 records uncommitted)".
func uncommitted(off []partitionOffsets) string {
	var parts []string
	var total int64
	for _, o := range off {
		n := o.uncommitted()
		if n == 0 {
			continue
		}
		total += n
		records := "records"
		if n == 1 {
			records = "record"
		}
		if o.committed < 0 {
			parts = append(parts, fmt.Sprintf("partition %d has no committed offset (%d %s from offset %d)", o.partition, n, records, o.start))
		} else {
			parts = append(parts, fmt.Sprintf("partition %d committed up to %d of %d (%d %s uncommitted)", o.partition, o.committed, o.end, n, records))
		}
	}
	if len(parts) == 0 {
		return "no record is uncommitted now"
	}
	const most = 8
	if len(parts) > most {
		parts = append(parts[:most], fmt.Sprintf("and %d more partitions", len(parts)-most))
	}
	return fmt.Sprintf("%d uncommitted: %s", total, strings.Join(parts, "; "))
}

// Close disconnects; it deletes nothing, created or not.
func (p *Publisher) Close() error {
	p.cl.Close()
	p.mu.Lock()
	if p.manual != nil {
		p.manual.Close()
	}
	p.mu.Unlock()
	return nil
}
