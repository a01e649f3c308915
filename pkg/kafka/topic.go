package kafka

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sort"
	"time"

	"github.com/redeliver/redeliver/pkg/broker"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// span is one partition's records to read: [from, to).
type span struct {
	partition int32
	from, to  int64
}

// TopicReader reads a topic's records partition by partition, each from
// the offset asked for up to the end it had when the reader opened, so the
// same topic reads the same way every time. It joins no consumer group and
// commits nothing.
type TopicReader struct {
	u     broker.TopicURL
	spans []span
	cl    *kgo.Client // reading spans[0]
	buf   []*kgo.Record
	n     int // records returned so far
}

// ReadTopic opens u for reading. Failures are *broker.Error.
func ReadTopic(ctx context.Context, u broker.TopicURL) (*TopicReader, error) {
	name := Name(u.Brokers)
	cl, err := newClient(u.Brokers)
	if err != nil {
		return nil, err
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	octx, cancel := context.WithTimeout(ctx, openTimeout)
	defer cancel()
	if err := cl.Ping(octx); err != nil {
		return nil, reach(name, err)
	}
	exists, err := topicExists(octx, adm, u.Topic)
	switch {
	case err != nil:
		return nil, &broker.Error{Msg: fmt.Sprintf("cannot look up Kafka topic %s on %s: %v", u.Topic, name, err), Err: err}
	case !exists:
		return nil, &broker.Error{Msg: fmt.Sprintf("Kafka topic %s does not exist on %s", u.Topic, name)}
	}
	starts, err := adm.ListStartOffsets(octx, u.Topic)
	if err == nil {
		err = starts.Error()
	}
	var ends kadm.ListedOffsets
	if err == nil {
		ends, err = adm.ListEndOffsets(octx, u.Topic)
	}
	if err == nil {
		err = ends.Error()
	}
	if err != nil {
		return nil, &broker.Error{Msg: fmt.Sprintf("cannot read the offsets of Kafka topic %s on %s: %v", u.Topic, name, err), Err: err}
	}
	r := &TopicReader{u: u}
	for part, e := range ends[u.Topic] {
		if u.Partition >= 0 && part != u.Partition {
			continue
		}
		from := u.Offset
		if s, ok := starts.Lookup(u.Topic, part); ok && s.Offset > from {
			from = s.Offset
		}
		if from < e.Offset {
			r.spans = append(r.spans, span{partition: part, from: from, to: e.Offset})
		}
	}
	if u.Partition >= 0 {
		if _, ok := ends.Lookup(u.Topic, u.Partition); !ok {
			return nil, &broker.Error{Msg: fmt.Sprintf("Kafka topic %s on %s has no partition %d (it has %d)", u.Topic, name, u.Partition, len(ends[u.Topic]))}
		}
	}
	sort.Slice(r.spans, func(i, j int) bool { return r.spans[i].partition < r.spans[j].partition })
	return r, nil
}

// record is a Kafka record as kcat -J writes it, which the capture reader
// knows.
type record struct {
	Topic     string   `json:"topic"`
	Partition int32    `json:"partition"`
	Offset    int64    `json:"offset"`
	TsType    string   `json:"tstype"`
	Ts        int64    `json:"ts"`
	Headers   []string `json:"headers"`
	Key       *string  `json:"key"`
	Payload   *string  `json:"payload"`
}

// Record is the kcat -J line of a record.
func recordLine(r *kgo.Record) ([]byte, error) {
	rec := record{Topic: r.Topic, Partition: r.Partition, Offset: r.Offset, TsType: "create", Ts: r.Timestamp.UnixMilli(), Headers: []string{}}
	if r.Attrs.TimestampType() == 1 {
		rec.TsType = "logappend"
	}
	for _, h := range r.Headers {
		rec.Headers = append(rec.Headers, h.Key, string(h.Value))
	}
	if r.Key != nil {
		k := string(r.Key)
		rec.Key = &k
	}
	if r.Value != nil {
		v := string(r.Value)
		rec.Payload = &v
	}
	return json.Marshal(rec)
}

// quiet is how long a partition may give nothing before the records left
// below its end are taken for none (markers, compacted offsets).
const quiet = 10 * time.Second

// Next returns the next record as a kcat -J line and its place in the
// read (1, 2, …), or io.EOF once every partition was read to the end it
// had at open.
func (r *TopicReader) Next() ([]byte, int, error) {
	for len(r.buf) == 0 {
		if len(r.spans) == 0 {
			return nil, 0, io.EOF
		}
		s := &r.spans[0]
		if s.from >= s.to {
			r.closeClient()
			r.spans = r.spans[1:]
			continue
		}
		if r.cl == nil {
			cl, err := newClient(r.u.Brokers, kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{
				r.u.Topic: {s.partition: kgo.NewOffset().At(s.from)},
			}))
			if err != nil {
				return nil, 0, err
			}
			r.cl = cl
		}
		ctx, cancel := context.WithTimeout(context.Background(), quiet)
		fs := r.cl.PollFetches(ctx)
		cancel()
		if ctx.Err() != nil && fs.NumRecords() == 0 {
			// Nothing more below the end: the offsets left are a
			// transaction's markers or were compacted away.
			s.from = s.to
			continue
		}
		for _, e := range fs.Errors() {
			if !errors.Is(e.Err, context.DeadlineExceeded) {
				return nil, 0, fmt.Errorf("read topic %s partition %d: %w", r.u.Topic, s.partition, e.Err)
			}
		}
		fs.EachRecord(func(rec *kgo.Record) {
			if rec.Partition == s.partition && rec.Offset >= s.from && rec.Offset < s.to {
				r.buf = append(r.buf, rec)
			}
		})
		if len(r.buf) > 0 {
			s.from = r.buf[len(r.buf)-1].Offset + 1
		}
	}
	rec := r.buf[0]
	r.buf = r.buf[1:]
	line, err := recordLine(rec)
	if err != nil {
		return nil, 0, err
	}
	r.n++
	return line, r.n, nil
}

func (r *TopicReader) closeClient() {
	if r.cl != nil {
		r.cl.Close()
		r.cl = nil
	}
}

// Close stops reading; it commits and deletes nothing.
func (r *TopicReader) Close() error {
	r.closeClient()
	r.spans, r.buf = nil, nil
	return nil
}
