package cmd

import (
	"bytes"
	"context"
	"encoding/json"
	"encoding/xml"
	"flag"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redeliver/redeliver/pkg/handler"
	"github.com/redeliver/redeliver/pkg/report"
	"github.com/redeliver/redeliver/pkg/runner"
	"github.com/redeliver/redeliver/pkg/sqlite"
	"github.com/santhosh-tekuri/jsonschema/v6"
)

// go test ./cmd -update rewrites testdata/golden from what the commands print.
var update = flag.Bool("update", false, "rewrite testdata/golden from what the commands print")

// invocation is one run of redeliver with injected streams and environment.
type invocation struct {
	args []string
	env  map[string]string
	tty  bool // stdout counts as a terminal
}

type outcome struct {
	stdout, stderr string
	code           int
}

// run runs redeliver from the repository root, so that the paths reports
// print read as a user would type them.
func (inv invocation) run(t *testing.T) outcome {
	t.Helper()
	var out, errOut bytes.Buffer
	s := &Streams{
		In: strings.NewReader(""), Out: &out, Err: &errOut, OutTTY: inv.tty,
		Getenv: func(k string) string { return inv.env[k] },
	}
	code := Run(context.Background(), s, inv.args)
	return outcome{stdout: out.String(), stderr: errOut.String(), code: code}
}

// toRoot makes the repository root the working folder for the test.
func toRoot(t *testing.T) {
	t.Helper()
	t.Chdir("..")
}

// timings are the only fields that differ from run to run; goldens hold them as zero.
var timings = []struct {
	re   *regexp.Regexp
	with string
}{
	{regexp.MustCompile(`"duration_seconds": [0-9.e+-]+`), `"duration_seconds": 0`},
	{regexp.MustCompile(` time="[0-9.]+"`), ` time="0.000"`},
}

func stable(s string) string {
	for _, t := range timings {
		s = t.re.ReplaceAllString(s, t.with)
	}
	return s
}

// golden compares got with testdata/golden/name, or rewrites it with -update.
func golden(t *testing.T, name, got string) {
	t.Helper()
	path := filepath.Join("testdata", "golden", name)
	got = stable(got)
	if *update {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test ./cmd -update to create it)", err)
	}
	if got != string(want) {
		t.Errorf("%s differs from what was printed (go test ./cmd -update rewrites it)\n--- got\n%s\n--- want\n%s", path, got, want)
	}
}

// outputFixture is one command line whose output has golden files.
type outputFixture struct {
	name           string
	args           []string // after the command and its --format or --report flags
	code           int
	passed, failed int // test points TAP must count
}

// outputFormat is a format, its golden file extension, and the tool that
// checks it (TAP also checks the pass/fail counts).
type outputFormat struct {
	name, ext string
	validate  func(t *testing.T, out string, passed, failed int)
}

// The fixtures of the golden files: the fixture, a scenario that
// fails on purpose, both together, and a file that does not validate.
var fixtures = []outputFixture{
	{"seed", []string{"scenarios/seed-fixture.yaml"}, ExitPass, 3, 0},
	{"failing", []string{"testdata/scenarios/failing.yaml"}, ExitFail, 1, 2},
	{"two-files", []string{"scenarios/seed-fixture.yaml", "testdata/scenarios/failing.yaml"}, ExitFail, 4, 2},
	{"invalid", []string{"testdata/invalid/unknown-fault.yaml"}, ExitUsage, 0, 1},
}

var formats = []outputFormat{
	{"text", ".txt", nil},
	{"json", ".json", func(t *testing.T, out string, _, _ int) { validJSON(t, out) }},
	{"junit", ".junit.xml", func(t *testing.T, out string, _, _ int) { validJUnit(t, out) }},
	{"tap", ".tap", validTAP},
}

// TestFormats runs every fixture in every format.
func TestFormats(t *testing.T) { checkFormats(t, "run", fixtures, formats) }

// TestReportFiles writes every format at once.
func TestReportFiles(t *testing.T) { checkReportFiles(t, "run", fixtures, formats) }

// checkFormats runs every fixture in every format: the output matches its
// golden file, is accepted by the tool that consumes it, carries no colour
// codes even when colour is forced, and the exit status is the same
// whatever the format.
func checkFormats(t *testing.T, command string, fixtures []outputFixture, formats []outputFormat) {
	toRoot(t)
	for _, fx := range fixtures {
		for _, f := range formats {
			t.Run(fx.name+"/"+f.name, func(t *testing.T) {
				args := append([]string{command, "--format", f.name}, fx.args...)
				env := map[string]string{}
				if f.name != "text" {
					env["FORCE_COLOR"] = "1"
				}
				got := invocation{args: args, env: env}.run(t)
				if got.code != fx.code {
					t.Errorf("exit status %d, want %d (stderr: %s)", got.code, fx.code, got.stderr)
				}
				if strings.Contains(got.stdout, "\x1b[") {
					t.Errorf("stdout carries colour codes:\n%s", got.stdout)
				}
				golden(t, fx.name+f.ext, got.stdout)
				if f.validate != nil {
					f.validate(t, got.stdout, fx.passed, fx.failed)
				}
			})
		}
	}
}

// checkReportFiles writes every format at once: the text report stays on
// the console, each file holds what --format would have printed, and the
// exit status does not change.
func checkReportFiles(t *testing.T, command string, fixtures []outputFixture, formats []outputFormat) {
	toRoot(t)
	for _, fx := range fixtures {
		t.Run(fx.name, func(t *testing.T) {
			dir := t.TempDir()
			args := []string{command}
			for _, f := range formats {
				args = append(args, "--report", f.name+"="+filepath.Join(dir, "report"+f.ext))
			}
			got := invocation{args: append(args, fx.args...)}.run(t)
			if got.code != fx.code {
				t.Errorf("exit status %d, want %d", got.code, fx.code)
			}
			golden(t, fx.name+".txt", got.stdout)
			for _, f := range formats {
				data, err := os.ReadFile(filepath.Join(dir, "report"+f.ext))
				if err != nil {
					t.Fatal(err)
				}
				want := fx.name + f.ext
				if f.name == "text" && fx.code == ExitUsage {
					// The console's text report is left off when nothing ran;
					// a text file says why instead of staying empty.
					want = fx.name + ".report.txt"
				}
				golden(t, want, string(data))
			}
		})
	}
}

// TestVerbose shows what was tested and the coverage matrix in the text
// report, and keeps them out of stdout when it carries a structured format.
func TestVerbose(t *testing.T) {
	toRoot(t)
	for _, fx := range fixtures[:3] {
		t.Run(fx.name, func(t *testing.T) {
			got := invocation{args: append([]string{"run", "-v", "--coverage"}, fx.args...)}.run(t)
			if got.code != fx.code {
				t.Errorf("exit status %d, want %d", got.code, fx.code)
			}
			golden(t, fx.name+".verbose.txt", got.stdout)

			js := invocation{args: append([]string{"run", "--coverage", "--format", "json"}, fx.args...)}.run(t)
			validJSON(t, js.stdout)
			if !strings.HasPrefix(js.stderr, "coverage: ") {
				t.Errorf("with --format json the coverage matrix goes to stderr; stderr is %q", js.stderr)
			}
		})
	}
}

// TestGitHubActions annotates each failure and appends the step summary
// when GITHUB_ACTIONS=true, and does neither otherwise.
func TestGitHubActions(t *testing.T) {
	toRoot(t)
	for _, fx := range fixtures {
		t.Run(fx.name, func(t *testing.T) {
			summary := filepath.Join(t.TempDir(), "summary.md")
			if err := os.WriteFile(summary, []byte("earlier step\n"), 0o644); err != nil {
				t.Fatal(err)
			}
			env := map[string]string{"GITHUB_ACTIONS": "true", "GITHUB_STEP_SUMMARY": summary}
			got := invocation{args: append([]string{"run"}, fx.args...), env: env}.run(t)
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
			js := invocation{args: append([]string{"run", "--format", "json"}, fx.args...), env: env}.run(t)
			validJSON(t, js.stdout)
			if fx.failed > 0 && !strings.Contains(js.stderr, "::error ") {
				t.Errorf("with --format json, annotations go to stderr; stderr is %q", js.stderr)
			}
		})
	}
	t.Run("not in actions", func(t *testing.T) {
		summary := filepath.Join(t.TempDir(), "summary.md")
		env := map[string]string{"GITHUB_ACTIONS": "", "GITHUB_STEP_SUMMARY": summary}
		got := invocation{args: []string{"run", "testdata/scenarios/failing.yaml"}, env: env}.run(t)
		if strings.Contains(got.stdout+got.stderr, "::error") {
			t.Errorf("annotations printed outside GitHub Actions:\n%s", got.stdout)
		}
		if _, err := os.Stat(summary); err == nil {
			t.Errorf("step summary written outside GitHub Actions")
		}
	})
}

// TestColor: auto is on only on a terminal with NO_COLOR unset, FORCE_COLOR
// turns it on, the flag overrides both, and structured formats and report
// files never carry colour codes.
func TestColor(t *testing.T) {
	toRoot(t)
	tests := []struct {
		name   string
		flag   string
		format string
		tty    bool
		env    map[string]string
		want   bool
	}{
		{"auto, not a terminal", "auto", "text", false, nil, false},
		{"auto, terminal", "auto", "text", true, nil, true},
		{"auto, terminal, NO_COLOR", "auto", "text", true, map[string]string{"NO_COLOR": "1"}, false},
		{"auto, FORCE_COLOR", "auto", "text", false, map[string]string{"FORCE_COLOR": "1"}, true},
		{"auto, FORCE_COLOR=0", "auto", "text", true, map[string]string{"FORCE_COLOR": "0", "NO_COLOR": "1"}, false},
		{"always", "always", "text", false, nil, true},
		{"never, terminal, FORCE_COLOR", "never", "text", true, map[string]string{"FORCE_COLOR": "1"}, false},
		{"always, json", "always", "json", true, map[string]string{"FORCE_COLOR": "1"}, false},
		{"always, junit", "always", "junit", true, map[string]string{"FORCE_COLOR": "1"}, false},
		{"always, tap", "always", "tap", true, map[string]string{"FORCE_COLOR": "1"}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			file := filepath.Join(t.TempDir(), "report.txt")
			args := []string{"run", "--color", tt.flag, "--format", tt.format, "--report", "text=" + file, "testdata/scenarios/failing.yaml"}
			got := invocation{args: args, env: tt.env, tty: tt.tty}.run(t)
			if got.code != ExitFail {
				t.Fatalf("exit status %d, want %d: %s", got.code, ExitFail, got.stderr)
			}
			if colored := strings.Contains(got.stdout, "\x1b["); colored != tt.want {
				t.Errorf("colour on stdout: %v, want %v\n%s", colored, tt.want, got.stdout)
			}
			data, err := os.ReadFile(file)
			if err != nil {
				t.Fatal(err)
			}
			if bytes.Contains(data, []byte("\x1b[")) {
				t.Errorf("the text report file carries colour codes:\n%s", data)
			}
		})
	}
}

// TestBadOutputFlags: a mistake in the report flags is one sentence on
// stderr, exit 2, and nothing written anywhere.
func TestBadOutputFlags(t *testing.T) {
	toRoot(t)
	dir := t.TempDir()
	folder := filepath.Join(dir, "a-folder")
	if err := os.Mkdir(folder, 0o755); err != nil {
		t.Fatal(err)
	}
	other := filepath.Join(dir, "other.xml")
	tests := []struct {
		name string
		args []string
		want string
	}{
		{"unknown format", []string{"--format", "xml"}, `--format must be text, json, junit, tap or html, not "xml"`},
		{"report without =", []string{"--report", "junit"}, `--report must be FORMAT=FILE, e.g. --report junit=report.xml, not "junit"`},
		{"report without a file", []string{"--report", "junit="}, `--report must be FORMAT=FILE`},
		{"report without a format", []string{"--report", "=out.xml"}, `--report must be FORMAT=FILE`},
		{"report in an unknown format", []string{"--report", "pdf=" + other}, `the format must be text, json, junit, tap or html, not "pdf"`},
		{"report into a missing folder", []string{"--report", "junit=" + filepath.Join(dir, "missing", "out.xml")}, "does not exist"},
		{"report onto a folder", []string{"--report", "junit=" + folder}, "it is a folder"},
		{"the same file twice", []string{"--report", "junit=" + other, "--report", "tap=" + other}, "twice"},
		{"unknown colour", []string{"--color", "sometimes"}, `--color must be auto, always or never, not "sometimes"`},
		{"good report, bad format", []string{"--report", "junit=" + other, "--format", "yaml"}, `--format must be`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			args := append(append([]string{"run"}, tt.args...), "testdata/scenarios/failing.yaml")
			got := invocation{args: args}.run(t)
			if got.code != ExitUsage {
				t.Errorf("exit status %d, want %d", got.code, ExitUsage)
			}
			if !strings.Contains(got.stderr, tt.want) {
				t.Errorf("stderr %q does not say %q", got.stderr, tt.want)
			}
			if n := strings.Count(strings.TrimSpace(got.stderr), "\n"); n > 0 {
				t.Errorf("stderr is %d lines, want one sentence: %q", n+1, got.stderr)
			}
			if got.stdout != "" {
				t.Errorf("stdout is %q, want nothing", got.stdout)
			}
			entries, _ := os.ReadDir(dir)
			if len(entries) != 1 {
				var names []string
				for _, e := range entries {
					names = append(names, e.Name())
				}
				t.Errorf("files were written: %v", names)
			}
		})
	}
}

// validJSON checks a JSON report of redeliver run against the documented schema.
func validJSON(t *testing.T, out string) {
	t.Helper()
	validJSONAgainst(t, "docs/report.schema.json", out)
}

// validJSONAgainst checks a JSON document against a schema in docs/.
func validJSONAgainst(t *testing.T, schema, out string) {
	t.Helper()
	c := jsonschema.NewCompiler()
	sch, err := c.Compile(schema)
	if err != nil {
		t.Fatalf("compile the schema: %v", err)
	}
	inst, err := jsonschema.UnmarshalJSON(strings.NewReader(out))
	if err != nil {
		t.Fatalf("not JSON: %v\n%s", err, out)
	}
	if err := sch.Validate(inst); err != nil {
		t.Errorf("the JSON report does not match %s: %v", schema, err)
	}
}

// TestSchemaRejects shows the schema check can fail: documents that break
// the schema in one place each are refused.
func TestSchemaRejects(t *testing.T) {
	toRoot(t)
	got := invocation{args: []string{"run", "--format", "json", "testdata/scenarios/failing.yaml"}}.run(t)
	tests := []struct {
		name   string
		change func(doc map[string]any)
	}{
		{"another schema version", func(d map[string]any) { d["schema"] = 2 }},
		{"no verdict", func(d map[string]any) { delete(d, "verdict") }},
		{"unknown verdict", func(d map[string]any) { d["verdict"] = "maybe" }},
		{"an unknown field", func(d map[string]any) { d["colour"] = true }},
		{"a failed check without failures", func(d map[string]any) {
			c := d["files"].([]any)[0].(map[string]any)["checks"].([]any)[0].(map[string]any)
			c["failures"] = []any{}
		}},
		{"an unknown outcome", func(d map[string]any) {
			c := d["files"].([]any)[0].(map[string]any)["checks"].([]any)[0].(map[string]any)
			c["deliveries"].([]any)[0].(map[string]any)["outcome"] = "lost"
		}},
	}
	c := jsonschema.NewCompiler()
	sch, err := c.Compile("docs/report.schema.json")
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

// junitSchema is the strict JUnit schema of the Jenkins xunit plugin (MIT).
const junitSchema = "testdata/junit/junit-10.xsd"

// validJUnit checks JUnit XML with xmllint against the strict schema.
func validJUnit(t *testing.T, out string) {
	t.Helper()
	xmllint, err := exec.LookPath("xmllint")
	if err != nil {
		skipOutsideCI(t, "xmllint not installed (Debian: libxml2-utils); skipping the JUnit schema check")
	}
	file := filepath.Join(t.TempDir(), "report.xml")
	if err := os.WriteFile(file, []byte(out), 0o644); err != nil {
		t.Fatal(err)
	}
	msg, err := exec.Command(xmllint, "--noout", "--schema", junitSchema, file).CombinedOutput()
	if err != nil {
		t.Errorf("xmllint rejects the JUnit report: %v\n%s\n%s", err, msg, out)
	}
}

// tapCheck parses TAP with Perl's TAP::Parser and prints what it saw as JSON.
const tapCheck = `
use strict; use warnings; use TAP::Parser; use JSON::PP;
my $tap = do { local $/; <STDIN> };
my $p = TAP::Parser->new({ tap => $tap });
my (@yaml, $tests);
while (my $r = $p->next) { $tests++ if $r->is_test; push @yaml, $r->data if $r->is_yaml; }
print JSON::PP->new->canonical->encode({
  plan => $p->plan, tests_run => $p->tests_run, passed => scalar($p->passed),
  failed => scalar($p->failed), parse_errors => [$p->parse_errors], yaml => \@yaml,
});
`

// validTAP parses TAP with TAP::Parser: no parse errors, the counts right,
// and a YAML diagnostic with message, expected, got and at per failure; and
// runs prove, the harness most TAP consumers are, on it.
func validTAP(t *testing.T, out string, passed, failed int) {
	t.Helper()
	if !strings.HasPrefix(out, "TAP version 13\n") {
		t.Errorf("TAP does not start with its version line:\n%s", out)
	}
	perl, err := exec.LookPath("perl")
	if err != nil || exec.Command(perl, "-MTAP::Parser", "-MJSON::PP", "-e1").Run() != nil {
		skipOutsideCI(t, "Perl's TAP::Parser is not installed; skipping the TAP check")
	}
	cmd := exec.Command(perl, "-e", tapCheck)
	cmd.Stdin = strings.NewReader(out)
	data, err := cmd.Output()
	if err != nil {
		t.Fatalf("TAP::Parser: %v", err)
	}
	var got struct {
		Plan        string           `json:"plan"`
		TestsRun    int              `json:"tests_run"`
		Passed      int              `json:"passed"`
		Failed      int              `json:"failed"`
		ParseErrors []string         `json:"parse_errors"`
		YAML        []map[string]any `json:"yaml"`
	}
	if err := json.Unmarshal(data, &got); err != nil {
		t.Fatal(err)
	}
	for _, e := range got.ParseErrors {
		t.Errorf("TAP::Parser parse error: %s\n%s", e, out)
	}
	proveTAP(t, out, failed == 0)
	if got.Passed != passed || got.Failed != failed || got.TestsRun != passed+failed {
		t.Errorf("TAP::Parser counted %d run, %d passed, %d failed; want %d, %d, %d", got.TestsRun, got.Passed, got.Failed, passed+failed, passed, failed)
	}
	if want := "1.." + strconv.Itoa(passed+failed); got.Plan != want {
		t.Errorf("plan %q, want %q", got.Plan, want)
	}
	if len(got.YAML) != failed {
		t.Errorf("%d YAML diagnostics, want one per failure (%d)", len(got.YAML), failed)
	}
	for _, y := range got.YAML {
		for _, k := range []string{"message", "severity", "at"} {
			if _, ok := y[k]; !ok {
				t.Errorf("YAML diagnostic without %s: %v", k, y)
			}
		}
		if y["severity"] == "fail" {
			for _, k := range []string{"expected", "got"} {
				if _, ok := y[k]; !ok {
					t.Errorf("failure diagnostic without %s: %v", k, y)
				}
			}
		}
	}
}

// TestDocumentedExample keeps the example in docs/report-json.md valid
// against the schema it documents.
func TestDocumentedExample(t *testing.T) {
	toRoot(t)
	data, err := os.ReadFile("docs/report-json.md")
	if err != nil {
		t.Fatal(err)
	}
	_, rest, ok := strings.Cut(string(data), "\n```json\n")
	if !ok {
		t.Fatal("docs/report-json.md has no ```json example")
	}
	example, _, ok := strings.Cut(rest, "\n```")
	if !ok {
		t.Fatal("the ```json example in docs/report-json.md is not closed")
	}
	validJSON(t, example)
}

// TestRuntimeError: a database that cannot be opened exits 3 in every
// format, and each structured report carries it as a harness error.
func TestRuntimeError(t *testing.T) {
	toRoot(t)
	dbs := t.TempDir()
	// The fixture's database file is in use by another run.
	held, err := sqlite.Create(context.Background(), filepath.Join(dbs, "scenarios-seed-fixture.db"), handler.Config{Strategy: handler.EventID, Effect: "effects"})
	if err != nil {
		t.Fatal(err)
	}
	defer held.Close()
	for _, f := range formats {
		t.Run(f.name, func(t *testing.T) {
			got := invocation{args: []string{"run", "--format", f.name, "--db", dbs + string(filepath.Separator), "scenarios/seed-fixture.yaml"}}.run(t)
			if got.code != ExitRuntime {
				t.Errorf("exit status %d, want %d (stderr: %s)", got.code, ExitRuntime, got.stderr)
			}
			if !strings.Contains(got.stderr, "is in use by another redeliver") {
				t.Errorf("stderr does not say what failed: %q", got.stderr)
			}
			switch f.name {
			case "text":
				if got.stdout != "" {
					t.Errorf("a text report of a run that did not complete: %q", got.stdout)
				}
			case "json":
				if !strings.Contains(got.stdout, `"kind": "runtime"`) {
					t.Errorf("the JSON report lacks the runtime error:\n%s", got.stdout)
				}
			case "junit":
				if !strings.Contains(got.stdout, `type="runtime"`) {
					t.Errorf("the JUnit report lacks the runtime error:\n%s", got.stdout)
				}
			}
			if f.validate != nil {
				f.validate(t, got.stdout, 0, 1)
			}
		})
	}
}

// skipOutsideCI skips a check that needs a tool the machine lacks, but in CI
// (where .ci/run installs the tools) a missing tool is a failure, not a skip.
func skipOutsideCI(t *testing.T, why string) {
	t.Helper()
	if os.Getenv("CI") != "" {
		t.Fatal(why)
	}
	t.Skip(why)
}

// proveTAP runs Perl's prove on the TAP as if a test had printed it: no
// parse error, and "Result: PASS" exactly when every point passed.
func proveTAP(t *testing.T, out string, pass bool) {
	t.Helper()
	prove, err := exec.LookPath("prove")
	if err != nil {
		skipOutsideCI(t, "prove (Perl's Test::Harness) is not installed; skipping the prove check")
	}
	file := filepath.Join(t.TempDir(), "report.tap")
	if err := os.WriteFile(file, []byte(out), 0o644); err != nil {
		t.Fatal(err)
	}
	msg, err := exec.Command(prove, "--exec", "cat", file).CombinedOutput()
	if strings.Contains(string(msg), "Parse errors") {
		t.Errorf("prove reports a parse error:\n%s\n%s", msg, out)
	}
	if pass != (err == nil) || pass != strings.Contains(string(msg), "Result: PASS") {
		t.Errorf("prove on a run that passed=%v said (%v):\n%s", pass, err, msg)
	}
}

// TestJUnitTimesAddUp: each suite's time is the sum of its test cases'
// times as written, to the millisecond, however each check's duration
// rounds; the document stays valid against the schema.
func TestJUnitTimesAddUp(t *testing.T) {
	toRoot(t)
	ms := func(f float64) time.Duration { return time.Duration(f * float64(time.Millisecond)) }
	files := []*runner.FileResult{
		{File: "a.yaml", Name: "a", Strategy: "target", Checks: []runner.CheckResult{
			{Name: "one", Passed: true, Line: said("1 delivery"), Duration: ms(0.6)},
			{Name: "two", Passed: true, Line: said("1 delivery"), Duration: ms(0.6)},
			{Name: "three", Passed: true, Line: said("1 delivery"), Duration: ms(1250.6)},
		}},
		{File: "b.yaml", Name: "b", Strategy: "target", Checks: []runner.CheckResult{
			{Name: "one", Passed: true, Line: said("1 delivery"), Duration: ms(0.4)},
			{Name: "two", Passed: true, Line: said("1 delivery"), Duration: ms(0.4)},
		}},
	}
	run := &report.Run{Command: "run", Files: files, Store: report.StoreTarget, Workers: 1, Duration: 2 * time.Second}
	var b bytes.Buffer
	if err := report.Render(&b, report.FormatJUnit, run, report.Options{}); err != nil {
		t.Fatal(err)
	}
	validJUnit(t, b.String())
	var doc struct {
		Suites []struct {
			Name  string `xml:"name,attr"`
			Time  string `xml:"time,attr"`
			Cases []struct {
				Time string `xml:"time,attr"`
			} `xml:"testcase"`
		} `xml:"testsuite"`
	}
	if err := xml.Unmarshal(b.Bytes(), &doc); err != nil {
		t.Fatal(err)
	}
	millis := func(s string) int64 {
		f, err := strconv.ParseFloat(s, 64)
		if err != nil {
			t.Fatalf("time %q: %v", s, err)
		}
		return int64(math.Round(f * 1000))
	}
	for _, s := range doc.Suites {
		var sum int64
		for _, c := range s.Cases {
			sum += millis(c.Time)
		}
		if got := millis(s.Time); got != sum {
			t.Errorf("suite %s: time %s, but its cases add up to %.3f\n%s", s.Name, s.Time, float64(sum)/1000, b.String())
		}
	}
}
