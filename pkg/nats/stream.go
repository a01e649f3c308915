package nats

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"time"

	natsgo "github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/redeliver/redeliver/pkg/broker"
	"github.com/redeliver/redeliver/pkg/redact"
)

// StreamReader reads a stream's messages in order, from the first
// sequence asked for up to the last one stored when it opened, through an
// ephemeral pull consumer of its own that acknowledges nothing: Close
// deletes it (the server would drop it after 30s idle anyway), and no
// durable is touched.
type StreamReader struct {
	nc   *natsgo.Conn
	str  jetstream.Stream
	cons jetstream.Consumer
	last uint64 // the last sequence stored at open
	next uint64 // the sequence after the last one read
	done bool
	buf  []jetstream.Msg

	closed bool
}

// ReadStream opens u for reading. Failures are *broker.Error.
func ReadStream(ctx context.Context, u broker.StreamURL) (*StreamReader, error) {
	nc, err := connect(u.Server)
	if err != nil {
		return nil, err
	}
	r := &StreamReader{nc: nc}
	if err := r.open(ctx, u); err != nil {
		nc.Close()
		return nil, err
	}
	return r, nil
}

func (r *StreamReader) open(ctx context.Context, u broker.StreamURL) error {
	js, err := jetstream.New(r.nc)
	if err != nil {
		return &broker.Error{Msg: fmt.Sprintf("NATS at %s: %v", redact.String(u.Server), err), Err: err}
	}
	str, err := js.Stream(ctx, u.Stream)
	switch {
	case errors.Is(err, jetstream.ErrStreamNotFound):
		return &broker.Error{Msg: fmt.Sprintf("JetStream stream %s does not exist on %s", u.Stream, redact.String(u.Server)), Err: err}
	case errors.Is(err, jetstream.ErrJetStreamNotEnabled):
		return &broker.Error{Msg: fmt.Sprintf("NATS at %s has no JetStream; start nats-server with -js", redact.String(u.Server)), Err: err}
	case err != nil:
		return &broker.Error{Msg: fmt.Sprintf("cannot look up JetStream stream %s on %s: %v", u.Stream, redact.String(u.Server), err), Err: err}
	}
	info, err := str.Info(ctx)
	if err != nil {
		return &broker.Error{Msg: fmt.Sprintf("cannot read JetStream stream %s on %s: %v", u.Stream, redact.String(u.Server), err), Err: err}
	}
	r.last = info.State.LastSeq
	start := max(u.Seq, 1)
	r.next = start
	if info.State.Msgs == 0 || start > r.last {
		r.done = true
		return nil
	}
	// One ephemeral pull consumer for the whole read, deleted by Close. An
	// ordered consumer would make a new one at every fetch and delete the
	// one before on a goroutine of its own, which a Close right after can
	// outrun.
	cfg := jetstream.ConsumerConfig{
		DeliverPolicy: jetstream.DeliverByStartSequencePolicy, OptStartSeq: start,
		AckPolicy: jetstream.AckNonePolicy, InactiveThreshold: 30 * time.Second,
		MemoryStorage: true, Replicas: 1,
	}
	if u.Subject != "" {
		cfg.FilterSubjects = []string{u.Subject}
	}
	r.str = str
	r.cons, err = str.CreateConsumer(ctx, cfg)
	if err != nil {
		return &broker.Error{Msg: fmt.Sprintf("cannot read JetStream stream %s on %s: %v", u.Stream, redact.String(u.Server), err), Err: err}
	}
	return nil
}

// dump is a message as `nats sub --dump -` writes it, which the capture
// reader knows.
type dump struct {
	Subject string
	Reply   string
	Header  natsgo.Header
	Data    []byte
}

// Next returns the next message as a dump record and its stream
// sequence, or io.EOF once the last sequence stored at open was read (or
// nothing more comes: the tail was deleted meanwhile).
func (r *StreamReader) Next() ([]byte, int, error) {
	for len(r.buf) == 0 {
		if r.done {
			return nil, 0, io.EOF
		}
		batch, err := r.cons.Fetch(int(min(512, r.last-r.next+1)), jetstream.FetchMaxWait(2*time.Second))
		if err != nil {
			return nil, 0, fmt.Errorf("read stream: %w", err)
		}
		for m := range batch.Messages() {
			r.buf = append(r.buf, m)
		}
		if err := batch.Error(); err != nil && !errors.Is(err, natsgo.ErrTimeout) {
			return nil, 0, fmt.Errorf("read stream: %w", err)
		}
		if len(r.buf) == 0 {
			r.done = true
		}
	}
	m := r.buf[0]
	r.buf = r.buf[1:]
	md, err := m.Metadata()
	if err != nil {
		return nil, 0, fmt.Errorf("read stream: %w", err)
	}
	if md.Sequence.Stream > r.last { // stored after the read began
		r.done, r.buf = true, nil
		return nil, 0, io.EOF
	}
	r.next = md.Sequence.Stream + 1
	if md.Sequence.Stream == r.last || md.NumPending == 0 {
		r.done, r.buf = true, nil
	}
	rec, err := json.Marshal(dump{Subject: m.Subject(), Reply: m.Reply(), Header: m.Headers(), Data: m.Data()})
	if err != nil {
		return nil, 0, err
	}
	return rec, int(md.Sequence.Stream), nil
}

// Close stops reading and deletes the consumer it made.
func (r *StreamReader) Close() error {
	if r.closed {
		return nil
	}
	r.closed = true
	if r.cons != nil {
		if info := r.cons.CachedInfo(); info != nil {
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			_ = r.str.DeleteConsumer(ctx, info.Name)
			cancel()
		}
	}
	r.nc.Close()
	return nil
}
