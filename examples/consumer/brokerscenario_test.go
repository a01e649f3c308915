package main

import (
	"context"
	"net/url"
	"strings"
	"testing"

	natsgo "github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	amqp091 "github.com/rabbitmq/amqp091-go"
)

// TestShippedBrokerScenarios runs examples/consumer/brokers/*.yaml through
// the redeliver command: redeliver publishes into the real broker, three
// instances of the consumer read from it (two of them are killed and
// restarted on the way, and none may be left running at the end), and the
// broker says when they have drained. The safe
// consumer passes; --flaw none pays an order twice when the outbox
// publishes it twice, and the run says duplicate-effect.
func TestShippedBrokerScenarios(t *testing.T) {
	pg := pgDSN(t)
	bin := buildConsumer(t)
	for _, b := range []struct {
		file  string
		setup func(t *testing.T, env map[string]string)
		// safe is a line the verbose report of a safe run must hold.
		safe string
	}{
		{"examples/consumer/brokers/nats.yaml", natsStream, "2 crashes, 5 effect rows; broker: 6 published, 1 dropped by the duplicate window"},
		{"examples/consumer/brokers/amqp.yaml", amqpQueue, "2 crashes, 5 effect rows; broker: 7 published, 0 dropped by the duplicate window, redeliveries not counted by the broker"},
	} {
		for _, tt := range []struct{ flaw, invariant string }{{"safe", ""}, {"none", "duplicate-effect"}} {
			t.Run(strings.TrimSuffix(b.file[strings.LastIndex(b.file, "/")+1:], ".yaml")+"/"+tt.flaw, func(t *testing.T) {
				env := map[string]string{"CONSUMER": bin, "FLAW": tt.flaw, "DATABASE_URL": freshSchema(t, pg)}
				b.setup(t, env)
				o := redeliver(t, env, "run", b.file, "-v")
				if tt.invariant == "" {
					if o.exit != 0 || !strings.Contains(o.stdout, b.safe) || !strings.Contains(o.stdout, "(3 instances)") {
						t.Fatalf("want exit 0, 3 instances and %q, got\n%s", b.safe, o)
					}
					return
				}
				if o.exit != 1 || !strings.Contains(o.stdout, "invariant "+tt.invariant+" broken") {
					t.Fatalf("want exit 1 naming %s, got\n%s", tt.invariant, o)
				}
			})
		}
	}
}

// natsStream names a stream of the test's own, which the scenario creates
// (create: true) and the test deletes.
func natsStream(t *testing.T, env map[string]string) {
	u := natsURL()
	reachable(t, "NATS", strings.TrimPrefix(u, "nats://"))
	stream := "SCENARIO_" + strings.ToUpper(suffix())
	env["NATS"], env["STREAM"] = u, stream
	t.Cleanup(func() {
		nc, err := natsgo.Connect(u)
		if err != nil {
			t.Error(err)
			return
		}
		defer nc.Close()
		js, _ := jetstream.New(nc)
		if err := js.DeleteStream(context.Background(), stream); err != nil {
			t.Errorf("delete stream %s: %v", stream, err)
		}
	})
}

// amqpQueue names a queue of the test's own, which the scenario declares
// (create: true) and the test deletes.
func amqpQueue(t *testing.T, env map[string]string) {
	u := amqpURL()
	pu, _ := url.Parse(u)
	reachable(t, "RabbitMQ", pu.Host)
	queue := "scenario.payments." + suffix()
	env["AMQP"], env["QUEUE"] = u, queue
	t.Cleanup(func() {
		conn, err := amqp091.Dial(u)
		if err != nil {
			t.Error(err)
			return
		}
		defer conn.Close()
		ch, _ := conn.Channel()
		if _, err := ch.QueueDelete(queue, false, false, false); err != nil {
			t.Errorf("delete queue %s: %v", queue, err)
		}
	})
}
