package cmd

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/redeliver/redeliver/pkg/handler"
	"github.com/redeliver/redeliver/pkg/sqlite"
	"github.com/santhosh-tekuri/jsonschema/v6"
)

// replaySchema is the documented shape of redeliver replay --format json.
const replaySchema = "docs/replay.schema.json"

// The replays of the golden files: a capture the event-id handler replays
// safely, the naive handler with seeded redeliveries, capture findings that
// --fail-on makes fatal, and a capture that cannot be read.
var replayFixtures = []outputFixture{
	{"replay-pass", []string{"--strategy", "business-key", "testdata/capture/cloudevents.ndjson"}, ExitPass, 5, 0},
	{"replay-fail", []string{"--strategy", "none", "--redeliver", "0.3", "testdata/capture/cloudevents.ndjson"}, ExitFail, 1, 2},
	{"replay-fail-on", []string{"--strategy", "business-key", "--fail-on", "identity-reuse,bad-records", "testdata/capture/cloudevents.ndjson"}, ExitFail, 6, 1},
	// The default strategy on a capture with one order under two ids: one
	// effect per business key is checked for it too, and the strategies
	// are compared.
	{"replay-keys", []string{"testdata/capture/cloudevents.ndjson"}, ExitFail, 4, 1},
	// Every delivery fails (the business key does not resolve) and nothing was injected.
	{"replay-unexpected", []string{"--id", "eventId", "--strategy", "business-key", "testdata/capture/plain.ndjson"}, ExitFail, 4, 1},
	{"replay-invalid", []string{"testdata/capture/bad/truncated.ndjson"}, ExitUsage, 0, 1},
}

var replayFormats = []outputFormat{
	{"text", ".txt", nil},
	{"json", ".json", func(t *testing.T, out string, _, _ int) { validJSONAgainst(t, replaySchema, out) }},
	{"junit", ".junit.xml", func(t *testing.T, out string, _, _ int) { validJUnit(t, out) }},
	{"tap", ".tap", validTAP},
}

// TestReplayFormats replays every fixture in every format (see checkFormats).
func TestReplayFormats(t *testing.T) { checkFormats(t, "replay", replayFixtures, replayFormats) }

// TestReplayReportFiles writes every format at once (see checkReportFiles).
func TestReplayReportFiles(t *testing.T) {
	checkReportFiles(t, "replay", replayFixtures, replayFormats)
}

// TestReplayGitHubActions annotates each broken invariant and failed
// finding on its capture line and appends the step summary when
// GITHUB_ACTIONS=true.
func TestReplayGitHubActions(t *testing.T) {
	toRoot(t)
	for _, fx := range replayFixtures {
		t.Run(fx.name, func(t *testing.T) {
			summary := filepath.Join(t.TempDir(), "summary.md")
			if err := os.WriteFile(summary, []byte("earlier step\n"), 0o644); err != nil {
				t.Fatal(err)
			}
			env := map[string]string{"GITHUB_ACTIONS": "true", "GITHUB_STEP_SUMMARY": summary}
			got := invocation{args: append([]string{"replay"}, fx.args...), env: env}.run(t)
			if got.code != fx.code {
				t.Errorf("exit status %d, want %d", got.code, fx.code)
			}
			golden(t, fx.name+".github.txt", got.stdout+"--- stderr\n"+got.stderr)
			data, err := os.ReadFile(summary)
			if err != nil {
				t.Fatal(err)
			}
			if !strings.HasPrefix(string(data), "earlier step\n") {
				t.Errorf("the step summary was not appended to:\n%s", data)
			}
			golden(t, fx.name+".summary.md", strings.TrimPrefix(string(data), "earlier step\n"))

			// With a structured format on stdout, annotations go to stderr.
			js := invocation{args: append([]string{"replay", "--format", "json"}, fx.args...), env: env}.run(t)
			validJSONAgainst(t, replaySchema, js.stdout)
			if n := strings.Count(js.stderr, "::error "); n != fx.failed {
				t.Errorf("with --format json, %d annotations on stderr, want %d: %q", n, fx.failed, js.stderr)
			}
		})
	}
	t.Run("not in actions", func(t *testing.T) {
		got := invocation{args: append([]string{"replay"}, replayFixtures[1].args...)}.run(t)
		if strings.Contains(got.stdout+got.stderr, "::error") {
			t.Errorf("annotations printed outside GitHub Actions:\n%s", got.stdout)
		}
	})
}

// TestReplayAnnotationLine: the annotation of a broken invariant points at
// the capture line that delivered its first example.
func TestReplayAnnotationLine(t *testing.T) {
	toRoot(t)
	got := invocation{args: append([]string{"replay", "--format", "tap"}, replayFixtures[1].args...), env: map[string]string{"GITHUB_ACTIONS": "true"}}.run(t)
	want := "::error file=testdata/capture/cloudevents.ndjson,line=2,title=redeliver replay%3A invariant duplicate-effect::broken 2 times: event /orders/evt-2"
	if !strings.HasPrefix(got.stderr, want) {
		t.Errorf("stderr %q\ndoes not start with %q", got.stderr, want)
	}
}

// TestReplayBadOutputFlags: the report flags are checked before anything
// is replayed, as for run.
func TestReplayBadOutputFlags(t *testing.T) {
	toRoot(t)
	dir := t.TempDir()
	tests := []struct {
		args []string
		want string
	}{
		{[]string{"--format", "xml"}, `--format must be text, json, junit, tap or html, not "xml"`},
		{[]string{"--report", "junit"}, `--report must be FORMAT=FILE`},
		{[]string{"--report", "junit=" + filepath.Join(dir, "missing", "r.xml")}, "does not exist"},
		{[]string{"--color", "sometimes"}, `--color must be auto, always or never`},
	}
	for _, tt := range tests {
		t.Run(strings.Join(tt.args, " "), func(t *testing.T) {
			got := invocation{args: append(append([]string{"replay"}, tt.args...), "testdata/capture/cloudevents.ndjson")}.run(t)
			if got.code != ExitUsage || !strings.Contains(got.stderr, tt.want) || got.stdout != "" {
				t.Errorf("exit %d, stdout %q, stderr %q; want %d, nothing, %q", got.code, got.stdout, got.stderr, ExitUsage, tt.want)
			}
		})
	}
}

// TestReplayRuntimeError: a database that cannot be used exits 3 in every
// format, and each structured report carries it as a harness error.
func TestReplayRuntimeError(t *testing.T) {
	toRoot(t)
	db := filepath.Join(t.TempDir(), "replay.db")
	// The database is in use by another replay.
	held, err := sqlite.OpenReplay(context.Background(), db, handler.Config{Strategy: handler.EventID, Effect: "effects"})
	if err != nil {
		t.Fatal(err)
	}
	defer held.Close()
	for _, f := range replayFormats {
		t.Run(f.name, func(t *testing.T) {
			got := invocation{args: []string{"replay", "--format", f.name, "--db", db, "testdata/capture/cloudevents.ndjson"}}.run(t)
			if got.code != ExitRuntime {
				t.Fatalf("exit status %d, want %d (stderr: %s)", got.code, ExitRuntime, got.stderr)
			}
			if !strings.Contains(got.stderr, "is in use by another redeliver") {
				t.Errorf("stderr does not say what failed: %q", got.stderr)
			}
			if f.name == "text" && got.stdout != "" {
				t.Errorf("a text report of a replay that did not finish: %q", got.stdout)
			}
			switch f.name {
			case "tap":
				// A database error has no place in a file, so its
				// diagnostic has no at: validTAP would ask for one.
				if !strings.HasPrefix(got.stdout, "TAP version 13\n1..1\nnot ok 1 - runtime error\n  ---\n") || !strings.Contains(got.stdout, "severity: error") {
					t.Errorf("the TAP report lacks the harness error:\n%s", got.stdout)
				}
			case "json":
				if !strings.Contains(got.stdout, `"verdict": "error"`) {
					t.Errorf("the JSON report lacks the error verdict:\n%s", got.stdout)
				}
			}
			if f.validate != nil && f.name != "tap" {
				f.validate(t, got.stdout, 0, 1)
			}
		})
	}
}

// TestReplaySchemaRejects shows the replay schema can fail: documents that
// break it in one place each are refused.
func TestReplaySchemaRejects(t *testing.T) {
	toRoot(t)
	got := invocation{args: append([]string{"replay", "--format", "json"}, replayFixtures[1].args...)}.run(t)
	validJSONAgainst(t, replaySchema, got.stdout)
	tests := []struct {
		name   string
		change func(doc map[string]any)
	}{
		{"another schema version", func(d map[string]any) { d["schema"] = 2 }},
		{"no capture.identity_reuse", func(d map[string]any) { delete(d["capture"].(map[string]any), "identity_reuse") }},
		{"no outcomes.conflict", func(d map[string]any) { delete(d["outcomes"].(map[string]any), "conflict") }},
		{"no effects", func(d map[string]any) { delete(d, "effects") }},
		{"no seed", func(d map[string]any) { delete(d, "seed") }},
		{"a passing verdict with violations", func(d map[string]any) { d["verdict"] = "pass" }},
		{"an unknown invariant", func(d map[string]any) {
			d["violations"].([]any)[0].(map[string]any)["invariant"] = "duplicate-everything"
		}},
		{"a line that is no file:line", func(d map[string]any) {
			ex := d["violations"].([]any)[0].(map[string]any)["examples"].([]any)[0].(map[string]any)
			ex["at"] = []any{"somewhere"}
		}},
		{"an unknown field", func(d map[string]any) { d["colour"] = true }},
		{"a pattern no diagnosis names", func(d map[string]any) {
			ex := d["violations"].([]any)[0].(map[string]any)["examples"].([]any)[0].(map[string]any)
			ex["pattern"] = "a-guess"
		}},
	}
	sch, err := jsonschema.NewCompiler().Compile(replaySchema)
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var doc map[string]any
			if err := json.Unmarshal([]byte(got.stdout), &doc); err != nil {
				t.Fatal(err)
			}
			tt.change(doc)
			data, _ := json.Marshal(doc)
			inst, err := jsonschema.UnmarshalJSON(bytes.NewReader(data))
			if err != nil {
				t.Fatal(err)
			}
			if err := sch.Validate(inst); err == nil {
				t.Errorf("the schema accepted a document with %s", tt.name)
			}
		})
	}
}

// TestReplayDocumentedExample keeps the example in docs/replay-json.md
// valid against the schema it documents.
func TestReplayDocumentedExample(t *testing.T) {
	toRoot(t)
	data, err := os.ReadFile("docs/replay-json.md")
	if err != nil {
		t.Fatal(err)
	}
	_, rest, ok := strings.Cut(string(data), "\n```json\n")
	if !ok {
		t.Fatal("docs/replay-json.md has no ```json example")
	}
	example, _, ok := strings.Cut(rest, "\n```")
	if !ok {
		t.Fatal("the ```json example in docs/replay-json.md is not closed")
	}
	validJSONAgainst(t, replaySchema, example)
}

// TestReplaySeveralCaptures: each capture is a JUnit suite of its own, with
// the invariants checked over their replay together. The captures give
// business keys, so one effect per key is checked too, beside one effect per
// event and the failures-only-where-injected case: three cases, two broken.
func TestReplaySeveralCaptures(t *testing.T) {
	toRoot(t)
	args := []string{"replay", "--format", "junit", "--strategy", "none", "--redeliver", "0.3", "testdata/capture/cloudevents.ndjson", "testdata/capture/cloudevents-batch.json"}
	got := invocation{args: args}.run(t)
	if got.code != ExitFail {
		t.Fatalf("exit status %d, want %d: %s", got.code, ExitFail, got.stderr)
	}
	validJUnit(t, got.stdout)
	for _, file := range []string{"testdata/capture/cloudevents.ndjson", "testdata/capture/cloudevents-batch.json"} {
		want := `<testsuite name="` + file + `" tests="3" failures="2" errors="0" skipped="0"`
		if !strings.Contains(got.stdout, want) {
			t.Errorf("no suite %s in\n%s", want, got.stdout)
		}
	}
}
