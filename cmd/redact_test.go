package cmd

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/redeliver/redeliver/pkg/problem"
	"github.com/redeliver/redeliver/pkg/report"
	"github.com/redeliver/redeliver/pkg/runner"
)

// TestOutputRedacts: a secret that reached a result or an error as it was
// written in the configuration — by a message that forgot to redact it —
// is still masked in every format on stdout, in every report file, in
// the GitHub annotations and step summary, and on stderr.
func TestOutputRedacts(t *testing.T) {
	const secret = "s3cretNET"
	dir := t.TempDir()
	summary := filepath.Join(dir, "summary.md")
	env := map[string]string{"GITHUB_ACTIONS": "true", "GITHUB_STEP_SUMMARY": summary}
	leak := "postgres://app:" + secret + "@db/app?sslpassword=" + secret + " host=db password=" + secret + " root:" + secret + "@tcp(db:3306)/app --token " + secret
	run := func() *report.Run {
		return &report.Run{
			Command: "run", Store: report.StoreSQLiteMemory, Workers: 1,
			Files: []*runner.FileResult{{
				File: "t.yaml", Name: "t", Strategy: "target", Target: "exec consumer " + leak, Effects: "query in " + leak,
				Checks: []runner.CheckResult{{Name: "one", Line: "one: " + leak, Failures: []runner.Failure{{Message: "cannot read " + leak, Got: leak}}}},
			}},
			Errors: []*problem.Error{{Kind: problem.Environment, Pos: problem.Pos{File: "t.yaml"}, Msg: "cannot reach " + leak}},
		}
	}
	for _, format := range []string{"text", "json", "junit", "tap"} {
		t.Run(format, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			s := &Streams{Out: &stdout, Err: &stderr, Getenv: func(k string) string { return env[k] }}
			var reports []string
			o := outputOptions{Format: format, Color: "never"}
			for _, f := range []string{"text", "json", "junit", "tap"} {
				p := filepath.Join(dir, format+"."+f)
				reports = append(reports, p)
				o.Reports = append(o.Reports, f+"="+p)
			}
			out, err := o.prepare(s)
			if err != nil {
				t.Fatal(err)
			}
			r := run()
			r.Errors = nil // a text report is printed only when the harness did not fail
			if err := out.write(s, r); err != nil {
				t.Fatal(err)
			}
			if err := out.write(s, run()); err != nil {
				t.Fatal(err)
			}
			exitCode(errors.New("cannot reach "+leak), &stderr)
			exitCode(problem.Errors{{Kind: problem.InvalidInput, Pos: problem.Pos{File: "t.yaml", Line: 1}, Msg: "db " + leak}}, &stderr)
			if !strings.Contains(stdout.String(), "xxxxx") {
				t.Errorf("stdout shows no masked secret; did the report carry it at all?\n%s", stdout.String())
			}
			outputs := map[string]string{"stdout": stdout.String(), "stderr": stderr.String()}
			for _, p := range append(reports, summary) {
				b, err := os.ReadFile(p)
				if err != nil {
					t.Fatal(err)
				}
				outputs[p] = string(b)
			}
			for name, got := range outputs {
				if strings.Contains(got, secret) {
					t.Errorf("%s shows the secret:\n%s", name, got)
				}
			}
		})
	}
}
