package kafka

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// TestSpread: with one member holding every partition, no two copies can
// go to two members, and Spread says how the group is; once a second
// member joined and the group settled, it names one partition of each,
// and a record produced to each (PublishTo) is read by the member that
// holds it, not where its key would send it.
func TestSpread(t *testing.T) {
	brokers := cluster(t)
	ctx := context.Background()
	p, err := Open(ctx, Config{Brokers: brokers, Topic: "spread", Group: "g", Create: true, Partitions: 3})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	// member polls as one member of g, sending what it reads on got.
	type read struct {
		member    string
		partition int32
		key       string
	}
	got := make(chan read, 16)
	member := func(name string) {
		cl, err := kgo.NewClient(kgo.SeedBrokers(brokers...), kgo.ConsumerGroup("g"), kgo.ConsumeTopics("spread"), kgo.ClientID(name),
			kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.SessionTimeout(time.Second), kgo.HeartbeatInterval(100*time.Millisecond))
		if err != nil {
			t.Fatal(err)
		}
		mctx, cancel := context.WithCancel(ctx)
		t.Cleanup(func() { cancel(); cl.Close() })
		go func() {
			for mctx.Err() == nil {
				cl.PollFetches(mctx).EachRecord(func(r *kgo.Record) { got <- read{name, r.Partition, string(r.Key)} })
			}
		}()
	}
	member("one")
	if parts, err := p.Spread(ctx, 1, 1, 10*time.Second); err != nil || len(parts) != 1 {
		t.Fatalf("one member: got %v, %v", parts, err)
	}
	_, err = p.Spread(ctx, 2, 1, 300*time.Millisecond)
	if err == nil {
		t.Fatal("two copies spread over a group of one member")
	}
	t.Log(err)
	for _, want := range []string{
		"consumer group g did not settle within 300ms with one member per started instance (1 in all) and 2 of them holding a partition of topic spread, to take one copy of the event each: it is Stable with 1 member: member ",
		" (client one, host ",
		") holds partitions 0, 1, 2; give the topic at least 2 partitions and each instance one member",
	} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("Spread's error lacks %q:\n%v", want, err)
		}
	}
	// Two members, but Spread counts three instances: not settled.
	member("two")
	if parts, err := p.Spread(ctx, 2, 3, 2*time.Second); err == nil {
		t.Fatalf("spread over 2 members where 3 instances run: %v", parts)
	}
	parts, err := p.Spread(ctx, 2, 2, 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if len(parts) != 2 || parts[0] == parts[1] {
		t.Fatalf("want two partitions, got %v", parts)
	}
	// Both copies carry one key, and each is read on its own partition,
	// by a member of its own.
	for _, q := range parts {
		if _, err := p.PublishTo(ctx, message(7), q); err != nil {
			t.Fatal(err)
		}
	}
	var reads []read
	for len(reads) < 2 {
		select {
		case r := <-got:
			reads = append(reads, r)
		case <-time.After(20 * time.Second):
			t.Fatalf("read %v of the two copies", reads)
		}
	}
	if reads[0].member == reads[1].member || reads[0].key != "O-7" || reads[1].key != "O-7" ||
		!slices.Contains(parts, reads[0].partition) || !slices.Contains(parts, reads[1].partition) || reads[0].partition == reads[1].partition {
		t.Errorf("copies on partitions %v were read as %+v", parts, reads)
	}
}
