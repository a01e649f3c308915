//go:build linux

package external

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/redeliver/redeliver/pkg/report"
	"github.com/redeliver/redeliver/pkg/scenario"
)

// lateWorker is a consumer of payments on the table REDELIVER_TEST_LATE_TABLE,
// through the proxy (dsn), listening on REDELIVER_TEST_LISTEN. Its
// REDELIVER_TEST_LATE_MODE says when it answers: "ack-first" answers 202
// once its marker lookup found nothing, then inserts the payment in a
// transaction; "safe" inserts it, commits, then answers 200; "trailing"
// is safe, and after its answer reads the payment back once more.
func lateWorker(dsn string) int {
	ctx := context.Background()
	pool, err := pgxpool.New(ctx, dsn)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	tbl, mode := os.Getenv("REDELIVER_TEST_LATE_TABLE"), os.Getenv("REDELIVER_TEST_LATE_MODE")
	ln, err := net.Listen("tcp", os.Getenv("REDELIVER_TEST_LISTEN"))
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	pay := func(id, order string) error {
		return pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
			_, err := tx.Exec(ctx, "INSERT INTO "+tbl+" (order_id, event_id) VALUES ($1, $2) ON CONFLICT (event_id) DO NOTHING", order, id)
			return err
		})
	}
	// The answer is sent at once, and what comes after it a moment
	// later: where the answer came among the statements is then plain.
	answer := func(w http.ResponseWriter, status int) {
		w.Header().Set("Content-Length", "0")
		w.WriteHeader(status)
		w.(http.Flusher).Flush()
	}
	later := func() { time.Sleep(50 * time.Millisecond) }
	http.Serve(ln, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var ev struct {
			ID   string `json:"id"`
			Data struct {
				OrderID string `json:"orderId"`
			} `json:"data"`
		}
		body, _ := io.ReadAll(r.Body)
		if json.Unmarshal(body, &ev) != nil {
			w.WriteHeader(400)
			return
		}
		var n int
		if err := pool.QueryRow(ctx, "SELECT count(*) FROM "+tbl+" WHERE event_id = $1", ev.ID).Scan(&n); err != nil {
			w.WriteHeader(500)
			return
		}
		if n > 0 {
			answer(w, 200)
			return
		}
		if mode == "ack-first" {
			answer(w, 202)
			later()
			if err := pay(ev.ID, ev.Data.OrderID); err != nil {
				fmt.Fprintln(os.Stderr, err)
			}
			return
		}
		if err := pay(ev.ID, ev.Data.OrderID); err != nil {
			w.WriteHeader(500)
			return
		}
		answer(w, 200)
		if mode == "trailing" {
			later()
			pool.QueryRow(ctx, "SELECT count(*) FROM "+tbl+" WHERE event_id = $1", ev.ID).Scan(&n)
		}
	}))
	return 1
}

// TestBoundariesAfterTheAnswer: crash: statements follows a delivery's
// statements past the consumer's answer, until its connections are idle
// outside a transaction. A consumer that answers 202 and then commits is
// killed between its answer and its commit, and loses the payment it
// acknowledged (lost-effect), the trial named "after the answer" and the
// trace marking where the answer came; one that commits and then answers
// has no boundary after the answer and passes, its trace unmarked; one
// that reads once more after answering passes, and the kill after that
// last read is said to have interrupted nothing.
func TestBoundariesAfterTheAnswer(t *testing.T) {
	dsn := os.Getenv("REDELIVER_TEST_POSTGRES")
	if dsn == "" {
		t.Skip("set REDELIVER_TEST_POSTGRES to run the database proxy tests")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	admin, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close(context.Background())
	for _, tc := range []struct {
		mode       string
		passed     bool
		schedules  int
		answered   string // the statement the marker is on, by its text's start; "": none
		want, lack []string
	}{
		{"ack-first", false, 9, "begin", []string{"after the answer):", "was acked but key O-1 has no row"}, nil},
		{"safe", true, 9, "", nil, []string{"interrupted nothing"}},
		{"trailing", true, 11, "SELECT count(*)", []string{"(11 schedules); 1 schedule's kill came after the answer and after the delivery's last statement, its work over: it interrupted nothing"}, nil},
	} {
		t.Run(tc.mode, func(t *testing.T) {
			tbl := "late_" + strings.ReplaceAll(tc.mode, "-", "_")
			for _, q := range []string{"DROP TABLE IF EXISTS " + tbl, "CREATE TABLE " + tbl + " (order_id text, event_id text PRIMARY KEY)"} {
				if _, err := admin.Exec(ctx, q); err != nil {
					t.Fatal(err)
				}
			}
			t.Cleanup(func() { admin.Exec(context.Background(), "DROP TABLE IF EXISTS "+tbl) })
			ln, err := net.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				t.Fatal(err)
			}
			addr := ln.Addr().String()
			ln.Close()
			src := fmt.Sprintf(`version: 1
target:
  http: {url: "http://%s/events"}
  start:
    command: [%q]
    ready: "tcp://%s"
    env: {REDELIVER_TEST_LATE: "${REDELIVER_DB_URL}", REDELIVER_TEST_LISTEN: %q, REDELIVER_TEST_LATE_TABLE: %q, REDELIVER_TEST_LATE_MODE: %q}
effects:
  db: %q
  proxy: true
  reset: ["DELETE FROM %s"]
  table: %s
  key: order_id
  event: event_id
  key_of: "{data.orderId}"
checks:
  - name: killed at every statement
    steps:
      - deliver: {id: evt-1, data: {orderId: O-1}}
        crash: statements
    expect:
      effects: {O-1: 1}
`, addr, os.Args[0], addr, addr, tbl, tc.mode, dsn, tbl, tbl)
			sc, err := scenario.Load("late.yaml", []byte(src))
			if err != nil {
				t.Fatal(err)
			}
			res, err := RunFile(ctx, sc, Options{Seed: 1})
			if err != nil {
				t.Fatal(err)
			}
			c := res.Checks[0]
			said := report.CheckLine(c.Line)
			for _, f := range c.Failures {
				said += "\n" + report.FailureMessage(f)
			}
			if c.Passed != tc.passed || c.Schedules != tc.schedules {
				t.Fatalf("passed %v in %d schedules, want %v in %d:\n%s", c.Passed, c.Schedules, tc.passed, tc.schedules, said)
			}
			for _, w := range tc.want {
				if !strings.Contains(said, w) {
					t.Errorf("the check does not say %q:\n%s", w, said)
				}
			}
			for _, w := range tc.lack {
				if strings.Contains(said, w) {
					t.Errorf("the check says %q:\n%s", w, said)
				}
			}
			marked := ""
			for _, st := range c.Trace {
				if st.AnsweredBefore != "" {
					if marked != "" {
						t.Errorf("the answer is marked twice in the trace")
					}
					marked = st.Text
				}
			}
			if tc.answered == "" && marked != "" || !strings.HasPrefix(marked, tc.answered) {
				t.Errorf("the answer's marker is on %q, want on %q", marked, tc.answered)
			}
		})
	}
}
