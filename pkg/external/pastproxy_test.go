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

	"github.com/redeliver/redeliver/pkg/report"
	"github.com/redeliver/redeliver/pkg/scenario"
)

// splitWriter is a consumer that reads through the proxy and writes past
// it: it looks for its marker on REDELIVER_TEST_SPLIT (the proxy: a
// postgres:// URL or a Go MySQL DSN) with REDELIVER_TEST_SPLIT_READ, then
// writes the payment and the marker in two transactions, with
// REDELIVER_TEST_SPLIT_PAY and REDELIVER_TEST_SPLIT_MARK, on a pool of
// its own to REDELIVER_TEST_DIRECT — a read pool and a write pool
// configured apart. It listens on REDELIVER_TEST_LISTEN.
func splitWriter(viaProxy string) int {
	read, err := sql.Open(driverOf(viaProxy), viaProxy)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	direct := os.Getenv("REDELIVER_TEST_DIRECT")
	write, err := sql.Open(driverOf(direct), direct)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	ln, err := net.Listen("tcp", os.Getenv("REDELIVER_TEST_LISTEN"))
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	fmt.Println("ready")
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
		rows, err := read.QueryContext(r.Context(), os.Getenv("REDELIVER_TEST_SPLIT_READ"), ev.ID)
		if err != nil {
			w.WriteHeader(500)
			return
		}
		for rows.Next() {
			n++
		}
		if rows.Close(); rows.Err() != nil {
			w.WriteHeader(500)
			return
		}
		if n == 0 {
			write.ExecContext(r.Context(), os.Getenv("REDELIVER_TEST_SPLIT_PAY"), ev.Data.OrderID)
			write.ExecContext(r.Context(), os.Getenv("REDELIVER_TEST_SPLIT_MARK"), ev.ID)
		}
		w.WriteHeader(200)
	}))
	return 1
}

// TestWritesPastTheProxyAreNamed: a consumer that reads through the proxy
// (a read that may call a function is not counted as one) and writes
// past it fails crash: statements in one sentence, instead of passing
// with its reads' boundaries alone.
func TestWritesPastTheProxyAreNamed(t *testing.T) {
	eachDB(t, 60*time.Second, func(t *testing.T, ctx context.Context, db testDB) {
		payments := db.table(t, ctx, "split_payments", "order_id "+db.text)
		processed := db.table(t, ctx, "split_processed", "event_id "+db.text+" PRIMARY KEY")
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		addr := ln.Addr().String()
		ln.Close()
		read := db.params("SELECT 1 FROM " + processed + " WHERE event_id = $1")
		for _, tc := range []struct{ name, read, want string }{
			{"a plain read", read, "the consumer wrote to the database without going through ${REDELIVER_DB_URL}: the delivery of evt-1 changed the effect rows, and the statements it ran through ${REDELIVER_DB_URL} only read (" + read + " → SELECT 0)"},
			{"a read calling a function", db.params("SELECT 1 FROM " + processed + " WHERE event_id = lower($1)"), ""},
		} {
			t.Run(tc.name, func(t *testing.T) {
				src := fmt.Sprintf(`version: 1
target:
  http: {url: "http://%s/events"}
  start:
    command: [%q]
    ready: "tcp://%s"
    env: {REDELIVER_TEST_SPLIT: "${REDELIVER_DB_URL}", REDELIVER_TEST_DIRECT: %q, REDELIVER_TEST_LISTEN: %q, REDELIVER_TEST_SPLIT_READ: %q, REDELIVER_TEST_SPLIT_PAY: %q, REDELIVER_TEST_SPLIT_MARK: %q}
effects:
  db: %q
  proxy: true
  reset: ["DELETE FROM %s", "DELETE FROM %s"]
  table: %s
  key: order_id
  key_of: "{data.orderId}"
checks:
  - name: killed at every statement
    steps:
      - deliver: {id: evt-1, data: {orderId: O-1}}
        crash: statements
`, addr, os.Args[0], addr, db.dsn, addr, tc.read, db.params("INSERT INTO "+payments+" (order_id) VALUES ($1)"), db.params("INSERT INTO "+processed+" (event_id) VALUES ($1)"), db.dsn, payments, processed, payments)
				c := firstCheck(t, ctx, "split.yaml", src)
				var msgs []string
				for _, f := range c.Failures {
					msgs = append(msgs, report.FailureMessage(f))
				}
				switch {
				case tc.want == "" && !c.Passed:
					t.Errorf("a read that may have written failed the check: %s", strings.Join(msgs, "; "))
				case tc.want != "" && (c.Passed || !strings.Contains(strings.Join(msgs, "\n"), tc.want)):
					t.Errorf("passed %v, failures:\n%s\nwant one containing %q", c.Passed, strings.Join(msgs, "\n"), tc.want)
				}
			})
		}
	})
}

// TestDBVarNamesWhatTheConsumerUses: messages name the variable the
// consumer is pointed at the proxy with.
func TestDBVarNamesWhatTheConsumerUses(t *testing.T) {
	for _, tc := range []struct {
		start *scenario.Start
		exec  *scenario.ExecTarget
		want  string
	}{
		{&scenario.Start{Command: []string{"app", "${REDELIVER_DB_URL}"}}, nil, scenario.DBURLVar},
		{&scenario.Start{Command: []string{"java", "-jar", "c.jar"}, Env: map[string]string{"JDBC": "${REDELIVER_JDBC_URL}"}}, nil, scenario.JDBCURLVar},
		{&scenario.Start{Command: []string{"app"}, Env: map[string]string{"A": "${REDELIVER_JDBC_URL}", "B": "${REDELIVER_DB_URL}"}}, nil, scenario.DBURLVar},
		{nil, &scenario.ExecTarget{Command: []string{"java", "${REDELIVER_JDBC_URL}"}}, scenario.JDBCURLVar},
		{&scenario.Start{Command: []string{"app"}}, nil, scenario.DBURLVar},
	} {
		s := &Session{}
		s.withDBURL(&scenario.Target{Start: tc.start, Exec: tc.exec})
		if s.dbVar != tc.want {
			t.Errorf("%+v %+v: dbVar %s, want %s", tc.start, tc.exec, s.dbVar, tc.want)
		}
	}
}
