//go:build linux

package external

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/redeliver/redeliver/pkg/scenario"
	"github.com/redeliver/redeliver/pkg/sqlproxy"
	"github.com/redeliver/redeliver/pkg/template"
)

// sleeperApp names the sleeper's connections.
const sleeperApp = "redeliver-test-sleeper"

// sleeper is a consumer that dies badly: it takes a lock on its table
// inside a transaction, says it is ready, and sleeps in the database for
// an hour. Its table is REDELIVER_TEST_TABLE.
func sleeper(dsn string) int {
	ctx := context.Background()
	cfg, err := pgx.ParseConfig(dsn)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	cfg.RuntimeParams["application_name"] = sleeperApp
	c, err := pgx.ConnectConfig(ctx, cfg)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	if _, err := c.Exec(ctx, "BEGIN; LOCK TABLE "+os.Getenv("REDELIVER_TEST_TABLE")+" IN ACCESS EXCLUSIVE MODE"); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	fmt.Println("ready")
	_, err = c.Exec(ctx, "SELECT pg_sleep(3600)")
	fmt.Fprintln(os.Stderr, err)
	return 1
}

// execSleeper is an exec delivery that leaves a backend busy: one
// connection takes a lock on its table inside a transaction and sleeps in
// the database for an hour, while another then inserts into the table —
// the statement a test kills the delivery before.
func execSleeper(dsn string) int {
	ctx := context.Background()
	io.Copy(io.Discard, os.Stdin)
	cfg, err := pgx.ParseConfig(dsn)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	cfg.RuntimeParams["application_name"] = sleeperApp
	sleeping, err := pgx.ConnectConfig(ctx, cfg)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	table := os.Getenv("REDELIVER_TEST_TABLE")
	if _, err := sleeping.Exec(ctx, "BEGIN; LOCK TABLE "+table+" IN ACCESS EXCLUSIVE MODE"); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	go sleeping.Exec(ctx, "SELECT pg_sleep(3600)")
	other, err := pgx.Connect(ctx, dsn)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	// The sleep is sent before the insert that is held.
	time.Sleep(200 * time.Millisecond)
	if _, err := other.Exec(ctx, "INSERT INTO "+table+" VALUES ('x')"); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	return 0
}

// sleeperSession is a Session whose consumer is the sleeper, proxied,
// on the table backends_left.
func sleeperSession(ctx context.Context, dsn string) (*Session, error) {
	target := &scenario.Target{
		HTTP: &scenario.HTTPTarget{URL: "http://127.0.0.1:1/events"},
		Start: &scenario.Start{Command: []string{os.Args[0]}, ReadyLine: "ready", ReadyTimeout: 10 * time.Second,
			Env: map[string]string{"REDELIVER_TEST_SLEEPER": "${" + scenario.DBURLVar + "}", "REDELIVER_TEST_TABLE": "backends_left"}},
	}
	kof, _ := template.Parse("{data.k}")
	return Open(ctx, target, &scenario.Effects{DB: dsn, Table: "backends_left", Key: "k", KeyOf: kof, Proxy: true})
}

// sessionOfSleeper stands for redeliver itself: it opens a session with
// the sleeper as its consumer, says so, and waits to be killed.
func sessionOfSleeper(dsn string) int {
	s, err := sleeperSession(context.Background(), dsn)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer s.Close()
	fmt.Println("open")
	time.Sleep(10 * time.Minute)
	return 1
}

// busySleepers lists the sleepers' server processes that still run.
func busySleepers(t *testing.T, admin *pgx.Conn) []int32 {
	t.Helper()
	rows, err := admin.Query(context.Background(), "SELECT pid FROM pg_stat_activity WHERE application_name = $1 AND datname = current_database()", sleeperApp)
	if err != nil {
		t.Fatal(err)
	}
	pids, err := pgx.CollectRows(rows, pgx.RowTo[int32])
	if err != nil {
		t.Fatal(err)
	}
	return pids
}

// TestKilledConsumerLeavesNoBackend: a consumer killed while its
// connection sleeps in the database inside a transaction leaves no
// server process behind, whether redeliver killed it to restart it or
// stopped it at the end of the run; the lock it held is free at once.
func TestKilledConsumerLeavesNoBackend(t *testing.T) {
	dsn := os.Getenv("REDELIVER_TEST_POSTGRES")
	if dsn == "" {
		t.Skip("set REDELIVER_TEST_POSTGRES to run the database proxy tests")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	admin, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close(context.Background())
	table := "backends_left"
	if _, err := admin.Exec(ctx, "CREATE TABLE IF NOT EXISTS "+table+" (k text)"); err != nil {
		t.Fatal(err)
	}
	for _, pid := range busySleepers(t, admin) {
		admin.Exec(ctx, "SELECT pg_terminate_backend($1)", pid)
	}
	s, err := sleeperSession(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	first := busySleepers(t, admin)
	if len(first) != 1 {
		s.Close()
		t.Fatalf("the sleeper has %d server processes, want 1", len(first))
	}
	if err := s.proc.Crash(ctx); err != nil {
		s.Close()
		t.Fatal(err)
	}
	if got := busySleepers(t, admin); len(got) != 1 || got[0] == first[0] {
		s.Close()
		t.Fatalf("after a kill and a restart the sleepers' server processes are %v, want one other than %v", got, first)
	}
	s.Close()
	if got := busySleepers(t, admin); len(got) != 0 {
		for _, pid := range got {
			admin.Exec(context.Background(), "SELECT pg_terminate_backend($1)", pid)
		}
		t.Fatalf("server processes %v of the stopped consumer still run", got)
	}
	lock, stop := context.WithTimeout(ctx, 2*time.Second)
	defer stop()
	if _, err := admin.Exec(lock, "BEGIN; LOCK TABLE "+table+" IN ACCESS EXCLUSIVE MODE; ROLLBACK"); err != nil {
		t.Fatalf("the table is still locked: %v", err)
	}
}

// TestRedeliverKilledLeavesNoBackend: when redeliver itself is killed
// with SIGKILL, nothing of it can end its consumer's backends, yet one
// sleeping inside a statement, in a transaction holding a lock, ends
// within moments, and the lock with it: the proxy's connections ask the
// server to look whether their client is still there.
func TestRedeliverKilledLeavesNoBackend(t *testing.T) {
	dsn := os.Getenv("REDELIVER_TEST_POSTGRES")
	if dsn == "" {
		t.Skip("set REDELIVER_TEST_POSTGRES to run the database proxy tests")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	admin, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close(context.Background())
	if _, err := admin.Exec(ctx, "CREATE TABLE IF NOT EXISTS backends_left (k text)"); err != nil {
		t.Fatal(err)
	}
	var version int
	if err := admin.QueryRow(ctx, "SELECT current_setting('server_version_num')::int").Scan(&version); err != nil {
		t.Fatal(err)
	}
	if version < 140000 {
		t.Skip("a server before PostgreSQL 14 cannot look for a client that is gone")
	}
	for _, pid := range busySleepers(t, admin) {
		admin.Exec(ctx, "SELECT pg_terminate_backend($1)", pid)
	}
	cmd := exec.Command(os.Args[0])
	cmd.Env = append(os.Environ(), "REDELIVER_TEST_SESSION="+dsn)
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
	if got := busySleepers(t, admin); len(got) != 1 {
		t.Fatalf("the sleeper has server processes %v, want 1", got)
	}
	if err := cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	cmd.Wait()
	var left []int32
	for range 300 {
		if left = busySleepers(t, admin); len(left) == 0 {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	if len(left) != 0 {
		for _, pid := range left {
			admin.Exec(context.Background(), "SELECT pg_terminate_backend($1)", pid)
		}
		t.Fatalf("server processes %v of the consumer still run 30 s after redeliver was killed", left)
	}
	lock, stop := context.WithTimeout(ctx, 2*time.Second)
	defer stop()
	if _, err := admin.Exec(lock, "BEGIN; LOCK TABLE backends_left IN ACCESS EXCLUSIVE MODE; ROLLBACK"); err != nil {
		t.Fatalf("the table is still locked: %v", err)
	}
}

// TestKilledExecDeliveryLeavesNoBackend: an exec delivery killed at a
// statement boundary, while another of its connections sleeps in the
// database holding a lock, leaves no server process behind once the kill
// is over, not only once the run ends.
func TestKilledExecDeliveryLeavesNoBackend(t *testing.T) {
	dsn := os.Getenv("REDELIVER_TEST_POSTGRES")
	if dsn == "" {
		t.Skip("set REDELIVER_TEST_POSTGRES to run the database proxy tests")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	admin, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close(context.Background())
	table := "backends_exec_left"
	if _, err := admin.Exec(ctx, "CREATE TABLE IF NOT EXISTS "+table+" (k text)"); err != nil {
		t.Fatal(err)
	}
	for _, pid := range busySleepers(t, admin) {
		admin.Exec(ctx, "SELECT pg_terminate_backend($1)", pid)
	}
	target := &scenario.Target{Exec: &scenario.ExecTarget{Command: []string{os.Args[0]}, Timeout: 10 * time.Second,
		Env: map[string]string{"REDELIVER_TEST_EXEC_SLEEPER": "${" + scenario.DBURLVar + "}", "REDELIVER_TEST_TABLE": table}}}
	kof, _ := template.Parse("{data.k}")
	fx := &scenario.Effects{DB: dsn, Table: table, Key: "k", KeyOf: kof, Proxy: true}
	s, err := Open(ctx, target, fx)
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
	if got := busySleepers(t, admin); len(got) != 0 {
		for _, pid := range got {
			admin.Exec(context.Background(), "SELECT pg_terminate_backend($1)", pid)
		}
		t.Fatalf("server processes %v of the killed exec delivery still run after the kill", got)
	}
	lock, stop := context.WithTimeout(ctx, 2*time.Second)
	defer stop()
	if _, err := admin.Exec(lock, "BEGIN; LOCK TABLE "+table+" IN ACCESS EXCLUSIVE MODE; ROLLBACK"); err != nil {
		t.Fatalf("the table is still locked: %v", err)
	}
}
