package cmd

import (
	"database/sql"
	"os"
	"path/filepath"
	"strings"
	"testing"

	_ "modernc.org/sqlite"
)

// TestTargetFormats runs a target-mode scenario — an exec consumer that
// acks everything and writes nothing, over an effect table that already
// holds a duplicate — and checks every format against its schema and
// parser: the report names the target and the database, and both target
// invariants it breaks.
func TestTargetFormats(t *testing.T) {
	dir := t.TempDir()
	toRoot(t)
	dbPath := filepath.Join(dir, "fx.db")
	db, err := sql.Open("sqlite", dbPath)
	if err != nil {
		t.Fatal(err)
	}
	for _, stmt := range []string{
		"CREATE TABLE payments (order_id TEXT, event_id TEXT)",
		"INSERT INTO payments VALUES ('O-1', 'e-1'), ('O-1', 'e-2')",
	} {
		if _, err := db.Exec(stmt); err != nil {
			t.Fatal(err)
		}
	}
	db.Close()
	file := filepath.Join(dir, "target.yaml")
	src := `version: 1
name: acks everything
target:
  exec: {command: [sh, -c, "cat > /dev/null"]}
effects: {db: "` + dbPath + `", table: payments, key: order_id, event: event_id, key_of: "{data.orderId}"}
checks:
  - name: one order
    steps:
      - deliver: {id: evt-1, data: {orderId: O-1}}
        expect: acked
  - name: another order
    steps:
      - deliver: {id: evt-3, data: {orderId: O-3}}
        expect: acked
  - name: killed after it answered
    steps:
      - deliver: {id: evt-5, data: {orderId: O-5}}
        crash: {after: 300ms}
`
	if err := os.WriteFile(file, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	js := invocation{args: []string{"run", "--format", "json", file}}.run(t)
	if js.code != ExitFail {
		t.Fatalf("exit %d, want %d; stderr:\n%s", js.code, ExitFail, js.stderr)
	}
	validJSON(t, js.stdout)
	for _, want := range []string{`"strategy": "target"`, `"target": "exec sh -c cat > /dev/null"`, `"effects": "table payments (key order_id) in SQLite file `, `"invariant": "duplicate-effect"`, `"invariant": "lost-effect"`, `"outcome": "acked"`, `"store": "target"`, `"after_answer": 1`} {
		if !strings.Contains(js.stdout, want) {
			t.Errorf("the JSON report lacks %s:\n%s", want, js.stdout)
		}
	}
	validJUnit(t, invocation{args: []string{"run", "--format", "junit", file}}.run(t).stdout)
	if strings.Contains(js.stdout, `"name": "missing-marker"`) {
		t.Errorf("the JSON report of a target lists invariants no target is judged by:\n%s", js.stdout)
	}
	validTAP(t, invocation{args: []string{"run", "--format", "tap", file}}.run(t).stdout, 0, 3)
	verbose := invocation{args: []string{"run", "-v", file}}.run(t).stdout
	if !strings.Contains(verbose, "counters (target): 3 deliveries, 0 redeliveries, 3 acked, 0 conflicts, 0 rejected or unacked, 1 crash, 2 effect rows") || strings.Contains(verbose, "fault points") {
		t.Errorf("the verbose report of a target speaks of the built-in handler:\n%s", verbose)
	}
	text := invocation{args: []string{"run", file}}.run(t).stdout
	for _, want := range []string{"target: exec sh -c cat > /dev/null; effects: table payments (key order_id) in SQLite file ", "one order: FAIL: invariant duplicate-effect broken: key O-1 has 2 rows in payments", "another order: FAIL: invariant lost-effect broken: event evt-3 was acked but key O-3 has no row in payments"} {
		if !strings.Contains(text, want) {
			t.Errorf("the text report lacks %q:\n%s", want, text)
		}
	}
}
