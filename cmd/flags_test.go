package cmd

import (
	"errors"
	"io"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/redeliver/redeliver/pkg/capture"
	"github.com/redeliver/redeliver/pkg/handler"
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
		{"repeat before format", []string{"--repeat", "0", "--format", "nope"}, RunOptions{}, "--repeat must be at least 1, not 0"},
		{"format", []string{"--format", "nope"}, RunOptions{}, `--format must be text, json, junit, tap or html, not "nope"`},
		{"color", []string{"--color", "pink"}, RunOptions{}, `--color must be auto, always or never, not "pink"`},
		{"report", []string{"--report", "bogus"}, RunOptions{}, `--report must be FORMAT=FILE, e.g. --report junit=report.xml, not "bogus"`},
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
	const wrongDB = `: init writes the statement checks for an HTTP consumer on PostgreSQL, MySQL or MariaDB: --target http --db postgres://USER@HOST:PORT/DATABASE or mysql://USER@HOST:PORT/DATABASE`
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
		{"http on mysql", []string{"--target", "http", "--db", "mysql://u@h/d"},
			InitOptions{Dir: "scenarios", Target: "http", TargetSet: true, DB: "mysql://u@h/d"}, ""},
		{"http on a Go MySQL DSN", []string{"--target", "http", "--db", "u:pw@tcp(h:3306)/d"},
			InitOptions{Dir: "scenarios", Target: "http", TargetSet: true, DB: "u:pw@tcp(h:3306)/d"}, ""},
		{"db not a server", []string{"--target", "http", "--db", "payments.db"}, InitOptions{}, `--db "payments.db"` + wrongDB},
		{"mysql without host", []string{"--target", "http", "--db", "mysql:///d"}, InitOptions{}, `--db "mysql:///d"` + wrongDB},
		{"mysql over a unix socket", []string{"--target", "http", "--db", "u@unix(/run/mysqld/mysqld.sock)/d"}, InitOptions{}, `--db "u@unix(/run/mysqld/mysqld.sock)/d"` + wrongDB},
		{"mysql with exec", []string{"--target", "exec", "--db", "mysql://u@h/d"}, InitOptions{}, `--db "mysql://u@h/d"` + wrongDB},
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

// replayDefaults are the options of replay given logs and no flag.
func replayDefaults(logs ...string) ReplayOptions {
	return ReplayOptions{
		Logs: logs, DB: ":memory:", Seed: 1, Input: "auto", Strategy: "event-id",
		Consumer: handler.DefaultConsumer, Effect: handler.DefaultEffect, MaxRecord: capture.DefaultMaxRecord,
		Compare: true, Output: defaultOutput, Changed: map[string]bool{},
	}
}

// given is a set of flag names.
func given(names ...string) map[string]bool {
	m := map[string]bool{}
	for _, n := range names {
		m[n] = true
	}
	return m
}

func TestReplayFlags(t *testing.T) {
	tests := []struct {
		name    string
		args    []string
		want    func(*ReplayOptions) // applied to replayDefaults of the test's logs
		wantErr string
	}{
		{"defaults", []string{"c.ndjson"}, func(*ReplayOptions) {}, ""},
		{"stdin and brokers", []string{"-", "nats://h:4222/ORDERS?seq=3", "kafka://h:9092/orders"}, func(*ReplayOptions) {}, ""},
		{"built-in handler", []string{"--db", "r.db", "--seed", "9", "--input", "kcat", "--id", "headers.ce_id", "--key", "data.orderId",
			"--payload", "data", "--identity", "a,b", "--identity", "c", "--strategy", "business-key", "--consumer", "billing",
			"--effect", "charges", "--redeliver", "0.3", "--crash", "0.1", "--crash-at", "after-check,after-effect", "--rewind", "10",
			"--republish", "0.2", "--concurrent", "0.05", "--max-bad", "3", "--max-record", "4096", "--fail-on", "identity-reuse,bad-records",
			"--emit-scenario", "repro.yaml", "--findings", "findings.jsonl", "--batch", "100", "--compare=false", "--parallel", "4",
			"--format", "json", "--report", "junit=r.xml", "--color", "always", "c.ndjson"},
			func(o *ReplayOptions) {
				o.DB, o.Seed, o.Input, o.ID, o.Key, o.Payload = "r.db", 9, "kcat", "headers.ce_id", "data.orderId", "data"
				o.Identity, o.Strategy, o.Consumer, o.Effect = []string{"a", "b", "c"}, "business-key", "billing", "charges"
				o.Redeliver, o.Crash, o.CrashAt, o.Rewind = 0.3, 0.1, []string{"after-check", "after-effect"}, 10
				o.Republish, o.Concurrent, o.MaxBad, o.MaxRecord = 0.2, 0.05, 3, 4096
				o.FailOn, o.Emit, o.Findings, o.Batch, o.Compare, o.Parallel = []string{"identity-reuse", "bad-records"}, "repro.yaml", "findings.jsonl", 100, false, 4
				o.Output = outputOptions{Format: "json", Reports: []string{"junit=r.xml"}, Color: "always"}
				o.Changed = given("db", "seed", "input", "id", "key", "payload", "identity", "strategy", "consumer", "effect",
					"redeliver", "crash", "crash-at", "rewind", "republish", "concurrent", "max-bad", "max-record", "fail-on",
					"emit-scenario", "findings", "batch", "compare", "parallel", "format", "report", "color")
			}, ""},
		{"target", []string{"--target", "t.yaml", "--redeliver", "0.1", "--crash", "0.01", "--concurrent", "0.2", "--parallel", "8",
			"-v", "--coverage", "--kill-every", "300ms", "--logs", "logs", "--fail-on", "bad-records", "--max-bad", "2",
			"--emit-scenario", "repro.yaml", "c.ndjson"},
			func(o *ReplayOptions) {
				o.Target, o.Redeliver, o.Crash, o.Concurrent, o.Parallel = "t.yaml", 0.1, 0.01, 0.2, 8
				o.Output.Verbose, o.Output.Coverage, o.KillEvery, o.LogDir = true, true, 300*time.Millisecond, "logs"
				o.FailOn, o.MaxBad, o.Emit = []string{"bad-records"}, 2, "repro.yaml"
				o.Changed = given("target", "redeliver", "crash", "concurrent", "parallel", "verbose", "coverage", "kill-every", "logs",
					"fail-on", "max-bad", "emit-scenario")
			}, ""},
		{"target, kill-working", []string{"--target", "t.yaml", "--kill-working", "0.25", "c.ndjson"},
			func(o *ReplayOptions) {
				o.Target, o.KillWorking, o.Changed = "t.yaml", 0.25, given("target", "kill-working")
			}, ""},
		{"target leaves parallel to the run", []string{"--target", "t.yaml", "c.ndjson"},
			func(o *ReplayOptions) { o.Target, o.Changed = "t.yaml", given("target") }, ""},
		// A --kill-every or --logs with no value is refused by the run:
		// whether its target starts a consumer comes first.
		{"target, kill-every 0 and empty logs", []string{"--target", "t.yaml", "--kill-every", "0", "--logs", "", "c.ndjson"},
			func(o *ReplayOptions) { o.Target, o.Changed = "t.yaml", given("target", "kill-every", "logs") }, ""},

		{"no capture", nil, nil, "requires at least 1 arg(s), only received 0"},
		{"seed not a number", []string{"--seed", "x", "c.ndjson"}, nil, `invalid argument "x" for "--seed" flag: strconv.ParseInt: parsing "x": invalid syntax`},
		{"format", []string{"--format", "nope", "c.ndjson"}, nil, `--format must be text, json, junit, tap or html, not "nope"`},
		{"color", []string{"--color", "pink", "c.ndjson"}, nil, `--color must be auto, always or never, not "pink"`},
		{"report without file", []string{"--report", "junit", "c.ndjson"}, nil, `--report must be FORMAT=FILE, e.g. --report junit=report.xml, not "junit"`},
		{"report format", []string{"--report", "x=r.xml", "c.ndjson"}, nil, `--report x=r.xml: the format must be text, json, junit, tap or html, not "x"`},
		{"report twice", []string{"--report", "junit=a.xml", "--report", "tap=./a.xml", "c.ndjson"}, nil, "--report names ./a.xml twice; give each report its own file"},
		{"redeliver", []string{"--redeliver", "1.5", "c.ndjson"}, nil, "--redeliver must be a probability between 0 and 1, not 1.5"},
		{"crash", []string{"--crash", "-0.1", "c.ndjson"}, nil, "--crash must be a probability between 0 and 1, not -0.1"},
		{"republish", []string{"--republish", "2", "c.ndjson"}, nil, "--republish must be a probability between 0 and 1, not 2"},
		{"concurrent", []string{"--concurrent", "1.01", "c.ndjson"}, nil, "--concurrent must be a probability between 0 and 1, not 1.01"},
		{"rewind", []string{"--rewind", "-1", "c.ndjson"}, nil, "--rewind must be between 0 and 1000000 deliveries, not -1"},
		{"rewind too far", []string{"--rewind", "1000001", "c.ndjson"}, nil, "--rewind must be between 0 and 1000000 deliveries, not 1000001"},
		{"max-bad", []string{"--max-bad", "-1", "c.ndjson"}, nil, "--max-bad must not be negative"},
		{"batch", []string{"--batch", "-1", "c.ndjson"}, nil, "--batch must be 0 (the store chooses) or a number of deliveries per commit, not -1"},
		{"max-record", []string{"--max-record", "0", "c.ndjson"}, nil, "--max-record must be between 1 and 1073741824 bytes, not 0"},
		{"consumer", []string{"--consumer=", "c.ndjson"}, nil, "--consumer must name a consumer, not be empty"},
		{"effect", []string{"--effect", "processed", "c.ndjson"}, nil, "--effect processed cannot be the effect table: it must be a plain SQL identifier, and not processed or a name starting redeliver_ or sqlite_"},
		{"input", []string{"--input", "xml", "c.ndjson"}, nil, `unknown --input "xml"; expected one of auto, cloudevents|kcat|sqs|nats|ndjson`},
		{"parallel 0", []string{"--parallel", "0", "c.ndjson"}, nil, "--parallel must be between 1 and 256, not 0"},
		{"parallel 257", []string{"--parallel", "257", "c.ndjson"}, nil, "--parallel must be between 1 and 256, not 257"},
		{"target parallel 300", []string{"--target", "t.yaml", "--parallel", "300", "c.ndjson"}, nil, "--parallel must be between 1 and 256, not 300"},
		{"verbose without target", []string{"-v", "c.ndjson"}, nil, "-v lists every breach of a replay into a --target; the built-in replay's report shows the first examples of each invariant, and --format json the same"},
		{"coverage without target", []string{"--coverage", "c.ndjson"}, nil, "--coverage says what a replay into a --target injected and when its kills came; the built-in replay's report says what it injected on its injected: line"},
		{"kill-every without target", []string{"--kill-every", "1s", "c.ndjson"}, nil, "--kill-every kills consumer instances a --target file starts; the built-in handler has none (use --crash)"},
		{"kill-every 0 without target", []string{"--kill-every", "0", "c.ndjson"}, nil, "--kill-every kills consumer instances a --target file starts; the built-in handler has none (use --crash)"},
		{"kill-working without target", []string{"--kill-working", "0.5", "c.ndjson"}, nil, "--kill-working kills the consumer instance a --target file starts while it works on a delivery; the built-in handler has none (use --crash)"},
		{"kill-working 0 without target", []string{"--kill-working", "0", "c.ndjson"}, nil, "--kill-working kills the consumer instance a --target file starts while it works on a delivery; the built-in handler has none (use --crash)"},
		{"target kill-working 0", []string{"--target", "t.yaml", "--kill-working", "0", "c.ndjson"}, nil, "--kill-working must be a probability above 0 and at most 1, such as 0.5, not 0"},
		{"target kill-working above 1", []string{"--target", "t.yaml", "--kill-working", "1.5", "c.ndjson"}, nil, "--kill-working must be a probability above 0 and at most 1, such as 0.5, not 1.5"},
		{"target kill-working negative", []string{"--target", "t.yaml", "--kill-working", "-0.1", "c.ndjson"}, nil, "--kill-working must be a probability above 0 and at most 1, such as 0.5, not -0.1"},
		{"target kill-working NaN", []string{"--target", "t.yaml", "--kill-working", "NaN", "c.ndjson"}, nil, "--kill-working must be a probability above 0 and at most 1, such as 0.5, not NaN"},
		{"target kill-working and kill-every", []string{"--target", "t.yaml", "--kill-working", "1", "--kill-every", "1s", "c.ndjson"}, nil, "--kill-working and --kill-every both kill the consumer's instances, one at a delivery's statements, the other by the clock; give one of the two"},
		{"target kill-working and emit", []string{"--target", "t.yaml", "--kill-working", "1", "--emit-scenario", "r.yaml", "c.ndjson"}, nil, "--emit-scenario cannot write the kills of --kill-working yet: drop one of the two, and reproduce a failure with crash: statements in a scenario"},
		{"logs without target", []string{"--logs", "d", "c.ndjson"}, nil, "--logs keeps the output of the consumer instances a --target file starts; the built-in handler has none"},
		{"strategy", []string{"--strategy", "nope", "c.ndjson"}, nil, `unknown --strategy "nope"`},
		{"crash-at", []string{"--crash-at", "after-check,nope", "c.ndjson"}, nil, `unknown --crash-at point "nope"; expected one of after-check, after-marker, after-effect`},
		{"fail-on", []string{"--fail-on", "nope", "c.ndjson"}, nil, `unknown --fail-on "nope"; expected one of identity-reuse, repeated-ids, keys-with-several-ids, bad-records`},
		{"target republish", []string{"--target", "t.yaml", "--republish", "0.1", "c.ndjson"}, nil, "--republish, --crash-at and --db are for the built-in handler; with --target the consumer keeps its own database"},
		{"target crash-at", []string{"--target", "t.yaml", "--crash-at", "after-check", "c.ndjson"}, nil, "--republish, --crash-at and --db are for the built-in handler; with --target the consumer keeps its own database"},
		{"target db", []string{"--target", "t.yaml", "--db", "x.db", "c.ndjson"}, nil, "--republish, --crash-at and --db are for the built-in handler; with --target the consumer keeps its own database"},
		{"target fail-on", []string{"--target", "t.yaml", "--fail-on", "identity-reuse", "c.ndjson"}, nil, "--fail-on identity-reuse is a capture finding only the built-in replay counts, and a replay into a --target counts its bad records only (--fail-on bad-records, with --max-bad)"},
		{"target fail-on unknown", []string{"--target", "t.yaml", "--fail-on", "nope", "c.ndjson"}, nil, `unknown --fail-on "nope"; expected one of identity-reuse, repeated-ids, keys-with-several-ids, bad-records`},
		{"target emit from stdin", []string{"--target", "t.yaml", "--emit-scenario", "r.yaml", "-"}, nil, "--emit-scenario reads the capture twice; save stdin to a file and replay that"},
		// Mistakes are told in the order the checks come: the report flags,
		// the values, --input, --parallel, then the flags of one replay.
		{"format before batch", []string{"--batch", "-1", "--format", "nope", "c.ndjson"}, nil, `--format must be text, json, junit, tap or html, not "nope"`},
		{"input before strategy", []string{"--input", "xml", "--strategy", "nope", "-v", "c.ndjson"}, nil, `unknown --input "xml"; expected one of auto, cloudevents|kcat|sqs|nats|ndjson`},
		{"parallel before target flags", []string{"--target", "t.yaml", "--strategy", "none", "--parallel", "0", "c.ndjson"}, nil, "--parallel must be between 1 and 256, not 0"},
		{"verbose before strategy", []string{"--strategy", "nope", "-v", "c.ndjson"}, nil, "-v lists every breach of a replay into a --target; the built-in replay's report shows the first examples of each invariant, and --format json the same"},
	}
	// Every flag of the built-in handler alone is refused with --target,
	// in the words of its entry.
	for _, f := range builtInOnly {
		value := map[string]string{"strategy": "none", "identity": "data.id", "consumer": "billing", "effect": "charges", "batch": "5", "compare": "false"}[f.flag]
		if value == "" {
			t.Fatalf("no value for --%s", f.flag)
		}
		tests = append(tests, struct {
			name    string
			args    []string
			want    func(*ReplayOptions)
			wantErr string
		}{"target " + f.flag, []string{"--target", "t.yaml", "--" + f.flag + "=" + value, "c.ndjson"}, nil, "--" + f.flag + " " + f.why})
	}
	// Given at its default, a built-in handler's flag is refused still.
	tests = append(tests, struct {
		name    string
		args    []string
		want    func(*ReplayOptions)
		wantErr string
	}{"target strategy at its default", []string{"--target", "t.yaml", "--strategy", "event-id", "c.ndjson"}, nil, "--strategy " + builtInOnly[0].why})
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var got *ReplayOptions
			err := execute(NewCmdReplay(&Streams{}, func(o *ReplayOptions) error { got = o; return nil }), tt.args)
			if got != nil {
				got.IO, got.Context = nil, nil
			}
			var want *ReplayOptions
			if tt.want != nil {
				// The captures are the arguments that name one.
				var logs []string
				for _, a := range tt.args {
					if a == "-" || strings.HasSuffix(a, ".ndjson") || strings.Contains(a, "://") {
						logs = append(logs, a)
					}
				}
				w := replayDefaults(logs...)
				tt.want(&w)
				want = &w
			}
			checkParsed(t, err, got != nil, got, want, tt.wantErr)
		})
	}
}
