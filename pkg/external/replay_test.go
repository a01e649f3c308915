package external

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/redeliver/redeliver/pkg/handler"
	"github.com/redeliver/redeliver/pkg/inject"
	"github.com/redeliver/redeliver/pkg/invariant"
	"github.com/redeliver/redeliver/pkg/problem"
	"github.com/redeliver/redeliver/pkg/replay"
	"github.com/redeliver/redeliver/pkg/scenario"
	"github.com/redeliver/redeliver/pkg/sqlite"
	"github.com/redeliver/redeliver/pkg/template"
)

// naiveTarget is an HTTP consumer that writes a row for every delivery
// and acks it: each delivery made again leaves a second row.
func naiveTarget(t *testing.T, db string) *scenario.Target {
	t.Helper()
	conn, err := sql.Open("sqlite", "file:"+db+"?_pragma=busy_timeout(10000)")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var ev struct {
			ID   string `json:"id"`
			Data struct {
				OrderID string `json:"orderId"`
			} `json:"data"`
		}
		if err := json.NewDecoder(r.Body).Decode(&ev); err != nil {
			w.WriteHeader(http.StatusBadRequest)
			return
		}
		if _, err := conn.Exec("INSERT INTO payments VALUES (?, ?)", ev.Data.OrderID, ev.ID); err != nil {
			w.WriteHeader(http.StatusInternalServerError)
			return
		}
		w.WriteHeader(http.StatusCreated)
	}))
	t.Cleanup(srv.Close)
	// The tests that use it are not about a slow answer: in make test,
	// beside every other package, an insert into the SQLite file has
	// kept an answer past 5 s.
	return &scenario.Target{HTTP: &scenario.HTTPTarget{URL: srv.URL, Method: "POST", Mode: scenario.ModeStructured, Timeout: 30 * time.Second}}
}

// writeCapture writes n CloudEvents, evt-1 to evt-n, one order each.
func writeCapture(t *testing.T, dir string, n int) string {
	t.Helper()
	var sb strings.Builder
	for i := 1; i <= n; i++ {
		fmt.Fprintf(&sb, `{"specversion":"1.0","id":"evt-%d","source":"shop","type":"order.paid","data":{"orderId":"O-%d","amount":%d}}`+"\n", i, i, i)
	}
	path := filepath.Join(dir, "capture.ndjson")
	if err := os.WriteFile(path, []byte(sb.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestRedeliverPicksWhatTheBuiltInReplayPicks: --redeliver is drawn per
// capture position as the built-in replay draws it, so the same seed and
// capture lose the ack of the same events — whatever the deliveries in
// flight — and the events a naive consumer got twice are the events the
// built-in handler's strategy none wrote twice.
func TestRedeliverPicksWhatTheBuiltInReplayPicks(t *testing.T) {
	for _, tt := range []struct {
		seed     int64
		p        float64
		parallel int
	}{{1, 0.3, 1}, {7, 0.2, 4}, {42, 0.5, 2}} {
		t.Run(fmt.Sprintf("seed %d, %g, parallel %d", tt.seed, tt.p, tt.parallel), func(t *testing.T) {
			dir := t.TempDir()
			in := writeCapture(t, dir, 40)
			builtin, err := replay.Run(context.Background(), replay.Options{
				Inputs: []string{in}, DB: sqlite.Memory, Handler: handler.Config{Strategy: handler.None},
				Seed: tt.seed, Redeliver: tt.p, Examples: 100, Open: sqlite.OpenLedger,
			})
			if err != nil {
				t.Fatal(err)
			}
			var want []string
			for _, v := range builtin.Violations {
				for _, x := range v.Examples {
					want = append(want, strings.TrimPrefix(x.Event, "shop/")) // the built-in handler's ids carry the source
				}
			}
			if len(want) == 0 {
				t.Fatal("the built-in replay redelivered nothing")
			}
			db := filepath.Join(dir, "fx.db")
			if err := createTable(db); err != nil {
				t.Fatal(err)
			}
			res, err := runTarget(context.Background(), &ReplayTarget{File: "t.yaml", Target: naiveTarget(t, db),
				Effects: &scenario.Effects{DB: db, Table: "payments", Key: "order_id", Event: "event_id", KeyOf: template.MustParse("{data.orderId}")}},
				replay.Options{Inputs: []string{in}, Seed: tt.seed, Redeliver: tt.p, Parallel: tt.parallel})
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, v := range res.Breaches {
				got = append(got, v.EventID)
			}
			slices.Sort(got)
			slices.Sort(want)
			if !slices.Equal(got, want) {
				t.Errorf("the target got these events twice:\n  %v\nthe built-in replay redelivered:\n  %v", got, want)
			}
			if n := res.Injected.Redelivered; n != int64(len(want)) {
				t.Errorf("injected.redelivered = %d, want %d", n, len(want))
			}
		})
	}
}

// TestReproducerSaysTheFaults: the reproducer of a replay into a target
// is a target scenario that redeliver run loads, with the --target file's
// target and effects, and each fault the replay injected said as a step
// can say it.
func TestReproducerSaysTheFaults(t *testing.T) {
	src := []byte(`version: 1
target:
  exec: {command: [sh, -c, "cat > /dev/null"], timeout: 2s}
effects: {db: "${WORK:-.}/fx.db", table: payments, key: order_id, key_of: "{data.orderId}"}
`)
	r := &replayer{o: replay.Options{Seed: 3, Inputs: []string{"c.ndjson"}, EmitScenario: "r.yaml"}, t: &ReplayTarget{File: "t.yaml", Source: src}}
	ev := func(id string) Event {
		return Event{ID: id, Source: "shop", Type: "order.paid", Data: json.RawMessage(`{"orderId":"O-1","note":"a: b # c"}`)}
	}
	steps := []reproStep{
		{ev: ev("e1"), pos: 1, at: "c.ndjson:1", fault: inject.Redeliver},
		{ev: ev("e2"), pos: 2, at: "c.ndjson:2", fault: inject.Crash, after: 37*time.Millisecond + 123*time.Nanosecond},
		{ev: ev("e3"), pos: 3, at: "c.ndjson:3", fault: inject.Concurrent},
		{ev: ev("e4"), pos: 4, at: "c.ndjson:4"},
		{ev: ev("e3"), pos: 3, at: "c.ndjson:3", fault: inject.Concurrent, rewound: true}, // plainly: a rebalance's
	}
	out, n, err := r.reproducer(steps, invariant.Violation{Invariant: invariant.DuplicateEffect.Name, EventID: "e1"}, "O-1")
	if err != nil {
		t.Fatal(err)
	}
	if n != 5 {
		t.Errorf("%d deliveries, want 5", n)
	}
	sc, err := scenario.Load("r.yaml", out)
	if err != nil {
		t.Fatalf("the reproducer does not load: %v\n%s", err, out)
	}
	if sc.Target == nil || sc.Target.Exec == nil || sc.Effects == nil || sc.Effects.Table != "payments" || !strings.Contains(string(out), `"${WORK:-.}/fx.db"`) {
		t.Errorf("the target and effects of the --target file are not kept:\n%s", out)
	}
	got := sc.Checks[0].Steps
	if len(got) != 5 {
		t.Fatalf("%d steps, want 5:\n%s", len(got), out)
	}
	for i, want := range []struct {
		id         string
		drop       bool
		crash      time.Duration
		concurrent int
	}{{"e1", true, 0, 0}, {"e2", false, 37 * time.Millisecond, 0}, {"e3", false, 0, 2}, {"e4", false, 0, 0}, {"e3", false, 0, 0}} {
		s := got[i]
		var after time.Duration
		if s.Crash != nil {
			after = s.Crash.After
		}
		if s.Event.ID != want.id || s.Drop != want.drop || after != want.crash || s.Concurrent != want.concurrent {
			t.Errorf("step %d: %s, drop %v, crash after %s, concurrent %d; want %+v", i+1, s.Event.ID, s.Drop, after, s.Concurrent, want)
		}
	}
}

// TestRewindRebalancesAsTheBuiltInReplay: --rewind rebalances during the
// replay, after the positions the built-in replay rebalances after for
// the same seed and capture, and each rebalance delivers the last N
// events again at once, not at the end of the capture: the events a naive
// consumer got twice are those the built-in handler's strategy none wrote
// twice, and one at a time they come in the built-in replay's order.
func TestRewindRebalancesAsTheBuiltInReplay(t *testing.T) {
	for _, tt := range []struct {
		seed             int64
		rewind, parallel int
		order            string // one at a time: the events as the consumer got them
	}{
		{1, 2, 1, "1 2 3 4 5 4 5 6 7 8 9 10 11 12 13 12 13 14 15 16 17 18 17 18 19 20"},
		{2, 3, 1, "1 2 3 4 5 6 7 8 9 10 8 9 10 11 12 13 14 15 16 17 18 19 17 18 19 20"},
		{3, 1, 4, ""},
		{7, 4, 2, ""},
	} {
		t.Run(fmt.Sprintf("seed %d, --rewind %d, parallel %d", tt.seed, tt.rewind, tt.parallel), func(t *testing.T) {
			dir := t.TempDir()
			in := writeCapture(t, dir, 20)
			builtin, err := replay.Run(context.Background(), replay.Options{
				Inputs: []string{in}, DB: sqlite.Memory, Handler: handler.Config{Strategy: handler.None},
				Seed: tt.seed, Rewind: tt.rewind, Examples: 100, Open: sqlite.OpenLedger,
			})
			if err != nil {
				t.Fatal(err)
			}
			var want []string
			for _, v := range builtin.Violations {
				for _, x := range v.Examples {
					want = append(want, strings.TrimPrefix(x.Event, "shop/"))
				}
			}
			if builtin.Injected.Rebalances == 0 {
				t.Fatal("the built-in replay did not rebalance")
			}
			db := filepath.Join(dir, "fx.db")
			if err := createTable(db); err != nil {
				t.Fatal(err)
			}
			res, err := runTarget(context.Background(), &ReplayTarget{File: "t.yaml", Target: naiveTarget(t, db),
				Effects: &scenario.Effects{DB: db, Table: "payments", Key: "order_id", Event: "event_id", KeyOf: template.MustParse("{data.orderId}")}},
				replay.Options{Inputs: []string{in}, Seed: tt.seed, Rewind: tt.rewind, Parallel: tt.parallel})
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, v := range res.Breaches {
				got = append(got, v.EventID)
			}
			slices.Sort(got)
			slices.Sort(want)
			if !slices.Equal(got, want) {
				t.Errorf("the target got these events twice:\n  %v\nthe built-in replay rewound:\n  %v", got, want)
			}
			if g, w := res.Injected, builtin.Injected; g.Rebalances != w.Rebalances || g.Rewound != w.Rewound {
				t.Errorf("%d rebalances rewound %d events, the built-in replay's %d rewound %d", g.Rebalances, g.Rewound, w.Rebalances, w.Rewound)
			}
			if tt.order == "" {
				return
			}
			conn, err := sql.Open("sqlite", db)
			if err != nil {
				t.Fatal(err)
			}
			defer conn.Close()
			rows, err := conn.Query("SELECT event_id FROM payments ORDER BY rowid")
			if err != nil {
				t.Fatal(err)
			}
			defer rows.Close()
			var order []string
			for rows.Next() {
				var id string
				if err := rows.Scan(&id); err != nil {
					t.Fatal(err)
				}
				order = append(order, strings.TrimPrefix(id, "evt-"))
			}
			if g := strings.Join(order, " "); g != tt.order {
				t.Errorf("the consumer got\n  %s\nwant\n  %s", g, tt.order)
			}
		})
	}
}

// TestMaxBadSkipsAsTheBuiltInReplay: a replay into a target skips up to
// --max-bad bad records, each named, and stops at the one past it (or at
// one after which the file cannot be read) with the built-in replay's
// sentence at its line.
func TestMaxBadSkipsAsTheBuiltInReplay(t *testing.T) {
	good := func(i int) string {
		return fmt.Sprintf(`{"specversion":"1.0","id":"evt-%d","source":"shop","type":"order.paid","data":{"orderId":"O-%d"}}`, i, i)
	}
	capture := strings.Join([]string{good(1), "not json", good(2), "{", good(3)}, "\n") + "\n"
	for _, tt := range []struct {
		maxBad     int
		err        string // the error, or empty
		warned     string // what stderr says
		deliveries int
	}{
		{0, "c.ndjson:2: record is not valid JSON (--max-bad 1 allows that many bad records to be skipped)", "", 0},
		{1, "c.ndjson:4: record is not valid JSON (--max-bad 2 allows that many bad records to be skipped)", "redeliver: skipped c.ndjson:2: record is not valid JSON\n", 0},
		{2, "", "redeliver: skipped c.ndjson:2: record is not valid JSON\nredeliver: skipped c.ndjson:4: record is not valid JSON\n", 3},
	} {
		t.Run(fmt.Sprintf("--max-bad %d", tt.maxBad), func(t *testing.T) {
			dir := t.TempDir()
			t.Chdir(dir)
			if err := os.WriteFile("c.ndjson", []byte(capture), 0o644); err != nil {
				t.Fatal(err)
			}
			db := filepath.Join(dir, "fx.db")
			if err := createTable(db); err != nil {
				t.Fatal(err)
			}
			var warn strings.Builder
			res, err := runTarget(context.Background(), &ReplayTarget{File: "t.yaml", Target: naiveTarget(t, db),
				Effects: &scenario.Effects{DB: db, Table: "payments", Key: "order_id", Event: "event_id", KeyOf: template.MustParse("{data.orderId}")}},
				replay.Options{Inputs: []string{"c.ndjson"}, MaxBad: tt.maxBad, Warn: &warn})
			if tt.err != "" {
				var re *ReplayError
				if !errors.As(err, &re) || re.Err.Error() != tt.err || problem.KindOf(err) != problem.InvalidInput {
					t.Fatalf("error %v, want invalid input: %s", err, tt.err)
				}
			} else if err != nil {
				t.Fatal(err)
			} else {
				if n := res.Counters.Deliveries; n != tt.deliveries {
					t.Errorf("%d deliveries, want %d", n, tt.deliveries)
				}
				if n := res.Capture.BadRecords; n != int64(tt.maxBad) {
					t.Errorf("capture.bad_records %d, want %d", n, tt.maxBad)
				}
				if tg := res.Target; !slices.Equal(tg.Given, []string{"c.ndjson"}) || tg.Table != "payments" || tg.Broker {
					t.Errorf("target facts %q, table %q, broker %v; want the capture given, table payments, no broker", tg.Given, tg.Table, tg.Broker)
				}
			}
			if warn.String() != tt.warned {
				t.Errorf("stderr:\n%s\nwant:\n%s", warn.String(), tt.warned)
			}
		})
	}
}

// TestReproducerRewindsWhereTheReplayDid: a reproducer delivers a broken
// key's events again where the replay's rebalance did, after the
// delivery it came after, not at the end.
func TestReproducerRewindsWhereTheReplayDid(t *testing.T) {
	src := []byte(`version: 1
target:
  exec: {command: [sh, -c, "cat > /dev/null"], timeout: 2s}
effects: {db: fx.db, table: payments, key: order_id, key_of: "{data.orderId}"}
`)
	// Seed 1, --rewind 2: rebalances after the 5th and 13th delivery.
	for _, tt := range []struct {
		name  string
		keyAt []int // the capture positions of key A's events
		want  string
	}{
		{"rewound in the middle", []int{1, 4, 8}, "1 4 4* 8"},
		{"rewound twice", []int{2, 5, 13, 14}, "2 5 5* 13 13* 14"},
		{"not rewound", []int{1, 2, 9}, "1 2 9"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			var sb strings.Builder
			for i := 1; i <= 16; i++ {
				key := fmt.Sprintf("O-%d", i)
				if slices.Contains(tt.keyAt, i) {
					key = "A"
				}
				fmt.Fprintf(&sb, `{"specversion":"1.0","id":"evt-%d","source":"shop","type":"t","data":{"orderId":"%s"}}`+"\n", i, key)
			}
			in := filepath.Join(dir, "c.ndjson")
			if err := os.WriteFile(in, []byte(sb.String()), 0o644); err != nil {
				t.Fatal(err)
			}
			out := filepath.Join(dir, "r.yaml")
			r := &replayer{o: replay.Options{Inputs: []string{in}, Seed: 1, Rewind: 2, EmitScenario: out},
				t: &ReplayTarget{File: "t.yaml", Source: src, Effects: &scenario.Effects{KeyOf: template.MustParse("{data.orderId}")}}}
			text, _, err := r.emit(context.Background(), invariant.Violation{Invariant: invariant.DuplicateEffect.Name, By: &invariant.Record{Key: "A"}})
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, line := range strings.Split(string(text), "\n") {
				if _, after, ok := strings.Cut(line, "# "+in+":"); ok && strings.Contains(line, "- deliver:") {
					n, again := strings.CutSuffix(after, ", delivered again by --rewind")
					if again {
						n += "*"
					}
					got = append(got, n)
				}
			}
			if g := strings.Join(got, " "); g != tt.want {
				t.Errorf("the reproducer delivers %s, want %s (* again)\n%s", g, tt.want, text)
			}
		})
	}
}

// runTarget replays into the target, as the command wires it.
func runTarget(ctx context.Context, t *ReplayTarget, o replay.Options) (*replay.Report, error) {
	o.Consumer = t
	return replay.Run(ctx, o)
}

// TestOwnChannel: a replay into a target refuses the topic or stream the
// target's consumer reads as its capture, and nothing else.
func TestOwnChannel(t *testing.T) {
	k := &scenario.Target{Broker: &scenario.KafkaTarget{Brokers: []string{"10.0.0.1:9092", "10.0.0.2:9092"}, Topic: "orders", Group: "g"}}
	n := &scenario.Target{Broker: &scenario.NATSTarget{URL: "nats://10.0.0.1:4222", Stream: "ORDERS"}}
	h := &scenario.Target{HTTP: &scenario.HTTPTarget{URL: "http://127.0.0.1:1/e"}}
	tests := []struct {
		in      string
		t       *scenario.Target
		refused bool
	}{
		{"kafka://10.0.0.2:9092/orders", k, true},
		{"kafka://10.0.0.9:9092,10.0.0.1:9092/orders?partition=1", k, true},
		{"kafka://10.0.0.1:9092/orders-archive", k, false},
		{"kafka://10.0.0.9:9092/orders", k, false},
		{"nats://10.0.0.1:4222/ORDERS?seq=5", n, true},
		{"nats://10.0.0.1:4222/ARCHIVE", n, false},
		{"nats://10.0.0.2:4222/ORDERS", n, false},
		{"kafka://10.0.0.1:9092/orders", n, false},
		{"nats://10.0.0.1:4222/ORDERS", k, false},
		{"kafka://10.0.0.1:9092/orders", h, false},
		{"capture.ndjson", k, false},
	}
	for _, tt := range tests {
		err := ownChannel(tt.in, tt.t)
		if (err != nil) != tt.refused {
			t.Errorf("%s into %s: got %v, want refused %v", tt.in, tt.t.Channel(), err, tt.refused)
		}
		if err != nil && problem.KindOf(err) != problem.Usage {
			t.Errorf("%s: %v is not a usage error", tt.in, err)
		}
	}
}
