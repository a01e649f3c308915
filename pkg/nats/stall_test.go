package nats

import (
	"testing"
	"time"

	"github.com/redeliver/redeliver/pkg/broker"
)

// TestStalledSaysWhy: a drain that timed out says whether the durable's
// ack floor and pending count moved over the window, and what it holds.
func TestStalledSaysWhy(t *testing.T) {
	t0 := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	acked := t0.Add(20 * time.Second)
	look := func(s time.Duration, pending uint64, ackPending int, floor uint64, waiting int) durableLook {
		return durableLook{at: t0.Add(s), pending: pending, ackPending: ackPending, floor: floor, waiting: waiting, lastAck: &acked, ackWait: 30 * time.Second}
	}
	for _, tt := range []struct {
		name  string
		looks []durableLook
		want  string
	}{
		{"moving", []durableLook{look(0, 600, 10, 100, 3), look(15*time.Second, 560, 12, 140, 3), look(40*time.Second, 523, 12, 177, 2)},
			"; in the last 40s the ack floor moved from stream sequence 100 to 177 and the pending count from 600 to 523: it is moving, not stuck" +
				"; the durable has 523 pending, 12 delivered and awaiting an ack (AckWait 30s), its ack floor at stream sequence 177 (last moved 22s ago), and 2 pull requests waiting"},
		{"stuck", []durableLook{look(0, 523, 0, 177, 0), look(time.Second, 523, 0, 177, 0)},
			"; in the last 1s neither the ack floor (stream sequence 177) nor the pending count (523) moved: it is stuck" +
				"; the durable has 523 pending, 0 delivered and awaiting an ack (AckWait 30s), its ack floor at stream sequence 177 (last moved 22s ago), and no pull request waiting"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			h := history{broker.Window[durableLook]{Span: 30 * time.Second}}
			for _, l := range tt.looks {
				h.add(l)
			}
			if got := h.stalled(t0.Add(42 * time.Second)); got != tt.want {
				t.Errorf("got  %q\nwant %q", got, tt.want)
			}
		})
	}
}
