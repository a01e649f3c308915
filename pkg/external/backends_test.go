//go:build linux

package external

import (
	"bufio"
	"context"
	"database/sql"
	"fmt"
	"io"
	"os"
	"os/exec"
	"testing"
	"time"

	"github.com/redeliver/redeliver/pkg/scenario"
	"github.com/redeliver/redeliver/pkg/sqlproxy"
	"github.com/redeliver/redeliver/pkg/template"
)

// sleeper is a consumer that dies badly (dsn: a postgres:// URL or a Go
// MySQL DSN), on its table REDELIVER_TEST_TABLE. On PostgreSQL it locks
// the table inside a transaction, says it is ready, and sleeps in the
// database for an hour. On MySQL it writes the row 'held' inside a
// transaction (holding its lock), says it is ready, then locks the row
// 'blocker' and sleeps for an hour — or, while another session holds
// that row, waits for it as long, a wait the server does not end when
// the client goes.
func sleeper(dsn string) int {
	table := os.Getenv("REDELIVER_TEST_TABLE")
	hold := []string{"SET application_name = '" + sleeperMark(table) + "'", "BEGIN", "LOCK TABLE " + table + " IN ACCESS EXCLUSIVE MODE"}
	sleep := "SELECT pg_sleep(3600)"
	if driverOf(dsn) == "mysql" {
		hold = []string{"SET SESSION innodb_lock_wait_timeout = 3600", "BEGIN", "INSERT INTO " + table + " VALUES ('held')"}
		sleep = "SELECT k, SLEEP(3600) AS " + sleeperMark(table) + " FROM " + table + " WHERE k = 'blocker' FOR UPDATE"
	}
	ctx := context.Background()
	c, err := sleeperConn(ctx, dsn, hold)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	fmt.Println("ready")
	_, err = c.ExecContext(ctx, sleep)
	fmt.Fprintln(os.Stderr, err)
	return 1
}

// execSleeper is an exec delivery that leaves a server process busy
// (dsn: a postgres:// URL or a Go MySQL DSN): one connection locks its
// table inside a transaction (on MySQL, SELECT … FOR UPDATE, which on an
// empty table holds the gap every insert needs) and sleeps in the
// database for an hour, while another then inserts into the table — the
// statement a test kills the delivery before.
func execSleeper(dsn string) int {
	io.Copy(io.Discard, os.Stdin)
	table := os.Getenv("REDELIVER_TEST_TABLE")
	hold := []string{"SET application_name = '" + sleeperMark(table) + "'", "BEGIN", "LOCK TABLE " + table + " IN ACCESS EXCLUSIVE MODE"}
	sleep := "SELECT pg_sleep(3600)"
	if driverOf(dsn) == "mysql" {
		hold = []string{"BEGIN", "SELECT k FROM " + table + " FOR UPDATE"}
		sleep = "SELECT SLEEP(3600) AS " + sleeperMark(table)
	}
	ctx := context.Background()
	sleeping, err := sleeperConn(ctx, dsn, hold)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	go sleeping.ExecContext(ctx, sleep)
	other, err := sleeperConn(ctx, dsn, nil)
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

// sleeperConn is a connection to dsn that has run hold.
func sleeperConn(ctx context.Context, dsn string, hold []string) (*sql.Conn, error) {
	db, err := sql.Open(driverOf(dsn), dsn)
	if err != nil {
		return nil, err
	}
	c, err := db.Conn(ctx)
	if err != nil {
		return nil, err
	}
	for _, q := range hold {
		if _, err := c.ExecContext(ctx, q); err != nil {
			return nil, fmt.Errorf("%s: %w", q, err)
		}
	}
	return c, nil
}

// sleeperSession is a Session whose consumer is the sleeper, proxied, on
// table.
func sleeperSession(ctx context.Context, dsn, table string) (*Session, error) {
	target := &scenario.Target{
		HTTP: &scenario.HTTPTarget{URL: "http://127.0.0.1:1/events"},
		Start: &scenario.Start{Command: []string{os.Args[0]}, ReadyLine: "ready", ReadyTimeout: 10 * time.Second,
			Env: map[string]string{"REDELIVER_TEST_SLEEPER": "${" + scenario.DBURLVar + "}", "REDELIVER_TEST_TABLE": table}},
	}
	kof, _ := template.Parse("{data.k}")
	return Open(ctx, target, &scenario.Effects{DB: dsn, Table: table, Key: "k", KeyOf: kof, Proxy: true})
}

// sessionOfSleeper stands for redeliver itself: it opens a session with
// the sleeper as its consumer, on REDELIVER_TEST_TABLE, says so, and
// waits to be killed.
func sessionOfSleeper(dsn string) int {
	s, err := sleeperSession(context.Background(), dsn, os.Getenv("REDELIVER_TEST_TABLE"))
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer s.Close()
	fmt.Println("open")
	time.Sleep(10 * time.Minute)
	return 1
}

// sleepersTable makes the table the sleepers lock, with the row
// 'blocker' the MySQL sleeper sleeps on, and returns its name.
func (d *testDB) sleepersTable(t *testing.T, ctx context.Context, name string) string {
	t.Helper()
	table := d.table(t, ctx, name, "k "+d.text+" PRIMARY KEY")
	if _, err := d.admin.ExecContext(ctx, "INSERT INTO "+table+" VALUES ('blocker')"); err != nil {
		t.Fatal(err)
	}
	return table
}

// awaitSleepers waits up to limit until ok holds of the server processes
// of the sleepers on table, and returns them.
func (d *testDB) awaitSleepers(t *testing.T, table string, limit time.Duration, ok func([]int64) bool) []int64 {
	t.Helper()
	var got []int64
	for deadline := time.Now().Add(limit); ; time.Sleep(100 * time.Millisecond) {
		if got = d.sleepers(t, table); ok(got) || time.Now().After(deadline) {
			return got
		}
	}
}

// TestKilledConsumerLeavesNoBackend: a consumer killed while its
// connection sleeps in the database inside a transaction leaves no
// server process (MySQL thread) behind, whether redeliver killed it to
// restart it or stopped it at the end of the run; the lock it held is
// free at once. PostgreSQL's is cancelled, then terminated; MySQL's is
// ended with KILL CONNECTION.
func TestKilledConsumerLeavesNoBackend(t *testing.T) {
	eachDB(t, 60*time.Second, func(t *testing.T, ctx context.Context, db testDB) {
		table := db.sleepersTable(t, ctx, "backends_left")
		s, err := sleeperSession(ctx, db.dsn, table)
		if err != nil {
			t.Fatal(err)
		}
		// The sleeper says it is ready just before it sends the sleep.
		first := db.awaitSleepers(t, table, 10*time.Second, func(ids []int64) bool { return len(ids) == 1 })
		if len(first) != 1 {
			s.Close()
			t.Fatalf("the sleeper has server processes %v, want 1", first)
		}
		if err := s.proc.Crash(ctx); err != nil {
			s.Close()
			t.Fatal(err)
		}
		got := db.awaitSleepers(t, table, 10*time.Second, func(ids []int64) bool { return len(ids) == 1 && ids[0] != first[0] })
		if len(got) != 1 || got[0] == first[0] {
			s.Close()
			t.Fatalf("after a kill and a restart the sleepers' server processes are %v, want one other than %v", got, first)
		}
		s.Close()
		if got := db.sleepers(t, table); len(got) != 0 {
			db.end(got)
			t.Fatalf("server processes %v of the stopped consumer still run", got)
		}
		if err := db.locked(ctx, table); err != nil {
			t.Fatalf("the table is still locked: %v", err)
		}
	})
}

// TestRedeliverKilledLeavesNoBackend: when redeliver itself is killed
// with SIGKILL, nothing of it can end its consumer's server processes,
// yet one inside a statement, in a transaction holding a lock, ends
// within moments, and the lock with it. On PostgreSQL the proxy's
// connections ask the server to look whether their client is still
// there (client_connection_check_interval), and the backend sleeps in
// pg_sleep. MySQL has no such setting, and a thread waiting on a lock
// outlives its client: there the thread waits on a row the test holds,
// and redeliver's guardian kills it.
func TestRedeliverKilledLeavesNoBackend(t *testing.T) {
	eachDB(t, 90*time.Second, func(t *testing.T, ctx context.Context, db testDB) {
		if !db.mysql() {
			var version int
			if err := db.admin.QueryRowContext(ctx, "SELECT current_setting('server_version_num')::int").Scan(&version); err != nil {
				t.Fatal(err)
			}
			if version < 140000 {
				t.Skip("a server before PostgreSQL 14 cannot look for a client that is gone")
			}
		}
		table := db.sleepersTable(t, ctx, "backends_killed")
		if db.mysql() {
			// The row the sleeper then waits for, held until the end.
			c, err := db.admin.Conn(ctx)
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			for _, q := range []string{"BEGIN", "SELECT k FROM " + table + " WHERE k = 'blocker' FOR UPDATE"} {
				if _, err := c.ExecContext(ctx, q); err != nil {
					t.Fatal(err)
				}
			}
			defer c.ExecContext(context.Background(), "ROLLBACK")
		}
		cmd := exec.Command(os.Args[0])
		cmd.Env = append(os.Environ(), "REDELIVER_TEST_SESSION="+db.dsn, "REDELIVER_TEST_TABLE="+table)
		out, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		defer cmd.Process.Kill()
		line, err := bufio.NewReader(out).ReadString('\n')
		if line != "open\n" {
			t.Fatalf("the session did not open: %q, %v", line, err)
		}
		if got := db.awaitSleepers(t, table, 10*time.Second, func(ids []int64) bool { return len(ids) == 1 }); len(got) != 1 {
			t.Fatalf("the sleeper has server processes %v, want 1", got)
		}
		if err := cmd.Process.Kill(); err != nil {
			t.Fatal(err)
		}
		killed := time.Now()
		cmd.Wait()
		if left := db.awaitSleepers(t, table, 30*time.Second, func(ids []int64) bool { return len(ids) == 0 }); len(left) != 0 {
			db.end(left)
			t.Fatalf("server processes %v of the consumer still run 30 s after redeliver was killed", left)
		}
		t.Logf("the consumer's server process ended %s after redeliver was killed", time.Since(killed).Round(100*time.Millisecond))
		if err := db.locked(ctx, table); err != nil {
			t.Fatalf("the table is still locked: %v", err)
		}
	})
}

// TestKilledExecDeliveryLeavesNoBackend: an exec delivery killed at a
// statement boundary, while another of its connections sleeps in the
// database holding a lock, leaves no server process (MySQL thread)
// behind once the kill is over, not only once the run ends.
func TestKilledExecDeliveryLeavesNoBackend(t *testing.T) {
	eachDB(t, 60*time.Second, func(t *testing.T, ctx context.Context, db testDB) {
		table := db.table(t, ctx, "backends_exec_left", "k "+db.text+" PRIMARY KEY")
		target := &scenario.Target{Exec: &scenario.ExecTarget{Command: []string{os.Args[0]}, Timeout: 10 * time.Second,
			Env: map[string]string{"REDELIVER_TEST_EXEC_SLEEPER": "${" + scenario.DBURLVar + "}", "REDELIVER_TEST_TABLE": table}}}
		kof, _ := template.Parse("{data.k}")
		s, err := Open(ctx, target, &scenario.Effects{DB: db.dsn, Table: table, Key: "k", KeyOf: kof, Proxy: true})
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
		if got := db.sleepers(t, table); len(got) != 0 {
			db.end(got)
			t.Fatalf("server processes %v of the killed exec delivery still run after the kill", got)
		}
		if err := db.locked(ctx, table); err != nil {
			t.Fatalf("the table is still locked: %v", err)
		}
	})
}
