package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// The MySQL twins of the statement tests in statements_test.go that do
// not share their body yet (those that do range over statementDBs): the
// same files and flaws on MySQL or MariaDB, through redeliver's MySQL
// proxy, asserting the same verdicts. What MySQL shows differently is the
// statements' text: go-sql-driver/mysql sends START TRANSACTION and
// COMMIT as text, the server answers OK.

// rewrite returns src with each old replaced by its new, failing the test
// where one is not there (the file changed under the test).
func rewrite(t *testing.T, name, src string, pairs ...string) string {
	t.Helper()
	for i := 0; i < len(pairs); i += 2 {
		if !strings.Contains(src, pairs[i]) {
			t.Fatalf("%s changed: %q is not where this test looks", name, pairs[i])
		}
		src = strings.Replace(src, pairs[i], pairs[i+1], 1)
	}
	return src
}

func readExample(t *testing.T, name string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(repoRoot, name))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func writeTemp(t *testing.T, name, src string) string {
	t.Helper()
	file := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(file, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	return file
}

// TestMySQLAnswerBeforeItsCommit: the twin of TestAnswerBeforeItsCommit:
// a consumer that answers from inside its transaction and commits 300 ms
// later. With no fault its payment is there; killed at every statement
// of the second delivery, the kill before its COMMIT after the answer
// loses the acknowledged payment (lost-effect), the trace marking the
// answer.
func TestMySQLAnswerBeforeItsCommit(t *testing.T) {
	t.Parallel()
	my := myDSN(t)
	bin := buildConsumer(t)
	src := `version: 1
target:
  http: {url: "http://127.0.0.1:${PORT}/events", timeout: 10s}
  start:
    command: ["${CONSUMER}", --listen, "127.0.0.1:${PORT}", --db, "${REDELIVER_DB_URL}", --flaw, commit-after-answer, --work, 300ms]
    ready: http://127.0.0.1:${PORT}/healthz
    ready_timeout: 60s
effects:
  db: "${MYDB}"
  proxy: true
  reset: ["DELETE FROM payments", "DELETE FROM processed_messages", "DELETE FROM provider_charges"]
  table: payments
  key: order_id
  event: event_id
  key_of: "{data.orderId}"
checks:
  - name: one payment, committed after the answer
    steps:
      - deliver: {id: evt-70, source: /orders, type: order.paid, data: {orderId: O-70, amount: 70}}
    expect:
      effects: {O-70: 1}
  - name: two in a row, killed at every statement of the second
    steps:
      - deliver: {id: evt-71, source: /orders, type: order.paid, data: {orderId: O-71, amount: 71}}
      - deliver: {id: evt-72, source: /orders, type: order.paid, data: {orderId: O-72, amount: 72}}
        crash: statements
    expect:
      effects: {O-71: 1, O-72: 1}
`
	file := writeTemp(t, "late.yaml", src)
	env := consumerEnv(t, bin, "commit-after-answer")
	env["MYDB"] = myDatabase(t, my, "redeliver_my_commit_after_answer")
	withPlainRedeliver(t, env)
	runConcurrently(t, []invocation{{
		name: "late",
		env:  env,
		args: []string{"run", file},
		check: func(t *testing.T, o outcome) {
			if o.exit != 1 {
				t.Fatalf("want exit 1, got\n%s", o)
			}
			for _, w := range []string{
				"one payment, committed after the answer: 1 delivery: 1 acked; table payments holds 1 row",
				"two in a row, killed at every statement of the second: FAIL: failed in 1 of 13 schedules; first in schedule 12 (killed before statement 6 (COMMIT), after the answer): the check expected 1 effect row for key O-72, got 0",
				"invariant lost-effect broken: event evt-72 was acked but key O-72 has no row in payments",
				"  why: ack before commit",
				"    ← answered 200 here\n    6. COMMIT ✂ killed here, before it reached the database\n",
				"FAIL: 1 of 2 checks failed",
			} {
				if !strings.Contains(o.stdout, w) {
					t.Errorf("stdout lacks %q:\n%s", w, o)
				}
			}
		},
	}})
}

// TestMySQLAckBeforeCommitAtStatements: the twin of
// TestAckBeforeCommitAtStatements: crash: statements follows
// ack-before-commit past its 202 and catches it (lost-effect) on seeds
// 1–3, the trace marking the answer; {after: commit},
// reached after the answer, interrupted nothing. The safe consumer
// passes every boundary over HTTP and as an exec target, with no
// statement after its answer.
func TestMySQLAckBeforeCommitAtStatements(t *testing.T) {
	t.Parallel()
	my := myDSN(t)
	bin := buildConsumer(t)
	const name = "examples/consumer/statements-mysql.yaml"
	src := readExample(t, name)
	race := strings.Index(src, "  # Caught here: --flaw check-then-act")
	if race < 0 {
		t.Fatalf("%s changed: its race check is not where this test looks", name)
	}
	file := writeTemp(t, "kills.yaml", src[:race])
	const execFile = "examples/consumer/exec-statements-mysql.yaml"
	tests := []struct {
		flaw, seed, file string
		exit             int
		want, lack       []string
	}{
		// Not asserted, unlike on PostgreSQL: that the first failing
		// schedule is one "after the answer" and says why: ack before
		// commit. On a loaded machine a kill before the answer was seen
		// 1 in 6 times here failed first (why: not recognised), the
		// redelivery's 202 read before its work had sent a statement.
		{"ack-before-commit", "1", file, 1, []string{
			"killed at every statement boundary of one payment: FAIL: failed in ",
			" of 15 schedules; first in schedule ",
			"invariant lost-effect broken: event evt-30 was acked but key O-30 has no row in payments",
			"← answered 202 here",
			"killed right after the payment's commit, before it answers: 1 delivery: 1 acked, 1 crash after the answer; ",
			"the crash came after the answer: it interrupted no delivery",
		}, nil},
		{"ack-before-commit", "2", file, 1, []string{" of 15 schedules; first in schedule ", "invariant lost-effect broken: event evt-30", "← answered 202 here"}, nil},
		{"ack-before-commit", "3", file, 1, []string{" of 15 schedules; first in schedule ", "invariant lost-effect broken: event evt-30", "← answered 202 here"}, nil},
		{"safe", "1", file, 0, []string{"killed at every statement boundary of one payment: 1 delivery: 1 acked; table payments holds 1 row (13 schedules)\n"}, []string{"← answered", "after the answer"}},
		{"safe", "2", file, 0, []string{"(13 schedules)\n"}, []string{"← answered", "after the answer"}},
		{"safe", "3", file, 0, []string{"(13 schedules)\n"}, []string{"← answered", "after the answer"}},
		{"safe", "1", execFile, 0, []string{"killed at every statement boundary of one payment: 1 delivery: 1 acked; table payments holds 1 row; ", "(13 schedules)\n"}, []string{"← answered", "after the answer"}},
		{"safe", "2", execFile, 0, []string{"(13 schedules)\n"}, []string{"← answered", "after the answer"}},
		{"safe", "3", execFile, 0, []string{"(13 schedules)\n"}, []string{"← answered", "after the answer"}},
	}
	var runs []invocation
	for i, tt := range tests {
		env := consumerEnv(t, bin, tt.flaw)
		env["MYDB"] = myDatabase(t, my, fmt.Sprintf("redeliver_my_after_answer_%d", i))
		withPlainRedeliver(t, env)
		target := "http"
		if tt.file == execFile {
			target = "exec"
		}
		runs = append(runs, invocation{
			name: tt.flaw + "/" + target + "/seed" + tt.seed,
			env:  env,
			// -v: a passing check lists its statements too.
			args: []string{"run", tt.file, "--seed", tt.seed, "-v"},
			check: func(t *testing.T, o outcome) {
				if o.exit != tt.exit {
					t.Fatalf("want exit %d, got\n%s", tt.exit, o)
				}
				for _, w := range tt.want {
					if !strings.Contains(o.stdout, w) {
						t.Errorf("stdout lacks %q:\n%s", w, o)
					}
				}
				for _, w := range tt.lack {
					if strings.Contains(o.stdout, w) {
						t.Errorf("stdout says %q:\n%s", w, o)
					}
				}
			},
		})
	}
	runConcurrently(t, runs)
}

// TestMySQLCallsInTheTrace: the twin of TestCallsInTheTrace, on
// statements-provider-mysql.yaml with its provider a stand-in
// (--provider): the trace shows the charge between the marker lookup and
// the START TRANSACTION, in the text report and the JSON one; without its
// key the flaw is caught there. external-without-key, the file's own
// flaw (the consumer's simulated provider), is caught at its charge.
func TestMySQLCallsInTheTrace(t *testing.T) {
	t.Parallel()
	my := myDSN(t)
	bin := buildConsumer(t)
	const name = "examples/consumer/statements-provider-mysql.yaml"
	src := readExample(t, name)
	s := rewrite(t, name, src,
		"version: 1\n", "version: 1\nexternals:\n  payments:\n    http: {idempotency: {header: Idempotency-Key}, respond: {status: 201, body: '{\"id\": \"ch_{seq}\"}'}}\n    effect_key: \"{body.orderId}\"\n",
		`--flaw, "${FLAW:-safe}"]`, `--flaw, "${FLAW:-safe}", --provider, "${REDELIVER_PAYMENTS_URL}"]`,
		"table: provider_charges", "table: payments")
	file := writeTemp(t, "calls.yaml", s)
	var runs []invocation
	for i, tc := range []struct {
		flaw, file string
		exit       int
		want       []string
	}{
		{"safe", file, 0, []string{"(13 schedules)", "2. POST /v1/charges Idempotency-Key: payment-O-41 (payments) → 201 (ch_1)\n    3. START TRANSACTION → OK"}},
		{"charge-without-key", file, 1, []string{"invariant unkeyed-external-call broken", "2. POST /v1/charges (no Idempotency-Key) (payments) → 201 (ch_1)"}},
		// The file itself, as TestStatementFaults runs statements-provider.yaml.
		{"safe", name, 0, []string{"charged once: 1 delivery: 1 acked; table provider_charges holds 1 row (13 schedules)"}},
		{"external-without-key", name, 1, []string{"first in schedule 5 (killed after statement 2 (INSERT INTO provider_charges", "invariant duplicate-effect broken: key O-41 has 2 rows in provider_charges"}},
	} {
		env := consumerEnv(t, bin, tc.flaw)
		env["MYDB"] = myDatabase(t, my, fmt.Sprintf("redeliver_my_calls_trace_%d", i))
		withPlainRedeliver(t, env)
		report := filepath.Join(t.TempDir(), "r.json")
		runs = append(runs, invocation{name: tc.flaw + "/" + filepath.Base(tc.file), env: env, args: []string{"run", tc.file, "-v", "--report", "json=" + report}, check: func(t *testing.T, o outcome) {
			if o.exit != tc.exit {
				t.Fatalf("want exit %d, got\n%s", tc.exit, o)
			}
			if tc.file == file {
				if doc, err := os.ReadFile(report); err != nil || !strings.Contains(string(doc), `"text": "POST /v1/charges`) || !strings.Contains(string(doc), `"external": "payments"`) {
					t.Errorf("the JSON report's statements lack the charge (%v):\n%s", err, doc)
				}
			}
			for _, w := range tc.want {
				if !strings.Contains(o.stdout, w) {
					t.Errorf("stdout lacks %q:\n%s", w, o)
				}
			}
		}})
	}
	runConcurrently(t, runs)
}

// TestMySQLDiagnosisOfEachFlaw: the twin of TestDiagnosisOfEachFlaw's
// statement rows on MySQL or MariaDB (statements-mysql.yaml over HTTP,
// exec-statements-mysql.yaml with a race appended, one process per
// delivery), on seeds 1–3: every check a flaw fails is named by the same
// pattern as on PostgreSQL, no failing check by another; the safe
// consumer carries no diagnosis.
func TestMySQLDiagnosisOfEachFlaw(t *testing.T) {
	t.Parallel()
	my := myDSN(t)
	bin := buildConsumer(t)
	// The exec file's reset drops the tables, and InnoDB starts their
	// AUTO_INCREMENT again: two one-copy trials then leave the same
	// charge_id, which the race, its second copy burning an id, does
	// not, and the safe consumer would be said changed-by-duplicate. Here
	// the tables exist before the run and are emptied instead, their
	// counters running on, as on PostgreSQL.
	const execName = "examples/consumer/exec-statements-mysql.yaml"
	execSrc := rewrite(t, execName, readExample(t, execName),
		`reset: ["DROP TABLE IF EXISTS payments, processed_messages, provider_charges"]`,
		`reset: ["DELETE FROM payments", "DELETE FROM processed_messages", "DELETE FROM provider_charges"]`)
	execRace := writeTemp(t, "exec-race.yaml", execSrc+`
  - name: two deliveries raced at every statement boundary
    steps:
      - deliver: {id: evt-62, source: /orders, type: order.paid, data: {orderId: O-62, amount: 62}}
        concurrent: 2
    expect:
      effects: {O-62: 1}
`)
	const (
		statements = "examples/consumer/statements-mysql.yaml"
		one        = "killed at every statement boundary of one payment"
		commit     = "killed right after the payment's commit, before it answers"
		raced      = "two deliveries raced at every statement boundary"
	)
	tests := []struct {
		flaw, file string
		pattern    string   // "": the safe consumer
		named      []string // the checks that must carry pattern
	}{
		{"safe", statements, "", nil},
		{"marker-after-effect", statements, "effect-and-marker-apart", []string{one, commit, raced}},
		{"marker-after-autocommit", statements, "effect-and-marker-apart", []string{one, raced}},
		{"check-then-act", statements, "check-then-act", []string{raced}},
		// ack-before-commit is named at TestMySQLAckBeforeCommitAtStatements,
		// run alone: among nine runs at once, its unforced run can end
		// between the answer and the first statement after it, and the
		// check then has no boundary after the answer to kill at.
		{"commit-after-answer", statements, "ack-before-commit", []string{one}},
		{"safe", execRace, "", nil},
		{"marker-after-effect", execRace, "effect-and-marker-apart", []string{one, "killed before the marker is written", raced}},
		{"check-then-act", execRace, "check-then-act", []string{raced}},
	}
	// One seed at a time, as on PostgreSQL.
	for seed := 1; seed <= 3; seed++ {
		var runs []invocation
		for i, tt := range tests {
			env := consumerEnv(t, bin, tt.flaw)
			env["MYDB"] = myDatabase(t, my, fmt.Sprintf("redeliver_my_diagnosis_%d_%d", i, seed))
			if tt.file == execRace {
				st, err := openStore(context.Background(), env["MYDB"])
				if err != nil {
					t.Fatal(err)
				}
				st.db.Close()
			}
			withPlainRedeliver(t, env)
			runs = append(runs, invocation{
				name:  tt.flaw + "/" + filepath.Base(tt.file),
				env:   env,
				args:  []string{"run", tt.file, "--seed", fmt.Sprint(seed), "--format", "json"},
				check: func(t *testing.T, o outcome) { checkDiagnoses(t, o, tt.pattern, tt.named) },
			})
		}
		t.Run(fmt.Sprintf("seed-%d", seed), func(t *testing.T) { runConcurrently(t, runs) })
	}
}
