package main

// The consumer as several instances behind a real broker, with a nemesis
// killing one at random: JetStream and RabbitMQ redeliver what a killed
// instance held, and the payments table must end with one row per order,
// no more, no less. Each flaw must be caught by the invariant it breaks.

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"io"
	"net"
	"net/url"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	natsgo "github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	amqp091 "github.com/rabbitmq/amqp091-go"
	"github.com/redeliver/redeliver/pkg/amqp"
	"github.com/redeliver/redeliver/pkg/broker"
	"github.com/redeliver/redeliver/pkg/nats"
	"github.com/redeliver/redeliver/pkg/proc"
	"github.com/redeliver/redeliver/pkg/scenario"
)

// reachable skips (or under CI fails) a test whose service is down.
func reachable(t testing.TB, what, hostport string) {
	t.Helper()
	c, err := net.DialTimeout("tcp", hostport, 2*time.Second)
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("CI=true but %s does not answer at %s: %v", what, hostport, err)
		}
		t.Skipf("%s does not answer at %s (%v): broker cases skipped", what, hostport, err)
	}
	c.Close()
}

func natsURL() string {
	if u := os.Getenv("REDELIVER_TEST_NATS"); u != "" {
		return u
	}
	return "nats://127.0.0.1:4222"
}

func amqpURL() string {
	if u := os.Getenv("REDELIVER_TEST_AMQP"); u != "" {
		return u
	}
	return "amqp://guest:guest@127.0.0.1:5672/"
}

func suffix() string {
	var b [4]byte
	rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// rig is one broker set up for one test: where the consumer reads, and
// how redeliver publishes and watches.
type rig struct {
	name string
	args []string // the consumer's broker flags
	open func(t testing.TB) broker.Publisher
}

// jetStream makes a stream of the test's own (deleted at the end); the
// consumer instances make their durable.
func jetStream(t testing.TB, ackWait time.Duration) rig {
	t.Helper()
	url := natsURL()
	reachable(t, "NATS", strings.TrimPrefix(url, "nats://"))
	stream := "EXAMPLE_" + strings.ToUpper(suffix())
	subject := strings.ToLower(stream) + ".payments"
	nc, err := natsgo.Connect(url, natsgo.Timeout(10*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	js, _ := jetstream.New(nc)
	ctx := context.Background()
	if _, err := js.CreateStream(ctx, jetstream.StreamConfig{Name: stream, Subjects: []string{subject}}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := js.DeleteStream(context.Background(), stream); err != nil {
			t.Errorf("delete stream %s: %v", stream, err)
		}
		nc.Close()
	})
	route, _ := broker.ParseRoute(subject)
	return rig{
		name: "jetstream",
		args: []string{"--nats", url, "--stream", stream, "--durable", "payments", "--ack-wait", ackWait.String()},
		open: func(t testing.TB) broker.Publisher {
			p, err := nats.Open(ctx, nats.Config{URL: url, Stream: stream, Subject: route, Consumer: "payments"})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { p.Close() })
			return p
		},
	}
}

// rabbitMQ makes a queue of the test's own (deleted at the end).
func rabbitMQ(t testing.TB) rig {
	t.Helper()
	u := amqpURL()
	pu, _ := url.Parse(u)
	reachable(t, "RabbitMQ", pu.Host)
	queue := "example.payments." + suffix()
	ctx := context.Background()
	p, err := amqp.Open(ctx, amqp.Config{URL: u, Queue: queue, Create: true})
	if err != nil {
		t.Fatal(err)
	}
	p.Close()
	t.Cleanup(func() {
		conn, err := amqp091.Dial(u)
		if err != nil {
			t.Error(err)
			return
		}
		defer conn.Close()
		ch, _ := conn.Channel()
		if _, err := ch.QueueDelete(queue, false, false, false); err != nil {
			t.Errorf("delete queue %s: %v", queue, err)
		}
	})
	return rig{
		name: "rabbitmq",
		args: []string{"--amqp", u, "--queue", queue},
		open: func(t testing.TB) broker.Publisher {
			p, err := amqp.Open(ctx, amqp.Config{URL: u, Queue: queue})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { p.Close() })
			return p
		},
	}
}

// startInstances starts n copies of the consumer (the command bin), each
// in its own process group, stopped when the test ends.
func startInstances(t testing.TB, bin string, n int, r rig, dsn, flaw string, work time.Duration, prefetch int) []*proc.Process {
	t.Helper()
	args := append([]string{bin, "--db", dsn, "--prefetch", strconv.Itoa(prefetch), "--work", work.String()}, r.args...)
	if flaw != "" {
		args = append(args, "--flaw", flaw)
	}
	var ps []*proc.Process
	for i := 0; i < n; i++ {
		p, err := proc.Start(context.Background(), &scenario.Start{Command: args, ReadyLine: "consuming", ReadyTimeout: time.Minute})
		if err != nil {
			t.Fatalf("instance %d: %v", i+1, err)
		}
		t.Cleanup(func() { p.Stop() })
		ps = append(ps, p)
	}
	return ps
}

// brokerOutcome is what one run through a broker ended with.
type brokerOutcome struct {
	events, published       int
	duplicates, lost, kills int
	redelivered             int64 // by the broker's own count (JetStream), else as the consumer saw it
	elapsed                 time.Duration
}

func (o brokerOutcome) String() string {
	return fmt.Sprintf("%d events (%d messages) in %s: %d orders with more than one payment, %d orders without one, %d redelivered, %d kills",
		o.events, o.published, o.elapsed.Round(time.Millisecond), o.duplicates, o.lost, o.redelivered, o.kills)
}

// deliver publishes events orders (every republishEvery-th also again
// under a new message id, as an outbox publishing twice), with a nemesis
// killing an instance every killEvery until the consumers have drained,
// and judges the payments table.
func deliver(t testing.TB, r rig, ps []*proc.Process, dsn string, events, republishEvery int, killEvery time.Duration) brokerOutcome {
	t.Helper()
	ctx := context.Background()
	pub := r.open(t)
	var stop func() []proc.Kill
	if killEvery > 0 {
		in := make([]proc.Instance, len(ps))
		for i, p := range ps {
			in[i] = p
		}
		n := proc.NewNemesis(killEvery, 1, in)
		nctx, cancel := context.WithCancel(ctx)
		done := make(chan error, 1)
		go func() { done <- n.Run(nctx) }()
		stop = func() []proc.Kill {
			cancel()
			if err := <-done; err != nil {
				t.Fatalf("nemesis: %v", err)
			}
			return n.Kills()
		}
	}
	start := time.Now()
	var next, published atomic.Int64
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for w := 0; w < 8; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := int(next.Add(1))
				if i > events {
					return
				}
				m := broker.Message{ID: fmt.Sprintf("evt-%d", i), Source: "/payments", Type: "payment.requested",
					Data: []byte(fmt.Sprintf(`{"orderId":"O-%d","amount":10}`, i)), Key: fmt.Sprintf("O-%d", i)}
				copies := 1
				if republishEvery > 0 && i%republishEvery == 0 {
					copies = 2
				}
				for c := 0; c < copies; c++ {
					if c > 0 {
						m.MsgID = m.ID + "-again"
					}
					if _, err := pub.Publish(ctx, m); err != nil {
						errs <- err
						return
					}
					published.Add(1)
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	var kills []proc.Kill
	if stop != nil {
		// Kill on while the broker still has messages to hand out.
		for deadline := time.Now().Add(10 * time.Minute); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
			c, err := pub.Counts(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if c.Pending == 0 {
				break
			}
		}
		kills = stop() // the last instance killed is ready again
	}
	counts, err := pub.Drain(ctx, broker.DrainOptions{Timeout: 10 * time.Minute, Settle: 2 * time.Second})
	if err != nil {
		t.Fatalf("drain: %v", err)
	}
	o := brokerOutcome{events: events, published: int(published.Load()), kills: len(kills), elapsed: time.Since(start), redelivered: counts.Redelivered}
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	var present int
	if err := conn.QueryRow(ctx, `SELECT count(*) FILTER (WHERE n > 1), count(*) FROM (SELECT order_id, count(*) AS n FROM payments GROUP BY order_id) p`).Scan(&o.duplicates, &present); err != nil {
		t.Fatal(err)
	}
	o.lost = events - present
	if o.redelivered == broker.Unknown {
		if err := conn.QueryRow(ctx, `SELECT count(*) FROM broker_redeliveries`).Scan(&o.redelivered); err != nil {
			t.Fatal(err)
		}
	}
	return o
}

// brokerSlots bounds the broker cases on PostgreSQL running at once: each
// starts up to three consumer instances, each with a PostgreSQL pool
// holding a connection per delivery in flight (8), and a server's default
// is 100 connections in all, shared with every other test: three cases
// hold at most 72.
var brokerSlots = make(chan struct{}, 3)

// brokerSlot waits for a slot, held until the test (and its instances)
// ends.
func brokerSlot(t testing.TB) {
	brokerSlots <- struct{}{}
	t.Cleanup(func() { <-brokerSlots })
}

func pgDSN(t testing.TB) string {
	t.Helper()
	dsn := os.Getenv("REDELIVER_TEST_POSTGRES")
	if dsn == "" {
		if os.Getenv("CI") == "true" {
			t.Fatal("CI=true but REDELIVER_TEST_POSTGRES is not set")
		}
		t.Skip("broker cases need PostgreSQL: set REDELIVER_TEST_POSTGRES=postgres://postgres@127.0.0.1:5432/test?sslmode=disable")
	}
	return dsn
}

// TestBrokersUnderNemesis: three instances of the safe consumer on one
// PostgreSQL, an instance killed every 300ms while the broker still has
// messages to hand out. The broker redelivers; no order is paid twice and
// none is lost.
//
// 600 events, each held 100ms in the consumer's work (between its marker
// lookup and its commit), so every kill lands on an instance holding a
// full prefetch window mid-transaction; the test asserts a kill and
// redeliveries by the broker. How many kills come depends on how fast a
// killed instance is ready again (the next kill waits for it) against how
// fast the other two drain: 8 on a quiet machine, 1 once when the heavy
// tier's other tests slowed a restart. More events would only repeat
// those kills: REDELIVER_TEST_HEAVY=all sends 20,000 with no work held,
// at full speed.
func TestBrokersUnderNemesis(t *testing.T) {
	heavyOnly(t, "its nemesis is the test's own; make test kills instances behind each broker through redeliver (TestBrokerReplayUnderNemesis)")
	defer parallel(t)()
	pg := pgDSN(t)
	events, work := 600, 100*time.Millisecond
	if heavyAll() {
		events, work = 20000, 0
	}
	const minKills = 1
	bin := buildConsumer(t)
	for _, mk := range []func(t *testing.T) rig{
		func(t *testing.T) rig { return jetStream(t, time.Second) },
		func(t *testing.T) rig { return rabbitMQ(t) },
	} {
		r := mk(t)
		t.Run(r.name, func(t *testing.T) {
			defer parallel(t)()
			brokerSlot(t)
			dsn := freshSchema(t, pg)
			ps := startInstances(t, bin, 3, r, dsn, "", work, 8)
			o := deliver(t, r, ps, dsn, events, 0, 300*time.Millisecond)
			t.Log(o)
			if o.duplicates != 0 || o.lost != 0 {
				t.Errorf("safe consumer: %v; want no order paid twice and none lost", o)
			}
			if o.kills < minKills || o.redelivered == 0 {
				t.Errorf("%v: want at least %d kills, and redeliveries by the broker", o, minKills)
			}
		})
	}
}

// TestBrokerFlawsCaught: each flaw is caught by the invariant it breaks,
// through a real broker. none pays twice for an event an outbox published
// twice; check-then-act pays twice when JetStream redelivers an event
// (AckWait shorter than the work) that another instance is still working
// on; ack-before-commit loses the events acked by an instance killed
// before it committed them. The cases run side by side: they spend their
// time in the consumers' work and the broker's AckWait, not computing.
//
// Event counts: none is caught by every republished event (every tenth),
// so 50 events give five; check-then-act by every event whose work
// outlasts its AckWait, which is each of them, so 24 (one prefetch window
// per instance) suffice; ack-before-commit needs kills while instances
// hold acked work, so it keeps 200 events (a few seconds of work, several
// kills).
func TestBrokerFlawsCaught(t *testing.T) {
	heavyOnly(t, "it judges by the test's own counts; make test catches these flaws behind each broker through redeliver (TestShippedBrokerScenarios, TestBrokerReplayUnderNemesis, TestBrokerRaces)")
	defer parallel(t)()
	pg := pgDSN(t)
	cases := []struct {
		name, flaw string
		rig        func(t *testing.T) rig
		events     int
		work       time.Duration
		republish  int
		killEvery  time.Duration
		duplicates bool // else lost
	}{
		{"none/jetstream", "none", func(t *testing.T) rig { return jetStream(t, 5*time.Second) }, 50, 0, 10, 0, true},
		{"none/rabbitmq", "none", func(t *testing.T) rig { return rabbitMQ(t) }, 50, 0, 10, 0, true},
		{"check-then-act/jetstream", "check-then-act", func(t *testing.T) rig { return jetStream(t, 300*time.Millisecond) }, 24, time.Second, 0, 0, true},
		{"ack-before-commit/jetstream", "ack-before-commit", func(t *testing.T) rig { return jetStream(t, 5*time.Second) }, 200, 200 * time.Millisecond, 0, 300 * time.Millisecond, false},
		{"ack-before-commit/rabbitmq", "ack-before-commit", func(t *testing.T) rig { return rabbitMQ(t) }, 200, 200 * time.Millisecond, 0, 300 * time.Millisecond, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			defer parallel(t)()
			brokerSlot(t)
			r := c.rig(t)
			dsn := freshSchema(t, pg)
			ps := startInstances(t, "consumer", 3, r, dsn, c.flaw, c.work, 8)
			o := deliver(t, r, ps, dsn, scaled(c.events, 200), c.republish, c.killEvery)
			t.Log(o)
			switch {
			case c.duplicates && o.duplicates == 0:
				t.Errorf("flaw %s not caught: %v; want orders paid twice (duplicate-effect)", c.flaw, o)
			case !c.duplicates && o.lost == 0:
				t.Errorf("flaw %s not caught: %v; want orders without a payment (lost-effect)", c.flaw, o)
			}
		})
	}
}

// BenchmarkBrokerThroughput: events per second through each broker to
// 1, 2 and 4 instances of the safe consumer on PostgreSQL, no kills; Kafka
// on an in-process cluster, a topic of four partitions.
func BenchmarkBrokerThroughput(b *testing.B) {
	pg := os.Getenv("REDELIVER_TEST_POSTGRES")
	if pg == "" {
		b.Skip("set REDELIVER_TEST_POSTGRES")
	}
	events := 5000
	if n, err := strconv.Atoi(os.Getenv("REDELIVER_BENCH_N")); err == nil && n > 0 {
		events = n
	}
	bin := buildConsumer(b)
	names := []string{"jetstream", "rabbitmq", "kafka"}
	if only := os.Getenv("REDELIVER_BENCH_BROKER"); only != "" {
		names = strings.Split(only, ",")
	}
	for _, name := range names {
		for _, n := range []int{1, 2, 4} {
			b.Run(fmt.Sprintf("%s/instances=%d", name, n), func(b *testing.B) {
				var total time.Duration
				for i := 0; i < b.N; i++ {
					b.StopTimer()
					var r rig
					switch name {
					case "jetstream":
						r = jetStream(b, 30*time.Second)
					case "kafka":
						r = kafkaRig(b)
					default:
						r = rabbitMQ(b)
					}
					dsn := freshSchemaTB(b, pg)
					ps := startInstances(b, bin, n, r, dsn, "", 0, 16)
					b.StartTimer()
					o := deliver(b, r, ps, dsn, events, 0, 0)
					total += o.elapsed
					if o.duplicates != 0 || o.lost != 0 {
						b.Fatalf("%v", o)
					}
				}
				b.ReportMetric(float64(events*b.N)/total.Seconds(), "events/s")
			})
		}
	}
}

// freshSchemaTB is freshSchema for a benchmark.
func freshSchemaTB(b *testing.B, dsn string) string {
	var x [6]byte
	rand.Read(x[:])
	schema := "example_bench_" + hex.EncodeToString(x[:])
	u, err := url.Parse(dsn)
	if err != nil {
		b.Fatal(err)
	}
	q := u.Query()
	q.Set("search_path", schema)
	u.RawQuery = q.Encode()
	b.Cleanup(func() {
		ctx := context.Background()
		conn, err := pgx.Connect(ctx, dsn)
		if err != nil {
			b.Error(err)
			return
		}
		defer conn.Close(ctx)
		if _, err := conn.Exec(ctx, "DROP SCHEMA IF EXISTS "+pgx.Identifier{schema}.Sanitize()+" CASCADE"); err != nil {
			b.Error(err)
		}
	})
	return u.String()
}

func TestDecodeBrokerMessage(t *testing.T) {
	data := []byte(`{"orderId":"O-1","amount":10}`)
	structured := []byte(`{"specversion":"1.0","id":"e1","source":"/s","type":"t","data":{"orderId":"O-1","amount":10}}`)
	for _, c := range []struct {
		name    string
		headers map[string]string
		body    []byte
		id, bad string
	}{
		{"nats binary", map[string]string{"ce-specversion": "1.0", "ce-id": "e1", "Content-Type": "application/json"}, data, "e1", ""},
		{"amqp binary", map[string]string{"cloudEvents_specversion": "1.0", "cloudEvents_id": "e1"}, data, "e1", ""},
		{"kafka binary", map[string]string{"ce_specversion": "1.0", "ce_id": "e1", "content-type": "application/json"}, data, "e1", ""},
		{"kafka structured", map[string]string{"content-type": "application/cloudevents+json"}, structured, "e1", ""},
		{"amqp binary, old prefix", map[string]string{"cloudEvents:specversion": "1.0", "cloudEvents:id": "e1"}, data, "e1", ""},
		{"structured", map[string]string{"Content-Type": "application/cloudevents+json; charset=utf-8"}, structured, "e1", ""},
		{"another specversion", map[string]string{"ce-specversion": "0.3", "ce-id": "e1"}, data, "", "is not 1.0"},
		{"no id", map[string]string{"ce-specversion": "1.0"}, data, "", "no id"},
		{"not a CloudEvent", map[string]string{"Content-Type": "application/json"}, data, "", "not a CloudEvent"},
	} {
		t.Run(c.name, func(t *testing.T) {
			get := func(name string) string {
				for k, v := range c.headers {
					if strings.EqualFold(k, name) {
						return v
					}
				}
				return ""
			}
			ev, err := decodeBrokerMessage(get, c.body)
			if c.bad != "" {
				if err == nil || !strings.Contains(err.Error(), c.bad) {
					t.Fatalf("got %v, want an error containing %q", err, c.bad)
				}
				return
			}
			if err != nil || ev.id != c.id || ev.orderID != "O-1" {
				t.Fatalf("got %+v, %v; want event %s for O-1", ev, err, c.id)
			}
		})
	}
}

func TestBrokerFlags(t *testing.T) {
	for _, c := range []struct {
		args []string
		bad  string
	}{
		{[]string{"--db", "x.db", "--nats", "nats://h:4222", "--stream", "S", "--durable", "D"}, ""},
		{[]string{"--db", "x.db", "--amqp", "amqp://h/", "--queue", "q"}, ""},
		{[]string{"--db", "x.db", "--nats", "nats://h:4222", "--stream", "S"}, "--nats needs --stream and --durable"},
		{[]string{"--db", "x.db", "--amqp", "amqp://h/"}, "--amqp needs --queue"},
		{[]string{"--db", "x.db", "--amqp", "amqp://h/", "--queue", "q", "--nats", "nats://h"}, "one of --nats, --amqp and --kafka"},
		{[]string{"--db", "x.db", "--amqp", "amqp://h/", "--queue", "q", "--listen", ":0"}, "give one of --listen"},
		{[]string{"--db", "x.db", "--amqp", "amqp://h/", "--queue", "q", "--prefetch", "0"}, "--prefetch must be at least 1"},
	} {
		_, err := parseFlags(c.args, io.Discard)
		if (c.bad == "") != (err == nil) || (err != nil && !strings.Contains(err.Error(), c.bad)) {
			t.Errorf("%v: got %v, want %q", c.args, err, c.bad)
		}
	}
}
