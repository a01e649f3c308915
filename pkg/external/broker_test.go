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
	tg := &scenario.Target{NATS: &scenario.NATSTarget{URL: "nats://127.0.0.1:4222", Stream: "S", Durable: "d"}}
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
	nc, err := natsgo.Connect(url)
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
			bd, err := openBroker(ctx, &scenario.Target{NATS: &scenario.NATSTarget{URL: url, Stream: stream, Subject: subject, Durable: "d", Create: true, Mode: broker.Binary, AckWait: tt.ackWait}})
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
