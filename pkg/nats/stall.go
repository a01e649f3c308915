package nats

import (
	"fmt"
	"strings"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/redeliver/redeliver/pkg/broker"
)

// stallWindow is how far back a drain that timed out looks for the
// durable's progress: long enough to span a few kills and restarts, so a
// consumer slow under the nemesis is told from one that is stuck.
const stallWindow = 30 * time.Second

// durableLook is the durable consumer as one look of the drain saw it.
type durableLook struct {
	at         time.Time
	pending    uint64 // not yet delivered
	ackPending int    // delivered, awaiting an ack
	floor      uint64 // the ack floor's stream sequence: every message up to it is acked
	waiting    int    // pull requests waiting
	lastAck    *time.Time
	ackWait    time.Duration
}

func lookOf(at time.Time, info *jetstream.ConsumerInfo) durableLook {
	return durableLook{at: at, pending: info.NumPending, ackPending: info.NumAckPending, floor: info.AckFloor.Stream,
		waiting: info.NumWaiting, lastAck: info.AckFloor.Last, ackWait: info.Config.AckWait}
}

// history keeps the drain's looks of the last stallWindow, and the one
// just before it, which is where the progress is counted from.
type history struct{ broker.Window[durableLook] }

func (h *history) add(l durableLook) { h.Add(l.at, l) }

// stalled says what a drain that timed out knows of why: whether the
// ack floor and the pending count moved over the window, and the
// durable's pending, awaiting an ack, ack floor and waiting pulls now.
func (h *history) stalled(now time.Time) string {
	f, l, over, ok := h.Ends()
	if !ok {
		return ""
	}
	over = over.Round(time.Millisecond)
	var b strings.Builder
	if l.floor > f.floor || l.pending < f.pending {
		fmt.Fprintf(&b, "; in the last %s the ack floor moved from stream sequence %d to %d and the pending count from %d to %d: it is moving, not stuck", over, f.floor, l.floor, f.pending, l.pending)
	} else {
		fmt.Fprintf(&b, "; in the last %s neither the ack floor (stream sequence %d) nor the pending count (%d) moved: it is stuck", over, l.floor, l.pending)
	}
	fmt.Fprintf(&b, "; the durable has %d pending, %d delivered and awaiting an ack (AckWait %s), its ack floor at stream sequence %d", l.pending, l.ackPending, l.ackWait, l.floor)
	if l.lastAck != nil && !l.lastAck.IsZero() {
		fmt.Fprintf(&b, " (last moved %s ago)", now.Sub(*l.lastAck).Round(time.Millisecond))
	}
	switch l.waiting {
	case 0:
		b.WriteString(", and no pull request waiting")
	case 1:
		b.WriteString(", and 1 pull request waiting")
	default:
		fmt.Fprintf(&b, ", and %d pull requests waiting", l.waiting)
	}
	return b.String()
}
