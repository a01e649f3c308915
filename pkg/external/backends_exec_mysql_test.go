//go:build linux

package external

import (
	"context"
	"database/sql"
	"fmt"
	"io"
	"os"
	"testing"
	"time"

	"github.com/go-sql-driver/mysql"
	"github.com/redeliver/redeliver/pkg/scenario"
	"github.com/redeliver/redeliver/pkg/sqlproxy"
	"github.com/redeliver/redeliver/pkg/template"
)

// mysqlExecSleeper is an exec delivery on MySQL that leaves a connection
// behind: one of its connections locks its table's rows (SELECT … FOR
// UPDATE in a transaction, which on an empty table holds the gap every
// insert needs) and sleeps in the database, while another inserts a row.
// dsn is a Go MySQL DSN.
func mysqlExecSleeper(dsn string) int {
	ctx := context.Background()
	io.Copy(io.Discard, os.Stdin)
	db, err := sql.Open("mysql", dsn)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	table := os.Getenv("REDELIVER_TEST_TABLE")
	sleeping, err := db.Conn(ctx)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	for _, q := range []string{"BEGIN", "SELECT k FROM " + table + " FOR UPDATE"} {
		if _, err := sleeping.ExecContext(ctx, q); err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
	}
	go sleeping.ExecContext(ctx, mysqlSleeperQuery)
	other, err := db.Conn(ctx)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	// The sleep is sent before the insert that is held.
	time.Sleep(200 * time.Millisecond)
	if _, err := other.ExecContext(ctx, "INSERT INTO "+table+" VALUES ('x')"); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	return 0
}

// TestKilledMySQLExecDeliveryLeavesNoThread: the twin of
// TestKilledExecDeliveryLeavesNoBackend on MySQL or MariaDB: an exec
// delivery killed at a statement boundary, while another of its
// connections sleeps in the database holding a lock, leaves no server
// thread behind once the kill is over, not only once the run ends; the
// lock is free at once.
func TestKilledMySQLExecDeliveryLeavesNoThread(t *testing.T) {
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
	table := "threads_exec_left"
	for _, q := range []string{"DROP TABLE IF EXISTS " + table, "CREATE TABLE " + table + " (k VARCHAR(10) PRIMARY KEY) ENGINE=InnoDB"} {
		if _, err := admin.ExecContext(ctx, q); err != nil {
			t.Fatal(err)
		}
	}
	defer admin.Exec("DROP TABLE IF EXISTS " + table)
	sleepers := func() []int64 {
		t.Helper()
		rows, err := admin.QueryContext(ctx, "SELECT id FROM information_schema.processlist WHERE info = ?", mysqlSleeperQuery)
		if err != nil {
			t.Fatal(err)
		}
		defer rows.Close()
		var ids []int64
		for rows.Next() {
			var id int64
			rows.Scan(&id)
			ids = append(ids, id)
		}
		return ids
	}
	for _, id := range sleepers() {
		admin.Exec(fmt.Sprintf("KILL CONNECTION %d", id))
	}
	target := &scenario.Target{Exec: &scenario.ExecTarget{Command: []string{os.Args[0]}, Timeout: 10 * time.Second,
		Env: map[string]string{"REDELIVER_TEST_MYSQL_EXEC_SLEEPER": "${" + scenario.DBURLVar + "}", "REDELIVER_TEST_TABLE": table}}}
	kof, _ := template.Parse("{data.k}")
	s, err := Open(ctx, target, &scenario.Effects{DB: dsn, Table: table, Key: "k", KeyOf: kof, Proxy: true})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	a, _, reached, err := s.watched(ctx, Event{ID: "evt-1", Key: "x", Data: []byte(`{"k":"x"}`)}, &sqlproxy.Boundary{Words: "insert into " + table})
	if err != nil {
		t.Fatal(err)
	}
	if !reached || !a.Killed {
		t.Fatalf("the delivery was not killed before its insert (reached %v, %+v)", reached, a)
	}
	if got := sleepers(); len(got) != 0 {
		for _, id := range got {
			admin.Exec(fmt.Sprintf("KILL CONNECTION %d", id))
		}
		t.Fatalf("threads %v of the killed exec delivery still run after the kill", got)
	}
	c, err := admin.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.ExecContext(ctx, "SET SESSION innodb_lock_wait_timeout = 2")
	if _, err := c.ExecContext(ctx, "INSERT INTO "+table+" VALUES ('held')"); err != nil {
		t.Fatalf("the table's rows are still locked: %v", err)
	}
}
