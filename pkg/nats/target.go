package nats

import (
	"context"
	"fmt"
	"net/url"
	"strings"

	"github.com/redeliver/redeliver/pkg/broker"
	"github.com/redeliver/redeliver/pkg/redact"
	"github.com/redeliver/redeliver/pkg/scenario"
)

// A scenario's nats: target publishes into a JetStream stream for the
// consumer reading its durable.
func init() {
	broker.Register("nats", broker.Adapter{
		Name: "JetStream",
		Open: func(ctx context.Context, bt broker.Target) (broker.Publisher, string, error) {
			t := bt.(*scenario.NATSTarget)
			p, err := Open(ctx, Config{URL: t.URL, Stream: t.Stream, Subject: t.Subject, Consumer: t.Durable, Mode: t.Mode, Create: t.Create, AckWait: t.AckWait})
			if err != nil {
				return nil, "", err
			}
			return p, fmt.Sprintf("JetStream %s, stream %s, subject %s, durable %s (%s)", redact.String(t.URL), t.Stream, t.Subject, t.Durable, t.Mode), nil
		},
		Leftover: func(bt broker.Target, c broker.Counts, why string) string {
			t := bt.(*scenario.NATSTarget)
			held := broker.Count(c.Pending, "message") + " to deliver"
			if c.Unacked > 0 {
				held += fmt.Sprintf(" and %d awaiting an ack", c.Unacked)
			}
			return fmt.Sprintf("JetStream durable %s on stream %s has %s before the run, and %s; empty it first (nats stream purge %s, or nats consumer rm %s %s) or give the target a durable of its own", t.Durable, t.Stream, held, why, t.Stream, t.Stream, t.Durable)
		},
		AckWord: "acked",
		ReadsBack: func(bt broker.Target, in string) string {
			t := bt.(*scenario.NATSTarget)
			if !broker.IsStreamURL(in) {
				return ""
			}
			u, err := broker.ParseStreamURL(in)
			if err != nil || u.Stream != t.Stream {
				return ""
			}
			if su, err := url.Parse(u.Server); err != nil || !strings.Contains(t.URL, su.Host) {
				return ""
			}
			return "stream"
		},
	})
}
