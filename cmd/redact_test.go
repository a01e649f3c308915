package cmd

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/redeliver/redeliver/pkg/consumer"
	"github.com/redeliver/redeliver/pkg/problem"
	"github.com/redeliver/redeliver/pkg/redact"
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
				Checks: []runner.CheckResult{{Name: "one", Line: said("one: " + leak), Failures: []runner.Failure{{Message: "cannot read " + leak, Got: leak}}}},
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
			exitCode(errors.New("cannot reach "+leak), s)
			exitCode(problem.Errors{{Kind: problem.InvalidInput, Pos: problem.Pos{File: "t.yaml", Line: 1}, Msg: "db " + leak}}, s)
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

// TestOutputMasksSecretValues: a secret known only by its value — what a
// ${DB_PASSWORD} expanded to, echoed by the consumer on stderr, bound as
// a literal in a statement — is masked in every report format on stdout
// and in files, in the GitHub annotations and step summary, and on
// stderr, however the format escapes it.
func TestOutputMasksSecretValues(t *testing.T) {
	// leak finds any of the secrets below, however a format escaped it.
	leak := regexp.MustCompile(`hunter2|hu\S{0,8}n\S{0,8}t\S{0,8}e\S{0,8}r\S{0,8}2|two\W{1,6}words`)
	for _, secret := range []string{"hunter2", `hu"n<t>e&r'2+\x`, "two words"} {
		dir := t.TempDir()
		summary := filepath.Join(dir, "summary.md")
		env := map[string]string{"GITHUB_ACTIONS": "true", "GITHUB_STEP_SUMMARY": summary}
		echoed := "the consumer exited (exit status 1); its last stderr lines: login failed with password " + secret
		run := func() *report.Run {
			return &report.Run{
				Command: "run", Store: report.StoreSQLiteMemory, Workers: 1,
				Files: []*runner.FileResult{{
					File: "t.yaml", Name: "t", Strategy: "target", Target: "exec sh -c login xxxxx",
					Checks: []runner.CheckResult{{
						Name: "one", Line: said("one: " + echoed), Schedules: 2,
						Failures: []runner.Failure{{Message: echoed, Got: secret, Expected: "acked"}},
						Trace:    []consumer.Statement{{Worker: 1, Text: "SELECT check_login('app', '" + secret + "')", Answer: "SELECT 1", Held: true}},
					}},
				}},
				Errors: []*problem.Error{{Kind: problem.Environment, Pos: problem.Pos{File: "t.yaml"}, Msg: echoed}},
			}
		}
		for _, format := range []string{"text", "json", "junit", "tap", "html"} {
			t.Run(format, func(t *testing.T) {
				var stdout, stderr bytes.Buffer
				secrets := &redact.Secrets{}
				secrets.Add(secret)
				s := &Streams{Out: &stdout, Err: &stderr, Getenv: func(k string) string { return env[k] }, Secrets: secrets}
				var reports []string
				o := outputOptions{Format: format, Color: "never", Verbose: true}
				for _, f := range []string{"text", "json", "junit", "tap", "html"} {
					p := filepath.Join(dir, format+"."+f)
					reports = append(reports, p)
					o.Reports = append(o.Reports, f+"="+p)
				}
				out, err := o.prepare(s)
				if err != nil {
					t.Fatal(err)
				}
				r := run()
				r.Errors = nil
				r.Files[0].Checks[0].Passed = false
				if err := out.write(s, r); err != nil {
					t.Fatal(err)
				}
				if err := out.write(s, run()); err != nil {
					t.Fatal(err)
				}
				exitCode(errors.New(echoed), s)
				exitCode(problem.Errors{{Kind: problem.InvalidInput, Pos: problem.Pos{File: "t.yaml", Line: 1}, Msg: echoed}}, s)
				fmt.Fprintln(s.Secrets.Writer(s.Err), "warning: "+echoed)
				outputs := map[string]string{"stdout": stdout.String(), "stderr": stderr.String()}
				for _, p := range append(reports, summary) {
					b, err := os.ReadFile(p)
					if err != nil {
						t.Fatal(err)
					}
					outputs[p] = string(b)
				}
				for name, got := range outputs {
					if !strings.Contains(got, "xxxxx") {
						t.Errorf("%s shows no mask; did it carry the secret at all?\n%s", name, got)
					}
					if leak.MatchString(got) {
						t.Errorf("secret %q: %s shows %q:\n%s", secret, name, leak.FindString(got), got)
					}
				}
			})
		}
	}
}
