package runner_test

import (
	"context"
	"testing"
	"time"

	"github.com/redeliver/redeliver/pkg/builtin"
	"github.com/redeliver/redeliver/pkg/consumer"
	"github.com/redeliver/redeliver/pkg/runner"
	"github.com/redeliver/redeliver/pkg/scenario"
)

// slowBroker is the built-in handler behind a broker whose consumer
// takes a while to take what was delivered.
type slowBroker struct {
	runner.System
	broker bool
}

func (s slowBroker) Broker() bool { return s.broker }

func (s slowBroker) Settle(ctx context.Context, c *consumer.Counters) error {
	time.Sleep(20 * time.Millisecond)
	return s.System.Settle(ctx, c)
}

// TestDrainsAreRecorded: each wait for a broker's consumer (an inspect
// step's and the check's end) is kept on the check with when it began and
// ended, after the deliveries; a system without a broker keeps none.
func TestDrainsAreRecorded(t *testing.T) {
	src := `version: 1
name: drains
handler: {strategy: event-id, effect: shipments}
checks:
  - name: two waits
    steps:
      - deliver: {id: evt-1, data: {orderId: order-1}}
      - expect: {rows: {shipments: 1}}
      - deliver: {id: evt-2, data: {orderId: order-2}}
`
	for _, broker := range []bool{true, false} {
		s, err := scenario.Load("s.yaml", []byte(src))
		if err != nil {
			t.Fatal(err)
		}
		k := builtin.Kind(s, memory)
		open := k.Open
		k.Open = func(ctx context.Context, s *scenario.Scenario) (runner.System, error) {
			sys, err := open(ctx, s)
			return slowBroker{System: sys, broker: broker}, err
		}
		res, err := runner.Run(context.Background(), s, k)
		if err != nil {
			t.Fatal(err)
		}
		c := res.Checks[0]
		if !broker {
			if len(c.Drains) != 0 {
				t.Errorf("without a broker the check kept %d waits", len(c.Drains))
			}
			continue
		}
		if len(c.Drains) != 2 {
			t.Fatalf("the check kept %d waits, want 2 (the inspect step's and its end's)", len(c.Drains))
		}
		for i, d := range c.Drains {
			if d.To.Sub(d.From) < 20*time.Millisecond {
				t.Errorf("wait %d took %v, want the 20ms the consumer took", i+1, d.To.Sub(d.From))
			}
		}
		if first, second := c.History[0].Span, c.History[1].Span; c.Drains[0].From.Before(first.Answered) || c.Drains[1].From.Before(second.Answered) || !c.Drains[0].To.Before(second.Sent.Add(time.Millisecond)) {
			t.Errorf("the waits %+v are not where they came among the deliveries %+v, %+v", c.Drains, first, second)
		}
	}
}
