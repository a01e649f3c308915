package cmd

import (
	"strings"
	"testing"

	"github.com/redeliver/redeliver/pkg/broker"
	"github.com/redeliver/redeliver/pkg/scenario"
)

// TestEveryBrokerTargetHasAnAdapter: each broker a file's target may name
// opens through an adapter the binary links in (sources.go), which says
// what only it can: how to open it and how to empty what a run left.
func TestEveryBrokerTargetHasAnAdapter(t *testing.T) {
	rest := "effects: {db: x.db, table: p, key: k, key_of: \"{data.k}\"}\nchecks:\n  - name: a\n    steps:\n      - deliver: {id: e, data: {k: o}}\n"
	for kind, target := range map[string]string{
		"nats":  "nats: {url: \"nats://127.0.0.1:4222\", stream: S, subject: s, durable: d}",
		"amqp":  "amqp: {url: \"amqp://guest:guest@127.0.0.1:5672/\", queue: q}",
		"kafka": "kafka: {brokers: [\"127.0.0.1:9092\"], topic: t, group: g}",
	} {
		s, err := scenario.Load("f.yaml", []byte("version: 1\ntarget:\n  "+target+"\n"+rest))
		if err != nil {
			t.Fatalf("%s: %v", kind, err)
		}
		if s.Target.Broker == nil || s.Target.Broker.Kind() != kind {
			t.Fatalf("%s: the target's broker is %v", kind, s.Target.Broker)
		}
		a, err := broker.AdapterOf(s.Target.Broker)
		if err != nil {
			t.Errorf("%s: %v", kind, err)
			continue
		}
		if a.Name == "" || a.Open == nil || a.Leftover == nil {
			t.Errorf("%s: the adapter lacks a name, Open or Leftover: %+v", kind, a)
		}
		if msg := a.Leftover(s.Target.Broker, broker.Counts{Pending: 2}, "WHY"); msg == "" || !strings.Contains(msg, "WHY") {
			t.Errorf("%s: Leftover said %q", kind, msg)
		}
	}
}
