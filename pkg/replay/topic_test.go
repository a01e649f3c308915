package replay

import (
	"bufio"
	"context"
	"encoding/json"
	"os"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/redeliver/redeliver/pkg/broker"
	"github.com/redeliver/redeliver/pkg/kafka"
	"github.com/redeliver/redeliver/pkg/kafka/_kfake"
	"github.com/redeliver/redeliver/pkg/problem"
)

// kafkaCluster starts an in-process Kafka cluster, closed when the test
// ends, and returns its bootstrap address.
func kafkaCluster(t *testing.T) string {
	t.Helper()
	c, err := kfake.NewCluster(kfake.NumBrokers(1))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	return c.ListenAddrs()[0]
}

// produceCapture produces every event of a CloudEvents NDJSON capture to
// a new topic of one partition, keyed by its subject (the file's business
// key).
func produceCapture(t *testing.T, addr, topic, file string, mode broker.Mode) {
	t.Helper()
	ctx := context.Background()
	p, err := kafka.Open(ctx, kafka.Config{Brokers: []string{addr}, Topic: topic, Create: true, Partitions: 1, Mode: mode})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	f, err := os.Open(file)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		var ev struct {
			ID, Source, Type, Subject, Time string
			Data                            json.RawMessage
		}
		if err := json.Unmarshal(sc.Bytes(), &ev); err != nil {
			t.Fatal(err)
		}
		m := broker.Message{ID: ev.ID, Source: ev.Source, Type: ev.Type, Subject: ev.Subject, Time: ev.Time, Data: ev.Data, Key: ev.Subject}
		if _, err := p.Publish(ctx, m); err != nil {
			t.Fatal(err)
		}
	}
}

// TestTopicReplaysAsItsFile produces a capture to a Kafka topic (in both
// content modes) and replays the topic: the report must say what the
// file's report says, with places in the read where the file has lines.
func TestTopicReplaysAsItsFile(t *testing.T) {
	addr := kafkaCluster(t)
	file := sample("cloudevents.ndjson")
	want := run(t, Options{Inputs: []string{file}, Seed: 7, Redeliver: 0.3, Rewind: 3})
	for _, mode := range []broker.Mode{broker.Binary, broker.Structured} {
		t.Run(string(mode), func(t *testing.T) {
			topic := "replay-" + string(mode)
			produceCapture(t, addr, topic, file, mode)
			in := "kafka://" + addr + "/" + topic
			got := run(t, Options{Inputs: []string{in}, Seed: 7, Redeliver: 0.3, Rewind: 3})
			if got.Inputs[0].Format != "kcat" {
				t.Errorf("format %q, want kcat", got.Inputs[0].Format)
			}
			gj, _ := json.Marshal(struct{ C, I, O, V any }{got.Capture, got.Injected, got.Outcomes, got.Violations})
			wj, _ := json.Marshal(struct{ C, I, O, V any }{want.Capture, want.Injected, want.Outcomes, want.Violations})
			if w := strings.ReplaceAll(string(wj), file, in); string(gj) != w {
				t.Errorf("topic report\n got %s\nwant %s", gj, w)
			}
			if !reflect.DeepEqual(got.Counters, want.Counters) || got.Effects != want.Effects || got.Verdict != want.Verdict {
				t.Errorf("counters %+v effects %d verdict %s; want %+v %d %s", got.Counters, got.Effects, got.Verdict, want.Counters, want.Effects, want.Verdict)
			}
		})
	}
}

func TestTopicFromOffset(t *testing.T) {
	addr := kafkaCluster(t)
	produceCapture(t, addr, "orders", sample("cloudevents.ndjson"), broker.Binary)
	for _, c := range []struct {
		query      string
		deliveries int64
	}{{"", 10}, {"?offset=0", 10}, {"?offset=3", 7}, {"?partition=0&offset=9", 1}, {"?offset=10", 0}} {
		got := run(t, Options{Inputs: []string{"kafka://" + addr + "/orders" + c.query}})
		if got.Capture.Deliveries != c.deliveries {
			t.Errorf("%s: %d deliveries read, want %d", c.query, got.Capture.Deliveries, c.deliveries)
		}
	}
}

func TestTopicInputErrors(t *testing.T) {
	addr := kafkaCluster(t)
	for _, c := range []struct {
		in, want string
		input    bool
	}{
		{"kafka://127.0.0.1:9092/", "names no topic", true},
		{"kafka://127.0.0.1:9092/a*b", "names no topic", true},
		{"kafka://127.0.0.1:9092/t?offset=x", "is not an offset", true},
		{"kafka://127.0.0.1:9092/t?seq=1", "unknown parameter", true},
		{"kafka://" + addr + "/no-such-topic", "Kafka topic no-such-topic does not exist", false},
	} {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		_, err := runSQLite(ctx, Options{Inputs: []string{c.in}, DB: ":memory:"})
		cancel()
		input := problem.KindOf(err) == problem.InvalidInput
		if err == nil || !strings.Contains(err.Error(), c.want) || input != c.input {
			t.Errorf("%s: got %v (input error: %v), want %q (input error: %v)", c.in, err, input, c.want, c.input)
		}
	}
}
