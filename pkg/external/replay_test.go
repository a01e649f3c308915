package external

import (
	"context"
	"database/sql"
	"encoding/json"
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
	return &scenario.Target{HTTP: &scenario.HTTPTarget{URL: srv.URL, Method: "POST", Mode: scenario.ModeStructured, Timeout: 5 * time.Second}}
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
			res, err := Replay(context.Background(), ReplayOptions{
				Inputs: []string{in}, TargetFile: "t.yaml", Target: naiveTarget(t, db),
				Effects: &scenario.Effects{DB: db, Table: "payments", Key: "order_id", Event: "event_id", KeyOf: template.MustParse("{data.orderId}")},
				Seed:    tt.seed, Redeliver: tt.p, Parallel: tt.parallel,
			})
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, v := range res.File.Checks[0].Violations {
				got = append(got, v.EventID)
			}
			slices.Sort(got)
			slices.Sort(want)
			if !slices.Equal(got, want) {
				t.Errorf("the target got these events twice:\n  %v\nthe built-in replay redelivered:\n  %v", got, want)
			}
			if n := res.Report.Injected.Redelivered; n != int64(len(want)) {
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
	r := &replayer{o: ReplayOptions{Seed: 3, TargetFile: "t.yaml", Inputs: []string{"c.ndjson"}, EmitScenario: "r.yaml", TargetSource: src}}
	ev := func(id string) Event {
		return Event{ID: id, Source: "shop", Type: "order.paid", Data: json.RawMessage(`{"orderId":"O-1","note":"a: b # c"}`)}
	}
	steps := []reproStep{
		{ev: ev("e1"), pos: 1, at: "c.ndjson:1", fault: inject.Redeliver},
		{ev: ev("e2"), pos: 2, at: "c.ndjson:2", fault: inject.Crash, after: 37*time.Millisecond + 123*time.Nanosecond},
		{ev: ev("e3"), pos: 3, at: "c.ndjson:3", fault: inject.Concurrent, rewound: true},
		{ev: ev("e4"), pos: 4, at: "c.ndjson:4"},
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
