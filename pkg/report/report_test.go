package report

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/redeliver/redeliver/pkg/consumer"
	"github.com/redeliver/redeliver/pkg/handler"
	"github.com/redeliver/redeliver/pkg/invariant"
	"github.com/redeliver/redeliver/pkg/problem"
	"github.com/redeliver/redeliver/pkg/replay"
	"github.com/redeliver/redeliver/pkg/runner"
)

// The escaping of @actions/core's command.ts: data escapes %, \r and \n;
// properties also escape : and ,. % goes first, so nothing is escaped twice.
func TestEscape(t *testing.T) {
	tests := []struct {
		in, data, property string
	}{
		{"plain", "plain", "plain"},
		{"100%", "100%25", "100%25"},
		{"%0A", "%250A", "%250A"},
		{"a\r\nb", "a%0D%0Ab", "a%0D%0Ab"},
		{"file: a, b", "file: a, b", "file%3A a%2C b"},
		{"::error::", "::error::", "%3A%3Aerror%3A%3A"},
		{"", "", ""},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			if got := escapeData(tt.in); got != tt.data {
				t.Errorf("escapeData(%q) = %q, want %q", tt.in, got, tt.data)
			}
			if got := escapeProperty(tt.in); got != tt.property {
				t.Errorf("escapeProperty(%q) = %q, want %q", tt.in, got, tt.property)
			}
		})
	}
}

func TestErrorCommand(t *testing.T) {
	tests := []struct {
		name  string
		at    consumer.Location
		title string
		msg   string
		want  string
	}{
		{"everything", consumer.Location{File: "s.yaml", Line: 3, Col: 9}, "redeliver: a, b", "50%\nmore",
			"::error file=s.yaml,line=3,col=9,title=redeliver%3A a%2C b::50%25%0Amore"},
		{"no column", consumer.Location{File: "s.yaml", Line: 3}, "t", "m", "::error file=s.yaml,line=3,title=t::m"},
		{"no place", consumer.Location{}, "t", "m", "::error title=t::m"},
		{"nothing but the message", consumer.Location{}, "", "m", "::error::m"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := errorCommand(tt.at, tt.title, tt.msg); got != tt.want {
				t.Errorf("got  %s\nwant %s", got, tt.want)
			}
		})
	}
}

func TestTAPEscape(t *testing.T) {
	tests := []struct{ in, want string }{
		{"plain", "plain"},
		{"issue #2", `issue \#2`},
		{`a\b`, `a\\b`},
		{"two\nlines", "two lines"},
	}
	for _, tt := range tests {
		if got := tapEscape(tt.in); got != tt.want {
			t.Errorf("tapEscape(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

func record(outcome consumer.Outcome, err error) invariant.Record {
	return invariant.Record{EventID: "evt", Result: consumer.Result{Outcome: outcome, Err: err}}
}

// A fault point counts as reached only when its injected failure fired.
func TestBoundariesAndCoverage(t *testing.T) {
	run := &Run{Store: StoreSQLiteFile, Workers: 0, Files: []*runner.FileResult{
		{File: "a.yaml", Strategy: handler.EventID, Checks: []runner.CheckResult{
			{Name: "rollback", Passed: true, History: []invariant.Record{
				record(consumer.Failed, &handler.InjectedError{Point: consumer.AfterMarker}),
				record(consumer.Processed, nil),
			}},
			{Name: "duplicate asked to fail", Passed: true, History: []invariant.Record{
				// fail: after-marker on a duplicate: it never got there.
				record(consumer.Duplicate, nil),
			}},
			{Name: "crash", Passed: true, History: []invariant.Record{
				record(consumer.Crashed, &handler.InjectedError{Point: consumer.AfterCommit}),
				record(consumer.Failed, &handler.InjectedError{Point: consumer.AfterMarker}),
			}},
			// interleave held the workers at after-check: reached, though
			// no failure fired there; at after-commit one also fired.
			{Name: "race", Passed: true, Held: []consumer.FaultPoint{consumer.AfterCheck, consumer.AfterCommit}, History: []invariant.Record{
				record(consumer.Processed, nil),
				record(consumer.Crashed, &handler.InjectedError{Point: consumer.AfterCommit}),
			}},
		}},
		{File: "b.yaml", Strategy: handler.BusinessKey, Checks: []runner.CheckResult{
			{Name: "empty key", Passed: true, History: []invariant.Record{
				record(consumer.Failed, &handler.KeyError{Template: "{x}", EventID: "evt"}),
			}},
		}},
	}}
	b := boundariesOf(run)
	if b.Workers != 1 {
		t.Errorf("workers %d, want at least 1", b.Workers)
	}
	if want := []string{"event-id", "business-key"}; !reflect.DeepEqual(b.Strategies, want) {
		t.Errorf("strategies %v, want %v", b.Strategies, want)
	}
	wantOutcomes := map[string]int{"processed": 2, "duplicate": 1, "conflict": 0, "failed": 3, "crashed": 2}
	if !reflect.DeepEqual(b.Outcomes, wantOutcomes) {
		t.Errorf("outcomes %v, want %v", b.Outcomes, wantOutcomes)
	}
	reached := map[string]map[string]int{}
	for _, fp := range b.FaultPoints {
		if fp.Reached {
			reached[fp.Point] = fp.Outcomes
		}
	}
	wantReached := map[string]map[string]int{"after-marker": {"failed": 2}, "after-commit": {"crashed": 2}}
	if !reflect.DeepEqual(reached, wantReached) {
		t.Errorf("reached %v, want %v", reached, wantReached)
	}
	// Held racing workers reach a point as well, though nothing fired there.
	if want := []string{"after-check", "after-commit"}; !reflect.DeepEqual(b.Held, want) {
		t.Errorf("held %v, want %v", b.Held, want)
	}
	if line, want := boundaryLine(b), "fault points reached: after-check (held), after-marker (failed 2), after-commit (crashed 2); not reached: before-begin, after-effect"; !strings.HasSuffix(line, want) {
		t.Errorf("the -v line %q does not end with %q", line, want)
	}

	cells := map[string][]string{}
	for _, c := range coverageOf(run) {
		var names []string
		for _, ref := range c.Checks {
			name := ref.File + "/" + ref.Check
			if ref.Held {
				name += " (held)"
			}
			names = append(names, name)
		}
		cells[c.Strategy+" × "+c.FaultPoint] = names
	}
	// Neither strategy reaches after-external: 5 cells each.
	if len(cells) != 2*5 || cells["event-id × after-external"] != nil {
		t.Errorf("%d cells, want every strategy used × every fault point it reaches (10): %v", len(cells), cells)
	}
	wantCells := map[string][]string{
		"event-id × after-marker": {"a.yaml/rollback", "a.yaml/crash"},
		"event-id × after-commit": {"a.yaml/crash", "a.yaml/race"},
		"event-id × after-check":  {"a.yaml/race (held)"},
	}
	for k, v := range cells {
		if !reflect.DeepEqual(v, wantCells[k]) {
			t.Errorf("cell %s: %v, want %v", k, v, wantCells[k])
		}
	}
}

// TestCoverageText: the matrix lists only the points each strategy can
// reach, and a point where interleave held racing workers was reached.
func TestCoverageText(t *testing.T) {
	run := &Run{Store: StoreSQLiteMemory, Files: []*runner.FileResult{
		{File: "a.yaml", Strategy: handler.EventID, Checks: []runner.CheckResult{
			{Name: "forced race", Passed: true, Held: []consumer.FaultPoint{consumer.AfterCheck}, History: []invariant.Record{record(consumer.Processed, nil)}},
		}},
		{File: "b.yaml", Strategy: handler.None, Checks: []runner.CheckResult{
			{Name: "rollback", Passed: true, History: []invariant.Record{record(consumer.Failed, &handler.InjectedError{Point: consumer.AfterEffect})}},
		}},
	}}
	var b strings.Builder
	if err := Coverage(&b, run); err != nil {
		t.Fatal(err)
	}
	got := b.String()
	for _, want := range []string{
		"\n    after-check     forced race (a.yaml) [held]\n",
		"\n    after-effect    rollback (b.yaml)\n",
		"\nnever reached: before-begin, after-marker, after-commit\n",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("coverage lacks %q:\n%s", want, got)
		}
	}
	// none reaches neither after-check nor after-marker; neither strategy
	// after-external: each strategy lists 5 and 3 points.
	if n := strings.Count(got, "\n    "); n != 5+3 || strings.Contains(got, "after-external") {
		t.Errorf("%d points listed, want 8 and no after-external:\n%s", n, got)
	}
}

// A runtime error in a file that ran part way sits in that file's suite,
// as an <error>, beside the checks that finished; names stay unique.
func TestJUnitHarnessErrors(t *testing.T) {
	run := &Run{Store: StoreSQLiteMemory, Seed: 7,
		Files: []*runner.FileResult{{File: "a.yaml", Name: "a", Strategy: handler.EventID, Checks: []runner.CheckResult{
			{Name: "first", Passed: true, Line: said("ok")},
		}}},
		Errors: []*problem.Error{
			{Kind: problem.Environment, Pos: consumer.Location{File: "a.yaml"}, Msg: "database is locked"},
			{Kind: problem.InvalidInput, Pos: consumer.Location{File: "b.yaml", Line: 2, Col: 3}, Msg: "unknown field \"x\""},
			{Kind: problem.InvalidInput, Pos: consumer.Location{File: "b.yaml", Line: 2, Col: 3}, Msg: "another mistake at the same place"},
		},
	}
	var buf bytes.Buffer
	if err := JUnit(&buf, run); err != nil {
		t.Fatal(err)
	}
	out := buf.String()
	for _, want := range []string{
		`<testsuites name="redeliver" tests="4" failures="0" errors="3"`,
		`<testsuite name="a" tests="2" failures="0" errors="1"`,
		`<testcase name="run" classname="a.yaml"`,
		`<error message="database is locked (a.yaml)" type="runtime">`,
		`<testcase name="validate (line 2, column 3)" classname="b.yaml"`,
		`<testcase name="validate (line 2, column 3) #2" classname="b.yaml"`,
	} {
		if !strings.Contains(out, want) {
			t.Errorf("JUnit lacks %s\n%s", want, out)
		}
	}
	xmllint(t, out)
	if run.Verdict() != invariant.Error {
		t.Errorf("verdict %s, want %s", run.Verdict(), invariant.Error)
	}
}

// Characters XML cannot carry become U+FFFD; line breaks stay.
func TestXMLText(t *testing.T) {
	tests := []struct{ in, want string }{
		{"a < b & c > d", "a &lt; b &amp; c &gt; d"},
		{"two\nlines\ttab", "two\nlines\ttab"},
		{"bell\x07", "bell\uFFFD"},
		{"cr\r", "cr&#xD;"},
	}
	for _, tt := range tests {
		if got := xmlText(tt.in); got != tt.want {
			t.Errorf("xmlText(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

func TestParseFormat(t *testing.T) {
	for _, f := range Formats {
		got, err := ParseFormat(string(f))
		if err != nil || got != f {
			t.Errorf("ParseFormat(%q) = %q, %v", f, got, err)
		}
	}
	for _, bad := range []string{"", "JSON", "xml", "github"} {
		if _, err := ParseFormat(bad); err == nil {
			t.Errorf("ParseFormat(%q) accepted it", bad)
		}
	}
}

// Render refuses a format it does not know rather than writing nothing.
func TestRenderUnknown(t *testing.T) {
	var buf bytes.Buffer
	if err := Render(&buf, Format("pdf"), &Run{}, Options{}); err == nil || buf.Len() > 0 {
		t.Errorf("Render(pdf) = %v, wrote %q", err, buf.String())
	}
}

func xmllint(t *testing.T, out string) {
	t.Helper()
	schema := filepath.Join("..", "..", "testdata", "junit", "junit-10.xsd")
	path, err := exec.LookPath("xmllint")
	if err != nil {
		if os.Getenv("CI") != "" {
			t.Fatal("xmllint not installed (Debian: libxml2-utils)")
		}
		t.Skip("xmllint not installed (Debian: libxml2-utils); skipping the JUnit schema check")
	}
	file := filepath.Join(t.TempDir(), "report.xml")
	if err := os.WriteFile(file, []byte(out), 0o644); err != nil {
		t.Fatal(err)
	}
	msg, err := exec.Command(path, "--noout", "--schema", schema, file).CombinedOutput()
	if err != nil {
		t.Errorf("xmllint rejects the JUnit report: %v\n%s\n%s", err, msg, out)
	}
}

// TestTargetCrashCoverage: --coverage of a target run lists the checks
// that crash the consumer, with when their kills came against the
// answer, and counts those whose kills all came after it; a target has
// no row in the handler's fault point matrix, and its JSON report sorts
// each check's kills.
func TestTargetCrashCoverage(t *testing.T) {
	crashes := func(before, after, unknown int) consumer.Counters {
		return consumer.Counters{Crashed: before + after + unknown, CrashedBeforeAnswer: before, CrashedAfterAnswer: after}
	}
	run := &Run{Store: StoreTarget, Files: []*runner.FileResult{
		{File: "t.yaml", Strategy: "target", Target: "exec consumer", Checks: []runner.CheckResult{
			{Name: "killed 5ms in", Passed: true, Counters: crashes(0, 1, 0)},
			{Name: "swept", Passed: true, Counters: crashes(6, 1, 0)},
			{Name: "no crash", Passed: true},
		}},
	}}
	var b strings.Builder
	if err := Coverage(&b, run); err != nil {
		t.Fatal(err)
	}
	got := b.String()
	for _, want := range []string{
		"\n  killed 5ms in: 1 crash after the answer: interrupted no delivery\n",
		"\n  swept: 7 crashes (6 before the answer, 1 after)\n",
		"\n1 of 2 checks that crash interrupted no delivery: killed 5ms in\n",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("coverage lacks %q:\n%s", want, got)
		}
	}
	if strings.Contains(got, "never reached") || strings.Contains(got, "no crash") || len(coverageOf(run)) != 0 {
		t.Errorf("a target's coverage speaks of the handler's fault points or of a check that crashed nothing:\n%s", got)
	}
	// One check that crashes: its verb agrees with it.
	one := &Run{Store: StoreTarget, Files: []*runner.FileResult{
		{File: "t.yaml", Strategy: "target", Target: "exec consumer", Checks: []runner.CheckResult{
			{Name: "killed 5ms in", Passed: true, Counters: crashes(0, 1, 0)},
		}},
	}}
	var b1 strings.Builder
	if err := Coverage(&b1, one); err != nil {
		t.Fatal(err)
	}
	if want := "\n1 of 1 check that crashes interrupted no delivery: killed 5ms in\n"; !strings.Contains(b1.String(), want) {
		t.Errorf("coverage lacks %q:\n%s", want, b1.String())
	}
	d := NewDocument(run)
	c := d.Files[0].Checks
	if c[0].Crashes == nil || *c[0].Crashes != (CrashesDoc{AfterAnswer: 1}) || *c[1].Crashes != (CrashesDoc{BeforeAnswer: 6, AfterAnswer: 1}) || c[2].Crashes != nil {
		t.Errorf("JSON crashes = %+v, %+v, %+v", c[0].Crashes, c[1].Crashes, c[2].Crashes)
	}
}

// TestTargetStoreAndInvariants: the structured reports of a target run
// name no store of redeliver's (the consumer keeps its own database),
// and list only the invariants a target is judged by.
func TestTargetStoreAndInvariants(t *testing.T) {
	judged := []*invariant.Invariant{invariant.DuplicateEffect, invariant.LostEffect}
	target := &runner.FileResult{File: "t.yaml", Strategy: "target", Target: "exec consumer", Invariants: judged,
		Checks: []runner.CheckResult{{Name: "a", Passed: true}}}
	handlerFile := &runner.FileResult{File: "h.yaml", Strategy: handler.EventID, Checks: []runner.CheckResult{{Name: "b", Passed: true}}}
	names := func(d *Document) []string {
		var out []string
		for _, i := range d.Invariants {
			out = append(out, i.Name)
		}
		return out
	}
	d := NewDocument(&Run{Command: "run", Store: StoreSQLiteMemory, Files: []*runner.FileResult{target}})
	if got := names(d); !reflect.DeepEqual(got, []string{"duplicate-effect", "lost-effect"}) || d.Boundaries.Store != StoreTarget {
		t.Errorf("a target run lists invariants %v and store %q", got, d.Boundaries.Store)
	}
	mixed := NewDocument(&Run{Command: "run", Store: StoreSQLiteMemory, Files: []*runner.FileResult{target, handlerFile}})
	if len(mixed.Invariants) != len(invariant.BuiltIn()) || mixed.Boundaries.Store != StoreSQLiteMemory {
		t.Errorf("a run with a handler file lists %d invariants and store %q", len(mixed.Invariants), mixed.Boundaries.Store)
	}
	var b bytes.Buffer
	if err := JUnit(&b, &Run{Command: "run", Store: StoreSQLiteMemory, Files: []*runner.FileResult{target, handlerFile}}); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(b.String(), `<property name="store" value="target">`) || !strings.Contains(b.String(), `<property name="store" value="sqlite-memory">`) {
		t.Errorf("JUnit stores:\n%s", b.String())
	}
}

// TestTargetReplayText: a failing replay into a target shows its line,
// each broken invariant once with its count and first 5 breaches (-v:
// every one), a verdict with its --seed, and one annotation per invariant.
func TestTargetReplayText(t *testing.T) {
	dup := replay.Violation{Invariant: string(invariant.DuplicateEffect.Name), Count: 7}
	for i := 1; i <= 7; i++ {
		key := "O-" + string(rune('0'+i))
		dup.Examples = append(dup.Examples, replay.Example{Event: "e", Key: key, Detail: "key " + key + " has 2 rows in payments", At: []replay.Place{{File: "cap.ndjson", Line: i}}})
	}
	lost := replay.Violation{Invariant: string(invariant.LostEffect.Name), Count: 1, Examples: []replay.Example{
		{Event: "e9", Detail: "event e9 was acked but key O-9 has no row in payments", At: []replay.Place{{File: "cap.ndjson", Line: 9}}}}}
	rep := &replay.Report{Seed: 7, Inputs: []replay.Input{{File: "cap.ndjson", Format: "cloudevents"}}, Verdict: invariant.Fail,
		Invariants: []replay.InvariantCheck{{Name: dup.Invariant, Broken: 7}, {Name: lost.Invariant, Broken: 1}},
		Violations: []replay.Violation{dup, lost},
		Counters:   consumer.Counters{Deliveries: 9, Processed: 9, Effects: 15},
		Target:     &replay.Target{File: "t.yaml", Consumer: "exec c", Effects: "table payments", Given: []string{"cap.ndjson"}, Table: "payments"}}
	r := &Replay{Report: rep}
	var b strings.Builder
	if err := r.Render(&b, FormatText, Options{}); err != nil {
		t.Fatal(err)
	}
	want := "target: exec c; effects: table payments\n" +
		"replay of cap.ndjson into the target: 9 deliveries (9 acked, 0 conflicts, 0 not acked, 0 crashes), 15 effect rows in payments; caught duplicate-effect, lost-effect\n" +
		"invariant duplicate-effect broken 7 times\n" +
		"  key O-1 has 2 rows in payments (cap.ndjson:1)\n  key O-2 has 2 rows in payments (cap.ndjson:2)\n  key O-3 has 2 rows in payments (cap.ndjson:3)\n" +
		"  key O-4 has 2 rows in payments (cap.ndjson:4)\n  key O-5 has 2 rows in payments (cap.ndjson:5)\n" +
		"  and 2 more (every one with -v, in the JSON report, or in --findings FILE)\n" +
		"invariant lost-effect broken 1 time\n  event e9 was acked but key O-9 has no row in payments (cap.ndjson:9)\n" +
		"FAIL: duplicate-effect, lost-effect (seed 7)\n"
	if b.String() != want {
		t.Errorf("got\n%s\nwant\n%s", b.String(), want)
	}
	b.Reset()
	if err := r.Render(&b, FormatText, Options{Verbose: true}); err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(b.String(), "has 2 rows"); n != 7 || strings.Contains(b.String(), "more") {
		t.Errorf("-v shows %d breaches of 7:\n%s", n, b.String())
	}
	b.Reset()
	if err := r.Annotate(&b); err != nil {
		t.Fatal(err)
	}
	if got := b.String(); strings.Count(got, "::error") != 2 || !strings.Contains(got, "::error file=cap.ndjson,line=1,title=redeliver replay%3A invariant duplicate-effect::broken 7 times: key O-1 has 2 rows in payments (delivered at cap.ndjson:1)\n") {
		t.Errorf("annotations:\n%s", got)
	}
}

// TestCoverageOfBrokerKills: a broker's instance kills cannot be placed
// against an answer, so neither --coverage of a run nor of a replay may
// say that they interrupted a delivery; what is known is still said.
func TestCoverageOfBrokerKills(t *testing.T) {
	crashes := func(before, after, unknown int) consumer.Counters {
		return consumer.Counters{Crashed: before + after + unknown, CrashedBeforeAnswer: before, CrashedAfterAnswer: after}
	}
	for _, tc := range []struct {
		name    string
		checks  []runner.CheckResult
		want    []string
		notWant string
	}{
		{"broker kills only", []runner.CheckResult{{Name: "kafka kill", Counters: crashes(0, 0, 2)}},
			[]string{
				"\n  kafka kill: 2 crashes, not known whether before the consumer's ack: not known whether any interrupted a delivery\n",
				"\n1 of 1 check that crashes killed instances of a consumer that reads from a broker, and redeliver does not know whether those kills interrupted a delivery: kafka kill\n",
			}, "every check that crashes interrupted"},
		{"broker and exec", []runner.CheckResult{{Name: "exec kill", Counters: crashes(1, 0, 0)}, {Name: "late", Counters: crashes(0, 1, 0)}, {Name: "kafka kill", Counters: crashes(0, 0, 1)}},
			[]string{
				"\n1 of 3 checks that crash interrupted no delivery: late\n",
				"\n1 of 3 checks that crash killed instances of a consumer that reads from a broker, and redeliver does not know whether those kills interrupted a delivery: kafka kill\n",
			}, "every check that crashes interrupted"},
		{"every kill placed before its answer", []runner.CheckResult{{Name: "exec kill", Counters: crashes(2, 1, 0)}},
			[]string{"\nevery check that crashes interrupted a delivery (1 check)\n"}, "does not know"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			run := &Run{Store: StoreTarget, Files: []*runner.FileResult{{File: "t.yaml", Strategy: "target", Target: "consumer", Checks: tc.checks}}}
			var b strings.Builder
			if err := Coverage(&b, run); err != nil {
				t.Fatal(err)
			}
			for _, w := range tc.want {
				if !strings.Contains(b.String(), w) {
					t.Errorf("coverage lacks %q:\n%s", w, b.String())
				}
			}
			if strings.Contains(b.String(), tc.notWant) {
				t.Errorf("coverage says %q:\n%s", tc.notWant, b.String())
			}
		})
	}
	for _, tc := range []struct {
		name    string
		c       consumer.Counters
		want    string
		notWant string
	}{
		{"kill-every", crashes(0, 0, 14), "  --crash, --kill-every: 14 crashes, not known whether before the consumer's ack; redeliver does not know whether any interrupted a delivery: it killed consumer instances, not a delivery it made\n", "a kill before the answer interrupted"},
		{"crash", crashes(2, 1, 0), "  --crash, --kill-every: 3 crashes (2 before the answer, 1 after); a kill before the answer interrupted a delivery\n", "does not know"},
	} {
		t.Run("replay "+tc.name, func(t *testing.T) {
			r := &Replay{Report: &replay.Report{Target: &replay.Target{File: "t.yaml"}, Counters: tc.c}}
			var b strings.Builder
			if err := ReplayCoverage(&b, r); err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(b.String(), tc.want) {
				t.Errorf("replay coverage lacks %q:\n%s", tc.want, b.String())
			}
			if strings.Contains(b.String(), tc.notWant) {
				t.Errorf("replay coverage says %q:\n%s", tc.notWant, b.String())
			}
		})
	}
}
