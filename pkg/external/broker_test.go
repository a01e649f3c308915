package external

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
	"github.com/redeliver/redeliver/pkg/nats"
	"github.com/redeliver/redeliver/pkg/scenario"
)

// dropping is a broker that drops every publish as a duplicate.
type dropping struct{ dropped int64 }

func (d *dropping) Publish(context.Context, broker.Message) (broker.Receipt, error) {
	d.dropped++
	return broker.Receipt{Seq: 1, Duplicate: true, MsgID: "evt-1#run-1"}, nil
}
func (d *dropping) Counts(context.Context) (broker.Counts, error) {
	return broker.Counts{Dropped: d.dropped, Redelivered: broker.Unknown, Acked: broker.Unknown, Unacked: broker.Unknown}, nil
}
func (d *dropping) Drain(ctx context.Context, _ broker.DrainOptions) (broker.Counts, error) {
	return d.Counts(ctx)
}
func (d *dropping) Close() error { return nil }

// TestADroppedPublishStopsTheRun: a publish the broker drops as a
// duplicate never reached the consumer, so it is not an acked delivery:
// it ends the run with a sentence naming the event and its message id.
func TestADroppedPublishStopsTheRun(t *testing.T) {
	tg := &scenario.Target{Broker: &scenario.NATSTarget{URL: "nats://127.0.0.1:4222", Stream: "S", Durable: "d"}}
	s := &Session{t: tg, dl: &brokerDeliverer{pub: &dropping{}}}
	ev := Event{ID: "evt-1", Source: "/orders", Type: "paid"}
	a := s.deliver(context.Background(), ev, nil)
	if a.Kind == Acked {
		t.Fatalf("a dropped publish answered %s; want it not acked", a)
	}
	err := s.harnessError(a, ev, false)
	var be *broker.Error
	if !errors.As(err, &be) {
		t.Fatalf("harness error %v; want a broker error that stops the run", err)
	}
	for _, want := range []string{"dropped event evt-1 (message id evt-1#run-1)", "never reached the consumer", "1 dropped by the duplicate window"} {
		if !strings.Contains(be.Msg, want) {
			t.Errorf("error %q does not say %q", be.Msg, want)
		}
	}
}

// TestOpenBrokerAckWait: the durable redeliver creates for a NATS target
// gets the file's ack_wait, or the short default.
func TestOpenBrokerAckWait(t *testing.T) {
	url := os.Getenv("REDELIVER_TEST_NATS")
	if url == "" {
		url = "nats://127.0.0.1:4222"
	}
	if c, err := net.DialTimeout("tcp", strings.TrimPrefix(url, "nats://"), 2*time.Second); err != nil {
		if os.Getenv("CI") != "" {
			t.Fatalf("NATS with JetStream is needed at %s under CI: %v", url, err)
		}
		t.Skipf("no NATS at %s (%v): start nats-server -js or set REDELIVER_TEST_NATS", url, err)
	} else {
		c.Close()
	}
	nc, err := natsgo.Connect(url, natsgo.Timeout(10*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	js, _ := jetstream.New(nc)
	ctx := context.Background()
	for _, tt := range []struct {
		name      string
		ackWait   time.Duration
		wantOnDur time.Duration
	}{
		{"no ack_wait", 0, nats.DefaultAckWait},
		{"ack_wait: 1500ms", 1500 * time.Millisecond, 1500 * time.Millisecond},
	} {
		t.Run(tt.name, func(t *testing.T) {
			b := make([]byte, 4)
			_, _ = rand.Read(b)
			stream := "RDLV_TARGET_" + strings.ToUpper(hex.EncodeToString(b))
			t.Cleanup(func() {
				if err := js.DeleteStream(context.Background(), stream); err != nil {
					t.Errorf("delete stream %s: %v", stream, err)
				}
			})
			subject, _ := broker.ParseRoute(strings.ToLower(stream) + ".{type}")
			bd, err := openBroker(ctx, &scenario.Target{Broker: &scenario.NATSTarget{URL: url, Stream: stream, Subject: subject, Durable: "d", Create: true, Mode: broker.Binary, AckWait: tt.ackWait}})
			if err != nil {
				t.Fatal(err)
			}
			bd.pub.Close()
			str, _ := js.Stream(ctx, stream)
			c, err := str.Consumer(ctx, "d")
			if err != nil {
				t.Fatal(err)
			}
			if got := c.CachedInfo().Config.AckWait; got != tt.wantOnDur {
				t.Fatalf("the created durable's AckWait is %s, want %s", got, tt.wantOnDur)
			}
		})
	}
}

// counted is a broker that holds what an earlier run left.
type counted struct {
	dropping
	c broker.Counts
}

func (c *counted) Counts(context.Context) (broker.Counts, error) { return c.c, nil }

// TestLeftoverSaysHowToEmpty: messages a broker held before the run stop
// it with a sentence naming them and the broker's own command to empty
// them; nothing held, nothing said.
func TestLeftoverSaysHowToEmpty(t *testing.T) {
	const why = "the consumer redeliver starts would take them among the checks' deliveries (a run that was interrupted leaves its deliveries behind, with the file's own event ids)"
	tests := []struct {
		target broker.Target
		counts broker.Counts
		want   string
	}{
		{&scenario.AMQPTarget{Queue: "payments"}, broker.Counts{Pending: 1, Unacked: broker.Unknown},
			"RabbitMQ queue payments holds 1 message before the run, and " + why + "; empty it first (rabbitmqctl purge_queue payments) or give the target a queue of its own"},
		{&scenario.NATSTarget{Stream: "ORDERS", Durable: "pay"}, broker.Counts{Pending: 3, Unacked: 2},
			"JetStream durable pay on stream ORDERS has 3 messages to deliver and 2 awaiting an ack before the run, and " + why + "; empty it first (nats stream purge ORDERS, or nats consumer rm ORDERS pay) or give the target a durable of its own"},
		{&scenario.NATSTarget{Stream: "ORDERS", Durable: "pay"}, broker.Counts{Unacked: 1},
			"JetStream durable pay on stream ORDERS has 0 messages to deliver and 1 awaiting an ack before the run, and " + why + "; empty it first (nats stream purge ORDERS, or nats consumer rm ORDERS pay) or give the target a durable of its own"},
		{&scenario.KafkaTarget{Topic: "orders", Group: "pay"}, broker.Counts{Pending: 4},
			"Kafka consumer group pay has 4 records of topic orders it has not committed before the run, and " + why + "; move the group past them first (kafka-consumer-groups --reset-offsets --to-latest --group pay --topic orders --execute) or give the target a group of its own"},
		{&scenario.KafkaTarget{Topic: "orders", Group: "pay"}, broker.Counts{Unacked: broker.Unknown}, ""},
	}
	for _, tt := range tests {
		a, err := broker.AdapterOf(tt.target)
		if err != nil {
			t.Fatal(err)
		}
		err = leftover(context.Background(), &scenario.Target{Broker: tt.target}, &brokerDeliverer{pub: &counted{c: tt.counts}, adapter: a})
		got := ""
		if err != nil {
			got = err.Error()
		}
		if got != tt.want {
			t.Errorf("%s, %+v:\n got %q\nwant %q", tt.target.Kind(), tt.counts, got, tt.want)
		}
	}
}
