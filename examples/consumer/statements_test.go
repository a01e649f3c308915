package main

import (
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// TestStatementFaults: through redeliver's PostgreSQL proxy, the consumer
// is killed at its own statements — at every boundary of a payment
// (crash: statements) and right after its commit — and two deliveries
// race with each worker held at each boundary of its statements, with no
// --work pause to widen any window. The safe consumer passes every
// boundary and every schedule; the flaws whose window lies between two of
// its statements are caught, on every run (the kills twice in a row), naming the
// boundary or schedule and showing the statements; nothing is left
// running.
func TestStatementFaults(t *testing.T) {
	t.Parallel()
	pg := pgDSN(t)
	bin := buildConsumer(t)
	tests := []struct {
		flaw   string
		want   []string // in stdout
		exit   int
		repeat string
		file   string // "": statements.yaml
	}{
		{"safe", []string{"one payment: 1 delivery: 1 acked; table payments holds 1 row (13 schedules)", "raced at every statement boundary: 2 deliveries: 2 acked", "PASS: "}, 0, "1", ""},
		// The kills land at the same statement on every run: twice in a row.
		{"marker-after-effect", []string{"first in schedule 11 (killed after statement 5 (commit))", "invariant duplicate-effect broken: key O-30 has 2 rows", "5. commit → COMMIT ✂ killed here, before the consumer saw the answer", "invariant duplicate-effect broken: key O-31"}, 1, "2", ""},
		// The race is lost where a worker is held after its lookup; an
		// unforced schedule may lose it too, on a loaded machine.
		{"check-then-act", []string{"raced at every statement boundary: FAIL: failed in ", " schedules; first in schedule ", "invariant duplicate-effect broken: key O-32 has 2 rows"}, 1, "1", ""},
		{"safe", []string{"charged once: 1 delivery: 1 acked; table provider_charges holds 1 row (13 schedules)"}, 0, "1", "statements-provider.yaml"},
		{"external-without-key", []string{"first in schedule 6 (killed before statement 3 (begin))", "invariant duplicate-effect broken: key O-41 has 2 rows in provider_charges"}, 1, "1", "statements-provider.yaml"},
	}
	var runs []invocation
	for i, tt := range tests {
		file := tt.file
		if file == "" {
			file = "statements.yaml"
		}
		env := consumerEnv(t, bin, tt.flaw)
		env["PGDB"] = schemaDSN(t, pg, fmt.Sprintf("redeliver_statements_%d", i))
		withPlainRedeliver(t, env)
		runs = append(runs, invocation{
			name: tt.flaw + "/" + file,
			env:  env,
			args: []string{"run", "examples/consumer/" + file, "--repeat", tt.repeat},
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

// schemaDSN is dsn with its search_path set to a schema of the test's own.
func schemaDSN(t testing.TB, dsn, schema string) string {
	u, err := url.Parse(dsn)
	if err != nil {
		t.Fatal(err)
	}
	q := u.Query()
	q.Set("search_path", schema)
	u.RawQuery = q.Encode()
	return fmt.Sprint(u)
}

// TestReplayCrashAtStatements: a replay through the proxy kills at a
// statement boundary drawn from --seed: the same seed gives the same
// kills and the same verdict, run after run; marker-after-effect is caught
// by a seed that lands a kill between its two commits, and the safe
// consumer passes that seed.
func TestReplayCrashAtStatements(t *testing.T) {
	t.Parallel()
	pg := pgDSN(t)
	bin := buildConsumer(t)
	capture := filepath.Join(t.TempDir(), "capture.ndjson")
	writeCapture(t, capture, 40)
	var runs []invocation
	for _, tt := range []struct {
		flaw string
		exit int
	}{{"safe", 0}, {"marker-after-effect", 1}, {"marker-after-effect", 1}} {
		env := consumerEnv(t, bin, tt.flaw)
		env["PGDB"] = schemaDSN(t, pg, "redeliver_replay_"+strings.ReplaceAll(tt.flaw, "-", "_")+"_"+strconv.Itoa(len(runs)))
		withPlainRedeliver(t, env)
		runs = append(runs, invocation{
			name: fmt.Sprintf("%s/%d", tt.flaw, len(runs)),
			env:  env,
			args: []string{"replay", capture, "--target", "examples/consumer/target-proxy.yaml", "--crash", "0.3", "--seed", "4"},
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

// TestExecStatementFaults: the consumer run as one process per delivery,
// connected through the proxy by ${REDELIVER_DB_URL}: the kill at a
// statement boundary is the delivery's own process's, and lands there on
// every run. The safe consumer passes every boundary; marker-after-effect
// is caught by both checks, the statements shown; nothing is left running.
func TestExecStatementFaults(t *testing.T) {
	t.Parallel()
	pg := pgDSN(t)
	bin := buildConsumer(t)
	tests := []struct {
		flaw string
		want []string // in stdout
		exit int
	}{
		{"safe", []string{"target: exec ", "killed at every statement boundary of one payment: 1 delivery: 1 acked; table payments holds 1 row (", "killed before the marker is written: 2 deliveries: 1 acked, 1 unacked, 1 crash before the answer", "PASS: "}, 0},
		{"marker-after-effect", []string{"(commit)): the check expected 1 effect row for key O-60, got 2", "invariant duplicate-effect broken: key O-60 has 2 rows", "COMMIT ✂ killed here, before the consumer saw the answer", "invariant duplicate-effect broken: key O-61 has 2 rows", "FAIL: 2 of 2 checks failed"}, 1},
	}
	var runs []invocation
	for _, tt := range tests {
		env := consumerEnv(t, bin, tt.flaw)
		env["PGDB"] = schemaDSN(t, pg, "redeliver_exec_statements_"+strings.ReplaceAll(tt.flaw, "-", "_"))
		withPlainRedeliver(t, env)
		runs = append(runs, invocation{
			name: tt.flaw,
			env:  env,
			args: []string{"run", "examples/consumer/exec-statements.yaml"},
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

// TestStatementTrialsKeepTheConsumer: the trials of a check killed at
// every statement boundary share one consumer, started once and
// restarted only where a kill came, its effects reset between trials:
// as many starts as the check has boundaries, plus the first.
func TestStatementTrialsKeepTheConsumer(t *testing.T) {
	t.Parallel()
	pg := pgDSN(t)
	bin := buildConsumer(t)
	dir := t.TempDir()
	starts := filepath.Join(dir, "starts")
	wrapper := filepath.Join(dir, "consumer.sh")
	script := "#!/bin/sh\necho start >> " + starts + "\nexec " + bin + ` "$@"` + "\n"
	if err := os.WriteFile(wrapper, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(dir, "one.yaml")
	src := `version: 1
target:
  http: {url: "http://127.0.0.1:${PORT}/events", timeout: 10s}
  start:
    command: ["${CONSUMER}", --listen, "127.0.0.1:${PORT}", --db, "${REDELIVER_DB_URL}"]
    ready: http://127.0.0.1:${PORT}/healthz
    ready_timeout: 60s
effects:
  db: "${PGDB}"
  proxy: true
  reset: ["DELETE FROM payments", "DELETE FROM processed_messages", "DELETE FROM provider_charges"]
  table: payments
  key: order_id
  key_of: "{data.orderId}"
checks:
  - name: one payment
    steps:
      - deliver: {id: evt-30, source: /orders, type: order.paid, data: {orderId: O-30, amount: 30}}
        crash: statements
    expect:
      effects: {O-30: 1}
`
	if err := os.WriteFile(file, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	env := consumerEnv(t, wrapper, "safe")
	env["PGDB"] = schemaDSN(t, pg, "redeliver_statement_trials")
	withPlainRedeliver(t, env)
	o := redeliver(t, env, "run", file, "-v")
	if o.exit != 0 {
		t.Fatalf("want exit 0, got\n%s", o)
	}
	// -v lists the statements of the passing check's own run.
	if !regexp.MustCompile(`\(\d+ schedules\)\n  statements of the delivery:\n    1\. `).MatchString(o.stdout) {
		t.Errorf("-v lists no statements under the passing check:\n%s", o)
	}
	m := regexp.MustCompile(`\((\d+) schedules\)`).FindStringSubmatch(o.stdout)
	if m == nil {
		t.Fatalf("no schedules in the report:\n%s", o)
	}
	schedules, _ := strconv.Atoi(m[1])
	b, err := os.ReadFile(starts)
	if err != nil {
		t.Fatal(err)
	}
	// One start, and one restart after each kill: every schedule but the
	// unforced one kills.
	if got, want := strings.Count(string(b), "start"), schedules; got != want {
		t.Errorf("the consumer was started %d times, want %d (once, and again after each of the %d kills)\n%s", got, want, schedules-1, o)
	}

	// A check that fails in its first, unforced run shows that run's
	// statements, as one failed at a boundary does.
	wrong := filepath.Join(dir, "wrong.yaml")
	if err := os.WriteFile(wrong, []byte(strings.Replace(src, "{O-30: 1}", "{O-30: 2}", 1)), 0o644); err != nil {
		t.Fatal(err)
	}
	o = redeliver(t, env, "run", wrong)
	if o.exit != 1 {
		t.Fatalf("want exit 1, got\n%s", o)
	}
	if !strings.Contains(o.stdout, "first in schedule 1 (unforced)") || !strings.Contains(o.stdout, "statements of the delivery:\n    1. ") {
		t.Errorf("the failure in the unforced run shows no statements:\n%s", o)
	}
}
