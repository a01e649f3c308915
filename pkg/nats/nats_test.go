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
	nc, err := natsgo.Connect(url)
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

func TestPublishHeadersDuplicatesAndDrain(t *testing.T) {
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
		name string
		m    broker.Message
		dup  bool
	}{
		{"first publish", evt, false},
		{"same message id again: the duplicate window drops it", evt, true},
		{"republished under a new message id: stored", func() broker.Message { m := evt; m.MsgID = "evt-1-again"; return m }(), false},
		{"another event", broker.Message{ID: "evt-2", Source: "/orders", Type: "created", Subject: "O-2", Time: "2026-01-01T00:00:00Z", Data: []byte(`{"orderId":"O-2"}`)}, false},
	}
	for _, s := range steps {
		r, err := p.Publish(ctx, s.m)
		if err != nil {
			t.Fatalf("%s: %v", s.name, err)
		}
		if r.Duplicate != s.dup {
			t.Errorf("%s: duplicate = %v, want %v", s.name, r.Duplicate, s.dup)
		}
	}
	c, err := p.Counts(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if c.Published != 3 || c.Dropped != 1 || c.Pending != 3 || c.Unacked != 0 {
		t.Fatalf("counts after publishing: %+v; want 3 published, 1 dropped, 3 pending", c)
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
	for len(got) < 3 {
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
	byID := map[string]jetstream.Msg{}
	for _, m := range got {
		byID[m.Headers().Get("Nats-Msg-Id")] = m
	}
	if len(byID) != 3 || byID["evt-1"] == nil || byID["evt-1-again"] == nil || byID["evt-2"] == nil {
		t.Fatalf("consumed message ids %v, want evt-1, evt-1-again, evt-2", byID)
	}
	first := byID["evt-1"].Headers()
	for k, want := range map[string]string{
		"Nats-Msg-Id": "evt-1", "Content-Type": "application/json", "ce-specversion": "1.0",
		"ce-id": "evt-1", "ce-source": "/orders", "ce-type": "created",
	} {
		if v := first.Get(k); v != want {
			t.Errorf("header %s = %q, want %q", k, v, want)
		}
	}
	if m := byID["evt-1"]; string(m.Data()) != `{"orderId":"O-1"}` || m.Subject() != strings.ToLower(stream)+".created" {
		t.Errorf("message: subject %s, body %s", m.Subject(), m.Data())
	}
	if h := byID["evt-2"].Headers(); h.Get("ce-subject") != "O-2" || h.Get("ce-time") != "2026-01-01T00:00:00Z" {
		t.Errorf("optional attributes: %v", h)
	}

	c, err = p.Drain(ctx, broker.DrainOptions{Timeout: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	if c.Pending != 0 || c.Unacked != 0 || c.Acked != 3 || c.Delivered != 4 || c.Redelivered != 1 {
		t.Fatalf("counts after draining: %+v; want 3 acked, 4 deliveries, 1 redelivered", c)
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
	if ct := m.Header.Get("Content-Type"); ct != "application/cloudevents+json" || m.Header.Get("ce-id") != "" || m.Header.Get("Nats-Msg-Id") != "e1" {
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
	if be.Counts.Published != 2 || be.Counts.Pending != 2 || !strings.Contains(be.Msg, "did not drain") || !strings.Contains(be.Msg, "2 published, 0 acked, 2 still pending") {
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
