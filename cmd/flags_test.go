package cmd

import (
	"errors"
	"io"
	"reflect"
	"strings"
	"testing"

	"github.com/redeliver/redeliver/pkg/problem"
	"github.com/spf13/cobra"
)

// execute runs a command built with a runF that keeps its options, on
// args, and returns its error as Run sees it: the error of the
// command's own code, or cobra's as a usage error.
func execute(c *cobra.Command, args []string) error {
	c.SetArgs(args)
	c.SetOut(io.Discard)
	c.SetErr(io.Discard)
	c.SilenceUsage, c.SilenceErrors = true, true
	err := c.Execute()
	var r *ranError
	if errors.As(err, &r) {
		return r.err
	}
	if err != nil {
		return problem.UsageOf(err)
	}
	return nil
}

// checkParsed compares what a command parsed with what a test wants: a
// usage error with the given message, or, when wantErr is empty, the
// options want.
func checkParsed(t *testing.T, err error, called bool, got, want any, wantErr string) {
	t.Helper()
	if wantErr != "" {
		if err == nil || err.Error() != wantErr {
			t.Fatalf("error %v, want %q", err, wantErr)
		}
		if problem.KindOf(err) != problem.Usage {
			t.Errorf("%v is a %q error, want a usage error (exit status %d)", err, problem.KindOf(err), ExitUsage)
		}
		if called {
			t.Errorf("runF was called despite the error")
		}
		return
	}
	if err != nil {
		t.Fatalf("error %v", err)
	}
	if !called {
		t.Fatalf("runF was not called")
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("options\n got %+v\nwant %+v", got, want)
	}
}

// defaultOutput is the report flags left at their defaults.
var defaultOutput = outputOptions{Format: "text", Color: "auto"}

func TestRunFlags(t *testing.T) {
	tests := []struct {
		name    string
		args    []string
		want    RunOptions
		wantErr string
	}{
		{"defaults", nil, RunOptions{Paths: []string{"scenarios"}, DB: ":memory:", Seed: 1, Repeat: 1, Output: defaultOutput}, ""},
		{"every flag", []string{"a.yaml", "more/", "--db", "x.db", "--repeat", "3", "--keep", "--seed", "7", "-v", "--coverage",
			"--format", "json", "--report", "junit=r.xml", "--report", "tap=r.tap", "--color", "never"},
			RunOptions{Paths: []string{"a.yaml", "more/"}, DB: "x.db", Seed: 7, Repeat: 3, Keep: true,
				Output: outputOptions{Format: "json", Reports: []string{"junit=r.xml", "tap=r.tap"}, Color: "never", Verbose: true, Coverage: true}}, ""},
		{"postgres", []string{"--db", "postgres://u@h:5432/d", "s/"}, RunOptions{Paths: []string{"s/"}, DB: "postgres://u@h:5432/d", Seed: 1, Repeat: 1, Output: defaultOutput}, ""},
		{"repeat zero", []string{"--repeat", "0"}, RunOptions{}, "--repeat must be at least 1, not 0"},
		{"repeat negative", []string{"--repeat", "-2", "a.yaml"}, RunOptions{}, "--repeat must be at least 1, not -2"},
		{"repeat not a number", []string{"--repeat", "x"}, RunOptions{}, `invalid argument "x" for "--repeat" flag: strconv.ParseInt: parsing "x": invalid syntax`},
		{"unknown flag", []string{"--target", "t.yaml"}, RunOptions{}, "unknown flag: --target"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var got *RunOptions
			err := execute(NewCmdRun(&Streams{}, func(o *RunOptions) error { got = o; return nil }), tt.args)
			if got != nil {
				got.IO, got.Context = nil, nil
			}
			checkParsed(t, err, got != nil, got, &tt.want, tt.wantErr)
		})
	}
}

func TestValidateArgs(t *testing.T) {
	tests := []struct {
		name    string
		args    []string
		want    []string
		wantErr string
	}{
		{"default folder", nil, []string{"scenarios"}, ""},
		{"files and folders", []string{"a.yaml", "b/"}, []string{"a.yaml", "b/"}, ""},
		{"no flags", []string{"--db", "x.db"}, nil, "unknown flag: --db"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var got *ValidateOptions
			err := execute(NewCmdValidate(&Streams{}, func(o *ValidateOptions) error { got = o; return nil }), tt.args)
			var paths []string
			if got != nil {
				paths = got.Paths
			}
			checkParsed(t, err, got != nil, paths, tt.want, tt.wantErr)
		})
	}
}

func TestVersionArgs(t *testing.T) {
	s := &Streams{}
	called := false
	if err := execute(NewCmdVersion(s, func(o *VersionOptions) error {
		called = o.IO == s
		return nil
	}), nil); err != nil || !called {
		t.Fatalf("version: error %v, runF called with the streams: %v", err, called)
	}
	called = false
	err := execute(NewCmdVersion(s, func(*VersionOptions) error { called = true; return nil }), []string{"extra"})
	if err == nil || !strings.Contains(err.Error(), `unknown command "extra"`) || called {
		t.Errorf("version extra: error %v, runF called: %v", err, called)
	}
}

func TestInitFlags(t *testing.T) {
	const wrongTarget = `: init writes a scenario for an HTTP consumer (--target http) or one run per event (--target exec); for broker targets see docs/brokers.md`
	const wrongDB = `: init writes the statement checks for an HTTP consumer on PostgreSQL: --target http --db postgres://USER@HOST:PORT/DATABASE`
	tests := []struct {
		name    string
		args    []string
		want    InitOptions
		wantErr string
	}{
		{"starter set", nil, InitOptions{Dir: "scenarios"}, ""},
		{"folder", []string{"consumer-tests"}, InitOptions{Dir: "consumer-tests"}, ""},
		{"http", []string{"--target", "http", "svc"}, InitOptions{Dir: "svc", Target: "http", TargetSet: true}, ""},
		{"exec", []string{"--target=exec"}, InitOptions{Dir: "scenarios", Target: "exec", TargetSet: true}, ""},
		{"http on postgres", []string{"--target", "http", "--db", "postgres://u@h:5432/d", "svc"},
			InitOptions{Dir: "svc", Target: "http", TargetSet: true, DB: "postgres://u@h:5432/d"}, ""},
		{"postgresql scheme", []string{"--target", "http", "--db", "postgresql://u@h/d"},
			InitOptions{Dir: "scenarios", Target: "http", TargetSet: true, DB: "postgresql://u@h/d"}, ""},
		{"db without target is ignored", []string{"--db", "x.db"}, InitOptions{Dir: "scenarios", DB: "x.db"}, ""},
		{"empty target", []string{"--target", ""}, InitOptions{}, `--target ""` + wrongTarget},
		{"broker target", []string{"--target", "kafka"}, InitOptions{}, `--target "kafka"` + wrongTarget},
		{"wrong target before db", []string{"--target", "nats", "--db", "x.db"}, InitOptions{}, `--target "nats"` + wrongTarget},
		{"db with exec", []string{"--target", "exec", "--db", "postgres://u@h/d"}, InitOptions{}, `--db "postgres://u@h/d"` + wrongDB},
		{"db not postgres", []string{"--target", "http", "--db", "mysql://u@h/d"}, InitOptions{}, `--db "mysql://u@h/d"` + wrongDB},
		{"db without host", []string{"--target", "http", "--db", "postgres:///d"}, InitOptions{}, `--db "postgres:///d"` + wrongDB},
		{"db password masked", []string{"--target", "exec", "--db", "postgres://u:hunter2@h/d"}, InitOptions{}, `--db "postgres://u:xxxxx@h/d"` + wrongDB},
		{"two folders", []string{"a", "b"}, InitOptions{}, "accepts at most 1 arg(s), received 2"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var got *InitOptions
			err := execute(NewCmdInit(&Streams{}, func(o *InitOptions) error { got = o; return nil }), tt.args)
			if got != nil {
				got.IO = nil
			}
			checkParsed(t, err, got != nil, got, &tt.want, tt.wantErr)
		})
	}
}
