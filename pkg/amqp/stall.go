package amqp

import (
	"fmt"
	"strings"
	"time"

	"github.com/redeliver/redeliver/pkg/broker"
)

// stallWindow is how far back a drain that timed out looks for the
// queue's progress: long enough to span a few kills and restarts, so a
// consumer slow under the nemesis is told from one that is stuck.
const stallWindow = 30 * time.Second

// queueLook is the queue as one look of the drain saw it.
type queueLook struct {
	at        time.Time
	ready     int
	consumers int
}

// history keeps the drain's looks of the last stallWindow, and the one
// just before it, which is where the progress is counted from.
type history struct{ broker.Window[queueLook] }

func (h *history) add(l queueLook) { h.Add(l.at, l) }

// stalled says what a drain that timed out knows of why: whether the
// ready count went down over the window, and the queue's ready messages
// and consumers now. RabbitMQ does not tell an AMQP client how many
// messages its consumers hold unacknowledged, and the message says so
// rather than guess.
func (h *history) stalled() string {
	f, l, over, ok := h.Ends()
	if !ok {
		return ""
	}
	over = over.Round(time.Millisecond)
	var b strings.Builder
	switch {
	case l.ready < f.ready:
		fmt.Fprintf(&b, "; in the last %s the ready count went down from %d to %d: it is moving, not stuck", over, f.ready, l.ready)
	case l.ready == f.ready:
		fmt.Fprintf(&b, "; in the last %s the ready count stayed at %d: it is stuck", over, l.ready)
	default:
		fmt.Fprintf(&b, "; in the last %s the ready count went up from %d to %d: it is not draining", over, f.ready, l.ready)
	}
	fmt.Fprintf(&b, "; the queue has %d ready", l.ready)
	switch l.consumers {
	case 0:
		b.WriteString(" and no consumer: nothing reads it")
	case 1:
		b.WriteString(" and 1 consumer")
	default:
		fmt.Fprintf(&b, " and %d consumers", l.consumers)
	}
	b.WriteString("; how many its consumers hold unacknowledged RabbitMQ does not tell an AMQP client (rabbitmqctl list_queues name messages_ready messages_unacknowledged does)")
	return b.String()
}
