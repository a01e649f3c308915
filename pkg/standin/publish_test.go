package standin

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"net"
	"net/url"
	"os"
	"strings"
	"testing"
	"time"

	natsgo "github.com/nats-io/nats.go"
	amqp091 "github.com/rabbitmq/amqp091-go"
	"github.com/redeliver/redeliver/pkg/kafka/_kfake"
	"github.com/redeliver/redeliver/pkg/template"
	"github.com/tidwall/gjson"
	"github.com/twmb/franz-go/pkg/kgo"
)

// reachable returns addr's URL (env overriding def) when host answers.
// Where none answers the test is skipped, saying so, except under CI,
// where it fails.
func reachable(t *testing.T, env, def, what string) string {
	t.Helper()
	u := os.Getenv(env)
	if u == "" {
		u = def
	}
	pu, err := url.Parse(u)
	if err != nil {
		t.Fatal(err)
	}
	c, err := net.DialTimeout("tcp", pu.Host, 2*time.Second)
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("%s is needed at %s under CI: %v", what, pu.Host, err)
		}
		t.Skipf("no %s at %s (%v): %s stand-in tests skipped; start it or set %s", what, pu.Host, err, what, env)
	}
	c.Close()
	return u
}

func unique(prefix string) string {
	b := make([]byte, 4)
	_, _ = rand.Read(b)
	return prefix + "." + hex.EncodeToString(b)
}

// waitCalls waits until p recorded n messages and returns them.
func waitCalls(t *testing.T, p *Published, n int) []Call {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		c := p.Calls()
		if len(c) >= n {
			return c
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d messages recorded after 10s, want %d", len(c), n)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// pub is one message a test publishes, and what the stand-in should make of it.
type pub struct {
	name     string
	delivery string
	header   map[string]string
	id       string // the transport's own id (AMQP MessageId)
	body     string
	key      string // expected Key
	idem     string // expected IdemKey
	replayed bool
}

// checkCall compares the call recorded for the i-th message with what tt expects.
func checkCall(t *testing.T, name, path string, i int, tt pub, c Call) {
	t.Helper()
	if c.External != name || c.Seq != i+1 || c.Method != "PUBLISH" || c.Path != path || string(c.Body) != tt.body ||
		c.Delivery != tt.delivery || c.Key != tt.key || c.IdemKey != tt.idem || c.Performed == tt.replayed || c.Replayed != tt.replayed {
		t.Errorf("%s: got seq=%d path=%q delivery=%q key=%q idem=%q performed=%v replayed=%v body=%q",
			tt.name, c.Seq, c.Path, c.Delivery, c.Key, c.IdemKey, c.Performed, c.Replayed, c.Body)
	}
	for k, v := range tt.header {
		if got := c.Header[k]; len(got) != 1 || got[0] != v {
			t.Errorf("%s: header %s is %q, want %q (headers %v)", tt.name, k, got, v, c.Header)
		}
	}
}

const (
	order1 = `{"orderId":"O-1","amount":10}`
	order9 = `{"orderId":"O-9","amount":10}`
	ce2    = `{"specversion":"1.0","id":"ce-2","source":"/orders","type":"order_paid","data":{"orderId":"O-2"}}`
)

// publishTests are the messages every transport's test publishes with its
// id carried in idHeader ("" for AMQP's MessageId property) and CloudEvents
// id in ceHeader.
func publishTests(idHeader, ceHeader string) []pub {
	withID := func(id string) (map[string]string, string) {
		if idHeader == "" {
			return nil, id
		}
		return map[string]string{idHeader: id}, ""
	}
	h1, id1 := withID("m-1")
	return []pub{
		{name: "no id", delivery: "d1", body: order1, key: "O-1"},
		{name: "no id again", delivery: "d1", body: order1, key: "O-1"},
		{name: "an id", delivery: "d1", header: h1, id: id1, body: order1, key: "O-1", idem: "m-1"},
		{name: "the id again", delivery: "d2", header: h1, id: id1, body: order1, key: "O-1", idem: "m-1", replayed: true},
		{name: "the id with another key", delivery: "d2", header: h1, id: id1, body: order9, key: "O-9", idem: "m-1"},
		{name: "structured CloudEvent", delivery: "d2", body: ce2, key: "O-2", idem: "ce-2"},
		{name: "structured CloudEvent again", delivery: "", body: ce2, key: "O-2", idem: "ce-2", replayed: true},
		{name: "binary CloudEvent", delivery: "d3", header: map[string]string{ceHeader: "ce-3"}, body: `{"orderId":"O-3"}`, key: "O-3", idem: "ce-3"},
		{name: "binary CloudEvent again", delivery: "d3", header: map[string]string{ceHeader: "ce-3"}, body: `{"orderId":"O-3"}`, key: "O-3", idem: "ce-3", replayed: true},
		{name: "not JSON", delivery: "d3", body: "plain text", key: ""},
	}
}

// exercise publishes tests one by one through send, checks the calls,
// then Settle, Reset and Close.
func exercise(t *testing.T, p *Published, path string, tests []pub, send func(pub)) {
	t.Helper()
	for i, tt := range tests {
		p.SetDelivery(tt.delivery)
		send(tt)
		waitCalls(t, p, i+1)
	}
	ctx := context.Background()
	if err := p.Settle(ctx, 100*time.Millisecond); err != nil {
		t.Fatalf("Settle: %v", err)
	}
	calls := p.Calls()
	if len(calls) != len(tests) {
		t.Fatalf("got %d messages, want %d", len(calls), len(tests))
	}
	for i, tt := range tests {
		checkCall(t, p.Name(), path, i, tt, calls[i])
	}

	// Settle waits for a message published while it waits. The quiet is
	// long beside the 150 ms before the send: a loaded machine may take a
	// few hundred ms to bring a message through a broker to the reader.
	p.Reset()
	if n := len(p.Calls()); n != 0 {
		t.Fatalf("%d messages after Reset", n)
	}
	p.SetDelivery("r")
	start := time.Now()
	go func() {
		time.Sleep(150 * time.Millisecond)
		send(tests[2])
	}()
	if err := p.Settle(ctx, 1500*time.Millisecond); err != nil {
		t.Fatalf("Settle: %v", err)
	}
	if d := time.Since(start); d < 1500*time.Millisecond {
		t.Errorf("Settle returned after %v, before quiet passed", d)
	}
	// After Reset the id is new again.
	after := tests[2]
	after.delivery = "r"
	if c := p.Calls(); len(c) != 1 {
		t.Errorf("after Reset: %d messages, want 1", len(c))
	} else {
		checkCall(t, p.Name(), path, 0, after, c[0])
	}
	cctx, cancel := context.WithTimeout(ctx, 50*time.Millisecond)
	defer cancel()
	if err := p.Settle(cctx, time.Minute); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("Settle with a context ending first: %v", err)
	}

	if err := p.Close(); err != nil {
		t.Errorf("Close: %v", err)
	}
	if err := p.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
	send(tests[0])
	time.Sleep(200 * time.Millisecond)
	if n := len(p.Calls()); n != 1 {
		t.Errorf("%d messages after Close, want the 1 before", n)
	}
}

var orderKey = template.MustParse("{data.orderId}")

func TestPublishedNATS(t *testing.T) {
	server := reachable(t, "REDELIVER_TEST_NATS", "nats://127.0.0.1:4222", "NATS")
	nc, err := natsgo.Connect(server, natsgo.Timeout(10*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	prefix := unique("standin")
	subject := prefix + ".orders.paid"
	p, err := StartPublished(context.Background(), "orders", PublishConfig{NATS: server, Subject: prefix + ".orders.>"}, orderKey)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	exercise(t, p, subject, publishTests("Nats-Msg-Id", "ce-id"), func(tt pub) {
		m := natsgo.NewMsg(subject)
		m.Data = []byte(tt.body)
		for k, v := range tt.header {
			m.Header.Set(k, v)
		}
		if err := nc.PublishMsg(m); err != nil {
			t.Error(err)
		}
		if err := nc.Flush(); err != nil {
			t.Error(err)
		}
	})
}

func TestPublishedAMQP(t *testing.T) {
	server := reachable(t, "REDELIVER_TEST_AMQP", "amqp://guest:guest@127.0.0.1:5672/", "RabbitMQ")
	conn, err := amqp091.Dial(server)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() }) // after the queue is deleted
	ch, err := conn.Channel()
	if err != nil {
		t.Fatal(err)
	}
	queue := unique("standin.test")
	t.Cleanup(func() {
		if _, err := ch.QueueDelete(queue, false, false, false); err != nil {
			t.Errorf("deleting queue %s: %v", queue, err)
		}
	})
	p, err := StartPublished(context.Background(), "orders", PublishConfig{AMQP: server, Queue: queue}, orderKey)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	// The queue was declared as the config says.
	if q, err := ch.QueueDeclarePassive(queue, false, false, false, false, nil); err != nil || q.Consumers != 1 {
		t.Fatalf("queue %s: %+v %v", queue, q, err)
	}
	tests := publishTests("", "cloudEvents:id")
	tests = append(tests[:len(tests)-1],
		pub{name: "cloudEvents_id", delivery: "d4", header: map[string]string{"cloudEvents_id": "ce-4"}, body: `{"orderId":"O-4"}`, key: "O-4", idem: "ce-4"},
		tests[len(tests)-1])
	tests[2].header = map[string]string{"Message-Id": "m-1", "Content-Type": "application/json", "Type": "order_paid"}
	exercise(t, p, queue, tests, func(tt pub) {
		m := amqp091.Publishing{MessageId: tt.id, Body: []byte(tt.body), Headers: amqp091.Table{}}
		for k, v := range tt.header {
			switch k {
			case "Message-Id":
			case "Content-Type":
				m.ContentType = v
			case "Type":
				m.Type = v
			default:
				m.Headers[k] = v
			}
		}
		if err := ch.PublishWithContext(context.Background(), "", queue, true, false, m); err != nil {
			t.Error(err)
		}
	})

	// A queue that exists is consumed as it is.
	p2, err := StartPublished(context.Background(), "again", PublishConfig{AMQP: server, Queue: queue}, orderKey)
	if err != nil {
		t.Fatal(err)
	}
	if err := p2.Close(); err != nil {
		t.Error(err)
	}
}

func TestPublishedKafka(t *testing.T) {
	c, err := kfake.NewCluster(kfake.NumBrokers(3), kfake.SeedTopics(3, "orders"), kfake.GroupMinSessionTimeout(100*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	brokers := c.ListenAddrs()
	cl, err := kgo.NewClient(kgo.SeedBrokers(brokers...), kgo.DefaultProduceTopic("orders"), kgo.RecordPartitioner(kgo.RoundRobinPartitioner()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	produce := func(tt pub) {
		r := &kgo.Record{Value: []byte(tt.body)}
		for k, v := range tt.header {
			r.Headers = append(r.Headers, kgo.RecordHeader{Key: k, Value: []byte(v)})
		}
		if err := cl.ProduceSync(context.Background(), r).FirstErr(); err != nil {
			t.Error(err)
		}
	}
	// Records produced before Start are not seen: one on every partition.
	for range 6 {
		produce(pub{body: order9, header: map[string]string{"ce_id": "old"}})
	}
	p, err := StartPublished(context.Background(), "orders", PublishConfig{Kafka: brokers, Topic: "orders"}, orderKey)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	exercise(t, p, "orders", publishTests("ce_id", "ce_id"), produce)

	if _, err := StartPublished(context.Background(), "none", PublishConfig{Kafka: brokers, Topic: "missing"}, orderKey); err == nil {
		t.Error("a stand-in started on a topic that does not exist")
	}
}

func TestStartPublishedConfig(t *testing.T) {
	for _, cfg := range []PublishConfig{
		{},
		{NATS: "nats://127.0.0.1:1", Subject: "x", AMQP: "amqp://127.0.0.1:1/", Queue: "q"},
		{NATS: "nats://127.0.0.1:1"},
		{AMQP: "amqp://127.0.0.1:1/"},
		{Kafka: []string{"127.0.0.1:1"}},
	} {
		if p, err := StartPublished(context.Background(), "x", cfg, template.Template{}); err == nil {
			p.Close()
			t.Errorf("%+v: started", cfg)
		} else if !strings.HasPrefix(err.Error(), "stand-in x: ") {
			t.Errorf("%+v: %v", cfg, err)
		}
	}
}

func TestPublishedEnvelope(t *testing.T) {
	tests := []struct {
		name   string
		header map[string][]string
		body   string
		id     string // the transport's
		want   string // the id found
		data   string // the envelope's data, raw
		bodyJS string // the envelope's body, raw
	}{
		{name: "plain JSON", body: `{"orderId":"O-1"}`, data: `{"orderId":"O-1"}`, bodyJS: `{"orderId":"O-1"}`},
		{name: "id header in another case", header: map[string][]string{"NATS-MSG-ID": {"m-1", "m-2"}}, body: `{}`, want: "m-1", data: `{}`, bodyJS: `{}`},
		{name: "first header wins", header: map[string][]string{"ce-id": {"c"}, "Nats-Msg-Id": {"n"}}, body: `1`, want: "n", data: `1`, bodyJS: `1`},
		{name: "transport id first", header: map[string][]string{"Nats-Msg-Id": {"n"}}, id: "t", body: ce2, want: "t", data: `{"orderId":"O-2"}`, bodyJS: ce2},
		{name: "header before body", header: map[string][]string{"ce-id": {"c"}}, body: ce2, want: "c", data: `{"orderId":"O-2"}`, bodyJS: ce2},
		{name: "structured, no data", body: `{"specversion":"1.0","id":7}`, want: "7", data: `null`, bodyJS: `{"specversion":"1.0","id":7}`},
		{name: "not a CloudEvent", body: `{"id":"x","data":{"a":1}}`, data: `{"id":"x","data":{"a":1}}`, bodyJS: `{"id":"x","data":{"a":1}}`},
		{name: "specversion not at the top", body: `{"e":{"specversion":"1.0","id":"x"}}`, data: `{"e":{"specversion":"1.0","id":"x"}}`, bodyJS: `{"e":{"specversion":"1.0","id":"x"}}`},
		{name: "path syntax in names is not followed", body: `{"spec.version":"1.0","id":"x"}`, data: `{"spec.version":"1.0","id":"x"}`, bodyJS: `{"spec.version":"1.0","id":"x"}`},
		{name: "not JSON", body: `id: x`, data: `"id: x"`, bodyJS: `"id: x"`},
		{name: "empty", body: ``, data: `""`, bodyJS: `""`},
		{name: "invalid UTF-8", body: "\"\xff\"", data: `"\"\ufffd\""`, bodyJS: `"\"\ufffd\""`},
	}
	for _, tt := range tests {
		env, id := publishedEnvelope("s", tt.header, []byte(tt.body), tt.id, natsIDHeaders)
		if !json.Valid(env) {
			t.Fatalf("%s: invalid envelope %s", tt.name, env)
		}
		e := gjson.ParseBytes(env)
		if id != tt.want || e.Get("id").String() != tt.want || e.Get("subject").String() != "s" ||
			e.Get("data").Raw != tt.data || e.Get("body").Raw != tt.bodyJS {
			t.Errorf("%s: id %q, envelope %s", tt.name, id, env)
		}
	}
}

func FuzzPublishedEnvelope(f *testing.F) {
	f.Add("orders", "Nats-Msg-Id", "m-1", []byte(`{"orderId":"O-1"}`), "")
	f.Add("q", "ce-id", "c", []byte(ce2), "t")
	f.Add("", "", "", []byte(`{"specversion":1,"id":{"a":[1]},"data":"\ud800"}`), "")
	f.Add("t", "x", "\xff", []byte("\xff{"), "\xfe")
	f.Fuzz(func(t *testing.T, subject, name, value string, body []byte, tid string) {
		for _, hs := range [][]string{natsIDHeaders, amqpIDHeaders, kafkaIDHeaders, {name}} {
			env, id := publishedEnvelope(subject, map[string][]string{name: {value}}, body, tid, hs)
			if !json.Valid(env) {
				t.Fatalf("invalid envelope %q", env)
			}
			if tid != "" && id != tid {
				t.Fatalf("id %q, want the transport's %q", id, tid)
			}
			if hs[0] == name && tid == "" && value != "" && id != value {
				t.Fatalf("id %q, want the header's %q", id, value)
			}
		}
	})
}

// TestPublishedLateLabel: a message arriving after the end of the
// delivery that was in flight alone is still that delivery's, within
// LateWindow and until another delivery begins; one arriving while
// several were in flight, or long after, is no delivery's.
func TestPublishedLateLabel(t *testing.T) {
	p := &Published{name: "paid", done: make(chan struct{}), seen: map[[2]string]bool{}}
	msg := func() string {
		p.record("s", nil, []byte(`{}`), "", nil)
		cs := p.Calls()
		return cs[len(cs)-1].Delivery
	}
	p.SetDelivery("evt-1")
	if got := msg(); got != "evt-1" {
		t.Errorf("in flight: %q", got)
	}
	p.SetDelivery("")
	p.Ended("evt-1")
	if got := msg(); got != "evt-1" {
		t.Errorf("just after its end: %q, want evt-1", got)
	}
	p.SetDelivery("evt-2")
	p.SetDelivery("")
	if got := msg(); got != "" {
		t.Errorf("after a delivery that ended beside others: %q, want none", got)
	}
	p.Ended("evt-2")
	p.mu.Lock()
	p.ended = p.ended.Add(-LateWindow)
	p.mu.Unlock()
	if got := msg(); got != "" {
		t.Errorf("LateWindow after its end: %q, want none", got)
	}
}
