//go:build linux

package external

import (
	"context"
	"database/sql"
	"fmt"
	"net/url"
	"os"
	"testing"
	"time"

	"github.com/go-sql-driver/mysql"
	"github.com/redeliver/redeliver/pkg/scenario"
	"github.com/redeliver/redeliver/pkg/template"
)

// mysqlSleeperQuery is what the MySQL sleeper sleeps in: the test finds
// its threads by it.
const mysqlSleeperQuery = "SELECT SLEEP(3600) AS redeliver_test_sleeper"

// mysqlSleeper is a consumer on MySQL that dies badly: it writes a row
// of its table inside a transaction (holding its lock), says it is
// ready, and sleeps in the database for an hour. dsn is a Go MySQL DSN.
func mysqlSleeper(dsn string) int {
	ctx := context.Background()
	db, err := sql.Open("mysql", dsn)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	c, err := db.Conn(ctx)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	for _, q := range []string{"BEGIN", "INSERT INTO " + os.Getenv("REDELIVER_TEST_TABLE") + " VALUES ('held')"} {
		if _, err := c.ExecContext(ctx, q); err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
	}
	fmt.Println("ready")
	_, err = c.ExecContext(ctx, mysqlSleeperQuery)
	fmt.Fprintln(os.Stderr, err)
	return 1
}

// TestKilledMySQLConsumerLeavesNoThread: the twin of
// TestKilledConsumerLeavesNoBackend on MySQL or MariaDB: a consumer
// killed while its connection sleeps in the database inside a
// transaction leaves no server thread behind — KILL CONNECTION ends it —
// whether redeliver killed it to restart it or stopped it at the end of
// the run; the row lock it held is free at once.
func TestKilledMySQLConsumerLeavesNoThread(t *testing.T) {
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
	table := "threads_left"
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
	target := &scenario.Target{
		HTTP: &scenario.HTTPTarget{URL: "http://127.0.0.1:1/events"},
		Start: &scenario.Start{Command: []string{os.Args[0]}, ReadyLine: "ready", ReadyTimeout: 10 * time.Second,
			Env: map[string]string{"REDELIVER_TEST_MYSQL_SLEEPER": "${" + scenario.DBURLVar + "}", "REDELIVER_TEST_TABLE": table}},
	}
	kof, _ := template.Parse("{data.k}")
	s, err := Open(ctx, target, &scenario.Effects{DB: dsn, Table: table, Key: "k", KeyOf: kof, Proxy: true})
	if err != nil {
		t.Fatal(err)
	}
	// The sleeper says it is ready just before it sends the sleep.
	var first []int64
	for deadline := time.Now().Add(10 * time.Second); len(first) == 0 && time.Now().Before(deadline); {
		first = sleepers()
	}
	if len(first) != 1 {
		s.Close()
		t.Fatalf("the sleeper has %d threads asleep, want 1", len(first))
	}
	if err := s.proc.Crash(ctx); err != nil {
		s.Close()
		t.Fatal(err)
	}
	var got []int64
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); {
		if got = sleepers(); len(got) == 1 && got[0] != first[0] {
			break
		}
	}
	if len(got) != 1 || got[0] == first[0] {
		s.Close()
		t.Fatalf("after a kill and a restart the sleepers' threads are %v, want one other than %v", got, first)
	}
	s.Close()
	if got := sleepers(); len(got) != 0 {
		for _, id := range got {
			admin.Exec(fmt.Sprintf("KILL CONNECTION %d", id))
		}
		t.Fatalf("threads %v of the stopped consumer still run", got)
	}
	c, err := admin.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.ExecContext(ctx, "SET SESSION innodb_lock_wait_timeout = 2")
	if _, err := c.ExecContext(ctx, "INSERT INTO "+table+" VALUES ('held')"); err != nil {
		t.Fatalf("the row is still locked: %v", err)
	}
}

// mysqlDSNOf is a mysql:// URL as a Go MySQL DSN.
func mysqlDSNOf(t *testing.T, dsn string) string {
	t.Helper()
	u, err := url.Parse(dsn)
	if err != nil {
		t.Fatal(err)
	}
	user := u.User.Username()
	if pw, ok := u.User.Password(); ok {
		user += ":" + pw
	}
	host := u.Host
	if u.Port() == "" {
		host += ":3306"
	}
	return user + "@tcp(" + host + ")" + u.Path
}
