package cmd

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/redeliver/redeliver/pkg/problem"
	"github.com/redeliver/redeliver/pkg/report"
	"github.com/spf13/pflag"

	"github.com/redeliver/redeliver/pkg/invariant"
)

// outputOptions are the report flags of every command that runs checks
// (run, replay): one format on stdout, further formats into files.
type outputOptions struct {
	Format   string
	Reports  []string // FORMAT=FILE, repeatable
	Color    string
	Verbose  bool // run, and replay --target
	Coverage bool // run, and replay --target
}

const outputHelp = `--format chooses what stdout carries: text (the default), json, junit, tap or
html (one self-contained page, each check's deliveries on a timeline).
--report FORMAT=FILE (repeatable) writes further formats into files at the
same time, e.g. the text report on the console and --report junit=report.xml.
Structured formats never carry colour codes. With GITHUB_ACTIONS=true each
failure is also printed as an ::error annotation (on stdout beside the text
report, on stderr when stdout carries a structured format), and a summary
table is appended to the file named by GITHUB_STEP_SUMMARY.`

// addOutputFlags adds the report flags every command that runs checks has.
func addOutputFlags(f *pflag.FlagSet, o *outputOptions) {
	f.StringVar(&o.Format, "format", "text", "report format on stdout: "+report.FormatNames())
	f.StringArrayVar(&o.Reports, "report", nil, "also write a report into a file: FORMAT=FILE, e.g. junit=report.xml (repeatable)")
	f.StringVar(&o.Color, "color", "auto", "colour the text report: auto, always or never")
}

// addRunOutputFlags adds the report flags that only a run of scenario
// files has: what the text report shows besides the check lines.
func addRunOutputFlags(f *pflag.FlagSet, o *outputOptions) {
	f.BoolVarP(&o.Verbose, "verbose", "v", false, "also print the caught violations, the counters and what was tested")
	f.BoolVar(&o.Coverage, "coverage", false, "print which fault points each strategy's checks reached")
}

// reportFile is one --report: a format written into a file.
type reportFile struct {
	format report.Format
	path   string
}

// output is where a run's reports go, decided and checked before anything
// runs, so a mistake in the flags costs nothing and writes nothing.
type output struct {
	format   report.Format
	files    []reportFile
	opts     report.Options
	github   bool   // running in GitHub Actions: annotate failures
	summary  string // the step summary file to append to, if any
	coverage bool
}

// validate checks the report flags that need no I/O: the formats, the
// colour mode and the FORMAT=FILE values, each report file named once.
func (o *outputOptions) validate() error {
	if _, err := report.ParseFormat(o.Format); err != nil {
		return problem.Usagef("--format must be %s, not %q", report.FormatNames(), o.Format)
	}
	if err := checkColor(o.Color); err != nil {
		return err
	}
	seen := map[string]bool{}
	for _, v := range o.Reports {
		name, path, ok := strings.Cut(v, "=")
		if !ok || name == "" || path == "" {
			return problem.Usagef("--report must be FORMAT=FILE, e.g. --report junit=report.xml, not %q", v)
		}
		if _, err := report.ParseFormat(name); err != nil {
			return problem.Usagef("--report %s: the format must be %s, not %q", v, report.FormatNames(), name)
		}
		key := filepath.Clean(path)
		if seen[key] {
			return problem.Usagef("--report names %s twice; give each report its own file", path)
		}
		seen[key] = true
	}
	return nil
}

// prepare checks the report flags (validate), then that every report file
// can be written. Any mistake is a usage error.
func (o *outputOptions) prepare(s *Streams) (*output, error) {
	if err := o.validate(); err != nil {
		return nil, err
	}
	format, _ := report.ParseFormat(o.Format)
	color, err := s.Color(o.Color)
	if err != nil {
		return nil, err
	}
	out := &output{
		format:   format,
		opts:     report.Options{Color: color, Verbose: o.Verbose, Coverage: o.Coverage},
		github:   s.Getenv("GITHUB_ACTIONS") == "true",
		coverage: o.Coverage,
	}
	if out.github {
		out.summary = s.Getenv("GITHUB_STEP_SUMMARY")
	}
	for _, v := range o.Reports {
		name, path, _ := strings.Cut(v, "=")
		f, _ := report.ParseFormat(name)
		if err := writable(path); err != nil {
			return nil, problem.Usagef("cannot write the report %s: %v", path, err)
		}
		out.files = append(out.files, reportFile{format: f, path: path})
	}
	return out, nil
}

// writable checks that a report file can be written, without leaving
// anything behind.
func writable(path string) error {
	st, err := os.Stat(path)
	switch {
	case err == nil && st.IsDir():
		return errors.New("it is a folder")
	case err == nil:
		f, err := os.OpenFile(path, os.O_WRONLY, 0)
		if err != nil {
			return unwrapPath(err)
		}
		return f.Close()
	case !errors.Is(err, os.ErrNotExist):
		return unwrapPath(err)
	}
	dir := filepath.Dir(path)
	if st, err := os.Stat(dir); err != nil || !st.IsDir() {
		return fmt.Errorf("the folder %s does not exist", dir)
	}
	f, err := os.CreateTemp(dir, ".redeliver-report-*")
	if err != nil {
		return unwrapPath(err)
	}
	name := f.Name()
	f.Close()
	return os.Remove(name)
}

func unwrapPath(err error) error {
	var pe *os.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}

// finish writes a run whose harness error (if any) is err, and returns what
// its exit status comes from: the harness error, a failed write, or the
// verdict.
func (out *output) finish(s *Streams, run *report.Run, err error) error {
	if werr := out.write(s, run); werr != nil && err == nil {
		err = werr
	}
	if err != nil {
		return err
	}
	if run.Verdict() != invariant.Pass {
		return problem.ErrVerdict
	}
	return nil
}

// write renders a run or a replay on stdout and into every report file,
// and, in GitHub Actions, annotates the failures and appends the step
// summary. A text report is left off stdout when the harness failed: the
// errors on stderr say everything, and no verdict line should suggest
// otherwise. Every report is rendered whole, then written through
// redacted: the last guard against a secret of the configuration that a
// message quoted as it was.
func (out *output) write(s *Streams, res report.Result) error {
	harnessFailed := res.Incomplete()
	if !(out.format == report.FormatText && harnessFailed) {
		if err := redacted(s, s.Out, func(w io.Writer) error { return res.Render(w, out.format, out.opts) }); err != nil {
			return err
		}
	}
	// Whatever stdout carries for a machine stays parseable: the coverage
	// matrix and annotations go to stderr then.
	side := s.Out
	if out.format.Structured() {
		side = s.Err
		if run, ok := res.(*report.Run); ok && out.coverage && !harnessFailed {
			if err := report.Coverage(side, run); err != nil {
				return err
			}
		}
		if rp, ok := res.(*report.Replay); ok && out.coverage && !harnessFailed {
			if err := report.ReplayCoverage(side, rp); err != nil {
				return err
			}
		}
	}
	for _, f := range out.files {
		var buf bytes.Buffer
		opts := out.opts
		opts.Color = false // a file is never a terminal
		if err := redacted(s, &buf, func(w io.Writer) error { return res.Render(w, f.format, opts) }); err != nil {
			return err
		}
		if err := os.WriteFile(f.path, buf.Bytes(), 0o644); err != nil {
			return fmt.Errorf("write the report %s: %w", f.path, unwrapPath(err))
		}
	}
	if !out.github {
		return nil
	}
	if err := redacted(s, side, res.Annotate); err != nil {
		return err
	}
	if out.summary == "" {
		return nil
	}
	return appendFile(s, out.summary, res.Summarize)
}

// redacted renders into a buffer and writes it to w with every secret
// masked (Streams.mask).
func redacted(s *Streams, w io.Writer, render func(io.Writer) error) error {
	var buf bytes.Buffer
	if err := render(&buf); err != nil {
		return err
	}
	_, err := io.WriteString(w, s.mask(buf.String()))
	return err
}

func appendFile(s *Streams, path string, write func(io.Writer) error) error {
	var buf bytes.Buffer
	if err := redacted(s, &buf, write); err != nil {
		return err
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
	if err != nil {
		return fmt.Errorf("append the step summary to %s: %w", path, unwrapPath(err))
	}
	if _, err := f.Write(buf.Bytes()); err != nil {
		f.Close()
		return fmt.Errorf("append the step summary to %s: %w", path, err)
	}
	return f.Close()
}
