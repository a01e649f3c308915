package report

import (
	"reflect"
	"strings"
	"testing"

	"github.com/redeliver/redeliver/pkg/consumer"
	"github.com/redeliver/redeliver/pkg/runner"
)

func TestTraceLines(t *testing.T) {
	long := "INSERT INTO payments (order_id, event_id, amount, charge_id) VALUES ($1, $2, $3, $4) RETURNING id"
	tests := []struct {
		name  string
		stmts []consumer.Statement
		short bool
		want  []string
	}{
		{"killed after the commit", []consumer.Statement{
			{Worker: 1, Text: "SELECT 1 FROM m WHERE id = $1", Answer: "SELECT 0"},
			{Worker: 1, Text: "begin", Answer: "BEGIN"},
			{Worker: 1, Text: long, Answer: "INSERT 0 1"},
			{Worker: 1, Text: "commit", Answer: "COMMIT", Held: true},
		}, true, []string{
			"1. SELECT 1 FROM m WHERE id = $1 → 0 rows",
			"2. begin → BEGIN",
			"3. INSERT INTO payments (order_id, event_id, amount, charge_id) VALUES ($1… → INSERT 0 1",
			"4. commit → COMMIT ✂ killed here, before the consumer saw the answer",
		}},
		{"behind a broker, killed in the instance that held it", []consumer.Statement{
			{Worker: 1, Text: "begin", Answer: "BEGIN", Instance: 2},
			{Worker: 1, Text: "commit", Answer: "COMMIT", Held: true, Instance: 2},
		}, true, []string{
			"instance 2: 1. begin → BEGIN",
			"instance 2: 2. commit → COMMIT ✂ killed here, before the consumer saw the answer",
		}},
		{"behind a broker, a race of two instances", []consumer.Statement{
			{Worker: 1, Text: "SELECT x", Answer: "SELECT 0", Held: true, Released: true, Instance: 2},
			{Worker: 2, Text: "INSERT INTO t VALUES (1)", Answer: "INSERT 0 1", Instance: 1},
		}, true, []string{
			"worker 1 (instance 2): 1. SELECT x → 0 rows ⏸ answer held here while the others ran",
			"worker 2 (instance 1): 2. INSERT INTO t VALUES (1) → INSERT 0 1",
		}},
		{"whole, killed before", []consumer.Statement{
			{Worker: 1, Text: long, Held: true, Before: true},
		}, false, []string{"1. " + long + " ✂ killed here, before it reached the database"}},
		{"a race, two workers", []consumer.Statement{
			{Worker: 1, Text: "SELECT x", Answer: "SELECT 1", Held: true, Released: true},
			{Worker: 2, Text: "INSERT INTO t VALUES (1)", Answer: "ERROR 23505"},
			{Worker: 1, Text: "SELECT y", Held: true, Before: true, Released: true, Answer: "SELECT 2"},
		}, true, []string{
			"worker 1: 1. SELECT x → 1 row ⏸ answer held here while the others ran",
			"worker 2: 2. INSERT INTO t VALUES (1) → ERROR 23505",
			"worker 1: 3. SELECT y → 2 rows ⏸ held here, before it reached the database, while the others ran",
		}},
		{"a race held at a call, by a worker not known", []consumer.Statement{
			{Worker: 1, Text: "SELECT x", Answer: "SELECT 0"},
			{Worker: 2, Text: "SELECT x", Answer: "SELECT 0"},
			{Worker: 0, Text: "POST /v1/charges Idempotency-Key: k", Answer: "201 (ch_1)", External: "payments", Held: true, Before: true, Released: true, Lane: 1},
			{Worker: 0, Text: "POST /v1/charges Idempotency-Key: k", Answer: "201 (ch_1) replayed", External: "payments"},
			{Worker: 0, Text: "POST /v1/refunds Idempotency-Key: r", Answer: "201", External: "payments", Held: true, Released: true},
		}, true, []string{
			"worker 1: 1. SELECT x → 0 rows",
			"worker 2: 2. SELECT x → 0 rows",
			"worker ?: 3. POST /v1/charges Idempotency-Key: k (payments) → 201 (ch_1) ⏸ held here, before payments performed it, while the others ran",
			"worker ?: 4. POST /v1/charges Idempotency-Key: k (payments) → 201 (ch_1) replayed",
			"worker ?: 5. POST /v1/refunds Idempotency-Key: r (payments) → 201 ⏸ answer held here, its effect performed, while the others ran",
		}},
		{"the redelivery after the kill, its Syncs counted afresh, and the values bound", []consumer.Statement{
			{Worker: 1, Text: "begin", Answer: "BEGIN"},
			{Worker: 1, Text: "INSERT INTO m VALUES ($1, $2)", Answer: "INSERT 0 1", Extended: true, Sync: 1, Params: []consumer.Param{{Text: "evt-1"}, {Null: true}}},
			{Worker: 1, Text: "commit", Answer: "COMMIT", Held: true},
			{Worker: 1, Text: "begin", Answer: "BEGIN", Redelivery: true},
			{Worker: 1, Text: "INSERT INTO m VALUES ($1, $2)", Answer: "INSERT 0 0", Extended: true, Sync: 1, Redelivery: true, Params: []consumer.Param{{Text: strings.Repeat("x", 40)}, {Text: "00ff", Undecoded: true}}},
			{Worker: 1, Text: "commit", Answer: "COMMIT", Redelivery: true},
		}, true, []string{
			"1. begin → BEGIN",
			"2. INSERT INTO m VALUES ($1, $2) [unnamed, Sync] → INSERT 0 1",
			"   bound: 'evt-1', NULL",
			"3. commit → COMMIT ✂ killed here, before the consumer saw the answer",
			"after the restart, the redelivery:",
			"4. begin → BEGIN",
			"5. INSERT INTO m VALUES ($1, $2) [unnamed, Sync] → INSERT 0 0",
			"   bound: '" + strings.Repeat("x", 31) + "…', (binary, not read)",
			"6. commit → COMMIT",
		}},
		{"many values bound, cut when short", []consumer.Statement{
			{Worker: 1, Text: "INSERT INTO m VALUES (…)", Answer: "INSERT 1", Binary: true, Name: "3", Params: []consumer.Param{{Text: "1"}, {Text: "2"}, {Text: "3"}, {Text: "4"}, {Text: "5"}, {Text: "6"}, {Text: "7"}, {Text: "8"}, {Text: "9"}, {Text: "10"}}},
		}, true, []string{
			"1. INSERT INTO m VALUES (…) [prepared 3] → INSERT 1",
			"   bound: '1', '2', '3', '4', '5', '6', '7', '8', … (2 more)",
		}},
		{"MySQL's binary protocol", []consumer.Statement{
			{Worker: 1, Text: "SELECT 1 FROM m WHERE id = ?", Answer: "SELECT 0", Binary: true, Name: "7"},
			{Worker: 1, Text: "START TRANSACTION", Answer: "OK"},
			{Worker: 1, Text: "INSERT INTO m VALUES (?)", Answer: "INSERT 1", Binary: true, Name: "8", Held: true},
		}, true, []string{
			"1. SELECT 1 FROM m WHERE id = ? [prepared 7] → 0 rows",
			"2. START TRANSACTION → OK",
			"3. INSERT INTO m VALUES (?) [prepared 8] → INSERT 1 ✂ killed here, before the consumer saw the answer",
		}},
		// MySQLdb: autocommit off since it connected; the note comes on
		// the first statement, and again on the redelivery's first.
		{"MySQL with autocommit off", []consumer.Statement{
			{Worker: 1, Text: "SELECT 1 FROM m WHERE id = 'e'", Answer: "SELECT 0", Implicit: true},
			{Worker: 1, Text: "INSERT INTO m VALUES (?)", Answer: "INSERT 1", Binary: true, Name: "8", Implicit: true},
			{Worker: 1, Text: "COMMIT", Answer: "OK", Implicit: true, Held: true},
			{Worker: 1, Text: "SELECT 1 FROM m WHERE id = 'e'", Answer: "SELECT 1", Implicit: true, Redelivery: true},
		}, true, []string{
			"1. SELECT 1 FROM m WHERE id = 'e' [autocommit off] → 0 rows",
			"2. INSERT INTO m VALUES (?) [prepared 8] → INSERT 1",
			"3. COMMIT → OK ✂ killed here, before the consumer saw the answer",
			"after the restart, the redelivery:",
			"4. SELECT 1 FROM m WHERE id = 'e' [autocommit off] → 1 row",
		}},
		{"killed at calls", []consumer.Statement{
			{Worker: 1, Text: "POST /a", External: "p", Held: true, Before: true},
			{Worker: 1, Text: "POST /b", Answer: "201", External: "p", Held: true},
		}, true, []string{
			"1. POST /a (p) ✂ killed here, before p performed it",
			"2. POST /b (p) → 201 ✂ killed here, its effect performed, before the consumer saw the answer",
		}},
		// pgx: each statement named by its cache, one Sync each; then two
		// autocommitted inserts of the unnamed statement in one pipeline,
		// one Sync for both; the last killed before its Sync came.
		{"the extended protocol: how prepared, where the Sync fell", []consumer.Statement{
			{Worker: 1, Text: "SELECT 1 FROM m WHERE id = $1", Answer: "SELECT 0", Extended: true, Name: "stmtcache_4f6d0c2a9e8b1d3f7a5c", Sync: 3},
			{Worker: 1, Text: "INSERT INTO payments VALUES ($1)", Answer: "INSERT 0 1", Extended: true, Sync: 4},
			{Worker: 1, Text: "INSERT INTO processed VALUES ($1)", Answer: "INSERT 0 1", Extended: true, Sync: 4},
			{Worker: 1, Text: "begin", Answer: "BEGIN"},
			{Worker: 1, Text: "UPDATE m SET n = n + 1", Answer: "UPDATE 1", Extended: true, Name: "s1", Held: true},
		}, true, []string{
			"1. SELECT 1 FROM m WHERE id = $1 [named stmtcache_4f6d0c2a9e8b1…, Sync] → 0 rows",
			"2. INSERT INTO payments VALUES ($1) [unnamed] → INSERT 0 1",
			"3. INSERT INTO processed VALUES ($1) [unnamed, Sync for 2–3] → INSERT 0 1",
			"4. begin → BEGIN",
			"5. UPDATE m SET n = n + 1 [named s1, no Sync] → UPDATE 1 ✂ killed here, before the consumer saw the answer",
		}},
		// A consumer that answers 202 and then works: the answer's line
		// between the lookup before it and the transaction after it.
		{"answered, then killed before its commit", []consumer.Statement{
			{Worker: 1, Text: "SELECT 1 FROM m WHERE id = $1", Answer: "SELECT 0"},
			{Worker: 1, Text: "begin", Answer: "BEGIN", AnsweredBefore: "202"},
			{Worker: 1, Text: "INSERT INTO payments VALUES (1)", Answer: "INSERT 0 1"},
			{Worker: 1, Text: "commit", Held: true, Before: true},
		}, true, []string{
			"1. SELECT 1 FROM m WHERE id = $1 → 0 rows",
			"← answered 202 here",
			"2. begin → BEGIN",
			"3. INSERT INTO payments VALUES (1) → INSERT 0 1",
			"4. commit ✂ killed here, before it reached the database",
		}},
		// Behind JetStream: the ack as the broker showed it, said as it
		// is, and an exec's exit answered.
		{"acked behind a broker", []consumer.Statement{
			{Worker: 1, Text: "SELECT 1 FROM m WHERE id = $1", Answer: "SELECT 0", AnsweredBefore: "acked"},
			{Worker: 1, Text: "commit", Held: true, Before: true},
		}, true, []string{
			"← acked here",
			"1. SELECT 1 FROM m WHERE id = $1 → 0 rows",
			"2. commit ✂ killed here, before it reached the database",
		}},
		// Behind RabbitMQ, once the killed instance was gone: the ack
		// came at the latest before the held statement.
		{"acked at the latest behind RabbitMQ", []consumer.Statement{
			{Worker: 1, Text: "SELECT 1 FROM m WHERE id = $1", Answer: "SELECT 0"},
			{Worker: 1, Text: "commit", Held: true, Before: true, AnsweredBefore: "acked at the latest"},
		}, true, []string{
			"1. SELECT 1 FROM m WHERE id = $1 → 0 rows",
			"← acked here at the latest",
			"2. commit ✂ killed here, before it reached the database",
		}},
		// Behind RabbitMQ, which shows no other client the ack: said
		// once, before the first statement.
		{"behind a broker that shows no ack", []consumer.Statement{
			{Worker: 1, Text: "SELECT 1 FROM m WHERE id = $1", Answer: "SELECT 0", AckUnseen: "RabbitMQ"},
			{Worker: 1, Text: "commit", Held: true, Before: true},
		}, true, []string{
			"← where the ack came is not known: RabbitMQ shows no other client a consumer's ack",
			"1. SELECT 1 FROM m WHERE id = $1 → 0 rows",
			"2. commit ✂ killed here, before it reached the database",
		}},
		{"an offset committed, an exit answered", []consumer.Statement{
			{Worker: 1, Text: "begin", Answer: "BEGIN", AnsweredBefore: "offset committed"},
			{Worker: 1, Text: "commit", Answer: "COMMIT", AnsweredBefore: "exit 0"},
		}, true, []string{
			"← offset committed here",
			"1. begin → BEGIN",
			"← answered exit 0 here",
			"2. commit → COMMIT",
		}},
		{"one Sync for statements of a worker between another's", []consumer.Statement{
			{Worker: 1, Text: "a", Answer: "SELECT 1", Extended: true, Sync: 1},
			{Worker: 2, Text: "b", Answer: "SELECT 1", Extended: true, Sync: 1},
			{Worker: 1, Text: "c", Answer: "SELECT 1", Extended: true, Sync: 1},
			{Worker: 2, Text: "d", Answer: "SELECT 1", Extended: true, Sync: 2},
		}, true, []string{
			"worker 1: 1. a [unnamed] → 1 row",
			"worker 2: 2. b [unnamed, Sync] → 1 row",
			"worker 1: 3. c [unnamed, Sync for 1, 3] → 1 row",
			"worker 2: 4. d [unnamed, Sync] → 1 row",
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := traceLines(tt.stmts, tt.short)
			if strings.Join(got, "\n") != strings.Join(tt.want, "\n") {
				t.Errorf("got\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(tt.want, "\n"))
			}
		})
	}
}

func TestStatementDocs(t *testing.T) {
	if statementDocs(nil) != nil {
		t.Error("a check without a trace has statements in its JSON")
	}
	got := statementDocs([]consumer.Statement{
		{Worker: 1, Text: "a", Answer: "A"},
		{Worker: 1, Text: "b", Held: true, Before: true},
		{Worker: 2, Text: "c", Answer: "C", Held: true, Released: true},
		{Worker: 1, Text: "d", Answer: "D", Extended: true, Name: "s1", Sync: 4},
		{Worker: 1, Text: "e", Answer: "E", Extended: true},
		{Worker: 1, Text: "f", Answer: "F", AnsweredBefore: "202"},
		{Worker: 1, Text: "g", Answer: "G", Instance: 3, Implicit: true},
		{Worker: 1, Text: "h", Answer: "H", Redelivery: true, Params: []consumer.Param{{Text: "k"}, {Null: true}, {Text: "00ff", Undecoded: true}}},
	})
	want := []StatementDoc{
		{Worker: 1, Text: "a", Answer: "A"},
		{Worker: 1, Text: "b", Killed: "before"},
		{Worker: 2, Text: "c", Answer: "C", Held: "after"},
		{Worker: 1, Text: "d", Answer: "D", Prepared: "named", Name: "s1", Sync: 4},
		{Worker: 1, Text: "e", Answer: "E", Prepared: "unnamed"},
		{Worker: 1, Text: "f", Answer: "F", AnsweredBefore: "202"},
		{Worker: 1, Text: "g", Answer: "G", Instance: 3, AutocommitOff: true},
		{Worker: 1, Text: "h", Answer: "H", Redelivery: true, Params: []any{"k", nil, map[string]string{"binary": "00ff"}}},
	}
	if len(got) != len(want) {
		t.Fatalf("%d statements, want %d", len(got), len(want))
	}
	for i := range want {
		if !reflect.DeepEqual(got[i], want[i]) {
			t.Errorf("statement %d: %+v, want %+v", i, got[i], want[i])
		}
	}
}

// TestTraceHeading: a trace of calls alone (no statement was seen) is
// called the delivery's calls.
func TestTraceHeading(t *testing.T) {
	for _, tt := range []struct {
		stmts []consumer.Statement
		want  string
	}{
		{[]consumer.Statement{{Text: "POST /a", External: "p"}}, "calls of the delivery:"},
		{[]consumer.Statement{{Text: "POST /a", External: "p"}, {Text: "begin"}}, "statements of the delivery:"},
		{[]consumer.Statement{{Text: "begin"}}, "statements of the delivery:"},
	} {
		if got := traceHeading(tt.stmts); got != tt.want {
			t.Errorf("%+v: %q, want %q", tt.stmts, got, tt.want)
		}
	}
}

// TestRedeliveryShownWhereFailed: the redelivery after a kill is in the
// trace of a check that failed — under its own heading in the text
// report, marked in the JSON one — and left out of a passing check's.
func TestRedeliveryShownWhereFailed(t *testing.T) {
	trace := []consumer.Statement{
		{Worker: 1, Text: "begin", Answer: "BEGIN"},
		{Worker: 1, Text: "commit", Answer: "COMMIT", Held: true},
		{Worker: 1, Text: "SELECT 1 FROM processed WHERE id = $1", Answer: "SELECT 1", Redelivery: true},
	}
	failed := runner.CheckResult{Name: "failed", Trace: trace, Failures: []runner.Failure{{Message: "the check expected 1 effect row for key O-1, got 2"}}}
	passed := runner.CheckResult{Name: "passed", Passed: true, Line: said("ok"), Trace: trace}
	files := []*runner.FileResult{{File: "s.yaml", Target: "POST http://127.0.0.1/events", Checks: []runner.CheckResult{failed, passed}}}
	var text strings.Builder
	if err := Text(&text, files, Options{Verbose: true}); err != nil {
		t.Fatal(err)
	}
	want := "    2. commit → COMMIT ✂ killed here, before the consumer saw the answer\n  after the restart, the redelivery:\n    3. SELECT 1 FROM processed WHERE id = $1 → 1 row\npassed: ok\n  statements of the delivery:\n    1. begin → BEGIN\n    2. commit → COMMIT ✂ killed here, before the consumer saw the answer\n"
	if !strings.Contains(text.String(), want) || strings.Count(text.String(), "redelivery:") != 1 {
		t.Errorf("want\n%s\nin\n%s", want, text.String())
	}
	var doc strings.Builder
	if err := JSON(&doc, &Run{Command: "run", Files: files}); err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(doc.String(), `"redelivery": true`); n != 1 {
		t.Errorf("%d statements marked as the redelivery's, want 1 (the failed check's):\n%s", n, doc.String())
	}
}
