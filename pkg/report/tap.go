package report

import (
	"bytes"
	"fmt"
	"io"
	"strings"

	"github.com/redeliver/redeliver/pkg/consumer"
	"github.com/redeliver/redeliver/pkg/problem"
	"github.com/redeliver/redeliver/pkg/runner"
	"go.yaml.in/yaml/v3"

	"github.com/redeliver/redeliver/pkg/escape"
)

// tapDiagnostic is the YAML block under a test point that did not pass.
type tapDiagnostic struct {
	Message   string       `yaml:"message"`
	Severity  string       `yaml:"severity"`
	Expected  string       `yaml:"expected,omitempty"`
	Got       string       `yaml:"got,omitempty"`
	Invariant string       `yaml:"invariant,omitempty"`
	At        *tapAt       `yaml:"at,omitempty"`
	More      []tapFailure `yaml:"failures,omitempty"` // every failure, when there is more than one
	Schedules int          `yaml:"schedules,omitempty"`
	// Why and Fix are the check's diagnosis (pkg/diagnose): the pattern
	// and its evidence in words, and the change that fixes it.
	Why string `yaml:"why,omitempty"`
	Fix string `yaml:"fix,omitempty"`
	// Statements are the statement trace of the delivery a statement
	// fault landed in.
	Statements []string `yaml:"statements,omitempty"`
}

// tapSchedules is the YAML block under a passing test point of an explored
// check: how many schedules it was run under.
type tapSchedules struct {
	Schedules int `yaml:"schedules"`
}

type tapFailure struct {
	Message   string `yaml:"message"`
	Expected  string `yaml:"expected,omitempty"`
	Got       string `yaml:"got,omitempty"`
	Invariant string `yaml:"invariant,omitempty"`
	At        *tapAt `yaml:"at,omitempty"`
}

type tapAt struct {
	File   string `yaml:"file"`
	Line   int    `yaml:"line,omitempty"`
	Column int    `yaml:"column,omitempty"`
}

func tapLocation(l consumer.Location) *tapAt {
	if l.File == "" {
		return nil
	}
	return &tapAt{File: l.File, Line: l.Line, Column: l.Col}
}

// TAP writes the run as TAP version 13: a plan, one test point per check
// (and per harness error), and a YAML diagnostic block under each one that
// did not pass.
func TAP(w io.Writer, run *Run) error {
	var b strings.Builder
	b.WriteString("TAP version 13\n")
	fmt.Fprintf(&b, "1..%d\n", run.checks()+len(run.Errors))
	point := tapPoints(&b)
	for _, f := range run.Files {
		fmt.Fprintf(&b, "# %s (%s)\n", oneLine(f.Name), oneLine(f.File))
		for _, c := range f.Checks {
			var diag any
			switch {
			case !c.Passed:
				d := failureDiagnostic(c.Failures)
				d.Schedules = c.Schedules
				if lines := diagnosisLines(diagnosisOf(f, &c)); len(lines) > 0 {
					d.Why = strings.TrimPrefix(lines[0], "why: ")
					if len(lines) > 1 {
						d.Fix = strings.TrimPrefix(lines[1], "fix: ")
					}
				}
				if len(c.Trace) > 0 {
					d.Statements = traceLines(c.Trace, false)
				}
				diag = d
			case c.Schedules > 0:
				diag = tapSchedules{c.Schedules}
			}
			if err := point(c.Passed, c.Name, diag); err != nil {
				return err
			}
		}
		for _, e := range run.errorsOf(f.File) {
			if err := point(false, errorTitle(e), errorDiagnostic(e)); err != nil {
				return err
			}
		}
	}
	for _, e := range run.strayErrors() {
		if err := point(false, errorTitle(e), errorDiagnostic(e)); err != nil {
			return err
		}
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// writeTAPDiagnostic writes a YAML diagnostic block, indented under its
// test point.
func writeTAPDiagnostic(b *strings.Builder, diag any) error {
	var y bytes.Buffer
	enc := yaml.NewEncoder(&y)
	enc.SetIndent(2)
	if err := enc.Encode(diag); err != nil {
		return err
	}
	b.WriteString("  ---\n")
	for _, line := range strings.SplitAfter(strings.TrimSuffix(y.String(), "\n"), "\n") {
		b.WriteString("  " + line)
	}
	b.WriteString("\n  ...\n")
	return nil
}

func failureDiagnostic(fs []runner.Failure) *tapDiagnostic {
	first := fs[0]
	expected, got := ExpectedGot(first)
	d := &tapDiagnostic{Message: FailureMessage(first), Severity: "fail", Expected: expected, Got: got, Invariant: string(first.Invariant), At: tapLocation(first.Pos)}
	if len(fs) > 1 {
		for _, f := range fs {
			expected, got := ExpectedGot(f)
			d.More = append(d.More, tapFailure{Message: FailureMessage(f), Expected: expected, Got: got, Invariant: string(f.Invariant), At: tapLocation(f.Pos)})
		}
	}
	return d
}

// errorTitle names a harness error in one line: the file, then what could
// not be done there.
func errorTitle(e *problem.Error) string {
	if e.Pos.File == "" {
		return errorCase(e).Name
	}
	return e.Pos.File + ": " + errorCase(e).Name
}

func errorDiagnostic(e *problem.Error) *tapDiagnostic {
	return &tapDiagnostic{Message: e.Msg, Severity: "error", At: tapLocation(e.Pos)}
}

// tapEscape escapes a test point description as TAP asks: a backslash
// and a hash are escaped with a backslash, and it stays on one line.
func tapEscape(s string) string {
	return strings.NewReplacer(`\`, `\\`, "#", `\#`).Replace(oneLine(s))
}

// oneLine keeps text that may hold input on one line, with nothing in it a
// terminal or a TAP parser would act on.
func oneLine(s string) string {
	return escape.Line(strings.NewReplacer("\r\n", " ", "\n", " ", "\r", " ").Replace(s))
}

// tapPoints returns a function that writes numbered test points to b, each
// with its YAML diagnostic when it has one (diag: a *tapDiagnostic, nil
// for none, or another YAML block).
func tapPoints(b *strings.Builder) func(ok bool, desc string, diag any) error {
	n := 0
	return func(ok bool, desc string, diag any) error {
		n++
		status := "ok"
		if !ok {
			status = "not ok"
		}
		fmt.Fprintf(b, "%s %d - %s\n", status, n, tapEscape(desc))
		if d, isDiag := diag.(*tapDiagnostic); diag == nil || isDiag && d == nil {
			return nil
		}
		return writeTAPDiagnostic(b, diag)
	}
}
