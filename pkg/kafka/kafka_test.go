package kafka

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/redeliver/redeliver/pkg/broker"
	"github.com/redeliver/redeliver/pkg/kafka/_kfake"
	"github.com/tidwall/gjson"
	"github.com/twmb/franz-go/pkg/kgo"
)

// cluster starts an in-process Kafka cluster of three brokers, closed
// when the test ends.
func cluster(t testing.TB) []string {
	t.Helper()
	c, err := kfake.NewCluster(kfake.NumBrokers(3), kfake.GroupMinSessionTimeout(100*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	return c.ListenAddrs()
}

func message(i int) broker.Message {
	return broker.Message{ID: fmt.Sprintf("evt-%d", i), Source: "/orders", Type: "order_paid",
		Data: []byte(fmt.Sprintf(`{"orderId":"O-%d","amount":10}`, i)), Key: fmt.Sprintf("O-%d", i)}
}

// consume reads the topic as group, committing each record after it was
// taken, until n records were taken.
func consume(t *testing.T, brokers []string, topic, group string, n int) []*kgo.Record {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(brokers...), kgo.ConsumerGroup(group), kgo.ConsumeTopics(topic),
		kgo.DisableAutoCommit(), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var got []*kgo.Record
	for len(got) < n {
		fs := cl.PollFetches(ctx)
		if err := ctx.Err(); err != nil {
			t.Fatalf("took %d of %d records: %v", len(got), n, err)
		}
		fs.EachRecord(func(r *kgo.Record) { got = append(got, r) })
		if err := cl.CommitRecords(ctx, fs.Records()...); err != nil {
			t.Fatal(err)
		}
	}
	return got
}

func TestPublishAndDrain(t *testing.T) {
	brokers := cluster(t)
	ctx := context.Background()
	for _, mode := range []broker.Mode{broker.Binary, broker.Structured} {
		t.Run(string(mode), func(t *testing.T) {
			topic, group := "orders-"+string(mode), "payments-"+string(mode)
			p, err := Open(ctx, Config{Brokers: brokers, Topic: topic, Group: group, Mode: mode, Create: true, Partitions: 3})
			if err != nil {
				t.Fatal(err)
			}
			defer p.Close()
			for i := range 6 {
				if _, err := p.Publish(ctx, message(i)); err != nil {
					t.Fatal(err)
				}
			}
			c, err := p.Counts(ctx)
			if err != nil || c.Published != 6 || c.Pending != 6 || c.Acked != 0 {
				t.Fatalf("before the group read: %+v, %v; want 6 published, 6 pending", c, err)
			}
			// Nobody reads: the drain gives up naming what is left.
			_, err = p.Drain(ctx, broker.DrainOptions{Timeout: 200 * time.Millisecond, Poll: 20 * time.Millisecond})
			var be *broker.Error
			if !errors.As(err, &be) || !strings.Contains(err.Error(), "consumer group "+group+" did not commit to the end of topic "+topic) ||
				!strings.Contains(err.Error(), "6 uncommitted: partition ") || !strings.Contains(err.Error(), "has no committed offset") {
				t.Fatalf("drain with no reader: %v", err)
			}
			recs := consume(t, brokers, topic, group, 6)
			c, err = p.Drain(ctx, broker.DrainOptions{Timeout: 10 * time.Second})
			if err != nil || c.Pending != 0 || c.Acked != 6 {
				t.Fatalf("after the group read: %+v, %v; want nothing pending, 6 acked", c, err)
			}
			byKey := map[string]int32{}
			for _, r := range recs {
				h := map[string]string{}
				for _, x := range r.Headers {
					h[x.Key] = string(x.Value)
				}
				if prev, ok := byKey[string(r.Key)]; ok && prev != r.Partition {
					t.Errorf("key %s in partitions %d and %d", r.Key, prev, r.Partition)
				}
				byKey[string(r.Key)] = r.Partition
				switch mode {
				case broker.Binary:
					id := h["ce_id"]
					if h["ce_specversion"] != "1.0" || h["ce_source"] != "/orders" || h["ce_type"] != "order_paid" || h["content-type"] != "application/json" ||
						!strings.HasPrefix(id, "evt-") || string(r.Key) != "O-"+strings.TrimPrefix(id, "evt-") || gjson.GetBytes(r.Value, "orderId").String() != string(r.Key) {
						t.Errorf("binary record: key %s, headers %v, value %s", r.Key, h, r.Value)
					}
				case broker.Structured:
					if len(h) != 1 || h["content-type"] != "application/cloudevents+json" || gjson.GetBytes(r.Value, "specversion").String() != "1.0" ||
						gjson.GetBytes(r.Value, "data.orderId").String() != string(r.Key) {
						t.Errorf("structured record: key %s, headers %v, value %s", r.Key, h, r.Value)
					}
				}
			}
			// A second publisher starts from the group's commits: only
			// what it publishes counts as acked.
			p2, err := Open(ctx, Config{Brokers: brokers, Topic: topic, Group: group, Mode: mode})
			if err != nil {
				t.Fatal(err)
			}
			defer p2.Close()
			if _, err := p2.Publish(ctx, message(9)); err != nil {
				t.Fatal(err)
			}
			consume(t, brokers, topic, group, 1)
			if c, err := p2.Drain(ctx, broker.DrainOptions{Timeout: 10 * time.Second}); err != nil || c.Acked != 1 || c.Published != 1 {
				t.Fatalf("second run: %+v, %v; want 1 published, 1 acked", c, err)
			}
		})
	}
}

// TestCommitShortOfTheEnd: a group that committed part of a partition is
// named with how far it got.
func TestCommitShortOfTheEnd(t *testing.T) {
	brokers := cluster(t)
	ctx := context.Background()
	p, err := Open(ctx, Config{Brokers: brokers, Topic: "t", Group: "g", Create: true, Partitions: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	for i := range 5 {
		if _, err := p.Publish(ctx, message(i)); err != nil {
			t.Fatal(err)
		}
	}
	cl, err := kgo.NewClient(kgo.SeedBrokers(brokers...), kgo.ConsumerGroup("g"), kgo.ConsumeTopics("t"), kgo.DisableAutoCommit(), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	if err != nil {
		t.Fatal(err)
	}
	var got []*kgo.Record
	for len(got) < 2 {
		got = append(got, cl.PollRecords(ctx, 2-len(got)).Records()...)
	}
	if err := cl.CommitRecords(ctx, got[:2]...); err != nil {
		t.Fatal(err)
	}
	cl.Close()
	_, err = p.Drain(ctx, broker.DrainOptions{Timeout: 100 * time.Millisecond, Poll: 20 * time.Millisecond})
	if err == nil || !strings.Contains(err.Error(), "3 uncommitted: partition 0 committed up to 2 of 5 (3 records uncommitted) (5 published)") {
		t.Fatalf("got %v", err)
	}
}

func TestOpenRefuses(t *testing.T) {
	brokers := cluster(t)
	ctx := context.Background()
	for _, c := range []struct {
		name string
		cfg  Config
		want string
	}{
		{"missing topic", Config{Brokers: brokers, Topic: "nope", Group: "g"}, "Kafka topic nope does not exist on " + Name(brokers) + "; create it, or set create: true"},
		{"unreachable", Config{Brokers: []string{"127.0.0.1:1"}, Topic: "t", Group: "g", Create: true}, "Kafka at 127.0.0.1:1 cannot be reached"},
	} {
		t.Run(c.name, func(t *testing.T) {
			p, err := Open(ctx, c.cfg)
			var be *broker.Error
			if !errors.As(err, &be) || !strings.Contains(err.Error(), c.want) {
				if p != nil {
					p.Close()
				}
				t.Fatalf("got %v, want a broker error containing %q", err, c.want)
			}
		})
	}
	// Nothing was created by the refusal.
	if _, err := ReadTopic(ctx, broker.TopicURL{Brokers: brokers, Topic: "nope", Partition: -1}); err == nil || !strings.Contains(err.Error(), "does not exist") {
		t.Fatalf("the refused topic: %v", err)
	}
}

func TestReadTopic(t *testing.T) {
	brokers := cluster(t)
	ctx := context.Background()
	p, err := Open(ctx, Config{Brokers: brokers, Topic: "orders", Create: true, Partitions: 2})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	for i := range 10 {
		if _, err := p.Publish(ctx, message(i%7)); err != nil {
			t.Fatal(err)
		}
	}
	read := func(u broker.TopicURL) []string {
		r, err := ReadTopic(ctx, u)
		if err != nil {
			t.Fatal(err)
		}
		defer r.Close()
		var out []string
		for {
			line, n, err := r.Next()
			if err == io.EOF {
				return out
			}
			if err != nil {
				t.Fatal(err)
			}
			if n != len(out)+1 {
				t.Fatalf("record %d placed at %d", len(out)+1, n)
			}
			out = append(out, string(line))
		}
	}
	all := read(broker.TopicURL{Brokers: brokers, Topic: "orders", Partition: -1})
	if len(all) != 10 {
		t.Fatalf("read %d records, want 10:\n%s", len(all), strings.Join(all, "\n"))
	}
	first := gjson.Parse(all[0])
	if first.Get("topic").String() != "orders" || first.Get("partition").Int() != 0 || first.Get("offset").Int() != 0 ||
		!strings.HasPrefix(first.Get("key").String(), "O-") || first.Get("headers.#").Int() != 10 || first.Get("headers.0").String() != "content-type" {
		t.Errorf("first record: %s", all[0])
	}
	// Partition by partition, each in offset order: the same every time.
	if again := read(broker.TopicURL{Brokers: brokers, Topic: "orders", Partition: -1}); strings.Join(again, "\n") != strings.Join(all, "\n") {
		t.Errorf("a second read differs")
	}
	var p1 []string
	for _, l := range all {
		if gjson.Get(l, "partition").Int() == 1 && gjson.Get(l, "offset").Int() >= 1 {
			p1 = append(p1, l)
		}
	}
	if got := read(broker.TopicURL{Brokers: brokers, Topic: "orders", Partition: 1, Offset: 1}); strings.Join(got, "\n") != strings.Join(p1, "\n") {
		t.Errorf("partition 1 from offset 1: got\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(p1, "\n"))
	}
	if _, err := ReadTopic(ctx, broker.TopicURL{Brokers: brokers, Topic: "orders", Partition: 5}); err == nil || !strings.Contains(err.Error(), "has no partition 5 (it has 2)") {
		t.Errorf("partition 5: %v", err)
	}
}
