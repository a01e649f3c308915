package kafka

import (
	"context"
	"fmt"
	"slices"

	"github.com/redeliver/redeliver/pkg/broker"
	"github.com/redeliver/redeliver/pkg/scenario"
)

// A scenario's kafka: target produces to a topic for the consumer group
// to read.
func init() {
	broker.Register("kafka", broker.Adapter{
		Name: "Kafka",
		Open: func(ctx context.Context, bt broker.Target) (broker.Publisher, string, error) {
			t := bt.(*scenario.KafkaTarget)
			p, err := Open(ctx, Config{Brokers: t.Brokers, Topic: t.Topic, Group: t.Group, Mode: t.Mode, Create: t.Create, Partitions: t.Partitions})
			if err != nil {
				return nil, "", err
			}
			return p, fmt.Sprintf("Kafka %s, topic %s, consumer group %s (%s)", Name(t.Brokers), t.Topic, t.Group, t.Mode), nil
		},
		Leftover: func(bt broker.Target, c broker.Counts, why string) string {
			t := bt.(*scenario.KafkaTarget)
			return fmt.Sprintf("Kafka consumer group %s has %s of topic %s it has not committed before the run, and %s; move the group past them first (kafka-consumer-groups --reset-offsets --to-latest --group %s --topic %s --execute) or give the target a group of its own", t.Group, broker.Count(c.Pending, "record"), t.Topic, why, t.Group, t.Topic)
		},
		AckWord: "offset committed",
		ReadsBack: func(bt broker.Target, in string) string {
			t := bt.(*scenario.KafkaTarget)
			if !broker.IsTopicURL(in) {
				return ""
			}
			u, err := broker.ParseTopicURL(in)
			if err != nil || u.Topic != t.Topic || !slices.ContainsFunc(u.Brokers, func(b string) bool { return slices.Contains(t.Brokers, b) }) {
				return ""
			}
			return "topic"
		},
	})
}
