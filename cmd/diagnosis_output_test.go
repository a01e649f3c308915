package cmd

import (
	"bytes"
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/redeliver/redeliver/pkg/consumer"
	"github.com/redeliver/redeliver/pkg/invariant"
	"github.com/redeliver/redeliver/pkg/report"
	"github.com/redeliver/redeliver/pkg/runner"
)

// TestDiagnosisInReports: a target's check failed by a race shows its
// diagnosis after the invariant — the pattern, the evidence by statement
// number, the fix in the database's dialect — in every format, each
// still valid for its consumer (JSON against the schema, JUnit against
// the XSD, TAP through prove); a failing check with no evidence to read
// says "why: not recognised", and the built-in handler's checks, which
// record no trace, say nothing.
func TestDiagnosisInReports(t *testing.T) {
	toRoot(t)
	w := func(n int, text, answer string) consumer.Statement {
		return consumer.Statement{Worker: n, Text: text, Answer: answer}
	}
	trace := []consumer.Statement{
		w(1, "SELECT 1 FROM processed WHERE id = $1", "SELECT 0"), w(2, "SELECT 1 FROM processed WHERE id = $1", "SELECT 0"),
		w(1, "BEGIN", "BEGIN"), w(1, "INSERT INTO payments VALUES ($1)", "INSERT 0 1"), w(1, "INSERT INTO processed VALUES ($1) ON CONFLICT DO NOTHING", "INSERT 0 1"), w(1, "COMMIT", "COMMIT"),
		w(2, "BEGIN", "BEGIN"), w(2, "INSERT INTO payments VALUES ($1)", "INSERT 0 1"), w(2, "INSERT INTO processed VALUES ($1) ON CONFLICT DO NOTHING", "INSERT 0 0"), w(2, "COMMIT", "COMMIT"),
	}
	v := invariant.Violation{Invariant: "duplicate-effect", EventID: "evt-1", Detail: "key O-1 has 2 rows in payments"}
	failure := []runner.Failure{{Step: 1, Pos: consumer.Location{File: "s.yaml", Line: 9, Col: 9}, Message: v.String(), Invariant: v.Invariant, Expected: "no violation", Got: "duplicate-effect"}}
	fr := &runner.FileResult{File: "s.yaml", Name: "s", Strategy: "target", Target: "POST http://127.0.0.1:1/e (structured)", Effects: "table payments (key order_id) in PostgreSQL 127.0.0.1:5432/test",
		Dialect: "postgres", EffectTable: "payments",
		Checks: []runner.CheckResult{
			{Name: "raced", Line: said("2 deliveries"), Trace: trace, Violations: []invariant.Violation{v}, Failures: failure},
			{Name: "unread", Line: said("1 delivery"), Trace: trace[:1], Violations: []invariant.Violation{v}, Failures: failure},
		}}
	builtin := &runner.FileResult{File: "b.yaml", Name: "b", Strategy: "check-then-act",
		Checks: []runner.CheckResult{{Name: "built-in", Line: said("2 deliveries"), Violations: []invariant.Violation{v}, Failures: failure}}}
	run := &report.Run{Command: "run", Files: []*runner.FileResult{fr, builtin}, Store: report.StoreTarget, Workers: 2}
	render := func(f report.Format) string {
		var b bytes.Buffer
		if err := report.Render(&b, f, run, report.Options{}); err != nil {
			t.Fatal(err)
		}
		return b.String()
	}
	why := "why: check-then-act — worker 2 read processed (0 rows) at statement 2, worker 1 committed at statement 6, worker 2 inserted at statement 8"
	fix := "fix: make the marker insert the guard, in the effect's transaction: INSERT INTO processed … ON CONFLICT DO NOTHING"
	text := render(report.FormatText)
	for _, want := range []string{"    " + why, "    " + fix, "  unread: FAIL: ", "    why: not recognised\n"} {
		if !strings.Contains(text, want) {
			t.Errorf("text lacks %q:\n%s", want, text)
		}
	}
	if i, j := strings.Index(text, "invariant duplicate-effect broken"), strings.Index(text, why); i < 0 || j < i {
		t.Errorf("the diagnosis does not follow the invariant:\n%s", text)
	}
	if n := strings.Count(text, "why: "); n != 2 {
		t.Errorf("want 2 diagnoses (none for the built-in handler), got %d:\n%s", n, text)
	}
	js := render(report.FormatJSON)
	validJSON(t, js)
	var doc report.Document
	if err := json.Unmarshal([]byte(js), &doc); err != nil {
		t.Fatal(err)
	}
	d := doc.Files[0].Checks[0].Diagnosis
	if d == nil || d.Pattern != "check-then-act" || !slices.Equal(d.Evidence, []int{2, 6, 8}) || !strings.HasPrefix("fix: "+d.Fix, fix) {
		t.Errorf("JSON diagnosis %+v", d)
	}
	if d := doc.Files[0].Checks[1].Diagnosis; d == nil || d.Pattern != "not-recognised" || d.Why != "" || d.Fix != "" {
		t.Errorf("JSON diagnosis of the unread check %+v", d)
	}
	if d := doc.Files[1].Checks[0].Diagnosis; d != nil {
		t.Errorf("the built-in handler's check got a diagnosis: %+v", d)
	}
	junit := render(report.FormatJUnit)
	validJUnit(t, junit)
	if !strings.Contains(junit, why) || !strings.Contains(junit, "fix: make the marker insert the guard") {
		t.Errorf("the JUnit failure lacks the diagnosis:\n%s", junit)
	}
	tap := render(report.FormatTAP)
	validTAP(t, tap, 0, 3)
	if !strings.Contains(tap, "why: 'check-then-act — worker 2 read processed") && !strings.Contains(tap, "why: check-then-act — worker 2 read processed") {
		t.Errorf("the TAP diagnostic lacks the diagnosis:\n%s", tap)
	}
	if !strings.Contains(tap, "fix: ") {
		t.Errorf("the TAP diagnostic lacks the fix:\n%s", tap)
	}
}

// TestReplayPatternInSchema: a replay's breach carries the pattern of its
// diagnosis in a document the replay schema accepts (TestReplaySchemaRejects
// shows it refuses a pattern no diagnosis names).
func TestReplayPatternInSchema(t *testing.T) {
	toRoot(t)
	got := invocation{args: append([]string{"replay", "--format", "json"}, replayFixtures[1].args...)}.run(t)
	var doc map[string]any
	if err := json.Unmarshal([]byte(got.stdout), &doc); err != nil {
		t.Fatal(err)
	}
	ex := doc["violations"].([]any)[0].(map[string]any)["examples"].([]any)[0].(map[string]any)
	for _, p := range []string{"check-then-act", "effect-and-marker-apart", "not-recognised"} {
		ex["pattern"] = p
		data, _ := json.Marshal(doc)
		validJSONAgainst(t, replaySchema, string(data))
	}
}
