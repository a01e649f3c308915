package nats

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"net"
	"os"
	"strings"
	"testing"
	"time"

	natsgo "github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/redeliver/redeliver/pkg/broker"
)

// server returns the NATS server the tests use (REDELIVER_TEST_NATS, else
// nats://127.0.0.1:4222). Where none answers the test is skipped, saying
// so, except under CI, where it fails.
func server(t *testing.T) string {
	t.Helper()
	url := os.Getenv("REDELIVER_TEST_NATS")
	if url == "" {
		url = "nats://127.0.0.1:4222"
	}
	host := strings.TrimPrefix(url, "nats://")
	c, err := net.DialTimeout("tcp", host, 2*time.Second)
	if err != nil {
		if os.Getenv("CI") != "" {
			t.Fatalf("NATS with JetStream is needed at %s under CI: %v", url, err)
		}
		t.Skipf("no NATS at %s (%v): JetStream tests skipped; start nats-server -js or set REDELIVER_TEST_NATS", url, err)
	}
	c.Close()
	return url
}

// unique is a name no other test run uses.
func unique(prefix string) string {
	b := make([]byte, 4)
	_, _ = rand.Read(b)
	return prefix + "_" + strings.ToUpper(hex.EncodeToString(b))
}

// admin connects beside the publisher, to look at and clean up only what
// the test made.
func admin(t *testing.T, url string) jetstream.JetStream {
	t.Helper()
	nc, err := natsgo.Connect(url, natsgo.Timeout(10*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	return js
}

func deleteStreamAfter(t *testing.T, js jetstream.JetStream, name string) {
	t.Cleanup(func() {
		if err := js.DeleteStream(context.Background(), name); err != nil && !errors.Is(err, jetstream.ErrStreamNotFound) {
			t.Errorf("delete stream %s: %v", name, err)
		}
	})
}

func route(t *testing.T, s string) broker.Route {
	t.Helper()
	r, err := broker.ParseRoute(s)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func TestOpenRefusesWhatIsMissing(t *testing.T) {
	url := server(t)
	js := admin(t, url)
	ctx := context.Background()
	stream := unique("RDLV_MISSING")
	subj := strings.ToLower(stream) + ".{type}"

	_, err := Open(ctx, Config{URL: url, Stream: stream, Subject: route(t, subj), Consumer: "worker"})
	var be *broker.Error
	if !errors.As(err, &be) || !strings.Contains(be.Msg, "does not exist") || !strings.Contains(be.Msg, "create: true") {
		t.Fatalf("got %v, want a broker error saying the stream does not exist", err)
	}
	if _, err := js.Stream(ctx, stream); !errors.Is(err, jetstream.ErrStreamNotFound) {
		t.Fatalf("Open without create made stream %s (lookup: %v)", stream, err)
	}

	// The stream exists (the user's), the durable does not.
	deleteStreamAfter(t, js, stream)
	if _, err := js.CreateStream(ctx, jetstream.StreamConfig{Name: stream, Subjects: []string{strings.ToLower(stream) + ".*"}}); err != nil {
		t.Fatal(err)
	}
	_, err = Open(ctx, Config{URL: url, Stream: stream, Subject: route(t, subj), Consumer: "worker"})
	if !errors.As(err, &be) || !strings.Contains(be.Msg, "no durable consumer worker") {
		t.Fatalf("got %v, want a broker error saying the consumer does not exist", err)
	}
	s, _ := js.Stream(ctx, stream)
	if _, err := s.Consumer(ctx, "worker"); !errors.Is(err, jetstream.ErrConsumerNotFound) {
		t.Fatalf("Open without create made the consumer (lookup: %v)", err)
	}
}

func TestOpenUnreachable(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close() // nothing listens there now
	_, err = Open(context.Background(), Config{URL: "nats://" + addr, Stream: "S", Subject: route(t, "s")})
	var be *broker.Error
	if !errors.As(err, &be) || !strings.Contains(be.Msg, "cannot be reached") {
		t.Fatalf("got %v, want a broker error saying NATS cannot be reached", err)
	}
}

// TestPublishHeadersAndDrain: every publish reaches the stream, the same
// event again included, each under a Nats-Msg-Id of its own that begins
// with the message id, while ce-id stays the event id; the counts follow.
func TestPublishHeadersAndDrain(t *testing.T) {
	url := server(t)
	js := admin(t, url)
	ctx := context.Background()
	stream := unique("RDLV_PUB")
	subj := strings.ToLower(stream) + ".{type}"
	deleteStreamAfter(t, js, stream)
	p, err := Open(ctx, Config{URL: url, Stream: stream, Subject: route(t, subj), Consumer: "worker", Create: true, AckWait: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()

	evt := broker.Message{ID: "evt-1", Source: "/orders", Type: "created", Data: []byte(`{"orderId":"O-1"}`)}
	steps := []struct {
		name  string
		m     broker.Message
		msgID string // what Nats-Msg-Id begins with
	}{
		{"first publish", evt, "evt-1#"},
		{"same message id again: stored too", evt, "evt-1#"},
		{"republished under a new message id", func() broker.Message { m := evt; m.MsgID = "evt-1-again"; return m }(), "evt-1-again#"},
		{"another event", broker.Message{ID: "evt-2", Source: "/orders", Type: "created", Subject: "O-2", Time: "2026-01-01T00:00:00Z", Data: []byte(`{"orderId":"O-2"}`)}, "evt-2#"},
	}
	ids := map[string]bool{}
	for _, s := range steps {
		r, err := p.Publish(ctx, s.m)
		if err != nil {
			t.Fatalf("%s: %v", s.name, err)
		}
		if r.Duplicate || !strings.HasPrefix(r.MsgID, s.msgID) || ids[r.MsgID] {
			t.Errorf("%s: receipt %+v; want stored under a new Nats-Msg-Id starting %s", s.name, r, s.msgID)
		}
		ids[r.MsgID] = true
	}
	c, err := p.Counts(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if c.Published != 4 || c.Dropped != 0 || c.Pending != 4 || c.Unacked != 0 {
		t.Fatalf("counts after publishing: %+v; want 4 published, none dropped, 4 pending", c)
	}

	// Be the consumer: the first delivery is refused (nak), so JetStream
	// redelivers it; everything else is acked.
	s, _ := js.Stream(ctx, stream)
	cons, err := s.Consumer(ctx, "worker")
	if err != nil {
		t.Fatal(err)
	}
	var got []jetstream.Msg
	nakked := false
	for len(got) < 4 {
		batch, err := cons.Fetch(1, jetstream.FetchMaxWait(10*time.Second))
		if err != nil {
			t.Fatal(err)
		}
		for m := range batch.Messages() {
			if !nakked {
				nakked = true
				if err := m.Nak(); err != nil {
					t.Fatal(err)
				}
				continue
			}
			got = append(got, m)
			if err := m.DoubleAck(ctx); err != nil {
				t.Fatal(err)
			}
		}
	}
	// The nakked message comes again in an order of JetStream's choosing.
	ceIDs := map[string]int{}
	byID := map[string]jetstream.Msg{}
	byCE := map[string]jetstream.Msg{}
	for _, m := range got {
		byID[m.Headers().Get("Nats-Msg-Id")] = m
		byCE[m.Headers().Get("ce-id")] = m
		ceIDs[m.Headers().Get("ce-id")]++
	}
	if len(byID) != 4 || ceIDs["evt-1"] != 3 || ceIDs["evt-2"] != 1 {
		t.Fatalf("consumed %d message ids, ce-ids %v; want 4 ids, evt-1 three times and evt-2 once", len(byID), ceIDs)
	}
	first := byCE["evt-1"].Headers()
	for k, want := range map[string]string{
		"Content-Type": "application/json", "ce-specversion": "1.0",
		"ce-id": "evt-1", "ce-source": "/orders", "ce-type": "created",
	} {
		if v := first.Get(k); v != want {
			t.Errorf("header %s = %q, want %q", k, v, want)
		}
	}
	if m := byCE["evt-1"]; string(m.Data()) != `{"orderId":"O-1"}` || m.Subject() != strings.ToLower(stream)+".created" {
		t.Errorf("message: subject %s, body %s", m.Subject(), m.Data())
	}
	if h := byCE["evt-2"].Headers(); h.Get("ce-subject") != "O-2" || h.Get("ce-time") != "2026-01-01T00:00:00Z" {
		t.Errorf("optional attributes: %v", h)
	}

	c, err = p.Drain(ctx, broker.DrainOptions{Timeout: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	if c.Pending != 0 || c.Unacked != 0 || c.Acked != 4 || c.Delivered != 5 || c.Redelivered != 1 {
		t.Fatalf("counts after draining: %+v; want 4 acked, 5 deliveries, 1 redelivered", c)
	}
}

// TestARunAgainPublishesAgain: a second run into the same stream within
// its duplicate window publishes the same events again, and JetStream
// stores every one.
func TestARunAgainPublishesAgain(t *testing.T) {
	url := server(t)
	js := admin(t, url)
	ctx := context.Background()
	stream := unique("RDLV_AGAIN")
	deleteStreamAfter(t, js, stream)
	for run := 1; run <= 2; run++ {
		p, err := Open(ctx, Config{URL: url, Stream: stream, Subject: route(t, strings.ToLower(stream)+".x"), Consumer: "w", Create: true})
		if err != nil {
			t.Fatal(err)
		}
		for _, id := range []string{"a", "b", "a"} {
			r, err := p.Publish(ctx, broker.Message{ID: id, Source: "/s", Type: "t", Data: []byte(`1`)})
			if err != nil || r.Duplicate {
				t.Fatalf("run %d, event %s: receipt %+v, %v; want it stored", run, id, r, err)
			}
		}
		p.Close()
	}
	s, _ := js.Stream(ctx, stream)
	info, err := s.Info(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if info.State.Msgs != 6 {
		t.Fatalf("the stream holds %d messages after two runs of 3 publishes, want 6", info.State.Msgs)
	}
}

// TestAckWait: a durable Open creates gets the AckWait asked for, or
// DefaultAckWait; an existing durable with another AckWait is refused.
func TestAckWait(t *testing.T) {
	url := server(t)
	js := admin(t, url)
	ctx := context.Background()
	for _, tt := range []struct {
		name string
		ask  time.Duration
		want time.Duration
	}{
		{"the default", 0, DefaultAckWait},
		{"asked for", 2 * time.Second, 2 * time.Second},
	} {
		t.Run(tt.name, func(t *testing.T) {
			stream := unique("RDLV_ACKWAIT")
			deleteStreamAfter(t, js, stream)
			cfg := Config{URL: url, Stream: stream, Subject: route(t, strings.ToLower(stream)+".x"), Consumer: "w", Create: true, AckWait: tt.ask}
			p, err := Open(ctx, cfg)
			if err != nil {
				t.Fatal(err)
			}
			p.Close()
			s, _ := js.Stream(ctx, stream)
			c, err := s.Consumer(ctx, "w")
			if err != nil {
				t.Fatal(err)
			}
			if got := c.CachedInfo().Config.AckWait; got != tt.want {
				t.Fatalf("the durable's AckWait is %s, want %s", got, tt.want)
			}
			// The durable is there now: the same AckWait opens it, another is refused.
			cfg.AckWait = tt.want
			if p, err = Open(ctx, cfg); err != nil {
				t.Fatalf("reopen with the durable's AckWait: %v", err)
			}
			p.Close()
			cfg.AckWait = tt.want + time.Second
			_, err = Open(ctx, cfg)
			var be *broker.Error
			if !errors.As(err, &be) || !strings.Contains(be.Msg, "has an AckWait of "+tt.want.String()) || !strings.Contains(be.Msg, "ack_wait: "+cfg.AckWait.String()) {
				t.Fatalf("got %v, want the durable's AckWait refused", err)
			}
		})
	}
}

// TestCountsFromTheStateAtOpen: a durable that still had messages to
// deliver when the run began is drained with them, and they are not
// counted as redeliveries.
func TestCountsFromTheStateAtOpen(t *testing.T) {
	url := server(t)
	js := admin(t, url)
	ctx := context.Background()
	stream := unique("RDLV_BASE")
	deleteStreamAfter(t, js, stream)
	cfg := Config{URL: url, Stream: stream, Subject: route(t, strings.ToLower(stream)+".x"), Consumer: "w", Create: true, AckWait: time.Minute}
	before, err := Open(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	for _, id := range []string{"old-1", "old-2"} {
		if _, err := before.Publish(ctx, broker.Message{ID: id, Source: "/s", Type: "t", Data: []byte(`1`)}); err != nil {
			t.Fatal(err)
		}
	}
	before.Close()

	p, err := Open(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	if _, err := p.Publish(ctx, broker.Message{ID: "new", Source: "/s", Type: "t", Data: []byte(`1`)}); err != nil {
		t.Fatal(err)
	}
	s, _ := js.Stream(ctx, stream)
	cons, _ := s.Consumer(ctx, "w")
	for n := 0; n < 3; {
		batch, err := cons.Fetch(3, jetstream.FetchMaxWait(10*time.Second))
		if err != nil {
			t.Fatal(err)
		}
		for m := range batch.Messages() {
			if err := m.DoubleAck(ctx); err != nil {
				t.Fatal(err)
			}
			n++
		}
	}
	c, err := p.Drain(ctx, broker.DrainOptions{Timeout: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	if c.Published != 1 || c.Delivered != 3 || c.Redelivered != 0 || c.Acked != 3 || c.Pending != 0 {
		t.Fatalf("counts %+v; want 1 published, 3 delivered and acked (2 from before the run), none redelivered", c)
	}
}

func TestStructuredMode(t *testing.T) {
	url := server(t)
	js := admin(t, url)
	ctx := context.Background()
	stream := unique("RDLV_STRUCT")
	deleteStreamAfter(t, js, stream)
	p, err := Open(ctx, Config{URL: url, Stream: stream, Subject: route(t, strings.ToLower(stream)+".events"), Consumer: "w", Create: true, Mode: broker.Structured})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	if _, err := p.Publish(ctx, broker.Message{ID: "e1", Source: "/s", Type: "t", Data: []byte(`{"a":1}`)}); err != nil {
		t.Fatal(err)
	}
	s, _ := js.Stream(ctx, stream)
	m, err := s.GetMsg(ctx, 1)
	if err != nil {
		t.Fatal(err)
	}
	if ct := m.Header.Get("Content-Type"); ct != "application/cloudevents+json" || m.Header.Get("ce-id") != "" || !strings.HasPrefix(m.Header.Get("Nats-Msg-Id"), "e1#") {
		t.Errorf("headers %v: want a structured event with its message id and no ce-* headers", m.Header)
	}
	want := `{"specversion":"1.0","id":"e1","source":"/s","type":"t","datacontenttype":"application/json","data":{"a":1}}`
	if string(m.Data) != want {
		t.Errorf("body\n got %s\nwant %s", m.Data, want)
	}
}

func TestDrainTimesOutWithCounts(t *testing.T) {
	url := server(t)
	js := admin(t, url)
	ctx := context.Background()
	stream := unique("RDLV_LATE")
	deleteStreamAfter(t, js, stream)
	p, err := Open(ctx, Config{URL: url, Stream: stream, Subject: route(t, strings.ToLower(stream)+".x"), Consumer: "idle", Create: true})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	for _, id := range []string{"a", "b"} {
		if _, err := p.Publish(ctx, broker.Message{ID: id, Source: "/s", Type: "t", Data: []byte(`1`)}); err != nil {
			t.Fatal(err)
		}
	}
	// Nobody consumes: the drain must give up, saying what is left.
	_, err = p.Drain(ctx, broker.DrainOptions{Timeout: 100 * time.Millisecond})
	var be *broker.Error
	if !errors.As(err, &be) {
		t.Fatalf("got %v, want a broker error", err)
	}
	if be.Counts.Published != 2 || be.Counts.Pending != 2 || !strings.Contains(be.Msg, "did not drain") || !strings.Contains(be.Msg, "2 published, 0 acked, 2 still pending") ||
		!strings.Contains(be.Msg, "nor the pending count (2) moved: it is stuck; the durable has 2 pending, 0 delivered and awaiting an ack (AckWait ") ||
		!strings.Contains(be.Msg, "), its ack floor at stream sequence 0, and no pull request waiting") {
		t.Fatalf("error %q with counts %+v", be.Msg, be.Counts)
	}
}

func TestPublishToASubjectNoStreamStores(t *testing.T) {
	url := server(t)
	js := admin(t, url)
	ctx := context.Background()
	stream := unique("RDLV_NOSUBJ")
	deleteStreamAfter(t, js, stream)
	p, err := Open(ctx, Config{URL: url, Stream: stream, Subject: route(t, strings.ToLower(stream)+".x"), Create: true})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	_, err = p.Publish(ctx, broker.Message{ID: "a", Route: "nowhere." + strings.ToLower(stream), Data: []byte(`1`)})
	var be *broker.Error
	if !errors.As(err, &be) || !strings.Contains(be.Msg, "did not store event a") || be.Counts.Unconfirmed != 1 {
		t.Fatalf("got %v, want an unstored publish counted as unconfirmed", err)
	}
}
