package kafka

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/redeliver/redeliver/pkg/broker"
	"github.com/twmb/franz-go/pkg/kgo"
)

// TestStalledSaysWhy: a drain that timed out says whether the group's
// offsets were still moving, the group's state and members, which
// members hold partitions that did not move, and which partitions with
// records left nobody holds.
func TestStalledSaysWhy(t *testing.T) {
	off := func(committed ...int64) []partitionOffsets {
		var o []partitionOffsets
		for i, c := range committed {
			o = append(o, partitionOffsets{partition: int32(i), end: 100, committed: c})
		}
		return o
	}
	m1 := member{id: "m-1", client: "payments", host: "/127.0.0.1", partitions: []int32{0, 1}}
	m2 := member{id: "m-2", client: "payments", host: "/127.0.0.1", partitions: []int32{2}}
	for _, tt := range []struct {
		name        string
		first, last []partitionOffsets
		g           group
		want        string
	}{
		{"moving", off(10, 20, 30), off(40, 20, 35), group{state: "Stable", members: []member{m1, m2}},
			"; in the last 30s the group committed 35 records (partition 0 from 10 to 40, partition 2 from 30 to 35): it is moving, not stuck" +
				"; consumer group g is Stable with 2 members: member m-1 (client payments, host 127.0.0.1) holds partitions 0, 1, member m-2 (client payments, host 127.0.0.1) holds partition 2" +
				"; not heard from in the last 30s (records left on their partitions, nothing committed): member m-1 (client payments, host 127.0.0.1)"},
		{"stuck in a rebalance", off(10, 20, 30), off(10, 20, 30), group{state: "PreparingRebalance", members: []member{{id: "m-3", client: "c", host: "h"}}},
			"; the group committed nothing in the last 30s: its offsets are stuck; consumer group g is PreparingRebalance with 1 member: member m-3 (client c, host h) holds no partition" +
				"; partitions 0, 1, 2 with records left held by no member"},
		{"empty", off(10, -1), off(10, -1), group{state: "Empty"},
			"; the group committed nothing in the last 30s: its offsets are stuck; consumer group g is Empty with no member: nothing is consuming"},
		{"not described", off(10), off(12), group{err: context.DeadlineExceeded},
			"; in the last 30s the group committed 2 records (partition 0 from 10 to 12): it is moving, not stuck; consumer group g could not be described: context deadline exceeded"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if got := stalled("g", tt.first, tt.last, 30*time.Second, tt.g); got != tt.want {
				t.Errorf("got  %q\nwant %q", got, tt.want)
			}
		})
	}
}

// TestDrainNamesTheSilentMember: a member that takes its partition and
// never commits is named, with the group's state, when the drain gives up.
func TestDrainNamesTheSilentMember(t *testing.T) {
	brokers := cluster(t)
	ctx := context.Background()
	p, err := Open(ctx, Config{Brokers: brokers, Topic: "silent", Group: "g", Create: true, Partitions: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	for i := range 3 {
		if _, err := p.Publish(ctx, message(i)); err != nil {
			t.Fatal(err)
		}
	}
	cl, err := kgo.NewClient(kgo.SeedBrokers(brokers...), kgo.ConsumerGroup("g"), kgo.ConsumeTopics("silent"), kgo.ClientID("silent-member"),
		kgo.DisableAutoCommit(), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	pctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	for n := 0; n < 3 && pctx.Err() == nil; {
		n += len(cl.PollFetches(pctx).Records())
	}
	_, err = p.Drain(ctx, broker.DrainOptions{Timeout: 300 * time.Millisecond, Poll: 20 * time.Millisecond})
	if err == nil {
		t.Fatal("the drain ended with nothing committed")
	}
	t.Log(err)
	for _, want := range []string{
		"3 uncommitted: partition 0 has no committed offset",
		": its offsets are stuck; consumer group g is Stable with 1 member: member ",
		" (client silent-member, host ",
		") holds partition 0; not heard from in the last ",
	} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("the drain's error lacks %q:\n%v", want, err)
		}
	}
}
