package amqp

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"net"
	"net/url"
	"os"
	"strings"
	"testing"
	"time"

	amqp091 "github.com/rabbitmq/amqp091-go"
	"github.com/redeliver/redeliver/pkg/broker"
)

// server returns the RabbitMQ the tests use (REDELIVER_TEST_AMQP, else
// amqp://guest:guest@127.0.0.1:5672/). Where none answers the test is
// skipped, saying so, except under CI, where it fails.
func server(t *testing.T) string {
	t.Helper()
	u := os.Getenv("REDELIVER_TEST_AMQP")
	if u == "" {
		u = "amqp://guest:guest@127.0.0.1:5672/"
	}
	pu, err := url.Parse(u)
	if err != nil {
		t.Fatal(err)
	}
	c, err := net.DialTimeout("tcp", pu.Host, 2*time.Second)
	if err != nil {
		if os.Getenv("CI") != "" {
			t.Fatalf("RabbitMQ is needed at %s under CI: %v", pu.Host, err)
		}
		t.Skipf("no RabbitMQ at %s (%v): RabbitMQ tests skipped; start rabbitmq-server or set REDELIVER_TEST_AMQP", pu.Host, err)
	}
	c.Close()
	return u
}

func unique(prefix string) string {
	b := make([]byte, 4)
	_, _ = rand.Read(b)
	return prefix + "." + hex.EncodeToString(b)
}

// admin is a channel beside the publisher's, to look at and clean up only
// what the test made.
func admin(t *testing.T, u string) *amqp091.Channel {
	t.Helper()
	conn, err := amqp091.Dial(u)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	ch, err := conn.Channel()
	if err != nil {
		t.Fatal(err)
	}
	return ch
}

func deleteAfter(t *testing.T, ch *amqp091.Channel, queue, exchange string) {
	t.Cleanup(func() {
		if queue != "" {
			if _, err := ch.QueueDelete(queue, false, false, false); err != nil {
				t.Errorf("delete queue %s: %v", queue, err)
			}
		}
		if exchange != "" {
			if err := ch.ExchangeDelete(exchange, false, false); err != nil {
				t.Errorf("delete exchange %s: %v", exchange, err)
			}
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

func exists(t *testing.T, u, queue string) bool {
	t.Helper()
	ch := admin(t, u)
	_, err := ch.QueueDeclarePassive(queue, true, false, false, false, nil)
	return err == nil
}

func TestOpenRefusesWhatIsMissing(t *testing.T) {
	u := server(t)
	ctx := context.Background()
	q := unique("redeliver.missing")
	_, err := Open(ctx, Config{URL: u, Queue: q})
	var be *broker.Error
	if !errors.As(err, &be) || !strings.Contains(be.Msg, "queue "+q+" does not exist") || strings.Contains(be.Msg, "guest:guest") {
		t.Fatalf("got %v, want a broker error saying the queue does not exist (and no password)", err)
	}
	if exists(t, u, q) {
		t.Fatalf("Open without create declared queue %s", q)
	}
	x := unique("redeliver.missing-exchange")
	_, err = Open(ctx, Config{URL: u, Exchange: x, Queue: q})
	if !errors.As(err, &be) || !strings.Contains(be.Msg, "exchange "+x+" does not exist") {
		t.Fatalf("got %v, want a broker error saying the exchange does not exist", err)
	}
}

func TestOpenUnreachable(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	_, err = Open(context.Background(), Config{URL: "amqp://guest:secret@" + addr + "/", Queue: "q"})
	var be *broker.Error
	if !errors.As(err, &be) || !strings.Contains(be.Msg, "cannot be reached") || strings.Contains(be.Msg, "secret") {
		t.Fatalf("got %v, want a broker error saying RabbitMQ cannot be reached, without the password", err)
	}
}

func TestPublishConfirmedWithProperties(t *testing.T) {
	u := server(t)
	ctx := context.Background()
	adm := admin(t, u)
	x, q := unique("redeliver.x"), unique("redeliver.q")
	deleteAfter(t, adm, q, x)
	p, err := Open(ctx, Config{URL: u, Exchange: x, RoutingKey: route(t, "orders.{type}"), Queue: q, Create: true})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	for _, m := range []broker.Message{
		{ID: "evt-1", Source: "/orders", Type: "created", Subject: "O-1", Data: []byte(`{"orderId":"O-1"}`)},
		{ID: "evt-1", MsgID: "evt-1-again", Source: "/orders", Type: "created", Data: []byte(`{"orderId":"O-1"}`)},
	} {
		if _, err := p.Publish(ctx, m); err != nil {
			t.Fatal(err)
		}
	}
	c, err := p.Counts(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if c.Published != 2 || c.Pending != 2 || c.Unconfirmed != 0 {
		t.Fatalf("counts %+v; want 2 published and pending", c)
	}
	d, ok, err := adm.Get(q, false)
	if err != nil || !ok {
		t.Fatalf("get: %v %v", ok, err)
	}
	if d.MessageId != "evt-1" || d.ContentType != "application/json" || d.DeliveryMode != amqp091.Persistent || d.RoutingKey != "orders.created" || string(d.Body) != `{"orderId":"O-1"}` {
		t.Errorf("delivery: %+v", d)
	}
	for k, want := range map[string]string{"cloudEvents_specversion": "1.0", "cloudEvents_id": "evt-1", "cloudEvents_source": "/orders", "cloudEvents_type": "created", "cloudEvents_subject": "O-1"} {
		if v, _ := d.Headers[k].(string); v != want {
			t.Errorf("header %s = %q, want %q", k, v, want)
		}
	}
	// Nack it back: the broker redelivers it, flagged.
	if err := d.Nack(false, true); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 2; {
		d, ok, err := adm.Get(q, false)
		if err != nil {
			t.Fatal(err)
		}
		if !ok {
			time.Sleep(10 * time.Millisecond)
			continue
		}
		if d.MessageId == "evt-1" && !d.Redelivered {
			t.Errorf("a nacked message came back without the redelivered flag")
		}
		if err := d.Ack(false); err != nil {
			t.Fatal(err)
		}
		i++
	}
	c, err = p.Drain(ctx, broker.DrainOptions{Timeout: time.Minute, Settle: 50 * time.Millisecond})
	if err != nil || c.Pending != 0 {
		t.Fatalf("drain: %+v, %v", c, err)
	}
}

func TestUnroutableIsReported(t *testing.T) {
	u := server(t)
	ctx := context.Background()
	adm := admin(t, u)
	x, q := unique("redeliver.x"), unique("redeliver.q")
	deleteAfter(t, adm, q, x)
	p, err := Open(ctx, Config{URL: u, Exchange: x, RoutingKey: route(t, "orders.{type}"), Queue: q, Create: true})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	// Bound to orders.*: a message on audit.created reaches no queue.
	_, err = p.Publish(ctx, broker.Message{ID: "lost-1", Type: "created", Route: "audit.created", Data: []byte(`1`)})
	var be *broker.Error
	if !errors.As(err, &be) || !strings.Contains(be.Msg, "to no queue") || be.Counts.Unconfirmed != 1 || be.Counts.Published != 0 {
		t.Fatalf("got %v (%+v), want an unroutable publish reported and counted", err, be)
	}
	// The channel still works afterwards.
	if _, err := p.Publish(ctx, broker.Message{ID: "ok-1", Type: "created", Data: []byte(`1`)}); err != nil {
		t.Fatal(err)
	}
}

func TestStructuredMode(t *testing.T) {
	u := server(t)
	ctx := context.Background()
	adm := admin(t, u)
	q := unique("redeliver.q")
	deleteAfter(t, adm, q, "")
	p, err := Open(ctx, Config{URL: u, Queue: q, Create: true, Mode: broker.Structured})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	if _, err := p.Publish(ctx, broker.Message{ID: "e1", Source: "/s", Type: "t", Data: []byte(`{"a":1}`)}); err != nil {
		t.Fatal(err)
	}
	d, ok, err := adm.Get(q, true)
	if err != nil || !ok {
		t.Fatalf("get: %v %v", ok, err)
	}
	want := `{"specversion":"1.0","id":"e1","source":"/s","type":"t","datacontenttype":"application/json","data":{"a":1}}`
	if d.ContentType != "application/cloudevents+json" || d.MessageId != "e1" || len(d.Headers) != 0 || string(d.Body) != want {
		t.Errorf("delivery: type %s id %s headers %v body %s", d.ContentType, d.MessageId, d.Headers, d.Body)
	}
}

func TestDrainTimesOutWithCounts(t *testing.T) {
	u := server(t)
	ctx := context.Background()
	adm := admin(t, u)
	q := unique("redeliver.q")
	deleteAfter(t, adm, q, "")
	p, err := Open(ctx, Config{URL: u, Queue: q, Create: true})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	if _, err := p.Publish(ctx, broker.Message{ID: "a", Data: []byte(`1`)}); err != nil {
		t.Fatal(err)
	}
	_, err = p.Drain(ctx, broker.DrainOptions{Timeout: 100 * time.Millisecond})
	var be *broker.Error
	if !errors.As(err, &be) || !strings.Contains(be.Msg, "was not drained") || !strings.Contains(be.Msg, "1 published, 1 still pending") ||
		!strings.Contains(be.Msg, " the ready count stayed at 1: it is stuck; the queue has 1 ready and no consumer: nothing reads it; how many its consumers hold unacknowledged") {
		t.Fatalf("got %v, want a broker error naming what is left", err)
	}
}

// TestReadyOnceGone: a consumer takes the message and its connection
// goes (as a killed or stopped instance's does). Acked before, the queue
// is empty with no consumer; held unacked, the message is back, ready;
// with a consumer still there, nothing is known.
func TestReadyOnceGone(t *testing.T) {
	u := server(t)
	ctx := context.Background()
	adm := admin(t, u)
	for _, tt := range []struct {
		name      string
		ack, stay bool
		ready     int
		known     bool
	}{
		{"acked, then gone", true, false, 0, true},
		{"taken unacked, then gone", false, false, 1, true},
		{"acked, the consumer still there", true, true, 0, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			q := unique("redeliver.q")
			deleteAfter(t, adm, q, "")
			p, err := Open(ctx, Config{URL: u, Queue: q, Create: true})
			if err != nil {
				t.Fatal(err)
			}
			defer p.Close()
			if _, err := p.Publish(ctx, broker.Message{ID: "a", Data: []byte(`1`)}); err != nil {
				t.Fatal(err)
			}
			conn, err := amqp091.Dial(u)
			if err != nil {
				t.Fatal(err)
			}
			defer conn.Close()
			ch, err := conn.Channel()
			if err != nil {
				t.Fatal(err)
			}
			ds, err := ch.Consume(q, "", false, false, false, false, nil)
			if err != nil {
				t.Fatal(err)
			}
			d := <-ds
			if tt.ack {
				if err := d.Ack(false); err != nil {
					t.Fatal(err)
				}
			}
			if !tt.stay {
				conn.Close()
			}
			ready, known := p.ReadyOnceGone(ctx, 500*time.Millisecond)
			if ready != tt.ready || known != tt.known {
				t.Fatalf("ReadyOnceGone = %v, %v; want %v, %v", ready, known, tt.ready, tt.known)
			}
		})
	}
}
