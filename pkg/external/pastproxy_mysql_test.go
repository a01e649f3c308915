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

// mysqlSplitWriter is splitWriter on MySQL: it looks for its marker on
// REDELIVER_TEST_MYSQL_SPLIT (the proxy, a Go MySQL DSN), then writes the
// payment and the marker on a pool of its own to REDELIVER_TEST_DIRECT.
// It listens on REDELIVER_TEST_LISTEN.
func mysqlSplitWriter(viaProxy string) int {
	read, err := sql.Open("mysql", viaProxy)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	write, err := sql.Open("mysql", os.Getenv("REDELIVER_TEST_DIRECT"))
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	ln, err := net.Listen("tcp", os.Getenv("REDELIVER_TEST_LISTEN"))
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	tbl := os.Getenv("REDELIVER_TEST_TABLE")
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
			write.ExecContext(r.Context(), "INSERT INTO "+tbl+"_payments (order_id) VALUES (?)", ev.Data.OrderID)
			write.ExecContext(r.Context(), "INSERT INTO "+tbl+"_processed (event_id) VALUES (?)", ev.ID)
		}
		w.WriteHeader(200)
	}))
	return 1
}

// TestMySQLWritesPastTheProxyAreNamed: the twin of
// TestWritesPastTheProxyAreNamed on MySQL or MariaDB: a consumer that
// reads through the proxy (a read that may call a function is not
// counted as one) and writes past it fails crash: statements in one
// sentence, instead of passing with its reads' boundaries alone.
func TestMySQLWritesPastTheProxyAreNamed(t *testing.T) {
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
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	admin, err := sql.Open("mysql", dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close()
	const tbl = "my_split"
	for _, q := range []string{
		"DROP TABLE IF EXISTS " + tbl + "_payments, " + tbl + "_processed",
		"CREATE TABLE " + tbl + "_payments (order_id VARCHAR(40)) ENGINE=InnoDB",
		"CREATE TABLE " + tbl + "_processed (event_id VARCHAR(40) PRIMARY KEY) ENGINE=InnoDB",
	} {
		if _, err := admin.ExecContext(ctx, q); err != nil {
			t.Fatal(err)
		}
	}
	defer admin.Exec("DROP TABLE IF EXISTS " + tbl + "_payments, " + tbl + "_processed")
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	for _, tc := range []struct{ read, want string }{
		{"SELECT 1 FROM my_split_processed WHERE event_id = ?", "the consumer wrote to the database without going through ${REDELIVER_DB_URL}: the delivery of evt-1 changed the effect rows, and the statements it ran through ${REDELIVER_DB_URL} only read (SELECT 1 FROM my_split_processed WHERE event_id = ? → SELECT 0)"},
		{"SELECT 1 FROM my_split_processed WHERE event_id = lower(?)", ""},
	} {
		t.Run(tc.read, func(t *testing.T) {
			src := fmt.Sprintf(`version: 1
target:
  http: {url: "http://%s/events"}
  start:
    command: [%q]
    ready: "tcp://%s"
    env: {REDELIVER_TEST_MYSQL_SPLIT: "${REDELIVER_DB_URL}", REDELIVER_TEST_DIRECT: %q, REDELIVER_TEST_LISTEN: %q, REDELIVER_TEST_SPLIT_READ: %q, REDELIVER_TEST_TABLE: %q}
effects:
  db: %q
  proxy: true
  reset: ["DELETE FROM my_split_payments", "DELETE FROM my_split_processed"]
  table: my_split_payments
  key: order_id
  key_of: "{data.orderId}"
checks:
  - name: killed at every statement
    steps:
      - deliver: {id: evt-1, data: {orderId: O-1}}
        crash: statements
`, addr, os.Args[0], addr, dsn, addr, tc.read, tbl, dsn)
			sc, err := scenario.Load("split.yaml", []byte(src))
			if err != nil {
				t.Fatal(err)
			}
			res, err := RunFile(ctx, sc, Options{Seed: 1})
			if err != nil {
				t.Fatal(err)
			}
			c := res.Checks[0]
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
}
