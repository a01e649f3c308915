//go:build linux

package external

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/redeliver/redeliver/pkg/report"
)

// lateWorker is a consumer of payments, through the proxy (dsn: a
// postgres:// URL or a Go MySQL DSN), listening on REDELIVER_TEST_LISTEN.
// It looks its event up with REDELIVER_TEST_LATE_LOOKUP and pays with
// REDELIVER_TEST_LATE_PAY, each taking the event id (and the order) as
// parameters. Its REDELIVER_TEST_LATE_MODE says when it answers:
// "ack-first" answers 202 once its lookup found nothing, then inserts the
// payment in a transaction; "safe" inserts it, commits, then answers 200;
// "trailing" is safe, and after its answer looks the payment up once
// more; "trailing-late" too, 50 ms after its first answer (the
// recording's) and 600 ms after each later one, as on a machine busy
// enough to delay it past redeliver's quiet after the answer
// (REDELIVER_TEST_LATE_FIRST names the file that marks the first).
func lateWorker(dsn string) int {
	ctx := context.Background()
	db, err := sql.Open(driverOf(dsn), dsn)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	lookup, mode := os.Getenv("REDELIVER_TEST_LATE_LOOKUP"), os.Getenv("REDELIVER_TEST_LATE_MODE")
	ln, err := net.Listen("tcp", os.Getenv("REDELIVER_TEST_LISTEN"))
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	pay := func(id, order string) error {
		tx, err := db.BeginTx(ctx, nil)
		if err != nil {
			return err
		}
		if _, err := tx.ExecContext(ctx, os.Getenv("REDELIVER_TEST_LATE_PAY"), order, id); err != nil {
			tx.Rollback()
			return err
		}
		return tx.Commit()
	}
	// The answer is sent at once, and what comes after it a moment
	// later: where the answer came among the statements is then plain.
	answer := func(w http.ResponseWriter, status int) {
		w.Header().Set("Content-Length", "0")
		w.WriteHeader(status)
		w.(http.Flusher).Flush()
	}
	later := func() { time.Sleep(50 * time.Millisecond) }
	if mode == "trailing-late" {
		first := os.Getenv("REDELIVER_TEST_LATE_FIRST")
		later = func() {
			if f, err := os.OpenFile(first, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o644); err == nil {
				f.Close()
				time.Sleep(50 * time.Millisecond)
				return
			}
			time.Sleep(600 * time.Millisecond)
		}
	}
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
		if err := db.QueryRowContext(ctx, lookup, ev.ID).Scan(&n); err != nil {
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
		if strings.HasPrefix(mode, "trailing") {
			later()
			db.QueryRowContext(ctx, lookup, ev.ID).Scan(&n)
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
	eachDB(t, 3*time.Minute, func(t *testing.T, ctx context.Context, db testDB) {
		for _, tc := range []struct {
			mode      string
			passed    bool
			schedules int
			// answered is the statement the marker is on, by its
			// text's start in a PostgreSQL trace; "": none.
			answered   string
			want, lack []string
		}{
			{"ack-first", false, 9, "begin", []string{"after the answer):", "was acked but key O-1 has no row"}, nil},
			{"safe", true, 9, "", nil, []string{"interrupted nothing"}},
			{"trailing", true, 11, "SELECT count(*)", []string{"(11 schedules); 1 schedule's kill came after the answer and after the delivery's last statement, its work over: it interrupted nothing"}, nil},
			// A trial held at the lookup after the answer waits for it
			// past the quiet that ends a delivery's statements: its
			// recording met it there. The trace shown, the unforced
			// schedule's, ends at the commit: that schedule's lookup
			// came after the quiet.
			{"trailing-late", true, 11, "", []string{"(11 schedules); 1 schedule's kill came after the answer and after the delivery's last statement, its work over: it interrupted nothing"}, nil},
		} {
			t.Run(tc.mode, func(t *testing.T) {
				tbl := db.table(t, ctx, "late_"+strings.ReplaceAll(tc.mode, "-", "_"), "event_id "+db.text+" PRIMARY KEY, order_id "+db.text)
				ln, err := net.Listen("tcp", "127.0.0.1:0")
				if err != nil {
					t.Fatal(err)
				}
				addr := ln.Addr().String()
				ln.Close()
				lookup := db.params("SELECT count(*) FROM " + tbl + " WHERE event_id = $1")
				pay := db.insertIgnore(db.params("INSERT INTO " + tbl + " (order_id, event_id) VALUES ($1, $2)"))
				src := fmt.Sprintf(`version: 1
target:
  http: {url: "http://%s/events"}
  start:
    command: [%q]
    ready: "tcp://%s"
    env: {REDELIVER_TEST_LATE: "${REDELIVER_DB_URL}", REDELIVER_TEST_LISTEN: %q, REDELIVER_TEST_LATE_LOOKUP: %q, REDELIVER_TEST_LATE_PAY: %q, REDELIVER_TEST_LATE_MODE: %q, REDELIVER_TEST_LATE_FIRST: %q}
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
`, addr, os.Args[0], addr, addr, lookup, pay, tc.mode, filepath.Join(t.TempDir(), "first"), db.dsn, tbl, tbl)
				c := firstCheck(t, ctx, "late.yaml", src)
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
				if answered := db.says(tc.answered); answered == "" && marked != "" || !strings.HasPrefix(marked, answered) {
					t.Errorf("the answer's marker is on %q, want on %q", marked, answered)
				}
			})
		}
	})
}
