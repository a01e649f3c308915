package amqp

import (
	"context"
	"fmt"

	"github.com/redeliver/redeliver/pkg/broker"
	"github.com/redeliver/redeliver/pkg/scenario"
)

// A scenario's amqp: target publishes to a RabbitMQ exchange for the
// consumer reading its queue. RabbitMQ shows no other client a
// consumer's ack: a queue counts an unacknowledged message as held.
func init() {
	broker.Register("amqp", broker.Adapter{
		Name: "RabbitMQ",
		Open: func(ctx context.Context, bt broker.Target) (broker.Publisher, string, error) {
			t := bt.(*scenario.AMQPTarget)
			p, err := Open(ctx, Config{URL: t.URL, Exchange: t.Exchange, RoutingKey: t.RoutingKey, Queue: t.Queue, Mode: t.Mode, Create: t.Create})
			if err != nil {
				return nil, "", err
			}
			ex := "the default exchange"
			if t.Exchange != "" {
				ex = "exchange " + t.Exchange
			}
			rk := t.Queue
			if !t.RoutingKey.IsZero() {
				rk = t.RoutingKey.String()
			}
			return p, fmt.Sprintf("RabbitMQ %s, %s, routing key %s, queue %s (%s)", p.Name(), ex, rk, t.Queue, t.Mode), nil
		},
		Leftover: func(bt broker.Target, c broker.Counts, why string) string {
			t := bt.(*scenario.AMQPTarget)
			return fmt.Sprintf("RabbitMQ queue %s holds %s before the run, and %s; empty it first (rabbitmqctl purge_queue %s) or give the target a queue of its own", t.Queue, broker.Count(c.Pending, "message"), why, t.Queue)
		},
	})
}
