// Package report renders results: the text report a person reads, and the
// structured formats CI systems parse. It never opens a database.
//
// Of this module it imports the results it renders (pkg/runner, pkg/replay,
// pkg/ledger, pkg/diagnose, pkg/invariant, pkg/report/words) with their
// vocabulary (pkg/consumer, pkg/handler, pkg/problem, pkg/escape), and it
// never links a store, a database driver, a broker client or a user's
// consumer (pkg/external).
package report

import (
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/fatih/color"
	"github.com/redeliver/redeliver/pkg/consumer"
	"github.com/redeliver/redeliver/pkg/runner"

	"github.com/redeliver/redeliver/pkg/escape"
)

type painter struct {
	pass, fail, dim *color.Color
}

func newPainter(on bool) painter {
	p := painter{pass: color.New(color.FgGreen, color.Bold), fail: color.New(color.FgRed, color.Bold), dim: color.New(color.Faint)}
	for _, c := range []*color.Color{p.pass, p.fail, p.dim} {
		if on {
			c.EnableColor()
		} else {
			c.DisableColor()
		}
	}
	return p
}

// Text writes the text report: one line per check, then a verdict.
// With several files, each file's lines follow a heading.
func Text(w io.Writer, files []*runner.FileResult, opts Options) error {
	p := newPainter(opts.Color)
	var b strings.Builder
	several := len(files) > 1
	total, failed := 0, 0
	var names []string
	for _, f := range files {
		indent := ""
		if several {
			indent = "  "
			fmt.Fprintf(&b, "%s (%s)\n", escape.Line(f.Name), escape.Line(f.File))
		}
		if f.Target != "" {
			fmt.Fprintf(&b, "%s%s\n", indent, p.dim.Sprint(escape.Line("target: "+f.Target+"; effects: "+f.Effects)))
		}
		for _, c := range f.Checks {
			total++
			names = append(names, escape.Line(c.Name))
			if c.Passed {
				fmt.Fprintf(&b, "%s%s: %s\n", indent, escape.Line(c.Name), escape.Line(CheckLine(c.Line)))
				if opts.Verbose {
					writeTrace(&b, p, indent, shownTrace(&c))
				}
			} else {
				failed++
				writeFailure(&b, p, indent, f, &c)
			}
			if opts.Verbose {
				writeCaught(&b, p, indent, &c)
			}
		}
		if opts.Verbose {
			fmt.Fprintf(&b, "%s%s\n", indent, p.dim.Sprint(counterLine(f)))
		}
	}
	switch {
	case failed > 0 && several:
		fmt.Fprintf(&b, "%s %d of %d checks failed in %d files\n", p.fail.Sprint("FAIL:"), failed, total, len(files))
	case failed > 0:
		fmt.Fprintf(&b, "%s %d of %d checks failed\n", p.fail.Sprint("FAIL:"), failed, total)
	case several:
		fmt.Fprintf(&b, "%s %d checks in %d files\n", p.pass.Sprint("PASS:"), total, len(files))
	default:
		fmt.Fprintf(&b, "%s %s\n", p.pass.Sprint("PASS:"), strings.Join(names, ", "))
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// writeFailure writes a failed check: its first failure on the check's
// line, the others under it, then the diagnosis and the statements of
// its delivery.
func writeFailure(b *strings.Builder, p painter, indent string, f *runner.FileResult, c *runner.CheckResult) {
	first := c.Failures[0]
	fmt.Fprintf(b, "%s%s: %s %s\n", indent, escape.Line(c.Name), p.fail.Sprint("FAIL:"), locatedLines(first))
	for _, more := range c.Failures[1:] {
		fmt.Fprintf(b, "%s  %s\n", indent, locatedLines(more))
	}
	for _, line := range diagnosisLines(diagnosisOf(f, c)) {
		fmt.Fprintf(b, "%s  %s\n", indent, escape.Line(line))
	}
	writeTrace(b, p, indent, c.Trace)
}

// writeCaught writes, under a check's line, the violations it caught
// and what its reconciliation said.
func writeCaught(b *strings.Builder, p painter, indent string, c *runner.CheckResult) {
	for _, v := range c.Violations {
		// Only a declared violation was caught; one nobody
		// declared is the check's failure, printed above.
		if slices.Contains(c.Declared, string(v.Invariant)) {
			fmt.Fprintf(b, "%s  %s\n", indent, p.dim.Sprint("caught: "+escape.Line(v.String())))
		}
	}
	for _, r := range c.Reconciliation {
		fmt.Fprintf(b, "%s  %s\n", indent, p.dim.Sprint("reconcile: "+escape.Line(r)))
	}
}

// writeTrace writes the statements of a check's delivery, if it kept
// them, under its line.
func writeTrace(b *strings.Builder, p painter, indent string, trace []consumer.Statement) {
	if len(trace) == 0 {
		return
	}
	fmt.Fprintf(b, "%s  %s\n", indent, p.dim.Sprint(traceHeading(trace)))
	for _, line := range traceLines(trace, true) {
		if line == RedeliveryHeading {
			fmt.Fprintf(b, "%s  %s\n", indent, p.dim.Sprint(line))
			continue
		}
		fmt.Fprintf(b, "%s    %s\n", indent, p.dim.Sprint(escape.Line(line)))
	}
}

// locatedLines is located for the text report: the lines a failure
// quotes from a consumer's stderr (escape.QuoteSep) follow it, each on a
// line of its own, as escape.Message writes them.
func locatedLines(f runner.Failure) string {
	msg := FailureMessage(f)
	head, _, ok := strings.Cut(msg, escape.QuoteSep)
	if !ok {
		return located(f)
	}
	quoted := msg[len(head):]
	if p := f.Pos.String(); p != "" {
		if h, colon := strings.CutSuffix(head, ":"); colon {
			head = fmt.Sprintf("%s (%s):", h, p)
		} else {
			head = fmt.Sprintf("%s (%s)", head, p)
		}
	}
	return escape.Message(head + quoted)
}

func located(f runner.Failure) string {
	if s := f.Pos.String(); s != "" {
		return escape.Line(fmt.Sprintf("%s (%s)", FailureMessage(f), s))
	}
	return escape.Line(FailureMessage(f))
}

func counterLine(f *runner.FileResult) string {
	c := f.Counters
	if f.Target != "" {
		return targetCounterLine(c)
	}
	s := fmt.Sprintf("counters (%s): %s, %s, %s, %s, %s, %d failed, %d failed after an external call, %d crashed, %s",
		f.Strategy, n(c.Deliveries, "delivery", "deliveries"), n(c.Redeliveries, "duplicate delivery", "duplicate deliveries"),
		n(c.Duplicates, "skipped duplicate", "skipped duplicates"), n(c.Conflicts, "identity conflict", "identity conflicts"),
		n(c.KeyConflicts, "key conflict", "key conflicts"), c.Failed, c.FailedAfterExternal, c.Crashed, n(c.Effects, "effect", "effects"))
	if f.Strategy.CallsOut() {
		s += fmt.Sprintf(", %s without an effect, %s without a charge", n(c.OrphanCharges, "charge", "charges"), n(c.UnchargedEffects, "effect", "effects"))
	}
	return s
}

// n writes a count with the word it counts, singular for one.
func n(c int, one, many string) string { return count(int64(c), one, many) }
