package external

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redeliver/redeliver/pkg/broker"
	"github.com/redeliver/redeliver/pkg/proc"
	"github.com/redeliver/redeliver/pkg/replay"
	"github.com/redeliver/redeliver/pkg/scenario"
)

// brokerDeliverer publishes each delivery into a broker. The consumer
// reads it from there, so a delivery's answer is the broker's: the
// publish was stored (acked). A publish the broker refused, did not
// confirm, or dropped as a duplicate never reached the consumer, and ends
// the run.
type brokerDeliverer struct {
	pub     broker.Publisher
	desc    string
	adapter broker.Adapter
}

// openBroker connects to a broker target's broker, through the adapter
// its kind registered.
func openBroker(ctx context.Context, t *scenario.Target) (*brokerDeliverer, error) {
	if t.Broker == nil {
		return nil, errors.New("the target names no broker")
	}
	a, err := broker.AdapterOf(t.Broker)
	if err != nil {
		return nil, err
	}
	p, desc, err := a.Open(ctx, t.Broker)
	if err != nil {
		return nil, err
	}
	return &brokerDeliverer{pub: p, desc: desc, adapter: a}, nil
}

// leftover fails a run whose started consumer would be handed messages
// that were in the broker before the run: an earlier run that was
// interrupted leaves its deliveries there, with the file's own event ids,
// and the consumer would take them among the checks' deliveries — a kill
// at "the delivery's" statements could then land in a leftover's, and a
// verdict would be about messages the file never sent. Nothing is
// emptied: redeliver deletes nothing in a broker.
func leftover(ctx context.Context, t *scenario.Target, d *brokerDeliverer) error {
	c, err := d.pub.Counts(ctx)
	if err != nil {
		return err
	}
	if c.Pending+max(c.Unacked, 0) == 0 {
		return nil
	}
	const why = "the consumer redeliver starts would take them among the checks' deliveries (a run that was interrupted leaves its deliveries behind, with the file's own event ids)"
	return &broker.Error{Msg: d.adapter.Leftover(t.Broker, c, why), Counts: c}
}

func (d *brokerDeliverer) Deliver(ctx context.Context, ev Event, _ <-chan struct{}) Answer {
	m := message(ev)
	r, err := d.pub.Publish(ctx, m)
	return d.answer(ctx, ev, m, r, err)
}

// deliverTo publishes ev to a partition named (a spreader's): a copy of
// an event produced as an outbox with another partitioner does.
func (d *brokerDeliverer) deliverTo(ctx context.Context, ev Event, partition int32) Answer {
	m := message(ev)
	r, err := d.pub.(spreader).PublishTo(ctx, m, partition)
	return d.answer(ctx, ev, m, r, err)
}

func message(ev Event) broker.Message {
	return broker.Message{ID: ev.ID, Source: ev.Source, Type: ev.Type, Subject: ev.Subject, Time: ev.Time, Data: ev.Data, MsgID: ev.MsgID, Key: ev.Key}
}

// answer is the delivery's answer from the broker's to its publish.
func (d *brokerDeliverer) answer(ctx context.Context, ev Event, m broker.Message, r broker.Receipt, err error) Answer {
	if err != nil {
		return Answer{Kind: Unacked, Err: err}
	}
	if r.Duplicate {
		// Every publish has a message id of its own, so this is a broker
		// that dropped what the run asked to deliver: never a pass.
		c, _ := d.pub.Counts(ctx)
		id := m.TransportID()
		if r.MsgID != "" {
			id = r.MsgID
		}
		return Answer{Kind: Unacked, Err: &broker.Error{Msg: fmt.Sprintf("the broker dropped event %s (message id %s) as a duplicate of a message it already held, so it never reached the consumer; %s", ev.ID, id, c), Counts: c}}
	}
	return Answer{Kind: Acked}
}

func (d *brokerDeliverer) Forget() {}

func (d *brokerDeliverer) Describe() string { return d.desc }

// drain waits until the broker says the consumer has taken everything
// published, and counts what the broker did since the last drain.
func (s *Session) drain(ctx context.Context, c *brokerCounts) error {
	return s.drainAs(ctx, c, 0)
}

// drainAs is drain with the broker's settle time settle (zero: its
// default).
func (s *Session) drainAs(ctx context.Context, c *brokerCounts, settle time.Duration) error {
	bd, ok := s.dl.(*brokerDeliverer)
	if !ok {
		return nil
	}
	counts, err := bd.pub.Drain(ctx, broker.DrainOptions{Timeout: s.t.DrainTimeout(), Settle: settle})
	if err != nil {
		if died, msg := s.diedByItself(); died {
			return errors.New(msg)
		}
		return err
	}
	if counts.Redelivered == broker.Unknown {
		c.uncounted = true
	} else {
		c.delta = counts.Redelivered - c.seen
		c.seen = counts.Redelivered
	}
	return nil
}

// drainStopped ends a drain exactly where the broker shows no other
// client a consumer's unacknowledged messages (RabbitMQ) and redeliver
// started the consumer. A queue that stood empty for the settle time may
// still have messages at work in an instance, whose effects would be read
// before they were written. So the instances are stopped, as at the end
// of a run (SIGTERM, then SIGKILL after proc.StopGrace): a queue with no
// consumer left and nothing ready holds nothing an instance took and did
// not ack. What a stop put back, the instances started again take, and
// the queue is drained again with twice the settle time the drain before
// it had (settle; zero: the broker's default), until a stop puts nothing
// back, within the target's drain timeout. The instances are
// left stopped. Where a consumer redeliver did not start stays on the
// queue, nothing more can be known and the drain is as the settle time
// left it, or as the broker's default settle time leaves it when settle
// was shorter.
func (s *Session) drainStopped(ctx context.Context, c *brokerCounts, settle time.Duration) (replay.HeldBack, error) {
	var held replay.HeldBack
	if !s.stopsToDrain() {
		return held, nil
	}
	deadline := time.Now().Add(s.t.DrainTimeout())
	if settle <= 0 {
		settle = broker.DefaultSettle
	}
	for {
		held.KilledAtStop += s.stopInstances()
		ready, known := s.readyOnceGone(ctx)
		if !known && settle < broker.DefaultSettle {
			// Another client stays on the queue: the settle time alone
			// decides, and a short one would not do.
			return held, s.drainAs(ctx, c, broker.DefaultSettle)
		}
		if !known || ready == 0 {
			return held, ctx.Err()
		}
		if time.Now().After(deadline) {
			bd := s.dl.(*brokerDeliverer)
			counts, _ := bd.pub.Counts(ctx)
			return held, &broker.Error{Msg: fmt.Sprintf("the consumer did not drain within %s: each time the queue had stood empty and its instances were stopped, they had held messages unacknowledged (%d put back the last time), which %s shows no other client while they live; %s", s.t.DrainTimeout(), ready, s.ackUnseen(), counts), Counts: counts}
		}
		held.Restarts++
		held.Messages += ready
		if err := s.restartInstances(ctx); err != nil {
			return held, err
		}
		settle *= 2
		if err := s.drainAs(ctx, c, settle); err != nil {
			return held, err
		}
	}
}

// stoppedSettle is how long a check's drain waits on an empty queue
// before drainStopped stops the instances, where it does: the stop, not
// the wait, tells that nothing is held, so the wait need only spare the
// instances a needless restart when a message is still on its way to
// one. A stop that puts messages back costs a restart and a drain with
// twice the wait.
const stoppedSettle = 200 * time.Millisecond

// stopsToDrain says drainStopped stops the instances: the broker shows
// no other client a consumer's unacknowledged messages, and redeliver
// started the consumer.
func (s *Session) stopsToDrain() bool { return len(s.procs) > 0 && s.ackUnseen() != "" }

// stopInstances stops every started instance at once, and says how many
// did not end within proc.StopGrace of their SIGTERM and were killed.
func (s *Session) stopInstances() (overran int) {
	var wg sync.WaitGroup
	var n atomic.Int32
	for _, p := range s.procs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if p.Stop() {
				n.Add(1)
			}
		}()
	}
	wg.Wait()
	return int(n.Load())
}

// restartInstances starts every stopped instance again, in order, as
// they were started first (their output files are named in that order),
// each once the one before is ready.
func (s *Session) restartInstances(ctx context.Context) error {
	for _, p := range s.procs {
		if err := p.Restart(ctx); err != nil {
			return err
		}
	}
	return nil
}

// brokerCounts follows the broker's cumulative redelivery count.
type brokerCounts struct {
	seen, delta int64
	uncounted   bool
}

// closeBroker disconnects from the broker, if the target is one.
func (s *Session) closeBroker() {
	if bd, ok := s.dl.(*brokerDeliverer); ok {
		bd.pub.Close()
	}
}

// nemesis starts killing a random started instance every period (SIGKILL
// to its process group, then a restart). stop ends it and returns its
// error, if a restart failed; pace says the kills so far and how far
// apart they came.
func (s *Session) nemesis(ctx context.Context, every time.Duration, seed int64) (pace func() proc.Pace, stop func() error) {
	ins := make([]proc.Instance, len(s.procs))
	for i, p := range s.procs {
		ins[i] = p
	}
	n := proc.NewNemesis(every, seed, ins)
	s.killer, s.killerBegan = n, time.Now()
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- n.Run(ctx) }()
	var once bool
	var err error
	stop = func() error {
		if !once {
			once = true
			cancel()
			err = <-done
		}
		return err
	}
	return n.Pace, stop
}
