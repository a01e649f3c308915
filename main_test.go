package main

import (
	"context"
	"database/sql"
	"errors"
	"flag"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/redeliver/redeliver/cmd"
	"github.com/redeliver/redeliver/pkg/external/consumertest"
	"github.com/redeliver/redeliver/pkg/proc/proctest"
	"github.com/rogpeppe/go-internal/testscript"
	_ "modernc.org/sqlite"
)

var update = flag.Bool("update", false, "rewrite the expected output in testdata/script from what the command printed")

func TestMain(m *testing.M) {
	// A race-enabled program sleeps a second at exit, by default, for
	// goroutines still running to report; in the heavy tier every
	// redeliver the scripts start is one. Ten milliseconds keep that
	// report and drop the wait (GORACE set by the caller wins; testscript
	// passes it on).
	if os.Getenv("GORACE") == "" {
		os.Setenv("GORACE", "atexit_sleep_ms=10")
	}
	testscript.Main(withBuiltPrograms{m}, map[string]func(){
		"redeliver": func() { os.Exit(cmd.Main()) },
		// drop-kept-schemas FILE drops the PostgreSQL schemas that the
		// "kept schema NAME" lines of FILE (a --keep run's stderr) name.
		"drop-kept-schemas": func() { os.Exit(dropKeptSchemas(os.Args[1])) },
		// exit-status N PROG ARGS... runs PROG and succeeds only if it exits with N.
		"exit-status": func() { os.Exit(exitStatus(os.Args[1], os.Args[2:])) },
		// foreign-db FILE makes a SQLite database of another program's.
		"foreign-db": func() { os.Exit(foreignDB(os.Args[1])) },
		// publish-capture URL STREAM FILE publishes a CloudEvents NDJSON
		// capture into a new JetStream stream; delete-stream URL STREAM
		// deletes it again.
		"publish-capture": func() { os.Exit(publishCapture(os.Args[1], os.Args[2], os.Args[3])) },
		"delete-stream":   func() { os.Exit(deleteStream(os.Args[1], os.Args[2])) },
		// strip-inputs IN OUT writes IN with capture names (files, streams,
		// and the format beside them) replaced by CAPTURE.
		"strip-inputs": func() { os.Exit(stripInputs(os.Args[1], os.Args[2])) },
		// fill-in FILE WHAT YAML replaces the quoted placeholder
		// "<fill in: WHAT…>" of FILE with YAML, as a user would.
		"fill-in": func() { os.Exit(fillIn(os.Args[1], os.Args[2], os.Args[3])) },
		// consumer is a small consumer under test for the target-mode scripts.
		"consumer": func() { os.Exit(consumertest.Main(os.Args[1:])) },
	})
}

// withBuiltPrograms runs the tests with the programs the scripts start
// built on their own, without the race detector: redeliver, as a user
// builds it, the supervisor and the scripts' consumer. Each script starts
// redeliver several times, hundreds in all, and a race-enabled binary
// takes about three times the CPU and starts several times slower; the
// packages' own tests run their code under the race detector. The heavy
// tier (REDELIVER_TEST_HEAVY, make test-heavy) runs the scripts with the
// race-enabled test binary as redeliver, which would otherwise start
// itself again as the supervisor of every process it starts.
type withBuiltPrograms struct{ m *testing.M }

func (w withBuiltPrograms) Run() int {
	dir, err := os.MkdirTemp("", "redeliver-test-programs-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(dir)
	builds := []func(string) error{proctest.UseBuiltSupervisor, consumertest.UseBuilt}
	if os.Getenv("REDELIVER_TEST_HEAVY") == "" {
		builds = append(builds, proctest.UseBuiltRedeliver)
	}
	for _, build := range builds {
		if err := build(dir); err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
	}
	return w.m.Run()
}

// TestScripts runs the end-to-end scripts in testdata/script: the real
// command, its stdout, stderr and exit status. Each script starts with the
// shipped scenarios copied into its work folder as scenarios/.
func TestScripts(t *testing.T) {
	t.Parallel()
	testscript.Run(t, testscript.Params{
		Dir:           filepath.Join("testdata", "script"),
		UpdateScripts: *update,
		Condition: func(cond string) (bool, error) {
			if cond == "postgres" {
				return os.Getenv("REDELIVER_TEST_POSTGRES") != "", nil
			}
			if cond == "nats" {
				return natsUp()
			}
			return false, fmt.Errorf("unknown condition %q", cond)
		},
		Setup: func(env *testscript.Env) error {
			env.Setenv("NO_COLOR", "")
			env.Setenv("FORCE_COLOR", "")
			env.Setenv("GITHUB_ACTIONS", "")
			env.Setenv(proctest.ProgramEnv, os.Getenv(proctest.ProgramEnv))
			// Scripts marked [postgres] run against this server, and skip without it.
			env.Setenv("REDELIVER_TEST_POSTGRES", os.Getenv("REDELIVER_TEST_POSTGRES"))
			// Scripts marked [nats] publish into this server, and skip without it (fail under CI).
			env.Setenv("NATS", natsURL())
			env.Setenv("STREAM", uniqueStream())
			// A free port for a consumer the script starts.
			port, err := consumertest.FreePort()
			if err != nil {
				return err
			}
			env.Setenv("PORT", port)
			return copyTree("scenarios", filepath.Join(env.WorkDir, "scenarios"))
		},
	})
}

func dropKeptSchemas(file string) int {
	data, err := os.ReadFile(file)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, os.Getenv("REDELIVER_TEST_POSTGRES"))
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer conn.Close(ctx)
	for _, line := range strings.Split(string(data), "\n") {
		name, ok := strings.CutPrefix(line, "kept schema ")
		if !ok {
			continue
		}
		if _, err := conn.Exec(ctx, "DROP SCHEMA "+pgx.Identifier{name}.Sanitize()+" CASCADE"); err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		fmt.Println("dropped", name)
	}
	return 0
}

func fillIn(file, what, value string) int {
	data, err := os.ReadFile(file)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	re := regexp.MustCompile(`"<fill in: ` + regexp.QuoteMeta(what) + `[^>]*>"`)
	if !re.Match(data) {
		fmt.Fprintf(os.Stderr, "%s has no placeholder \"<fill in: %s…>\"\n", file, what)
		return 1
	}
	data = re.ReplaceAllLiteral(data, []byte(value))
	if err := os.WriteFile(file, data, 0o644); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	return 0
}

func exitStatus(want string, args []string) int {
	c := exec.Command(args[0], args[1:]...)
	c.Stdin, c.Stdout, c.Stderr = os.Stdin, os.Stdout, os.Stderr
	err := c.Run()
	got := 0
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		got = ee.ExitCode()
	} else if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	if strconv.Itoa(got) != want {
		fmt.Fprintf(os.Stderr, "exit status %d, want %s\n", got, want)
		return 1
	}
	return 0
}

func foreignDB(file string) int {
	db, err := sql.Open("sqlite", file)
	if err == nil {
		_, err = db.Exec(`CREATE TABLE important(x); INSERT INTO important VALUES ('keep me')`)
		db.Close()
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	return 0
}

func copyTree(from, to string) error {
	return filepath.WalkDir(from, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(from, path)
		target := filepath.Join(to, rel)
		if d.IsDir() {
			return os.MkdirAll(target, 0o755)
		}
		if filepath.Ext(path) == ".go" {
			return nil
		}
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		return os.WriteFile(target, data, 0o644)
	})
}
