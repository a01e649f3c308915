package report

import (
	"encoding/xml"
	"fmt"
	"github.com/redeliver/redeliver/pkg/diagnose"
	"io"
	"strconv"
	"strings"
	"time"

	"github.com/redeliver/redeliver/pkg/consumer"
	"github.com/redeliver/redeliver/pkg/problem"
	"github.com/redeliver/redeliver/pkg/runner"
)

// The JUnit XML that GitLab, GitHub reporters and Jenkins read: one
// <testsuite> per scenario file (with its file), one <testcase> per check
// (classname = the file), <failure> for a failed check, <error> only for
// the harness, <system-out> with the check's report line.
type junitSuites struct {
	XMLName  xml.Name     `xml:"testsuites"`
	Name     string       `xml:"name,attr"`
	Tests    int          `xml:"tests,attr"`
	Failures int          `xml:"failures,attr"`
	Errors   int          `xml:"errors,attr"`
	Time     string       `xml:"time,attr"`
	Suites   []junitSuite `xml:"testsuite"`
}

type junitSuite struct {
	Name       string          `xml:"name,attr"`
	Tests      int             `xml:"tests,attr"`
	Failures   int             `xml:"failures,attr"`
	Errors     int             `xml:"errors,attr"`
	Skipped    int             `xml:"skipped,attr"`
	Time       string          `xml:"time,attr"`
	File       string          `xml:"file,attr,omitempty"`
	Properties *junitProps     `xml:"properties,omitempty"`
	Cases      []junitTestCase `xml:"testcase"`
}

type junitProps struct {
	Props []junitProp `xml:"property"`
}

type junitProp struct {
	Name  string `xml:"name,attr"`
	Value string `xml:"value,attr"`
}

type junitTestCase struct {
	Name      string        `xml:"name,attr"`
	Classname string        `xml:"classname,attr"`
	Time      string        `xml:"time,attr"`
	Failures  []junitResult `xml:"failure"`
	Errors    []junitResult `xml:"error"`
	SystemOut *junitText    `xml:"system-out,omitempty"`
}

// junitText is element text written with its line breaks kept as they are
// (encoding/xml would write each as a character reference).
type junitText struct {
	Text string `xml:",innerxml"`
}

func newJUnitText(s string) *junitText { return &junitText{Text: xmlText(s)} }

// xmlText escapes text for element content; characters XML cannot carry
// at all become U+FFFD.
func xmlText(s string) string {
	var b strings.Builder
	for _, r := range s {
		switch {
		case r == '&':
			b.WriteString("&amp;")
		case r == '<':
			b.WriteString("&lt;")
		case r == '>':
			b.WriteString("&gt;")
		case r == '\r':
			b.WriteString("&#xD;")
		case r == '\t' || r == '\n' || (r >= 0x20 && r <= 0xD7FF) || (r >= 0xE000 && r <= 0xFFFD) || (r >= 0x10000 && r <= 0x10FFFF):
			b.WriteRune(r)
		default:
			b.WriteRune('\uFFFD')
		}
	}
	return b.String()
}

type junitResult struct {
	Message string `xml:"message,attr"`
	Type    string `xml:"type,attr"`
	Body    string `xml:",innerxml"` // escaped with xmlText
}

// junitTime is a duration as the schema's SUREFIRE_TIME pattern allows it:
// seconds with a dot and three decimals.
func junitTime(d time.Duration) string {
	return strconv.FormatFloat(seconds(d), 'f', 3, 64)
}

// JUnit writes the run as JUnit XML.
func JUnit(w io.Writer, run *Run) error {
	doc := junitSuites{Name: "redeliver", Time: junitTime(run.Duration)}
	props := func(f *runner.FileResult) *junitProps {
		store := run.Store
		if f.Target != "" {
			store = StoreTarget
		}
		p := &junitProps{Props: []junitProp{
			{Name: "strategy", Value: string(f.Strategy)},
			{Name: "store", Value: store},
			{Name: "seed", Value: strconv.FormatInt(run.Seed, 10)},
		}}
		if f.Target != "" {
			p.Props = append(p.Props, junitProp{Name: "target", Value: f.Target}, junitProp{Name: "effects", Value: f.Effects})
		}
		// A test case has no properties in the JUnit schema: the file's
		// explored checks each get one, named after the check.
		for _, c := range f.Checks {
			if c.Schedules > 0 {
				p.Props = append(p.Props, junitProp{Name: "schedules: " + c.Name, Value: strconv.Itoa(c.Schedules)})
			}
		}
		return p
	}
	for _, f := range run.Files {
		s := junitSuite{Name: f.Name, File: f.File, Properties: props(f)}
		// The suite's time is the sum of its cases' times as they are
		// written, each rounded to the millisecond, so that they add up
		// to it exactly, as a CI summary adds them.
		var total time.Duration
		for _, c := range f.Checks {
			d := c.Duration.Round(time.Millisecond)
			total += d
			tc := junitTestCase{Name: c.Name, Classname: f.File, Time: junitTime(d), SystemOut: newJUnitText(c.Name + ": " + CheckLine(c.Line))}
			if !c.Passed {
				first := c.Failures[0]
				tc.SystemOut = newJUnitText(c.Name + ": FAIL: " + located(first))
				tc.Failures = append(tc.Failures, junitResult{Message: located(first), Type: failureType(c.Failures), Body: xmlText(failureBody(c.Failures) + diagnosisBody(diagnosisOf(f, &c)) + traceBody(c.Trace))})
				s.Failures++
			}
			s.Cases = append(s.Cases, tc)
		}
		for _, e := range run.errorsOf(f.File) {
			s.Cases = append(s.Cases, errorCase(e))
			s.Errors++
		}
		s.Time = junitTime(total)
		s.Tests = len(s.Cases)
		uniqueNames(s.Cases)
		doc.Suites = append(doc.Suites, s)
	}
	// Files that never produced a result (they did not validate, or their
	// database could not be opened) get a suite holding their errors.
	doc.Suites = append(doc.Suites, errorSuites(run.strayErrors())...)
	return writeJUnit(w, doc)
}

// writeJUnit totals the suites into the document and writes it.
func writeJUnit(w io.Writer, doc junitSuites) error {
	for _, s := range doc.Suites {
		doc.Tests += s.Tests
		doc.Failures += s.Failures
		doc.Errors += s.Errors
	}
	if _, err := io.WriteString(w, xml.Header); err != nil {
		return err
	}
	enc := xml.NewEncoder(w)
	enc.Indent("", "  ")
	if err := enc.Encode(doc); err != nil {
		return err
	}
	_, err := io.WriteString(w, "\n")
	return err
}

// errorCase is a harness error as a test case, so CI shows it where it
// shows failures. Its name says what could not be done, and where.
func errorCase(e *problem.Error) junitTestCase {
	name := string(e.Kind)
	switch e.Kind {
	case problem.InvalidInput:
		name = "validate"
	case problem.Environment:
		name = "run"
	}
	switch {
	case e.Pos.Line > 0 && e.Pos.Col > 0:
		name += fmt.Sprintf(" (line %d, column %d)", e.Pos.Line, e.Pos.Col)
	case e.Pos.Line > 0:
		name += fmt.Sprintf(" (line %d)", e.Pos.Line)
	}
	msg := e.Msg
	if s := e.Pos.String(); s != "" {
		msg += " (" + s + ")"
	}
	classname := e.Pos.File
	if classname == "" {
		// Not about one file (a --db that cannot be used, an interrupt).
		name, classname = e.Kind.Words(), "redeliver"
	}
	return junitTestCase{Name: name, Classname: classname, Time: junitTime(0),
		Errors: []junitResult{{Message: msg, Type: string(e.Kind), Body: xmlText(msg)}}}
}

// failureType is "invariant" when every failure of the check is a broken
// invariant, else "expectation".
func failureType(fs []runner.Failure) string {
	for _, f := range fs {
		if f.Invariant == "" {
			return "expectation"
		}
	}
	return "invariant"
}

// failureBody lists every failure of a check: what was expected, what
// happened, and where.
func failureBody(fs []runner.Failure) string {
	var b strings.Builder
	for i, f := range fs {
		if i > 0 {
			b.WriteString("\n")
		}
		fmt.Fprintf(&b, "%s\n", FailureMessage(f))
		if expected, got := ExpectedGot(f); expected != "" || got != "" {
			fmt.Fprintf(&b, "expected: %s\ngot: %s\n", expected, got)
		}
		if s := f.Pos.String(); s != "" {
			fmt.Fprintf(&b, "at: %s\n", s)
		}
	}
	return b.String()
}

// diagnosisBody is a check's diagnosis after its failures.
func diagnosisBody(d *diagnose.Diagnosis) string {
	if d == nil {
		return ""
	}
	return "\n" + strings.Join(diagnosisLines(d), "\n") + "\n"
}

// traceBody lists a check's statement trace after its failures.
func traceBody(stmts []consumer.Statement) string {
	if len(stmts) == 0 {
		return ""
	}
	return "\n" + traceHeading(stmts) + "\n" + strings.Join(traceLines(stmts, false), "\n") + "\n"
}

// uniqueNames numbers test cases whose names repeat within a suite: report
// readers key results by name, and a repeat would hide one.
func uniqueNames(cases []junitTestCase) {
	seen := map[string]int{}
	for i := range cases {
		n := cases[i].Name
		seen[n]++
		if seen[n] > 1 {
			cases[i].Name = fmt.Sprintf("%s #%d", n, seen[n])
		}
	}
}
