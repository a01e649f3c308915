package report

import (
	"errors"
	"fmt"
	"github.com/redeliver/redeliver/pkg/report/words"
	"io"
	"strings"
	"time"

	"github.com/redeliver/redeliver/pkg/consumer"
	"github.com/redeliver/redeliver/pkg/handler"
	"github.com/redeliver/redeliver/pkg/ledger"
	"github.com/redeliver/redeliver/pkg/problem"
	"github.com/redeliver/redeliver/pkg/runner"

	"github.com/redeliver/redeliver/pkg/escape"

	"github.com/redeliver/redeliver/pkg/invariant"
)

// Format is a report format.
type Format string

// The report formats.
const (
	FormatText  Format = "text"
	FormatJSON  Format = "json"
	FormatJUnit Format = "junit"
	FormatTAP   Format = "tap"
	FormatHTML  Format = "html"
)

// formats are the report formats, in the order help text names them:
// each its writer of a run of scenario files and its writer of a replay.
// A format is its constant and one row here; --format and --report
// accept what this lists.
var formats = []struct {
	f      Format
	run    func(w io.Writer, run *Run, opts Options) error
	replay func(w io.Writer, r *Replay, opts Options) error
}{
	{FormatText, textRun, textReplay},
	{FormatJSON, plain(JSON), plain(ReplayJSON)},
	{FormatJUnit, plain(JUnit), plain(ReplayJUnit)},
	{FormatTAP, plain(TAP), plain(ReplayTAP)},
	{FormatHTML, plain(HTML), plain(ReplayHTML)},
}

// Formats lists every format, in the order help text names them.
var Formats = func() []Format {
	out := make([]Format, len(formats))
	for i, f := range formats {
		out[i] = f.f
	}
	return out
}()

// plain is a writer that takes no options: a structured format's.
func plain[T any](write func(io.Writer, T) error) func(io.Writer, T, Options) error {
	return func(w io.Writer, v T, _ Options) error { return write(w, v) }
}

// ParseFormat returns the format a name stands for.
func ParseFormat(name string) (Format, error) {
	for _, f := range Formats {
		if string(f) == name {
			return f, nil
		}
	}
	return "", fmt.Errorf("unknown report format %q: use %s", name, FormatNames())
}

// FormatNames lists the formats as help text writes them: "text, json, junit or tap".
func FormatNames() string {
	names := make([]string, len(Formats))
	for i, f := range Formats {
		names[i] = string(f)
	}
	return strings.Join(names[:len(names)-1], ", ") + " or " + names[len(names)-1]
}

// Structured reports whether the format is for a machine to parse; such a
// report never carries colour codes.
func (f Format) Structured() bool { return f != FormatText }

// Store kinds, as the structured reports name them.
const (
	StoreSQLiteMemory = "sqlite-memory"
	StoreSQLiteFile   = "sqlite-file"
	StorePostgres     = "postgres"
	// StoreTarget: a consumer under test keeps its own database, which
	// the report names as the target's effects.
	StoreTarget = "target"
)

// StoreOf names the store a --db value selects, as reports name it.
func StoreOf(db string) string {
	switch {
	case db == "" || db == ledger.Memory:
		return StoreSQLiteMemory
	case strings.HasPrefix(db, "postgres://"), strings.HasPrefix(db, "postgresql://"):
		return StorePostgres
	}
	return StoreSQLiteFile
}

// Validated says that scenario files validated: how many (targets of them
// --target files), with how many checks.
func Validated(w io.Writer, files, checks, targets int) error {
	word := "files"
	if files == 1 {
		word = "file"
	}
	of := ""
	switch {
	case targets == 1 && files == 1:
		of = " (a --target file)"
	case targets > 0 && targets == files:
		of = " (--target files)"
	case targets > 0:
		of = fmt.Sprintf(" (%d of them --target files)", targets)
		if targets == 1 {
			of = " (1 of them a --target file)"
		}
	}
	_, err := fmt.Fprintf(w, "ok: %d %s%s, %s\n", files, word, of, words.Count(int64(checks), "check"))
	return err
}

// Run is what one command produced, as every report format sees it: the
// results of the files that ran, the harness errors that stopped others,
// and what the run was set up with.
type Run struct {
	Command  string // the command that ran: run, replay
	Files    []*runner.FileResult
	Errors   []*problem.Error
	Seed     int64
	Store    string // StoreSQLiteMemory, StoreSQLiteFile or StorePostgres; a target file's is StoreTarget
	Workers  int    // the most workers that delivered at once
	Duration time.Duration
}

// Verdict is pass when every check passed, error when the harness failed,
// and fail when a check did.
func (r *Run) Verdict() invariant.Verdict {
	switch {
	case len(r.Errors) > 0:
		return invariant.Error
	case r.failed() > 0:
		return invariant.Fail
	}
	return invariant.Pass
}

func (r *Run) checks() int {
	n := 0
	for _, f := range r.Files {
		n += len(f.Checks)
	}
	return n
}

func (r *Run) failed() int {
	n := 0
	for _, f := range r.Files {
		n += f.Failed()
	}
	return n
}

// errorsOf returns the harness errors that belong to a file.
func (r *Run) errorsOf(file string) []*problem.Error {
	var out []*problem.Error
	for _, e := range r.Errors {
		if e.Pos.File == file {
			out = append(out, e)
		}
	}
	return out
}

// strayErrors returns the harness errors of files that have no result.
func (r *Run) strayErrors() []*problem.Error {
	ran := map[string]bool{}
	for _, f := range r.Files {
		ran[f.File] = true
	}
	var out []*problem.Error
	for _, e := range r.Errors {
		if !ran[e.Pos.File] {
			out = append(out, e)
		}
	}
	return out
}

// Options shape a report.
type Options struct {
	Color    bool // text only: PASS green, FAIL red
	Verbose  bool // text only: violations caught, counters and what was tested
	Coverage bool // text only: the strategy × fault point matrix after the report
}

// Result is what a command produced, as every report format sees it: a
// run of scenario files (*Run) or a replay of captures (*Replay). The
// commands write either through the same plumbing.
type Result interface {
	// Render writes the result in one format; structured formats ignore colour.
	Render(w io.Writer, f Format, opts Options) error
	// Annotate writes a GitHub Actions ::error command per failure.
	Annotate(w io.Writer) error
	// Summarize writes the Markdown of a GitHub Actions step summary.
	Summarize(w io.Writer) error
	// Incomplete reports whether the harness failed, so there is no verdict
	// on the checks.
	Incomplete() bool
}

// Render writes the run in one format.
func (r *Run) Render(w io.Writer, f Format, opts Options) error { return Render(w, f, r, opts) }

// Annotate writes the run's GitHub Actions annotations.
func (r *Run) Annotate(w io.Writer) error { return Annotations(w, r) }

// Summarize writes the run's GitHub Actions step summary.
func (r *Run) Summarize(w io.Writer) error { return StepSummary(w, r) }

// Incomplete reports whether the harness failed.
func (r *Run) Incomplete() bool { return len(r.Errors) > 0 }

// Render writes the run in one format. Structured formats ignore colour.
func Render(w io.Writer, f Format, run *Run, opts Options) error {
	for _, row := range formats {
		if row.f == f {
			return row.run(w, run, opts)
		}
	}
	return errors.New("unknown report format " + string(f))
}

// textRun is the text report of a run: its files and checks, or the
// errors that stopped it.
func textRun(w io.Writer, run *Run, opts Options) error {
	if len(run.Errors) > 0 {
		return textErrors(w, run.Errors, "run")
	}
	if err := Text(w, run.Files, opts); err != nil {
		return err
	}
	if opts.Verbose && !onlyTargets(run) {
		// A target file names what it tested on its own line; the
		// handler's store and fault points say nothing about it.
		if _, err := io.WriteString(w, boundaryLine(boundariesOf(run))+"\n"); err != nil {
			return err
		}
	}
	if opts.Coverage {
		return Coverage(w, run)
	}
	return nil
}

// textErrors is the text report of a run (or replay) the harness could not
// complete: its errors, and a verdict that says so.
func textErrors(w io.Writer, errs []*problem.Error, what string) error {
	var b strings.Builder
	for _, e := range errs {
		if s := e.Pos.String(); s != "" {
			fmt.Fprintf(&b, "%s: %s\n", escape.Line(s), escape.Message(e.Msg))
		} else {
			fmt.Fprintf(&b, "%s\n", escape.Message(e.Msg))
		}
	}
	fmt.Fprintf(&b, "ERROR: the %s did not complete (%s)\n", what, countOf(len(errs), "error"))
	_, err := io.WriteString(w, b.String())
	return err
}

// locationOf is the place of a delivery or failure for the structured
// reports, or nil when it has none.
func locationOf(l consumer.Location) *Location {
	if l.File == "" {
		return nil
	}
	return &Location{File: l.File, Line: l.Line, Col: l.Col}
}

// Location is a place in an input file, as the structured reports write it.
type Location struct {
	File string `json:"file"`
	Line int    `json:"line,omitempty"`
	Col  int    `json:"col,omitempty"`
}

// firedAt returns the fault point a delivery's injected failure fired at.
func firedAt(res consumer.Result) (consumer.FaultPoint, bool) {
	var inj *handler.InjectedError
	if errors.As(res.Err, &inj) {
		return inj.Point, true
	}
	return "", false
}

func fileDuration(f *runner.FileResult) time.Duration {
	var d time.Duration
	for _, c := range f.Checks {
		d += c.Duration
	}
	return d
}

func seconds(d time.Duration) float64 {
	// Milliseconds are all a report reader needs, and they keep goldens short.
	return float64(d.Round(time.Millisecond)) / float64(time.Second)
}

// onlyTargets reports whether every file of the run tested a target.
func onlyTargets(run *Run) bool {
	for _, f := range run.Files {
		if f.Target == "" {
			return false
		}
	}
	return len(run.Files) > 0
}
