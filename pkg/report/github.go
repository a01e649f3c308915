package report

import (
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/redeliver/redeliver/pkg/consumer"
	"github.com/redeliver/redeliver/pkg/escape"

	"github.com/redeliver/redeliver/pkg/invariant"
)

// GitHub Actions reads workflow commands from a step's output: each
// "::error file=…,line=…,col=…,title=…::message" line becomes an
// annotation on that line of that file.

// escapeData escapes a workflow command's message as the Actions toolkit
// (@actions/core) does.
func escapeData(s string) string {
	return strings.NewReplacer("%", "%25", "\r", "%0D", "\n", "%0A").Replace(s)
}

// escapeProperty escapes a workflow command's property value as the Actions
// toolkit does: as data, and also ":" and ",", which separate properties.
func escapeProperty(s string) string {
	return strings.NewReplacer("%", "%25", "\r", "%0D", "\n", "%0A", ":", "%3A", ",", "%2C").Replace(s)
}

// errorCommand is one ::error workflow command. Properties that are empty
// (or zero) are left out, as the toolkit leaves them out.
func errorCommand(at consumer.Location, title, message string) string {
	var props []string
	add := func(k, v string) {
		if v != "" && v != "0" {
			props = append(props, k+"="+escapeProperty(v))
		}
	}
	add("file", at.File)
	add("line", strconv.Itoa(at.Line))
	add("col", strconv.Itoa(at.Col))
	add("title", escape.Line(title))
	cmd := "::error"
	if len(props) > 0 {
		cmd += " " + strings.Join(props, ",")
	}
	return cmd + "::" + escapeData(message)
}

// Annotations writes one ::error command per failure of every failed
// check and per harness error, so each shows on the scenario line it is
// about.
func Annotations(w io.Writer, run *Run) error {
	var b strings.Builder
	for _, f := range run.Files {
		for _, c := range f.Checks {
			for _, fl := range c.Failures {
				at := fl.Pos
				if at.File == "" {
					at = c.Pos
				}
				if at.File == "" {
					at = consumer.Location{File: f.File}
				}
				b.WriteString(errorCommand(at, "redeliver: "+c.Name, FailureMessage(fl)) + "\n")
			}
		}
	}
	for _, e := range run.Errors {
		b.WriteString(errorCommand(e.Pos, "redeliver: "+e.Kind.Words(), e.Msg) + "\n")
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// StepSummary writes the run as the Markdown a job's step summary shows: a
// verdict heading, a table with one row per check, and what was tested.
func StepSummary(w io.Writer, run *Run) error {
	var b strings.Builder
	total, failed := run.checks(), run.failed()
	switch run.Verdict() {
	case invariant.Pass:
		fmt.Fprintf(&b, "### redeliver: PASS, %s passed\n\n", countOf(total, "check"))
	case invariant.Fail:
		fmt.Fprintf(&b, "### redeliver: FAIL, %d of %s failed\n\n", failed, countOf(total, "check"))
	default:
		fmt.Fprintf(&b, "### redeliver: ERROR, %s\n\n", countOf(len(run.Errors), "harness error"))
	}
	b.WriteString("| file | check | result | report |\n|---|---|---|---|\n")
	for _, f := range run.Files {
		for _, c := range f.Checks {
			result, line := "✅ pass", CheckLine(c.Line)
			if !c.Passed {
				result, line = "❌ fail", located(c.Failures[0])
			}
			fmt.Fprintf(&b, "| %s | %s | %s | %s |\n", cell(f.File), cell(c.Name), result, cell(line))
		}
	}
	for _, e := range run.Errors {
		fmt.Fprintf(&b, "| %s | %s | ⚠️ error | %s |\n", cell(e.Pos.File), cell(errorCase(e).Name), cell(e.Msg))
	}
	fmt.Fprintf(&b, "\n%s\n\n", cell(boundaryLine(boundariesOf(run))))
	_, err := io.WriteString(w, b.String())
	return err
}

// cell makes text safe inside a Markdown table cell: no HTML, no column
// breaks, one line.
func cell(s string) string {
	return strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;", "|", `\|`).Replace(oneLine(s))
}
