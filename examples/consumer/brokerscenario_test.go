package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	natsgo "github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	amqp091 "github.com/rabbitmq/amqp091-go"
	"github.com/santhosh-tekuri/jsonschema/v6"
)

// TestShippedBrokerScenarios runs examples/consumer/brokers/*.yaml through
// the redeliver command: redeliver publishes into the real broker, three
// instances of the consumer read from it (two of them are killed and
// restarted on the way, and none may be left running at the end), and the
// broker says when they have drained. The safe
// consumer passes; --flaw none pays an order twice when the outbox
// publishes it twice, and the run says duplicate-effect; the event
// published three times is paid three times, as each publish reached it.
func TestShippedBrokerScenarios(t *testing.T) {
	defer parallel(t)()
	pg := pgDSN(t)
	bin := buildConsumer(t)
	for _, b := range []struct {
		file  string
		setup func(t *testing.T, env map[string]string)
		// safe is a line the verbose report of a safe run must hold.
		safe string
	}{
		{"examples/consumer/brokers/nats.yaml", natsStream, "2 crashes, 5 effect rows; broker: 8 published, "},
		{"examples/consumer/brokers/amqp.yaml", amqpQueue, "2 crashes, 5 effect rows; broker: 8 published, redeliveries not counted by the broker"},
	} {
		for _, tt := range []struct{ flaw, invariant string }{{"safe", ""}, {"none", "duplicate-effect"}} {
			t.Run(strings.TrimSuffix(b.file[strings.LastIndex(b.file, "/")+1:], ".yaml")+"/"+tt.flaw, func(t *testing.T) {
				defer parallelInHeavy(t)()
				brokerSlot(t)
				env := map[string]string{"CONSUMER": bin, "FLAW": tt.flaw, "DATABASE_URL": freshSchema(t, pg)}
				b.setup(t, env)
				o := redeliver(t, env, "run", b.file, "-v")
				if tt.invariant == "" {
					if o.exit != 0 || !strings.Contains(o.stdout, b.safe) || !strings.Contains(o.stdout, "(3 instances)") {
						t.Fatalf("want exit 0, 3 instances and %q, got\n%s", b.safe, o)
					}
					return
				}
				if o.exit != 1 || !strings.Contains(o.stdout, "invariant "+tt.invariant+" broken") || !strings.Contains(o.stdout, "key O-2 has 3 rows") {
					t.Fatalf("want exit 1 naming %s, and key O-2 paid 3 times, got\n%s", tt.invariant, o)
				}
			})
		}
	}
}

// TestBrokerScenarioRunsAgain runs each shipped broker scenario twice in a
// row into the same stream or queue, then once with --repeat 2: every run
// passes and publishes all 8 deliveries it asks for, JetStream's duplicate
// window (2 minutes) notwithstanding, and the stream holds them all.
func TestBrokerScenarioRunsAgain(t *testing.T) {
	defer parallel(t)()
	pg := pgDSN(t)
	bin := buildConsumer(t)
	for _, b := range []struct {
		file  string
		setup func(t *testing.T, env map[string]string)
	}{
		{"examples/consumer/brokers/nats.yaml", natsStream},
		{"examples/consumer/brokers/amqp.yaml", amqpQueue},
	} {
		t.Run(strings.TrimSuffix(filepath.Base(b.file), ".yaml"), func(t *testing.T) {
			if b.file == "examples/consumer/brokers/amqp.yaml" {
				heavyOnly(t, "make test runs again into the same JetStream stream, whose duplicate window is the case")
			}
			defer parallelInHeavy(t)()
			brokerSlot(t)
			env := map[string]string{"CONSUMER": bin, "DATABASE_URL": freshSchema(t, pg)}
			b.setup(t, env)
			for _, run := range []struct {
				args []string
				want []string
			}{
				{[]string{"run", b.file, "-v"}, []string{"broker: 8 published"}},
				{[]string{"run", b.file, "-v"}, []string{"broker: 8 published"}},
				{[]string{"run", b.file, "-v", "--repeat", "2"}, []string{"broker: 16 published", "published three times", "(2 runs: 2 passed"}},
			} {
				o := redeliver(t, env, run.args...)
				for _, w := range run.want {
					if o.exit != 0 || !strings.Contains(o.stdout, w) {
						t.Fatalf("redeliver %s: want exit 0 and %q, got\n%s", strings.Join(run.args, " "), w, o)
					}
				}
			}
			if stream := env["STREAM"]; stream != "" {
				nc, err := natsgo.Connect(env["NATS"], natsgo.Timeout(10*time.Second))
				if err != nil {
					t.Fatal(err)
				}
				defer nc.Close()
				js, _ := jetstream.New(nc)
				s, err := js.Stream(context.Background(), stream)
				if err != nil {
					t.Fatal(err)
				}
				info, err := s.Info(context.Background())
				if err != nil {
					t.Fatal(err)
				}
				if info.State.Msgs != 32 {
					t.Fatalf("stream %s holds %d messages; want 32, from runs of 8, 8 and 2×8", stream, info.State.Msgs)
				}
			}
		})
	}
}

// natsStream names a stream of the test's own, which the scenario creates
// (create: true) and the test deletes.
func natsStream(t *testing.T, env map[string]string) {
	u := natsURL()
	reachable(t, "NATS", strings.TrimPrefix(u, "nats://"))
	stream := "SCENARIO_" + strings.ToUpper(suffix())
	env["NATS"], env["STREAM"] = u, stream
	t.Cleanup(func() {
		nc, err := natsgo.Connect(u, natsgo.Timeout(10*time.Second))
		if err != nil {
			t.Error(err)
			return
		}
		defer nc.Close()
		js, _ := jetstream.New(nc)
		if err := js.DeleteStream(context.Background(), stream); err != nil {
			t.Errorf("delete stream %s: %v", stream, err)
		}
	})
}

// amqpQueue names a queue of the test's own, which the scenario declares
// (create: true) and the test deletes.
func amqpQueue(t *testing.T, env map[string]string) {
	u := amqpURL()
	pu, _ := url.Parse(u)
	reachable(t, "RabbitMQ", pu.Host)
	queue := "scenario.payments." + suffix()
	env["AMQP"], env["QUEUE"] = u, queue
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
}

// TestBrokerReplayUnderNemesis replays a capture through the redeliver
// command into three instances behind each broker, with --kill-every
// killing one at random every 300ms until the broker has drained. The safe
// consumer ends with one payment per event; ack-before-commit, killed after
// its ack and before its commit, loses payments (lost-effect). The four
// runs go side by side.
//
// 500 events (2,000 under REDELIVER_TEST_HEAVY=all): the safe runs assert
// that instances were killed, and the flawed ones that payments were
// lost, which takes a kill; more events only repeat those kills.
func TestBrokerReplayUnderNemesis(t *testing.T) {
	defer parallel(t)()
	pg := pgDSN(t)
	bin := buildConsumer(t)
	events := scaled(500, 2000)
	capture := filepath.Join(t.TempDir(), "capture.jsonl")
	var b strings.Builder
	for i := range events {
		fmt.Fprintf(&b, `{"specversion":"1.0","id":"evt-%d","source":"/orders","type":"order_paid","data":{"orderId":"O-%d","amount":%d}}`+"\n", i, i, i%100+1)
	}
	if err := os.WriteFile(capture, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, br := range []struct {
		file  string
		setup func(t *testing.T, env map[string]string)
	}{
		{"examples/consumer/brokers/nats-target.yaml", natsStream},
		{"examples/consumer/brokers/amqp-target.yaml", amqpQueue},
	} {
		for _, tt := range []struct{ flaw, invariant string }{{"safe", ""}, {"ack-before-commit", "lost-effect"}} {
			t.Run(strings.TrimSuffix(filepath.Base(br.file), "-target.yaml")+"/"+tt.flaw, func(t *testing.T) {
				defer parallelInHeavy(t)()
				brokerSlot(t)
				env := map[string]string{"CONSUMER": bin, "FLAW": tt.flaw, "DATABASE_URL": freshSchema(t, pg)}
				br.setup(t, env)
				logs := t.TempDir()
				doc := filepath.Join(t.TempDir(), "replay.json")
				o := redeliver(t, env, "replay", capture, "--target", br.file, "--kill-every", "300ms", "--logs", logs, "--report", "json="+doc)
				wantNemesisVerdict(t, o, events, tt.invariant, "instances")
				if tt.invariant == "" {
					wantLogPerStart(t, o, logs)
					wantKillsInJSON(t, o, doc, 0.3)
				}
			})
		}
	}
}

// TestBrokerReplayAgain replays one capture twice in a row into the same
// stream or queue, the second time with --rewind 10: each replay
// publishes every event it reads (and the rewound ones again), within
// JetStream's duplicate window, and the consumer pays each order once.
func TestBrokerReplayAgain(t *testing.T) {
	defer parallel(t)()
	pg := pgDSN(t)
	bin := buildConsumer(t)
	capture := filepath.Join(t.TempDir(), "capture.jsonl")
	var b strings.Builder
	for i := range 50 {
		fmt.Fprintf(&b, `{"specversion":"1.0","id":"evt-%d","source":"/orders","type":"order_paid","data":{"orderId":"O-%d","amount":%d}}`+"\n", i, i, i%100+1)
	}
	if err := os.WriteFile(capture, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, br := range []struct {
		file  string
		setup func(t *testing.T, env map[string]string)
	}{
		{"examples/consumer/brokers/nats-target.yaml", natsStream},
		{"examples/consumer/brokers/amqp-target.yaml", amqpQueue},
	} {
		t.Run(strings.TrimSuffix(filepath.Base(br.file), "-target.yaml"), func(t *testing.T) {
			defer parallelInHeavy(t)()
			brokerSlot(t)
			env := map[string]string{"CONSUMER": bin, "DATABASE_URL": freshSchema(t, pg)}
			br.setup(t, env)
			for _, run := range []struct {
				args []string
				want string
			}{
				{[]string{"replay", capture, "--target", br.file}, "into the target: 50 published, 0 instance kills, "},
				{[]string{"replay", capture, "--target", br.file, "--rewind", "10"}, "into the target: 60 published, 0 instance kills, "},
			} {
				o := redeliver(t, env, run.args...)
				if o.exit != 0 || !strings.Contains(o.stdout, run.want) || !strings.Contains(o.stdout, ", 50 effect rows") {
					t.Fatalf("redeliver %s: want exit 0, %q and 50 effect rows, got\n%s", strings.Join(run.args, " "), run.want, o)
				}
			}
		})
	}
}

// TestBrokerDrainHeldBack replays five events into three instances
// behind RabbitMQ, each taking 1.5 s over a payment: the queue stands
// empty long before the work is done, and RabbitMQ shows no other client
// what a consumer holds unacknowledged. The drain's end stops the
// instances and sees what they put back; the safe consumer, started again
// to take it, pays each order once, where reading the table once the
// queue stood empty said every payment lost. ack-before-commit, its acks
// sent and its work cut by the stop, loses them. The checks of amqp.yaml
// pass with the same work time, where each one failed with lost-effect.
// Instances that do not end on SIGTERM are killed at the stop, and said.
func TestBrokerDrainHeldBack(t *testing.T) {
	defer parallel(t)()
	pg := pgDSN(t)
	bin := buildConsumer(t)
	capture := filepath.Join(t.TempDir(), "capture.jsonl")
	writeCapture(t, capture, 5)
	held := regexp.MustCompile(`; the instances, stopped once the queue stood empty, still held [1-5] messages? unacknowledged; started again (once|[0-9]+ times) to take them\n`)
	for _, tt := range []struct {
		flaw string
		exit int
		want string
	}{
		{"safe", 0, "into the target: 5 published, 0 instance kills, redeliveries not counted by the broker, 5 effect rows in payments; "},
		{"ack-before-commit", 1, "invariant lost-effect broken "},
	} {
		t.Run(tt.flaw, func(t *testing.T) {
			defer parallelInHeavy(t)()
			brokerSlot(t)
			env := map[string]string{"CONSUMER": bin, "DATABASE_URL": freshSchema(t, pg), "FLAW": tt.flaw, "WORK": "1500ms"}
			amqpQueue(t, env)
			doc := filepath.Join(t.TempDir(), "replay.json")
			o := redeliver(t, env, "replay", capture, "--target", "examples/consumer/brokers/amqp-target.yaml", "--report", "json="+doc)
			if o.exit != tt.exit || !strings.Contains(o.stdout, tt.want) || (tt.exit == 0 && !held.MatchString(o.stdout)) {
				t.Fatalf("want exit %d, %q and what the stopped instances held, got\n%s", tt.exit, tt.want, o)
			}
			if tt.exit == 0 {
				wantHeldBackInJSON(t, doc)
			}
		})
	}
	// Instances that do not end on SIGTERM (their shell ignores it and
	// waits on): the drain's stop waits 5 s for them, kills them, and the
	// line and the JSON say so; the safe consumer still pays each order
	// once, and nothing of them is left behind (redeliver's own check).
	t.Run("ignoring SIGTERM", func(t *testing.T) {
		defer parallelInHeavy(t)()
		brokerSlot(t)
		src := rewrite(t, "amqp-target.yaml", readExample(t, "examples/consumer/brokers/amqp-target.yaml"),
			`command: ["${CONSUMER:-bin/consumer}",`, `command: [sh, -c, "trap '' TERM; \"$0\" \"$@\"; sleep 60", "${CONSUMER:-bin/consumer}",`)
		file := writeTemp(t, "amqp-target.yaml", src)
		env := map[string]string{"CONSUMER": bin, "DATABASE_URL": freshSchema(t, pg)}
		amqpQueue(t, env)
		doc := filepath.Join(t.TempDir(), "replay.json")
		o := redeliver(t, env, "replay", capture, "--target", file, "--report", "json="+doc)
		killed := regexp.MustCompile(`; (|[0-9]+ times )an instance did not end within 5s of its SIGTERM, and the stop ended it with SIGKILL\n`)
		if o.exit != 0 || !strings.Contains(o.stdout, " 5 effect rows in payments; ") || !killed.MatchString(o.stdout) {
			t.Fatalf("want exit 0, 5 effect rows and the instances killed at the stop, got\n%s", o)
		}
		var d struct {
			Target struct {
				HeldBack *struct {
					Killed int `json:"killed_at_stop"`
				} `json:"held_back"`
			} `json:"target"`
		}
		readReport(t, doc, "docs/replay.schema.json", &d)
		if h := d.Target.HeldBack; h == nil || h.Killed < 1 {
			t.Errorf("JSON target.held_back = %+v, want killed_at_stop of at least 1", h)
		}
	})
	t.Run("checks", func(t *testing.T) {
		defer parallelInHeavy(t)()
		brokerSlot(t)
		env := map[string]string{"CONSUMER": bin, "DATABASE_URL": freshSchema(t, pg), "WORK": "1500ms"}
		amqpQueue(t, env)
		doc := filepath.Join(t.TempDir(), "report.json")
		o := redeliver(t, env, "run", "-v", "--report", "json="+doc, "examples/consumer/brokers/amqp.yaml")
		if o.exit != 0 || !strings.Contains(o.stdout, "PASS: the outbox publishes twice, the same event published three times, an instance killed while it works") {
			t.Fatalf("want every check of amqp.yaml passed, got\n%s", o)
		}
		// Each settle stopped instances still at work on what they took:
		// the counters say so, in words and in JSON.
		if !heldBackWords.MatchString(o.stdout) {
			t.Errorf("want the counters line to say what the stops put back (%s), got\n%s", heldBackWords, o)
		}
		var d struct {
			Counters heldBack `json:"counters"`
		}
		readReport(t, doc, "docs/report.schema.json", &d)
		if h := d.Counters; h.Restarts < 1 || h.Messages < 1 {
			t.Errorf("JSON counters held_back = %d, held_back_restarts = %d, want a restart and the messages it took", h.Messages, h.Restarts)
		}
	})
}

// heldBackWords is what a -v counters line says when a check's settles
// stopped instances that still held messages.
var heldBackWords = regexp.MustCompile(`(?m)^counters \(target\): .*; the instances, stopped once the queue stood empty, still held [0-9]+ messages? unacknowledged; started again (once|[0-9]+ times) to take them$`)

// heldBack is what a check's counters say the stops put back.
type heldBack struct {
	Messages int `json:"held_back"`
	Restarts int `json:"held_back_restarts"`
}

// readReport holds the JSON report doc to the schema (a path from the
// repository's root) and decodes it into v.
func readReport(t *testing.T, doc, schema string, v any) {
	t.Helper()
	b, err := os.ReadFile(doc)
	if err != nil {
		t.Fatal(err)
	}
	sch, err := jsonschema.NewCompiler().Compile(filepath.Join(repoRoot, schema))
	if err != nil {
		t.Fatal(err)
	}
	inst, err := jsonschema.UnmarshalJSON(bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	if err := sch.Validate(inst); err != nil {
		t.Errorf("the JSON report does not match %s: %v", schema, err)
	}
	if err := json.Unmarshal(b, v); err != nil {
		t.Fatal(err)
	}
}

// wantHeldBackInJSON holds the JSON report of a replay whose drain's stop
// put messages back to replay.schema.json, and to a target.held_back of
// at least one restart and message.
func wantHeldBackInJSON(t *testing.T, doc string) {
	t.Helper()
	var d struct {
		Target struct {
			HeldBack *struct{ Restarts, Messages int } `json:"held_back"`
		} `json:"target"`
	}
	readReport(t, doc, "docs/replay.schema.json", &d)
	if h := d.Target.HeldBack; h == nil || h.Restarts < 1 || h.Messages < 1 {
		t.Errorf("JSON target.held_back = %+v, want a restart and the messages it took", h)
	}
}

// instanceKills finds how many instances a replay into a broker killed.
var instanceKills = regexp.MustCompile(`, ([0-9]+) instance kills, `)

// killPace finds how far apart a replay's kills came.
var killPace = regexp.MustCompile(`; one kill every [0-9.]+m?s on average \(asked every [0-9.]+m?s, counted from when the previous restart was ready; restarts took [0-9.]+m?s on average\)`)

// wantKillsInJSON holds the JSON report's target.kills to the kills the
// line counts, the period asked, and a real period no shorter than it.
func wantKillsInJSON(t *testing.T, o outcome, doc string, asked float64) {
	t.Helper()
	b, err := os.ReadFile(doc)
	if err != nil {
		t.Fatal(err)
	}
	var d struct {
		Target struct {
			Kills *struct {
				Count          int     `json:"count"`
				AskedSeconds   float64 `json:"asked_seconds"`
				EverySeconds   float64 `json:"every_seconds"`
				RestartSeconds float64 `json:"restart_seconds"`
			} `json:"kills"`
		} `json:"target"`
	}
	if err := json.Unmarshal(b, &d); err != nil {
		t.Fatal(err)
	}
	m := instanceKills.FindStringSubmatch(o.stdout)
	k := d.Target.Kills
	if m == nil || k == nil || strconv.Itoa(k.Count) != m[1] || k.AskedSeconds != asked || k.EverySeconds < asked || k.RestartSeconds <= 0 {
		t.Fatalf("JSON target.kills = %+v, want the line's kills, asked every %gs, and a real period no shorter:\n%s", k, asked, o)
	}
}

// wantLogPerStart holds the consumer's output kept by --logs to one file
// per instance and start: each instance's first, and one more a kill.
func wantLogPerStart(t *testing.T, o outcome, dir string) {
	t.Helper()
	m := instanceKills.FindStringSubmatch(o.stdout)
	if m == nil {
		t.Fatalf("no instance kills in\n%s", o)
	}
	kills, _ := strconv.Atoi(m[1])
	files, err := filepath.Glob(filepath.Join(dir, "instance-*.start-*.log"))
	if err != nil {
		t.Fatal(err)
	}
	first, _ := filepath.Glob(filepath.Join(dir, "instance-*.start-1.log"))
	if len(first) == 0 || len(files) != len(first)+kills {
		t.Fatalf("%d output files, %d of them first starts, for %d kills; want one a start", len(files), len(first), kills)
	}
	if !strings.Contains(o.stdout, "consumer output: "+filepath.Join(dir, "instance-1.start-1.log")) {
		t.Fatalf("the report does not name the output files:\n%s", o)
	}
}

// wantNemesisVerdict holds a replay of events into a broker under the
// nemesis to its verdict: with no invariant, killed instances (who names
// them), exit 0, every event published and one effect row each; else exit
// 1 naming the invariant.
func wantNemesisVerdict(t *testing.T, o outcome, events int, invariant, who string) {
	t.Helper()
	if invariant == "" {
		m := instanceKills.FindStringSubmatch(o.stdout)
		if m == nil || m[1] == "0" {
			t.Fatalf("want %s killed, got\n%s", who, o)
		}
		// The kills come further apart than asked by the restarts: the
		// line says how far, and how many.
		if !killPace.MatchString(o.stdout) {
			t.Fatalf("want the pace of the %s kills (one every …, restarts took …), got\n%s", m[1], o)
		}
		want := fmt.Sprintf("%d published, ", events)
		if o.exit != 0 || !strings.Contains(o.stdout, want) || !strings.Contains(o.stdout, fmt.Sprintf(", %d effect rows", events)) {
			t.Fatalf("want exit 0, %q and %d effect rows, got\n%s", want, events, o)
		}
		return
	}
	if o.exit != 1 || !strings.Contains(o.stdout, "invariant "+invariant+" broken") {
		t.Fatalf("want exit 1 naming %s, got\n%s", invariant, o)
	}
}

// TestBrokerLeftoverRefused: a message left in the queue or the durable
// before the run (as an interrupted run leaves its deliveries, with the
// file's own event ids) would be handed to the started consumer among the
// checks' deliveries. The run refuses it, exit 3, before starting
// anything, and takes nothing from the broker.
func TestBrokerLeftoverRefused(t *testing.T) {
	defer parallel(t)()
	pg := pgDSN(t)
	bin := buildConsumer(t)
	for _, b := range []struct {
		file  string
		setup func(t *testing.T, env map[string]string)
		leave func(t *testing.T, env map[string]string) (left func() int)
		want  string
	}{
		{"examples/consumer/brokers/nats.yaml", natsStream, natsLeftover,
			"JetStream durable payments on stream %s has 1 message to deliver before the run"},
		{"examples/consumer/brokers/amqp.yaml", amqpQueue, amqpLeftover,
			"RabbitMQ queue %s holds 1 message before the run"},
	} {
		t.Run(strings.TrimSuffix(filepath.Base(b.file), ".yaml"), func(t *testing.T) {
			defer parallelInHeavy(t)()
			brokerSlot(t)
			env := map[string]string{"CONSUMER": bin, "DATABASE_URL": freshSchema(t, pg)}
			b.setup(t, env)
			// A first run makes the stream or queue, and empties it.
			if o := redeliver(t, env, "run", b.file); o.exit != 0 {
				t.Fatalf("first run: want exit 0, got\n%s", o)
			}
			left := b.leave(t, env)
			o := redeliver(t, env, "run", b.file)
			want := fmt.Sprintf(b.want, env["STREAM"]+env["QUEUE"])
			if o.exit != 3 || !strings.Contains(o.stderr, want) || !strings.Contains(o.stderr, "8 deliveries did not run") {
				t.Fatalf("want exit 3, %q and the 8 deliveries that did not run, got\n%s", want, o)
			}
			if strings.Contains(o.stdout, "PASS") || strings.Contains(o.stdout, "FAIL") {
				t.Errorf("a run refused before it started gave a verdict:\n%s", o)
			}
			if n := left(); n != 1 {
				t.Errorf("the broker holds %d messages after the refused run; want the 1 left there, untouched", n)
			}
		})
	}
}

// natsLeftover publishes one message of the file's to its stream, as a
// run that was interrupted leaves it, and says how many the durable has
// yet to deliver.
func natsLeftover(t *testing.T, env map[string]string) func() int {
	nc, err := natsgo.Connect(env["NATS"], natsgo.Timeout(10*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	js, _ := jetstream.New(nc)
	ctx := context.Background()
	if _, err := js.Publish(ctx, env["STREAM"]+".order_paid", []byte(`{"orderId":"O-1","amount":10}`), jetstream.WithMsgID("left-"+suffix())); err != nil {
		t.Fatal(err)
	}
	return func() int {
		c, err := js.Consumer(ctx, env["STREAM"], "payments")
		if err != nil {
			t.Fatal(err)
		}
		info, err := c.Info(ctx)
		if err != nil {
			t.Fatal(err)
		}
		return int(info.NumPending) + info.NumAckPending
	}
}

// amqpLeftover puts one message in the queue and says how many it holds.
func amqpLeftover(t *testing.T, env map[string]string) func() int {
	conn, err := amqp091.Dial(env["AMQP"])
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	ch, err := conn.Channel()
	if err != nil {
		t.Fatal(err)
	}
	if err := ch.Publish("", env["QUEUE"], false, false, amqp091.Publishing{Body: []byte(`{"orderId":"O-1","amount":10}`)}); err != nil {
		t.Fatal(err)
	}
	return func() int {
		q, err := ch.QueueDeclarePassive(env["QUEUE"], true, false, false, false, nil)
		if err != nil {
			t.Fatal(err)
		}
		return q.Messages
	}
}
