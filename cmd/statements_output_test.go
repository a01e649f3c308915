package cmd

import (
	"bytes"
	"strings"
	"testing"

	"github.com/redeliver/redeliver/pkg/consumer"
	"github.com/redeliver/redeliver/pkg/invariant"
	"github.com/redeliver/redeliver/pkg/report"
	"github.com/redeliver/redeliver/pkg/runner"
)

// TestStatementTraceInReports: a check failed by a statement fault shows
// its statements in every format, and each stays valid for its consumer:
// the JSON against the schema, JUnit against the strict XSD, TAP through
// prove. Hostile statement text stays text.
func TestStatementTraceInReports(t *testing.T) {
	toRoot(t)
	trace := []consumer.Statement{
		{Worker: 1, Text: "SELECT payload FROM processed WHERE id = $1", Answer: "SELECT 0", Held: true, Released: true},
		{Worker: 2, Text: "INSERT INTO payments VALUES ($1) -- </failure><x>\x1b[31m", Answer: "INSERT 0 1"},
		{Worker: 2, Text: "commit", Answer: "COMMIT", Held: true},
	}
	render := tracedCheck(t, "raced", "2 deliveries", trace, 2)
	text := render(report.FormatText)
	for _, want := range []string{"statements of the delivery:", "worker 1: 1. SELECT payload FROM processed WHERE id = $1 → 0 rows ⏸ answer held here", "worker 2: 3. commit → COMMIT ✂ killed here"} {
		if !strings.Contains(text, want) {
			t.Errorf("text lacks %q:\n%s", want, text)
		}
	}
	if strings.Contains(text, "\x1b[31m") {
		t.Errorf("the text report carries a terminal escape from a statement:\n%q", text)
	}
	js := render(report.FormatJSON)
	validJSON(t, js)
	if !strings.Contains(js, `"statements"`) || !strings.Contains(js, `"killed": "after"`) || !strings.Contains(js, `"held": "after"`) {
		t.Errorf("the JSON lacks the statements:\n%s", js)
	}
	junit := render(report.FormatJUnit)
	validJUnit(t, junit)
	if !strings.Contains(junit, "statements of the delivery:") {
		t.Errorf("the JUnit failure lacks the statements:\n%s", junit)
	}
	tap := render(report.FormatTAP)
	validTAP(t, tap, 0, 1)
	if !strings.Contains(tap, "statements:") {
		t.Errorf("the TAP diagnostic lacks the statements:\n%s", tap)
	}
}

// TestPassingStatementsUnderVerbose: a check that passed with its
// statements kept lists them under -v, and only then.
func TestPassingStatementsUnderVerbose(t *testing.T) {
	trace := []consumer.Statement{
		{Worker: 1, Text: "BEGIN", Answer: "BEGIN"},
		{Worker: 1, Text: "INSERT INTO payments VALUES ($1)", Answer: "INSERT 0 1"},
		{Worker: 1, Text: "COMMIT", Answer: "COMMIT"},
	}
	fr := &runner.FileResult{File: "s.yaml", Name: "s", Strategy: "target", Target: "POST http://127.0.0.1:1/e (structured)", Effects: "table payments (key order_id) in PostgreSQL 127.0.0.1:5432/test",
		Checks: []runner.CheckResult{{Name: "one payment", Passed: true, Line: said("1 delivery: 1 acked"), Trace: trace, Schedules: 7}}}
	run := &report.Run{Command: "run", Files: []*runner.FileResult{fr}, Store: report.StoreTarget, Workers: 1}
	for _, verbose := range []bool{false, true} {
		var b bytes.Buffer
		if err := report.Render(&b, report.FormatText, run, report.Options{Verbose: verbose}); err != nil {
			t.Fatal(err)
		}
		text := b.String()
		for _, want := range []string{"one payment: 1 delivery: 1 acked\n  statements of the delivery:\n", "    2. INSERT INTO payments VALUES ($1) → INSERT 0 1\n"} {
			if got := strings.Contains(text, want); got != verbose {
				t.Errorf("verbose %v: the text report shows %q: %v, want %v\n%s", verbose, want, got, verbose, text)
			}
		}
	}
}

// TestAnswerMarkerInReports: a trace with statements after the
// consumer's answer marks where the answer came in every format — a
// line in text, JUnit and TAP, a row in HTML, answered_before in the
// JSON, which stays valid against the schema.
func TestAnswerMarkerInReports(t *testing.T) {
	toRoot(t)
	trace := []consumer.Statement{
		{Worker: 1, Text: "SELECT payload FROM processed WHERE id = $1", Answer: "SELECT 0"},
		{Worker: 1, Text: "begin", Answer: "BEGIN", AnsweredBefore: "202"},
		{Worker: 1, Text: "INSERT INTO payments VALUES ($1)", Answer: "INSERT 0 1"},
		{Worker: 1, Text: "commit", Held: true, Before: true},
	}
	v := invariant.Violation{Invariant: "lost-effect", EventID: "evt-1", Detail: "event evt-1 was acked but key O-1 has no row in payments"}
	fr := &runner.FileResult{File: "s.yaml", Name: "s", Strategy: "target", Target: "POST http://127.0.0.1:1/e (structured)", Effects: "table payments (key order_id) in PostgreSQL 127.0.0.1:5432/test",
		Checks: []runner.CheckResult{{Name: "one payment", Line: said("1 delivery"), Trace: trace, Violations: []invariant.Violation{v},
			Failures: []runner.Failure{{Step: 1, Pos: consumer.Location{File: "s.yaml", Line: 9, Col: 9}, Message: v.String(), Invariant: v.Invariant, Expected: "no violation", Got: "lost-effect"}}}}}
	run := &report.Run{Command: "run", Files: []*runner.FileResult{fr}, Store: report.StoreTarget, Workers: 1}
	render := func(f report.Format) string {
		var b bytes.Buffer
		if err := report.Render(&b, f, run, report.Options{}); err != nil {
			t.Fatal(err)
		}
		return b.String()
	}
	mark := "1. SELECT payload FROM processed WHERE id = $1 → 0 rows\n    ← answered 202 here\n    2. begin → BEGIN\n"
	if text := render(report.FormatText); !strings.Contains(text, mark) {
		t.Errorf("text lacks %q:\n%s", mark, text)
	}
	js := render(report.FormatJSON)
	validJSON(t, js)
	if !strings.Contains(js, `"answered_before": "202"`) {
		t.Errorf("the JSON lacks answered_before:\n%s", js)
	}
	junit := render(report.FormatJUnit)
	validJUnit(t, junit)
	if !strings.Contains(junit, "→ 0 rows\n← answered 202 here\n2. begin") {
		t.Errorf("the JUnit failure lacks the answer's line:\n%s", junit)
	}
	tap := render(report.FormatTAP)
	validTAP(t, tap, 0, 1)
	if !strings.Contains(tap, "← answered 202 here") {
		t.Errorf("the TAP diagnostic lacks the answer's line:\n%s", tap)
	}
	if html := render(report.FormatHTML); !strings.Contains(html, "<td>← answered 202 here</td>") {
		t.Errorf("the HTML statements table lacks the answer's row")
	}
}

// TestRedeliveryInReports: a failing check's trace that goes on with the
// redelivery after the kill, its statements' bound values with it, says
// so in every format: a heading line in text, JUnit and TAP, a row in
// HTML, redelivery and params in the JSON, which stays valid against the
// schema.
func TestRedeliveryInReports(t *testing.T) {
	toRoot(t)
	trace := []consumer.Statement{
		{Worker: 1, Text: "begin", Answer: "BEGIN"},
		{Worker: 1, Text: "INSERT INTO processed VALUES ($1) ON CONFLICT DO NOTHING", Answer: "INSERT 0 1", Extended: true, Sync: 1, Params: []consumer.Param{{Text: "evt-1"}}},
		{Worker: 1, Text: "commit", Answer: "COMMIT", Held: true},
		{Worker: 1, Text: "begin", Answer: "BEGIN", Redelivery: true},
		{Worker: 1, Text: "INSERT INTO processed VALUES ($1) ON CONFLICT DO NOTHING", Answer: "INSERT 0 0", Extended: true, Sync: 1, Redelivery: true, Params: []consumer.Param{{Text: "evt-1"}, {Null: true}, {Text: "00ff", Undecoded: true}}},
		{Worker: 1, Text: "commit", Answer: "COMMIT", Redelivery: true},
	}
	render := tracedCheck(t, "one payment", "1 delivery", trace, 1)
	text := render(report.FormatText)
	if want := "✂ killed here, before the consumer saw the answer\n  after the restart, the redelivery:\n    4. begin → BEGIN\n"; !strings.Contains(text, want) {
		t.Errorf("text lacks %q:\n%s", want, text)
	}
	if want := "\n       bound: 'evt-1', NULL, (binary, not read)\n"; !strings.Contains(text, want) {
		t.Errorf("text lacks %q:\n%s", want, text)
	}
	js := render(report.FormatJSON)
	validJSON(t, js)
	for _, want := range []string{`"redelivery": true`, `"params": [`, `null,`, `"binary": "00ff"`} {
		if !strings.Contains(js, want) {
			t.Errorf("the JSON lacks %s:\n%s", want, js)
		}
	}
	junit := render(report.FormatJUnit)
	validJUnit(t, junit)
	tap := render(report.FormatTAP)
	validTAP(t, tap, 0, 1)
	// TAP's YAML doubles the quotes of a value it quotes.
	for name, doc := range map[string]string{"JUnit": junit, "TAP": strings.ReplaceAll(tap, "''", "'")} {
		if !strings.Contains(doc, "after the restart, the redelivery:") || !strings.Contains(doc, "bound: 'evt-1', NULL") {
			t.Errorf("the %s failure lacks the redelivery or the bound values:\n%s", name, doc)
		}
	}
	if html := render(report.FormatHTML); !strings.Contains(html, "<td>after the restart, the redelivery:</td>") {
		t.Errorf("the HTML statements table lacks the redelivery's row")
	}
}

// tracedCheck renders, in a format it is given, a target run of one
// check named name, whose line says line, that broke duplicate-effect
// with trace, run by workers workers.
func tracedCheck(t *testing.T, name, line string, trace []consumer.Statement, workers int) func(report.Format) string {
	t.Helper()
	v := invariant.Violation{Invariant: "duplicate-effect", EventID: "evt-1", Detail: "key O-1 has 2 rows in payments"}
	fr := &runner.FileResult{File: "s.yaml", Name: "s", Strategy: "target", Target: "POST http://127.0.0.1:1/e (structured)", Effects: "table payments (key order_id) in PostgreSQL 127.0.0.1:5432/test",
		Checks: []runner.CheckResult{{Name: name, Line: said(line), Trace: trace, Violations: []invariant.Violation{v},
			Failures: []runner.Failure{{Step: 1, Pos: consumer.Location{File: "s.yaml", Line: 9, Col: 9}, Message: v.String(), Invariant: v.Invariant, Expected: "no violation", Got: "duplicate-effect"}}}}}
	run := &report.Run{Command: "run", Files: []*runner.FileResult{fr}, Store: report.StoreTarget, Workers: workers}
	return func(f report.Format) string {
		var b bytes.Buffer
		if err := report.Render(&b, f, run, report.Options{}); err != nil {
			t.Fatal(err)
		}
		return b.String()
	}
}
