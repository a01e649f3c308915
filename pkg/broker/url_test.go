package broker

import (
	"fmt"
	"strings"
	"testing"
)

func TestParseTopicURL(t *testing.T) {
	for _, c := range []struct {
		in   string
		want TopicURL
		bad  string
	}{
		{in: "kafka://127.0.0.1:9092/orders", want: TopicURL{Brokers: []string{"127.0.0.1:9092"}, Topic: "orders", Partition: -1}},
		{in: "kafka://a:1,b:2/orders.v1?partition=3&offset=100", want: TopicURL{Brokers: []string{"a:1", "b:2"}, Topic: "orders.v1", Partition: 3, Offset: 100}},
		{in: "kafka://a:1/", bad: "names no topic"},
		{in: "kafka://a/orders", bad: `broker "a" is not HOST:PORT`},
		{in: "kafka:///orders", bad: "is not a Kafka topic address"},
		{in: "kafka://a:1/or*ders", bad: "names no topic"},
		{in: "kafka://a:1/orders?seq=1", bad: `unknown parameter "seq"`},
		{in: "kafka://a:1/orders?partition=-1", bad: "partition=-1 is not a partition number"},
		{in: "kafka://a:1/orders?offset=x", bad: "offset=x is not an offset"},
	} {
		got, err := ParseTopicURL(c.in)
		if c.bad != "" {
			if err == nil || !strings.Contains(err.Error(), c.bad) {
				t.Errorf("%s: got %v, want %q", c.in, err, c.bad)
			}
			continue
		}
		if err != nil || fmt.Sprint(got) != fmt.Sprint(c.want) {
			t.Errorf("%s: got %+v, %v; want %+v", c.in, got, err, c.want)
		}
	}
	if !IsTopicURL("kafka://a:1/t") || IsTopicURL("nats://a:1/S") {
		t.Error("IsTopicURL")
	}
}
