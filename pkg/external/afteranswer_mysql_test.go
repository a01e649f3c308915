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
	"strings"
	"testing"
	"time"

	"github.com/go-sql-driver/mysql"
	"github.com/redeliver/redeliver/pkg/report"
	"github.com/redeliver/redeliver/pkg/scenario"
)

// mysqlLateWorker is lateWorker on MySQL: the proxy is dsn, a Go MySQL
// DSN; REDELIVER_TEST_LATE_TABLE and REDELIVER_TEST_LATE_MODE as there.
func mysqlLateWorker(dsn string) int {
	ctx := context.Background()
	db, err := sql.Open("mysql", dsn)
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
		tx, err := db.BeginTx(ctx, nil)
		if err != nil {
			return err
		}
		if _, err := tx.ExecContext(ctx, "INSERT IGNORE INTO "+tbl+" (order_id, event_id) VALUES (?, ?)", order, id); err != nil {
			tx.Rollback()
			return err
		}
		return tx.Commit()
	}
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
		if err := db.QueryRowContext(ctx, "SELECT count(*) FROM "+tbl+" WHERE event_id = ?", ev.ID).Scan(&n); err != nil {
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
			db.QueryRowContext(ctx, "SELECT count(*) FROM "+tbl+" WHERE event_id = ?", ev.ID).Scan(&n)
		}
	}))
	return 1
}

// TestMySQLBoundariesAfterTheAnswer: the twin of
// TestBoundariesAfterTheAnswer on MySQL or MariaDB: crash: statements
// follows a delivery's statements past the consumer's answer. A consumer
// that answers 202 and then commits is caught between the two
// (lost-effect, "after the answer", the trace marked); one that commits
// and then answers has no boundary after the answer; one that reads once
// more after answering passes, that last kill interrupting nothing.
func TestMySQLBoundariesAfterTheAnswer(t *testing.T) {
	my := os.Getenv("REDELIVER_TEST_MYSQL")
	if my == "" {
		if os.Getenv("CI") == "true" {
			t.Fatal("REDELIVER_TEST_MYSQL is not set under CI=true")
		}
		t.Skip("set REDELIVER_TEST_MYSQL to run the MySQL proxy tests")
	}
	cfg, err := mysql.ParseDSN(mysqlDSNOf(t, my))
	if err != nil {
		t.Fatal(err)
	}
	dsn := cfg.FormatDSN()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	admin, err := sql.Open("mysql", dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close()
	for _, tc := range []struct {
		mode       string
		passed     bool
		schedules  int
		answered   string // the statement the marker is on, by its text's start; "": none
		want, lack []string
	}{
		{"ack-first", false, 9, "START TRANSACTION", []string{"after the answer):", "was acked but key O-1 has no row"}, nil},
		{"safe", true, 9, "", nil, []string{"interrupted nothing"}},
		{"trailing", true, 11, "SELECT count(*)", []string{"(11 schedules); 1 schedule's kill came after the answer and after the delivery's last statement, its work over: it interrupted nothing"}, nil},
	} {
		t.Run(tc.mode, func(t *testing.T) {
			tbl := "my_late_" + strings.ReplaceAll(tc.mode, "-", "_")
			for _, q := range []string{"DROP TABLE IF EXISTS " + tbl, "CREATE TABLE " + tbl + " (order_id VARCHAR(40), event_id VARCHAR(40) PRIMARY KEY) ENGINE=InnoDB"} {
				if _, err := admin.ExecContext(ctx, q); err != nil {
					t.Fatal(err)
				}
			}
			t.Cleanup(func() { admin.Exec("DROP TABLE IF EXISTS " + tbl) })
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
    env: {REDELIVER_TEST_MYSQL_LATE: "${REDELIVER_DB_URL}", REDELIVER_TEST_LISTEN: %q, REDELIVER_TEST_LATE_TABLE: %q, REDELIVER_TEST_LATE_MODE: %q}
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
