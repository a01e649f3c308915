// Package problem is the one error type redeliver reports to its user:
// what kind of problem stopped or failed a command, where (file, line,
// column, as fields), and one sentence saying what was expected.
//
// Domain packages return a *Error (or Errors, for every mistake found in
// input) whenever the user can act on the problem; anything else that goes
// wrong is an Environment problem. The command layer turns a Kind into an
// exit status in one place (cmd/exit.go), and reports carry the Kind's word
// and the position as they are, never re-parsed from the message.
//
//	return problem.Invalid(problem.Pos{File: f, Line: 3, Col: 9}, "unknown strategy %q", s)
//	return problem.Environment(file, err)
//	kind := problem.KindOf(err)
//
// It imports no other package of this module.
package problem

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
)

// Kind is what sort of problem an error is; its value is the word the
// reports (and the JSON schema) use for it.
type Kind string

// The kinds of problem.
const (
	// Usage: the command line asked for something that cannot be done.
	Usage Kind = "usage"
	// InvalidInput: a scenario, a capture or a target file is wrong.
	InvalidInput Kind = "invalid"
	// Verdict: the run finished and a check or an invariant failed.
	Verdict Kind = "verdict"
	// Environment: the harness failed — a database, a file system, a
	// process. Reports call it "runtime".
	Environment Kind = "runtime"
	// Interrupted: the user stopped the run.
	Interrupted Kind = "interrupted"
)

// Words names the kind in a report's title: "invalid input", "runtime error".
func (k Kind) Words() string {
	switch k {
	case InvalidInput:
		return "invalid input"
	case Environment:
		return "runtime error"
	}
	return string(k)
}

// Pos is a place in a file the user gave: a scenario step, a capture line.
// A zero Line or Col is unknown.
type Pos struct {
	File      string
	Line, Col int
}

// String writes the place as file, file:line or file:line:col.
func (p Pos) String() string {
	switch {
	case p.File == "":
		return ""
	case p.Line == 0:
		return p.File
	case p.Col == 0:
		return fmt.Sprintf("%s:%d", p.File, p.Line)
	}
	return fmt.Sprintf("%s:%d:%d", p.File, p.Line, p.Col)
}

// Error is one problem: its kind, where, and what.
type Error struct {
	Kind Kind
	Pos  Pos
	Msg  string // one sentence, without the position
	Err  error  // the cause, when there is one (Msg already says it)
}

// Error writes the problem as "file:line:col: sentence".
func (e *Error) Error() string {
	if p := e.Pos.String(); p != "" {
		return p + ": " + e.Msg
	}
	return e.Msg
}

// Unwrap returns the cause.
func (e *Error) Unwrap() error { return e.Err }

// Usagef is a mistake in how the command was called.
func Usagef(format string, args ...any) *Error {
	return &Error{Kind: Usage, Msg: fmt.Sprintf(format, args...)}
}

// UsageOf marks err, raised while reading the command line, as a usage problem.
func UsageOf(err error) *Error { return &Error{Kind: Usage, Msg: err.Error(), Err: err} }

// Invalid is a mistake in a file the user gave, at a place.
func Invalid(p Pos, format string, args ...any) *Error {
	return &Error{Kind: InvalidInput, Pos: p, Msg: fmt.Sprintf(format, args...)}
}

// Environmentf is a failure of the harness, at a place where one is known
// (the file being run); err is the cause.
func Environmentf(p Pos, err error) *Error {
	return &Error{Kind: Environment, Pos: p, Msg: err.Error(), Err: err}
}

// ErrVerdict ends a command whose report already said what failed.
var ErrVerdict = &Error{Kind: Verdict, Msg: "checks failed"}

// Errors is every problem found, e.g. every mistake in a set of scenario
// files, in file order.
type Errors []*Error

// Error writes one problem a line.
func (es Errors) Error() string {
	lines := make([]string, len(es))
	for i, e := range es {
		lines[i] = e.Error()
	}
	return strings.Join(lines, "\n")
}

// Sort orders the problems by file, line and column.
func (es Errors) Sort() {
	sort.SliceStable(es, func(i, j int) bool {
		a, b := es[i].Pos, es[j].Pos
		if a.File != b.File {
			return a.File < b.File
		}
		if a.Line != b.Line {
			return a.Line < b.Line
		}
		return a.Col < b.Col
	})
}

// KindOf says what kind of problem err is: the kind of the *Error (or of
// the first of Errors) it wraps; Interrupted for a cancelled context;
// Environment for anything else, and for an Error without a kind. It
// returns "" for nil only.
func KindOf(err error) Kind {
	var e *Error
	var es Errors
	switch {
	case err == nil:
		return ""
	case errors.Is(err, context.Canceled):
		return Interrupted
	case errors.As(err, &es) && len(es) > 0:
		e = es[0]
	case errors.As(err, &e):
	}
	if e == nil || e.Kind == "" {
		return Environment // a problem nobody classified is never a pass
	}
	return e.Kind
}

// List returns the problems err holds, each with its kind and position:
// one for most errors, every one for Errors.
func List(err error) []*Error {
	var e *Error
	var es Errors
	switch {
	case err == nil:
		return nil
	case errors.Is(err, context.Canceled):
		return []*Error{{Kind: Interrupted, Msg: "interrupted", Err: err}}
	case errors.As(err, &es):
		return es
	case errors.As(err, &e):
		return []*Error{e}
	}
	return []*Error{{Kind: Environment, Msg: err.Error(), Err: err}}
}
