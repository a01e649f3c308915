package main

import (
	"database/sql"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/go-sql-driver/mysql"
)

// myDSN is the MySQL or MariaDB server the MySQL twins of the statement
// tests run against (REDELIVER_TEST_MYSQL, a mysql:// URL).
// Called by a test after t.Parallel: it waits for a slot (mySlots).
func myDSN(t testing.TB) string {
	t.Helper()
	dsn := os.Getenv("REDELIVER_TEST_MYSQL")
	if dsn == "" {
		if os.Getenv("CI") == "true" {
			t.Fatal("CI=true but REDELIVER_TEST_MYSQL is not set")
		}
		t.Skip("the MySQL statement tests need MySQL or MariaDB: set REDELIVER_TEST_MYSQL=mysql://root@127.0.0.1:3306/test")
	}
	mySlot(t)
	return dsn
}

// mySlot waits for a MySQL slot, held until the test ends.
func mySlot(t testing.TB) {
	mySlots <- struct{}{}
	t.Cleanup(func() { <-mySlots })
}

// mySlots: at most two MySQL tests at once, each holding its slot until
// it ends. Each runs several redeliver runs side by side; all of them at
// once, beside the rest of the package, loaded a 2-core machine until a
// safe consumer's run went wrong.
var mySlots = make(chan struct{}, 2)

// myDatabase creates a database of the test's own on the server dsn
// names, empty, and returns dsn naming it; it is dropped at the end.
func myDatabase(t testing.TB, dsn, name string) string {
	t.Helper()
	u, err := url.Parse(dsn)
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := mysqlConfig(dsn)
	if err != nil {
		t.Fatal(err)
	}
	cfg.DBName = ""
	c, err := mysql.NewConnector(cfg)
	if err != nil {
		t.Fatal(err)
	}
	db := sql.OpenDB(c)
	defer db.Close()
	for _, q := range []string{"DROP DATABASE IF EXISTS " + name, "CREATE DATABASE " + name} {
		if _, err := db.Exec(q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	t.Cleanup(func() {
		if db := sql.OpenDB(c); db != nil {
			db.Exec("DROP DATABASE IF EXISTS " + name)
			db.Close()
		}
	})
	u.Path = "/" + name
	return u.String()
}

// TestMySQLStatementFaults: the twin of TestStatementFaults on MySQL or
// MariaDB, through redeliver's MySQL proxy, with the consumer's store on
// go-sql-driver/mysql (prepared statements, the binary protocol). Killed
// at every boundary of a payment, after its commit, and raced at every
// boundary, with no --work pause: the safe consumer passes every one on
// seeds 1–3; marker-after-effect is caught between its two commits on
// seeds 1–3, marker-after-autocommit after its autocommitted payment,
// check-then-act in the race; nothing is left running.
func TestMySQLStatementFaults(t *testing.T) {
	t.Parallel()
	my := myDSN(t)
	bin := buildConsumer(t)
	safe := []string{"killed at every statement boundary of one payment: 1 delivery: 1 acked; table payments holds 1 row (13 schedules)", "raced at every statement boundary: 2 deliveries: 2 acked", "PASS: "}
	afterEffect := []string{"first in schedule 11 (killed after statement 5 (COMMIT))", "invariant duplicate-effect broken: key O-30 has 2 rows", "5. COMMIT → OK ✂ killed here, before the consumer saw the answer", "invariant duplicate-effect broken: key O-31"}
	tests := []struct {
		flaw, seed, poll string
		want             []string
		exit             int
	}{
		{"safe", "1", "", safe, 0},
		{"safe", "2", "", safe, 0},
		{"safe", "3", "", safe, 0},
		// A background job on the consumer's pool, in transactions of its
		// own: kept apart by the delivery's marks, the boundaries do not move.
		{"safe", "1", "3ms", []string{"one payment: 1 delivery: 1 acked; table payments holds 1 row; ", "statements of no delivery let through, never crashed at (13 schedules)", "raced at every statement boundary: 2 deliveries: 2 acked", "PASS: "}, 0},
		{"marker-after-effect", "1", "", afterEffect, 1},
		{"marker-after-effect", "2", "", afterEffect, 1},
		{"marker-after-effect", "3", "", afterEffect, 1},
		// No BEGIN: held after the payment's insert, the payment is
		// committed, as the consumer saw it, and the kill there pays twice.
		{"marker-after-autocommit", "1", "", []string{"first in schedule 7 (killed after statement 3 (INSERT INTO payments", "invariant duplicate-effect broken: key O-30 has 2 rows", "3. INSERT INTO payments (order_id, event_id, amount, charge_id) VALUES (?,… [prepared ", "] → INSERT 1 ✂ killed here, before the consumer saw the answer"}, 1},
		{"check-then-act", "1", "", []string{"raced at every statement boundary: FAIL: failed in ", " schedules; first in schedule ", "invariant duplicate-effect broken: key O-32 has 2 rows"}, 1},
	}
	var runs []invocation
	for i, tt := range tests {
		env := consumerEnv(t, bin, tt.flaw)
		env["MYDB"] = myDatabase(t, my, fmt.Sprintf("redeliver_my_statements_%d", i))
		if tt.poll != "" {
			env["POLL"], env["POLL_TX"] = tt.poll, "true"
		}
		withPlainRedeliver(t, env)
		name := tt.flaw + "/seed" + tt.seed
		if tt.poll != "" {
			name += "/poll"
		}
		runs = append(runs, invocation{
			name: name,
			env:  env,
			args: []string{"run", "examples/consumer/statements-mysql.yaml", "--seed", tt.seed},
			check: func(t *testing.T, o outcome) {
				if o.exit != tt.exit {
					t.Fatalf("want exit %d, got\n%s", tt.exit, o)
				}
				for _, w := range tt.want {
					if !strings.Contains(o.stdout, w) {
						t.Errorf("stdout lacks %q:\n%s", w, o)
					}
				}
			},
		})
	}
	runConcurrently(t, runs)
}

// TestMySQLExecStatementFaults: the twin of TestExecStatementFaults on
// MySQL or MariaDB: one process per delivery, connected through the
// proxy by ${REDELIVER_DB_URL}, killed at its own statements. The safe
// consumer passes every boundary; marker-after-effect is caught by both
// checks, the statements shown.
func TestMySQLExecStatementFaults(t *testing.T) {
	t.Parallel()
	my := myDSN(t)
	bin := buildConsumer(t)
	tests := []struct {
		flaw string
		want []string // in stdout
		exit int
	}{
		{"safe", []string{"target: exec ", "killed at every statement boundary of one payment: 1 delivery: 1 acked; table payments holds 1 row; ", "statements of no delivery let through, never crashed at (13 schedules)", "killed before the marker is written: 2 deliveries: 1 acked, 1 unacked, 1 crash before the answer", "PASS: "}, 0},
		{"marker-after-effect", []string{"(COMMIT)): the check expected 1 effect row for key O-60, got 2", "invariant duplicate-effect broken: key O-60 has 2 rows", "COMMIT → OK ✂ killed here, before the consumer saw the answer", "invariant duplicate-effect broken: key O-61 has 2 rows", "FAIL: 2 of 2 checks failed"}, 1},
	}
	var runs []invocation
	for _, tt := range tests {
		env := consumerEnv(t, bin, tt.flaw)
		env["MYDB"] = myDatabase(t, my, "redeliver_my_exec_"+strings.ReplaceAll(tt.flaw, "-", "_"))
		withPlainRedeliver(t, env)
		runs = append(runs, invocation{
			name: tt.flaw,
			env:  env,
			args: []string{"run", "examples/consumer/exec-statements-mysql.yaml"},
			check: func(t *testing.T, o outcome) {
				if o.exit != tt.exit {
					t.Fatalf("want exit %d, got\n%s", tt.exit, o)
				}
				for _, w := range tt.want {
					if !strings.Contains(o.stdout, w) {
						t.Errorf("stdout lacks %q:\n%s", w, o)
					}
				}
			},
		})
	}
	runConcurrently(t, runs)
}

// TestMySQLReplayCrashAtStatements: the twin of
// TestReplayCrashAtStatements on MySQL or MariaDB: a replay through the
// MySQL proxy kills at a statement boundary drawn from --seed; the same
// seed gives the same kills and the same verdict, run after run;
// marker-after-effect is caught by a seed that lands a kill between its
// two commits, and the safe consumer passes that seed.
func TestMySQLReplayCrashAtStatements(t *testing.T) {
	t.Parallel()
	my := myDSN(t)
	bin := buildConsumer(t)
	capture := filepath.Join(t.TempDir(), "capture.ndjson")
	writeCapture(t, capture, 40)
	var runs []invocation
	for _, tt := range []struct {
		flaw string
		exit int
	}{{"safe", 0}, {"marker-after-effect", 1}, {"marker-after-effect", 1}} {
		env := consumerEnv(t, bin, tt.flaw)
		env["MYDB"] = myDatabase(t, my, "redeliver_my_replay_"+strconv.Itoa(len(runs)))
		withPlainRedeliver(t, env)
		runs = append(runs, invocation{
			name: fmt.Sprintf("%s/%d", tt.flaw, len(runs)),
			env:  env,
			args: []string{"replay", capture, "--target", "examples/consumer/target-proxy-mysql.yaml", "--crash", "0.3", "--seed", "4"},
			check: func(t *testing.T, o outcome) {
				if o.exit != tt.exit || !strings.Contains(o.stdout, "crashes (") {
					t.Fatalf("want exit %d with crashes, got\n%s", tt.exit, o)
				}
				if tt.exit == 1 && !strings.Contains(o.stdout, "FAIL: duplicate-effect (seed 4)") {
					t.Fatalf("want duplicate-effect caught, got\n%s", o)
				}
			},
		})
	}
	outs := make([]string, len(runs))
	for i := range runs {
		check := runs[i].check
		runs[i].check = func(t *testing.T, o outcome) {
			check(t, o)
			outs[i] = o.stdout[strings.Index(o.stdout, "\n")+1:] // without the target line (its port)
		}
	}
	runConcurrently(t, runs)
	if outs[1] != outs[2] {
		t.Errorf("the same seed gave two verdicts:\n%s\n---\n%s", outs[1], outs[2])
	}
}
