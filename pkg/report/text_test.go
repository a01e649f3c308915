package report

import (
	"slices"
	"strings"
	"testing"

	"github.com/redeliver/redeliver/pkg/consumer"
	"github.com/redeliver/redeliver/pkg/handler"
	"github.com/redeliver/redeliver/pkg/replay"
	"github.com/redeliver/redeliver/pkg/runner"
)

func passing(name string) runner.CheckResult {
	return runner.CheckResult{Name: name, Passed: true, Line: said(name + " ok")}
}

func failing(name string) runner.CheckResult {
	return runner.CheckResult{Name: name, Failures: []runner.Failure{
		{Message: "step 1 expected conflict, got processed", Pos: consumer.Location{File: "s.yaml", Line: 31, Col: 9}},
		{Message: "step 2 expected 1 row in shipments, got 2", Pos: consumer.Location{File: "s.yaml", Line: 33, Col: 20}},
	}}
}

func TestText(t *testing.T) {
	one := &runner.FileResult{File: "a.yaml", Name: "a", Strategy: handler.EventID, Checks: []runner.CheckResult{passing("x"), passing("y")}}
	bad := &runner.FileResult{File: "b.yaml", Name: "b", Strategy: handler.EventID, Checks: []runner.CheckResult{passing("z"), failing("w")}}
	tests := []struct {
		name  string
		files []*runner.FileResult
		opts  Options
		want  string
	}{
		{"one file passes", []*runner.FileResult{one}, Options{}, "x: x ok\ny: y ok\nPASS: x, y\n"},
		{"one file fails", []*runner.FileResult{bad}, Options{},
			"z: z ok\nw: FAIL: step 1 expected conflict, got processed (s.yaml:31:9)\n  step 2 expected 1 row in shipments, got 2 (s.yaml:33:20)\nFAIL: 1 of 2 checks failed\n"},
		{"several files", []*runner.FileResult{one, bad}, Options{},
			"a (a.yaml)\n  x: x ok\n  y: y ok\nb (b.yaml)\n  z: z ok\n  w: FAIL: step 1 expected conflict, got processed (s.yaml:31:9)\n    step 2 expected 1 row in shipments, got 2 (s.yaml:33:20)\nFAIL: 1 of 4 checks failed in 2 files\n"},
		{"a consumer's stderr lines on lines of their own", []*runner.FileResult{{File: "e.yaml", Name: "e", Strategy: handler.EventID, Checks: []runner.CheckResult{{Name: "v", Failures: []runner.Failure{
			{Message: "step 1 expected acked, got unacked (exit status 3); its last stderr lines:\n    first\n    PASS: forged \x1b[2J", Pos: consumer.Location{File: "e.yaml", Line: 9, Col: 9}},
		}}}}}, Options{},
			"v: FAIL: step 1 expected acked, got unacked (exit status 3); its last stderr lines (e.yaml:9:9):\n    | first\n    | PASS: forged \\x1b[2J\nFAIL: 1 of 1 checks failed\n"},
		{"colour", []*runner.FileResult{one}, Options{Color: true}, "x: x ok\ny: y ok\n\x1b[32;1mPASS:\x1b[0;22m x, y\n"},
		{"verbose adds the counters", []*runner.FileResult{one}, Options{Verbose: true},
			"x: x ok\ny: y ok\ncounters (event-id): 0 deliveries, 0 duplicate deliveries, 0 skipped duplicates, 0 identity conflicts, 0 key conflicts, 0 failed, 0 failed after an external call, 0 crashed, 0 effects\nPASS: x, y\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var b strings.Builder
			if err := Text(&b, tt.files, tt.opts); err != nil {
				t.Fatal(err)
			}
			if b.String() != tt.want {
				t.Errorf("got:\n%q\nwant:\n%q", b.String(), tt.want)
			}
		})
	}
}

// TestPatternGroups: a replay into a target groups each invariant's
// breaches by the pattern of their kill's statements, in the order each
// first came, the breaches without a trace last; none when no breach has
// a diagnosis.
func TestPatternGroups(t *testing.T) {
	x := func(key, pattern string) replay.Example { return replay.Example{Key: key, Pattern: pattern} }
	tests := []struct {
		name    string
		xs      []replay.Example
		verbose bool
		want    []string
	}{
		{"no diagnosis", []replay.Example{x("O-1", ""), x("O-2", "")}, false, nil},
		{"grouped", []replay.Example{x("O-1", ""), x("O-2", "ack-before-commit"), x("O-3", "not-recognised"), x("O-4", "ack-before-commit")}, false,
			[]string{"why: ack before commit: 2 breaches (O-2, O-4)", "why: not recognised: 1 breach (O-3)", "why: no kill of its own traced: 1 breach (O-1)"}},
		{"cut", []replay.Example{x("O-1", "check-then-act"), x("O-2", "check-then-act"), x("O-3", "check-then-act"), x("O-4", "check-then-act"), x("O-5", "check-then-act"), x("O-6", "check-then-act")}, false,
			[]string{"why: check-then-act: 6 breaches (O-1, O-2, O-3, O-4, O-5, …)"}},
		{"every one with -v", []replay.Example{x("O-1", "check-then-act"), x("O-2", "check-then-act"), x("O-3", "check-then-act"), x("O-4", "check-then-act"), x("O-5", "check-then-act"), x("O-6", "check-then-act")}, true,
			[]string{"why: check-then-act: 6 breaches (O-1, O-2, O-3, O-4, O-5, O-6)"}},
		{"the event when no key", []replay.Example{{Event: "evt-1", Pattern: "effect-and-marker-apart"}}, false, []string{"why: effect and marker apart: 1 breach (evt-1)"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := patternGroups(tt.xs, tt.verbose); !slices.Equal(got, tt.want) {
				t.Errorf("got %q, want %q", got, tt.want)
			}
		})
	}
}
