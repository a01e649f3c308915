package report

import (
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	"github.com/redeliver/redeliver/pkg/consumer"
	"github.com/redeliver/redeliver/pkg/problem"
	"github.com/redeliver/redeliver/pkg/replay"
)

// Replay is what redeliver replay produced, as every report format sees
// it: the replay's report, or, when the replay stopped (bad input, a
// database error), an unfinished report and the harness errors.
type Replay struct {
	Report   *replay.Report // never nil; see replay.Unfinished
	Errors   []*problem.Error
	Duration time.Duration
}

// Render writes the replay in one format. Structured formats ignore colour.
func (r *Replay) Render(w io.Writer, f Format, opts Options) error {
	for _, row := range formats {
		if row.f == f {
			return row.replay(w, r, opts)
		}
	}
	return errors.New("unknown report format " + string(f))
}

// textReplay is the text report of a replay, or the errors that stopped
// it.
func textReplay(w io.Writer, r *Replay, opts Options) error {
	if r.Incomplete() {
		return textErrors(w, r.Errors, "replay")
	}
	if err := ReplayText(w, r.Report, opts); err != nil {
		return err
	}
	if opts.Coverage {
		return ReplayCoverage(w, r)
	}
	return nil
}

// Incomplete reports whether the replay stopped before it had a verdict.
func (r *Replay) Incomplete() bool { return len(r.Errors) > 0 }

// replayCheck is one thing a replay decided, as the CI formats list it: an
// invariant it checked, or a capture finding --fail-on asked about.
type replayCheck struct {
	name      string // unique within the replay
	passed    bool
	line      string // the report line
	message   string // why it failed, in one sentence
	kind      string // "invariant" or "capture-finding"
	invariant string
	expected  string
	got       string
	details   []string // every example, with the capture lines behind it
	at        consumer.Location
}

// checks lists what the replay decided: each invariant it checked, then
// each --fail-on finding.
func (r *Replay) checks() []replayCheck {
	rep := r.Report
	var out []replayCheck
	deliveries := count(int64(rep.Counters.Deliveries), "delivery", "deliveries")
	for _, inv := range rep.Invariants {
		c := replayCheck{name: "invariant " + inv.Name, passed: inv.Broken == 0, kind: "invariant", invariant: inv.Name,
			expected: "never: " + inv.Description, at: r.firstInput()}
		if c.passed {
			c.line = fmt.Sprintf("%s holds over %s", inv.Name, deliveries)
			out = append(out, c)
			continue
		}
		c.got = "broken " + count(inv.Broken, "time", "times")
		c.line = inv.Name + " " + c.got
		c.message = c.got
		for _, v := range rep.Violations {
			if v.Invariant != inv.Name {
				continue
			}
			for i, x := range v.Examples {
				d := x.Detail
				if len(x.At) > 0 {
					d += " (delivered at " + places(x.At) + ")"
				}
				c.details = append(c.details, d)
				if i == 0 {
					c.message += ": " + d
					if len(x.At) > 0 {
						c.at = consumer.Location(x.At[0])
					}
				}
			}
		}
		out = append(out, c)
	}
	// A replay that does not count failures apart (a target's rejected
	// and unanswered deliveries are never-acked) goes on with --fail-on.
	if rep.Unexpected != nil {
		out = append(out, r.unexpectedCheck(deliveries))
	}
	return append(out, r.failOnChecks()...)
}

// unexpectedCheck is the built-in replay's check that no delivery failed
// where no fault was injected.
func (r *Replay) unexpectedCheck(deliveries string) replayCheck {
	rep := r.Report
	u := *rep.Unexpected
	c := replayCheck{name: "failures only where injected", passed: u.Count == 0, kind: "delivery",
		expected: "no delivery fails unless a fault was injected into it", got: count(u.Count, "delivery failed", "deliveries failed") + " without an injected fault", at: r.firstInput()}
	if c.passed {
		c.line = fmt.Sprintf("no delivery failed without an injected fault, over %s", deliveries)
	} else {
		c.line, c.message = c.got, c.got
		for i, x := range u.Examples {
			c.details = append(c.details, fmt.Sprintf("%s at %s: %s", x.Event, consumer.Location(x.At), x.Error))
			if i == 0 {
				c.message += ": " + c.details[0]
				c.at = consumer.Location(x.At)
			}
		}
	}
	return c
}

// failOnChecks are the checks of --fail-on, one per finding.
func (r *Replay) failOnChecks() []replayCheck {
	rep := r.Report
	var out []replayCheck
	failed := map[replay.Finding]bool{}
	for _, f := range rep.FailedOn {
		failed[f] = true
	}
	for _, f := range rep.FailOn {
		n, one, many := findingCount(rep.Capture, f)
		c := replayCheck{name: "fail-on " + string(f), passed: !failed[f], kind: "capture-finding",
			expected: "no " + many, got: count(n, one, many), at: r.firstInput()}
		if c.passed {
			c.line = "the capture holds no " + many
			out = append(out, c)
			continue
		}
		c.line = "the capture holds " + c.got
		c.message = c.line
		switch f {
		case replay.IdentityReuse:
			for i, x := range rep.Capture.ReuseExamples {
				c.details = append(c.details, fmt.Sprintf("id %s reused with a different payload at %s (first at %s)", x.ID, x.Then, x.First))
				if i == 0 && x.ThenAt.File != "" {
					c.at = x.ThenAt
				}
			}
		case replay.KeysWithSeveralIDs:
			for i, k := range rep.Capture.KeyExamples {
				c.details = append(c.details, fmt.Sprintf("business key %s under %d ids (%s), first at %s", k.Key, k.IDs, k.Some, k.First))
				if i == 0 && k.FirstAt.File != "" {
					c.at = k.FirstAt
				}
			}
		}
		if len(c.details) > 0 {
			c.message += ": " + c.details[0]
		}
		out = append(out, c)
	}
	return out
}

// firstInput is where a failure is reported when no capture line is known:
// the first capture file.
func (r *Replay) firstInput() consumer.Location {
	if len(r.Report.Inputs) == 0 {
		return consumer.Location{}
	}
	return consumer.Location{File: r.Report.Inputs[0].File}
}

func places(ps []replay.Place) string {
	s := make([]string, len(ps))
	for i, p := range ps {
		s[i] = consumer.Location(p).String()
	}
	return strings.Join(s, ", ")
}

// findingCount is how many of a finding the capture holds, and its words.
func findingCount(c replay.CaptureReport, f replay.Finding) (n int64, one, many string) {
	switch f {
	case replay.IdentityReuse:
		return c.IdentityReuse, "id reused with a different payload", "ids reused with a different payload"
	case replay.RepeatedIDs:
		return c.RepeatedIDs, "repeated id", "repeated ids"
	case replay.KeysWithSeveralIDs:
		return c.KeysWithSeveralIDs, "business key under several ids", "business keys under several ids"
	case replay.BadRecords:
		return c.BadRecords, "bad record", "bad records"
	}
	return 0, string(f), string(f)
}

// ReplayJUnit writes a replay as JUnit XML: one <testsuite> per capture
// (name and file = the capture), one <testcase> per invariant checked and
// per --fail-on finding, and <error> test cases for harness errors. The
// invariants are checked over the replay of all the captures together, so
// with several captures each suite carries the same invariant cases.
func ReplayJUnit(w io.Writer, r *Replay) error {
	rep := r.Report
	doc := junitSuites{Name: "redeliver replay", Time: junitTime(r.Duration)}
	if r.Incomplete() {
		doc.Suites = errorSuites(r.Errors)
	} else {
		checks := r.checks()
		for _, in := range rep.Inputs {
			props := append([]junitProp{{Name: "format", Value: in.Format}}, ranProps(rep)...)
			s := junitSuite{Name: in.File, File: in.File, Time: junitTime(r.Duration), Properties: &junitProps{Props: props}}
			for _, c := range checks {
				tc := junitTestCase{Name: c.name, Classname: in.File, Time: junitTime(0), SystemOut: newJUnitText(c.line)}
				if !c.passed {
					body := fmt.Sprintf("%s\nexpected: %s\ngot: %s\n", c.message, c.expected, c.got)
					if len(c.details) > 1 {
						body += "examples:\n"
						for _, d := range c.details {
							body += "  " + d + "\n"
						}
					}
					if s := c.at.String(); s != "" {
						body += "at: " + s + "\n"
					}
					tc.Failures = []junitResult{{Message: c.message, Type: c.kind, Body: xmlText(body)}}
					s.Failures++
				}
				s.Cases = append(s.Cases, tc)
			}
			s.Tests = len(s.Cases)
			doc.Suites = append(doc.Suites, s)
		}
	}
	return writeJUnit(w, doc)
}

// errorSuites holds harness errors, one suite per file they name (and one
// named redeliver for those about no file), in the order they came.
func errorSuites(errs []*problem.Error) []junitSuite {
	var order []string
	byFile := map[string][]*problem.Error{}
	for _, e := range errs {
		if _, ok := byFile[e.Pos.File]; !ok {
			order = append(order, e.Pos.File)
		}
		byFile[e.Pos.File] = append(byFile[e.Pos.File], e)
	}
	var out []junitSuite
	for _, file := range order {
		name := file
		if name == "" {
			name = "redeliver"
		}
		s := junitSuite{Name: name, File: file, Time: junitTime(0)}
		for _, e := range byFile[file] {
			s.Cases = append(s.Cases, errorCase(e))
		}
		s.Tests, s.Errors = len(s.Cases), len(s.Cases)
		uniqueNames(s.Cases)
		out = append(out, s)
	}
	return out
}

// ReplayTAP writes a replay as TAP version 13: one test point per invariant
// checked and per --fail-on finding (or per harness error), with a YAML
// diagnostic under each one that did not pass.
func ReplayTAP(w io.Writer, r *Replay) error {
	var b strings.Builder
	b.WriteString("TAP version 13\n")
	point := tapPoints(&b)
	if r.Incomplete() {
		fmt.Fprintf(&b, "1..%d\n", len(r.Errors))
		for _, e := range r.Errors {
			if err := point(false, errorTitle(e), errorDiagnostic(e)); err != nil {
				return err
			}
		}
		_, err := io.WriteString(w, b.String())
		return err
	}
	rep := r.Report
	checks := r.checks()
	fmt.Fprintf(&b, "1..%d\n", len(checks))
	var ins []string
	for _, in := range rep.Inputs {
		ins = append(ins, fmt.Sprintf("%s (%s)", in.File, in.Format))
	}
	head := append([]string{oneLine(strings.Join(ins, ", "))}, ranBy(rep, oneLine)...)
	fmt.Fprintf(&b, "# replay: %s; seed %d\n", strings.Join(head, "; "), rep.Seed)
	for _, c := range checks {
		var diag *tapDiagnostic
		if !c.passed {
			diag = &tapDiagnostic{Message: c.message, Severity: "fail", Expected: c.expected, Got: c.got, Invariant: c.invariant, At: tapLocation(c.at)}
			if len(c.details) > 1 {
				for _, d := range c.details {
					diag.More = append(diag.More, tapFailure{Message: d})
				}
			}
		}
		if err := point(c.passed, c.name, diag); err != nil {
			return err
		}
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// Annotate writes one ::error command per broken invariant and failed
// finding, on the capture line of its first example where that is known
// (else on the capture file), and one per harness error.
func (r *Replay) Annotate(w io.Writer) error {
	var b strings.Builder
	if !r.Incomplete() {
		for _, c := range r.checks() {
			if !c.passed {
				b.WriteString(errorCommand(c.at, "redeliver replay: "+c.name, c.message) + "\n")
			}
		}
	}
	for _, e := range r.Errors {
		b.WriteString(errorCommand(e.Pos, "redeliver: "+e.Kind.Words(), e.Msg) + "\n")
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// Summarize writes the replay as a step summary: a verdict heading, one
// row per invariant and finding, and the figures of the capture.
func (r *Replay) Summarize(w io.Writer) error {
	var b strings.Builder
	rep := r.Report
	var files []string
	for _, in := range rep.Inputs {
		files = append(files, in.File)
	}
	captures := strings.Join(files, ", ")
	if r.Incomplete() {
		fmt.Fprintf(&b, "### redeliver replay: ERROR, %s\n\n", countOf(len(r.Errors), "harness error"))
		b.WriteString("| capture | check | result | report |\n|---|---|---|---|\n")
		for _, e := range r.Errors {
			fmt.Fprintf(&b, "| %s | %s | ⚠️ error | %s |\n", cell(e.Pos.File), cell(errorCase(e).Name), cell(e.Msg))
		}
		b.WriteString("\n")
		_, err := io.WriteString(w, b.String())
		return err
	}
	checks := r.checks()
	failed := 0
	for _, c := range checks {
		if !c.passed {
			failed++
		}
	}
	if failed == 0 {
		fmt.Fprintf(&b, "### redeliver replay: PASS, %s passed\n\n", countOf(len(checks), "check"))
	} else {
		fmt.Fprintf(&b, "### redeliver replay: FAIL, %d of %s failed\n\n", failed, countOf(len(checks), "check"))
	}
	b.WriteString("| capture | check | result | report |\n|---|---|---|---|\n")
	for _, c := range checks {
		result, line := "✅ pass", c.line
		if !c.passed {
			result, line = "❌ fail", c.message
		}
		fmt.Fprintf(&b, "| %s | %s | %s | %s |\n", cell(captures), cell(c.name), result, cell(line))
	}
	fmt.Fprintf(&b, "\n%s\n\n", cell(replayFigures(rep)))
	_, err := io.WriteString(w, b.String())
	return err
}

// ranBy names what took a replay's deliveries, from the facts its
// report holds: the built-in handler's strategy and store, then the
// consumer redeliver reached and its effects ("target exec …"), each
// name given as the format escapes it (esc).
func ranBy(rep *replay.Report, esc func(string) string) []string {
	var out []string
	if rep.Strategy != "" {
		out = append(out, "strategy "+string(rep.Strategy)+" on "+esc(rep.Store))
	}
	if t := rep.Target; t != nil {
		out = append(out, "target "+esc(t.Consumer), "effects "+esc(t.Effects))
	}
	return out
}

// ranProps are the JUnit properties of what took a replay's deliveries,
// as run's JUnit names a file's: its strategy, the store (target for a
// consumer that keeps its own database), the run's seed, then the consumer and
// its effects.
func ranProps(rep *replay.Report) []junitProp {
	var props []junitProp
	if rep.Strategy != "" {
		props = append(props, junitProp{Name: "strategy", Value: string(rep.Strategy)})
	}
	store := StoreTarget
	if rep.Store != "" {
		store = replayStore(rep.Store)
	}
	props = append(props, junitProp{Name: "store", Value: store}, junitProp{Name: "seed", Value: strconv.FormatInt(rep.Seed, 10)})
	if t := rep.Target; t != nil {
		props = append(props, junitProp{Name: "target", Value: t.Consumer}, junitProp{Name: "effects", Value: t.Effects})
	}
	return props
}

// replayFigures is the last line of a replay's step summary: what took
// its deliveries and the run's seed, then its line, or the handler's outcomes.
func replayFigures(rep *replay.Report) string {
	var figures []string
	if line := replayLine(rep); line != "" {
		figures = append(figures, line)
	}
	if o := rep.Outcomes; o != nil {
		figures = append(figures, fmt.Sprintf("%s, %d processed, %d duplicate, %d conflict, %d failed, %d crashed, %s",
			count(int64(rep.Counters.Deliveries), "delivery", "deliveries"), o.Processed, o.Duplicate, o.Conflict, o.Failed, o.Crashed, count(rep.Effects, "effect", "effects")))
	}
	return fmt.Sprintf("%s: %s", strings.Join(append(ranBy(rep, func(s string) string { return s }), fmt.Sprintf("seed %d", rep.Seed)), ", "), strings.Join(figures, "; "))
}

// replayStore names a replay's store as run's JUnit reports name theirs
// (sqlite-memory, sqlite-file), so one CI query reads both.
func replayStore(store string) string {
	if strings.HasPrefix(store, "SQLite file") {
		return StoreSQLiteFile
	}
	return StoreSQLiteMemory
}
