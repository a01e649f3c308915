package cmd

import (
	"database/sql"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"
)

// targetReplayFixture is a replay into an exec consumer that acks every
// event and writes nothing, over an effect table that already holds two
// rows for one order: lost-effect for each event but the first, and
// duplicate-effect for order O-1.
func targetReplayFixture(t *testing.T) (target, capture string) {
	t.Helper()
	dir := t.TempDir()
	dbPath := filepath.Join(dir, "fx.db")
	db, err := sql.Open("sqlite", dbPath)
	if err != nil {
		t.Fatal(err)
	}
	for _, stmt := range []string{
		"CREATE TABLE payments (order_id TEXT, event_id TEXT)",
		"INSERT INTO payments VALUES ('O-1', 'evt-1'), ('O-1', 'evt-1')",
	} {
		if _, err := db.Exec(stmt); err != nil {
			t.Fatal(err)
		}
	}
	db.Close()
	target = filepath.Join(dir, "target.yaml")
	src := `version: 1
target:
  exec: {command: [sh, -c, "cat > /dev/null"]}
effects: {db: "` + dbPath + `", table: payments, key: order_id, event: event_id, key_of: "{data.orderId}"}
`
	capture = filepath.Join(dir, "capture.ndjson")
	lines := `{"specversion":"1.0","id":"evt-1","source":"shop","type":"order.paid","data":{"orderId":"O-1"}}
{"specversion":"1.0","id":"evt-2","source":"shop","type":"order.paid","data":{"orderId":"O-2"}}
{"specversion":"1.0","id":"evt-3","source":"shop","type":"order.paid","data":{"orderId":"O-3"}}
`
	if err := os.WriteFile(target, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(capture, []byte(lines), 0o644); err != nil {
		t.Fatal(err)
	}
	return target, capture
}

// TestTargetReplayFormats: a replay into a target writes the built-in
// replay's reports — the same JSON document (it validates against
// replay.schema.json), one JUnit test case and one TAP point per
// invariant — naming the target and its effects, never a built-in store,
// a strategy or the handler's fault points.
func TestTargetReplayFormats(t *testing.T) {
	toRoot(t)
	target, capture := targetReplayFixture(t)
	dir := t.TempDir()
	summary := filepath.Join(dir, "summary.md")
	args := []string{"replay", "--target", target, "--seed", "3", "--redeliver", "0.5", capture,
		"--report", "junit=" + filepath.Join(dir, "r.xml"), "--report", "tap=" + filepath.Join(dir, "r.tap"), "--format", "json"}
	got := invocation{args: args, env: map[string]string{"GITHUB_ACTIONS": "true", "GITHUB_STEP_SUMMARY": summary}}.run(t)
	if got.code != ExitFail {
		t.Fatalf("exit %d, want %d; stderr:\n%s", got.code, ExitFail, got.stderr)
	}
	validJSONAgainst(t, replaySchema, got.stdout)
	var doc map[string]any
	if err := json.Unmarshal([]byte(got.stdout), &doc); err != nil {
		t.Fatal(err)
	}
	tgt, _ := doc["target"].(map[string]any)
	if tgt["file"] != target || tgt["consumer"] != "exec sh -c cat > /dev/null" || !strings.HasPrefix(tgt["effects"].(string), "table payments (key order_id) in SQLite file ") {
		t.Errorf("the JSON report names the target as %v", doc["target"])
	}
	for _, absent := range []string{"store", "strategy", "capture", "outcomes", "strategies", "unexpected_failures", "summary", "files", "boundaries"} {
		if _, ok := doc[absent]; ok {
			t.Errorf("the JSON report of a target replay has %q", absent)
		}
	}
	junit, err := os.ReadFile(filepath.Join(dir, "r.xml"))
	if err != nil {
		t.Fatal(err)
	}
	validJUnit(t, string(junit))
	tap, err := os.ReadFile(filepath.Join(dir, "r.tap"))
	if err != nil {
		t.Fatal(err)
	}
	validTAP(t, string(tap), 3, 2)
	sum, err := os.ReadFile(summary)
	if err != nil {
		t.Fatal(err)
	}
	all := got.stdout + string(junit) + string(tap) + string(sum) + got.stderr
	for _, want := range []string{
		`<testsuites name="redeliver replay"`, `<property name="store" value="target">`, `<property name="target" value="exec sh -c cat &gt; /dev/null">`,
		`<testcase name="invariant lost-effect"`, "# replay: " + capture + " (cloudevents); target exec sh -c cat > /dev/null; effects table payments",
		"| invariant duplicate-effect | ❌ fail |", "::error file=" + capture + ",line=1,title=redeliver replay%3A invariant duplicate-effect::broken 1 time: key O-1 has ",
	} {
		if !strings.Contains(all, want) {
			t.Errorf("the reports lack %q:\n%s", want, all)
		}
	}
	for _, wrong := range []string{"sqlite-memory", "SQLite in memory", "fault points", "strategy target", "failures only where injected"} {
		if strings.Contains(all, wrong) {
			t.Errorf("the reports of a target replay say %q:\n%s", wrong, all)
		}
	}
}

// TestTargetReplayStopped: a replay into a target stopped by a bad record
// still writes its JSON document, valid, with verdict error.
func TestTargetReplayStopped(t *testing.T) {
	toRoot(t)
	target, capture := targetReplayFixture(t)
	if err := os.WriteFile(capture, []byte("{\"specversion\":\"1.0\",\"id\":\"a\",\"source\":\"s\",\"type\":\"t\",\"data\":{\"orderId\":\"O-1\"}}\nnot json\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	got := invocation{args: []string{"replay", "--target", target, "--format", "json", capture}}.run(t)
	if got.code != ExitUsage {
		t.Fatalf("exit %d, want %d; stderr:\n%s", got.code, ExitUsage, got.stderr)
	}
	validJSONAgainst(t, replaySchema, got.stdout)
	if !strings.Contains(got.stdout, `"verdict": "error"`) || !strings.Contains(got.stdout, `"file": "`+target+`"`) {
		t.Errorf("the JSON report of a stopped replay:\n%s", got.stdout)
	}
}

// TestReplaySchemaTellsTheKindsApart: a target replay's document with a
// built-in store, or a built-in one without its strategy, is refused.
func TestReplaySchemaTellsTheKindsApart(t *testing.T) {
	toRoot(t)
	target, capture := targetReplayFixture(t)
	tgt := invocation{args: []string{"replay", "--target", target, "--format", "json", capture}}.run(t).stdout
	builtin := invocation{args: append([]string{"replay", "--format", "json"}, replayFixtures[1].args...)}.run(t).stdout
	sch, err := jsonschema.NewCompiler().Compile(replaySchema)
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name   string
		doc    string
		change func(map[string]any)
	}{
		{"a target replay with a store", tgt, func(d map[string]any) { d["store"] = "SQLite in memory" }},
		{"a target replay with a strategy", tgt, func(d map[string]any) { d["strategy"] = "none" }},
		{"a target replay without its target", tgt, func(d map[string]any) { delete(d, "target") }},
		{"a built-in replay without its strategy", builtin, func(d map[string]any) { delete(d, "strategy") }},
		{"a built-in replay with crashes by answer", builtin, func(d map[string]any) {
			d["crashes"] = map[string]any{"before_answer": 0, "after_answer": 0, "unknown": 0}
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			inst, err := jsonschema.UnmarshalJSON(strings.NewReader(tt.doc))
			if err != nil {
				t.Fatal(err)
			}
			if err := sch.Validate(inst); err != nil {
				t.Fatalf("the document before the change does not validate: %v", err)
			}
			tt.change(inst.(map[string]any))
			if err := sch.Validate(inst); err == nil {
				t.Error("the schema accepts it")
			}
		})
	}
}

// TestTargetReplayFailOn: --fail-on bad-records acts on a replay into a
// target as on the built-in replay, and its JSON document, with fail_on
// and failed_on, still validates.
func TestTargetReplayFailOn(t *testing.T) {
	toRoot(t)
	for _, tt := range []struct {
		name     string
		bad      bool     // the capture holds a bad record
		args     []string // beyond --target, --format json and the capture
		code     int
		failedOn string // the JSON's failed_on, or empty for none
	}{
		{"a bad record skipped", true, []string{"--max-bad", "1", "--fail-on", "bad-records"}, ExitFail, `"failed_on": [
    "bad-records"
  ],`},
		{"no bad record", false, []string{"--fail-on", "bad-records"}, ExitFail, `"failed_on": [],`},
		{"another finding", false, []string{"--fail-on", "repeated-ids"}, ExitUsage, ""},
	} {
		t.Run(tt.name, func(t *testing.T) {
			target, capture := targetReplayFixture(t)
			if tt.bad {
				if err := os.WriteFile(capture, []byte("{\"specversion\":\"1.0\",\"id\":\"a\",\"source\":\"s\",\"type\":\"t\",\"data\":{\"orderId\":\"O-2\"}}\nnot json\n"), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			args := append([]string{"replay", "--target", target, "--format", "json"}, tt.args...)
			got := invocation{args: append(args, capture)}.run(t)
			if got.code != tt.code {
				t.Fatalf("exit %d, want %d; stderr:\n%s", got.code, tt.code, got.stderr)
			}
			if tt.failedOn == "" {
				if got.stdout != "" {
					t.Errorf("a refused flag wrote a report:\n%s", got.stdout)
				}
				return
			}
			validJSONAgainst(t, replaySchema, got.stdout)
			if !strings.Contains(got.stdout, `"fail_on": [
    "bad-records"
  ],`) || !strings.Contains(got.stdout, tt.failedOn) {
				t.Errorf("the JSON report lacks fail_on or %s:\n%s", tt.failedOn, got.stdout)
			}
		})
	}
}
