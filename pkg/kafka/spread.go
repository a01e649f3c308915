package kafka

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/redeliver/redeliver/pkg/broker"
	"github.com/twmb/franz-go/pkg/kgo"
)

// Spread waits until the group is stable with exactly members members
// (the instances started: a member killed earlier and not yet taken out
// would hold partitions no instance reads) of which at least n hold a
// partition of the topic, and returns one partition of each of n such
// members: the lowest each holds, members in the order the coordinator
// lists them. Records produced to them (PublishTo) go to n different
// members at once, as copies of one event do when an outbox republishes
// it with another partitioner than the key's. A group that does not get
// there within wait is a *broker.Error saying what it is instead.
func (p *Publisher) Spread(ctx context.Context, n, members int, wait time.Duration) ([]int32, error) {
	deadline := time.Now().Add(wait)
	for {
		g := p.describe(ctx)
		if parts, ok := spread(g, n, members); ok {
			return parts, nil
		}
		if time.Now().After(deadline) {
			p.mu.Lock()
			c := p.countsLocked()
			p.mu.Unlock()
			return nil, &broker.Error{Msg: fmt.Sprintf("consumer group %s did not settle within %s with one member per started instance (%d in all) and %d of them holding a partition of topic %s, to take one copy of the event each: %s; give the topic at least %d partitions and each instance one member", p.cfg.Group, wait, members, n, p.cfg.Topic, groupNow(g), n), Counts: c}
		}
		t := time.NewTimer(20 * time.Millisecond)
		select {
		case <-ctx.Done():
			t.Stop()
			return nil, ctx.Err()
		case <-t.C:
		}
	}
}

// spread picks one partition of each of n members of g holding one, if
// g is stable with exactly members members.
func spread(g group, n, members int) ([]int32, bool) {
	if g.err != nil || g.state != "Stable" || len(g.members) != members {
		return nil, false
	}
	var parts []int32
	for _, m := range g.members {
		if len(m.partitions) > 0 && len(parts) < n {
			parts = append(parts, m.partitions[0])
		}
	}
	return parts, len(parts) == n
}

// groupNow says the group as it was last described.
func groupNow(g group) string {
	if g.err != nil {
		return fmt.Sprintf("it could not be described (%v)", g.err)
	}
	var ms []string
	for _, m := range g.members {
		ps := "no partition"
		if len(m.partitions) > 0 {
			ps = partitionList(m.partitions)
		}
		ms = append(ms, memberName(m)+" holds "+ps)
	}
	switch len(ms) {
	case 0:
		return fmt.Sprintf("it is %s with no member", g.state)
	case 1:
		return fmt.Sprintf("it is %s with 1 member: %s", g.state, ms[0])
	}
	return fmt.Sprintf("it is %s with %d members: %s", g.state, len(ms), strings.Join(ms, ", "))
}

// PublishTo produces one record, as Publish does, to the given
// partition instead of the one its key hashes to.
func (p *Publisher) PublishTo(ctx context.Context, m broker.Message, partition int32) (broker.Receipt, error) {
	p.mu.Lock()
	if p.manual == nil {
		cl, err := newClient(p.cfg.Brokers,
			kgo.DefaultProduceTopic(p.cfg.Topic),
			kgo.RecordPartitioner(kgo.ManualPartitioner()),
			kgo.RequiredAcks(kgo.AllISRAcks()),
			kgo.ProducerLinger(0),
			kgo.RecordDeliveryTimeout(30*time.Second),
		)
		if err != nil {
			p.mu.Unlock()
			return broker.Receipt{}, err
		}
		p.manual = cl
	}
	cl := p.manual
	p.mu.Unlock()
	r := Record(m, p.cfg.Topic, p.cfg.Mode)
	r.Partition = partition
	return p.produce(ctx, cl, r, m)
}
