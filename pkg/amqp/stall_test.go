package amqp

import (
	"testing"
	"time"

	"github.com/redeliver/redeliver/pkg/broker"
)

// TestStalledSaysWhy: a drain that timed out says whether the queue's
// ready count went down over the window, its consumers, and that the
// unacknowledged count is not one an AMQP client is told.
func TestStalledSaysWhy(t *testing.T) {
	t0 := time.Now()
	look := func(s time.Duration, ready, consumers int) queueLook {
		return queueLook{at: t0.Add(s), ready: ready, consumers: consumers}
	}
	const unacked = "; how many its consumers hold unacknowledged RabbitMQ does not tell an AMQP client (rabbitmqctl list_queues name messages_ready messages_unacknowledged does)"
	for _, tt := range []struct {
		name  string
		looks []queueLook
		want  string
	}{
		{"moving", []queueLook{look(0, 600, 3), look(31*time.Second, 560, 3), look(40*time.Second, 523, 2)},
			"; in the last 40s the ready count went down from 600 to 523: it is moving, not stuck; the queue has 523 ready and 2 consumers" + unacked},
		{"stuck", []queueLook{look(0, 523, 1), look(2*time.Second, 523, 1)},
			"; in the last 2s the ready count stayed at 523: it is stuck; the queue has 523 ready and 1 consumer" + unacked},
		{"coming back", []queueLook{look(0, 10, 0), look(time.Second, 14, 0)},
			"; in the last 1s the ready count went up from 10 to 14: it is not draining; the queue has 14 ready and no consumer: nothing reads it" + unacked},
	} {
		t.Run(tt.name, func(t *testing.T) {
			h := history{broker.Window[queueLook]{Span: 30 * time.Second}}
			for _, l := range tt.looks {
				h.add(l)
			}
			if got := h.stalled(); got != tt.want {
				t.Errorf("got  %q\nwant %q", got, tt.want)
			}
		})
	}
}
