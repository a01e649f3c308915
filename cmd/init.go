package cmd

import (
	"bytes"
	"embed"
	"errors"
	"fmt"
	"io/fs"
	"net/url"
	"os"
	"path/filepath"
	"strings"

	"github.com/redeliver/redeliver/pkg/effects"
	"github.com/redeliver/redeliver/pkg/problem"
	"github.com/redeliver/redeliver/pkg/redact"
	"github.com/redeliver/redeliver/scenarios"
	"github.com/spf13/cobra"
)

// InitOptions are the argument and flags of redeliver init.
type InitOptions struct {
	IO *Streams

	Dir       string // where the files are written
	Target    string // --target: http or exec
	TargetSet bool   // --target was given (an empty one is refused)
	DB        string // --db, with --target http
}

// NewCmdInit builds redeliver init on the given streams. Its RunE fills an
// InitOptions from the argument and flags and checks it; then it calls
// runF with it, or, when runF is nil, writes the starter files.
func NewCmdInit(s *Streams, runF func(*InitOptions) error) *cobra.Command {
	o := &InitOptions{IO: s}
	c := &cobra.Command{
		Use:   "init [DIR]",
		Short: "Write a starter set of scenarios (default ./scenarios)",
		Long: `Write a starter set of scenario files into DIR (default ./scenarios): the
fixture, the causes of duplicates, and one scenario per safe strategy, all
passing.

With --target http, write DIR/consumer.yaml instead: a scenario for your own
HTTP consumer, every field explained in a comment, with checks for a
redelivery, a crash then a redelivery, a lost answer and concurrent
duplicates. With --target exec, the same for a consumer run once per
event, the event on its stdin and its exit status its answer. With
--target http --db postgres://… (or mysql://…, or a Go MySQL DSN
USER:PW@tcp(HOST:PORT)/DB), the consumer connects to its PostgreSQL,
MySQL or MariaDB database through redeliver's proxy
(${REDELIVER_DB_URL}), and the crash
and concurrent checks act at each of its SQL statements. Replace
each "<fill in: ...>" in it with your own value; redeliver validate names
every one left.

Nothing is overwritten: if any of the files exists, nothing is written.

` + exitHelp,
		Example: `  redeliver init
  redeliver init consumer-tests && redeliver run consumer-tests
  redeliver init --target http my-consumer && redeliver validate my-consumer
  redeliver init --target exec my-consumer
  redeliver init --target http --db postgres://postgres@127.0.0.1:5432/test my-service
  redeliver init --target http --db mysql://root@127.0.0.1:3306/test my-service`,
		Args: cobra.MaximumNArgs(1),
		RunE: ran(func(cmd *cobra.Command, args []string) error {
			o.Dir = "scenarios"
			if len(args) == 1 {
				o.Dir = args[0]
			}
			o.TargetSet = cmd.Flags().Changed("target")
			if err := o.validate(); err != nil {
				return err
			}
			if runF != nil {
				return runF(o)
			}
			return runInit(o)
		}),
	}
	c.Flags().StringVar(&o.Target, "target", "", "write a scenario for your own consumer reached this way (http or exec) instead of the built-in starter set")
	c.Flags().StringVar(&o.DB, "db", "", "with --target http: your consumer's PostgreSQL database (postgres://…) or MySQL or MariaDB one (mysql://…); the scenario then relays its connections and kills it at each of its statements")
	return c
}

// initStarters are the starter files of init --target, by target.
var initStarters = map[string]string{"http": "starter/http-consumer.yaml", "exec": "starter/exec-consumer.yaml"}

// validate refuses a --target init has no starter for, and a --db
// it cannot write the statement checks for. --db without --target is
// ignored.
func (o *InitOptions) validate() error {
	if !o.TargetSet {
		return nil
	}
	if _, ok := initStarters[o.Target]; !ok {
		return problem.Usagef("--target %q: init writes a scenario for an HTTP consumer (--target http) or one run per event (--target exec); for broker targets see docs/brokers.md", o.Target)
	}
	if o.DB != "" && (o.Target != "http" || initDBStarter(o.DB) == "") {
		return problem.Usagef("--db %s: init writes the statement checks for an HTTP consumer on PostgreSQL, MySQL or MariaDB: --target http --db postgres://USER@HOST:PORT/DATABASE or mysql://USER@HOST:PORT/DATABASE", redact.URL(o.DB))
	}
	return nil
}

// runInit writes the starter set, or with --target the starter for the
// consumer.
func runInit(o *InitOptions) error {
	if !o.TargetSet {
		return writeStarter(o.IO, o.Dir, scenarios.Starter, nil, "run them with: redeliver run %s")
	}
	starter := initStarters[o.Target]
	var files fs.FS = starterFiles
	if o.DB != "" {
		starter = initDBStarter(o.DB)
		files = filled{starterFiles, starter, yamlQuoted(o.DB)}
	}
	return writeStarter(o.IO, o.Dir, files, map[string]string{starter: "consumer.yaml"},
		"fill in each \"<fill in: ...>\" (redeliver validate %[1]s names them), then: redeliver run %[1]s")
}

// starterFiles are the starters of init --target.
//
//go:embed starter/http-consumer.yaml starter/exec-consumer.yaml starter/http-postgres.yaml starter/http-mysql.yaml
var starterFiles embed.FS

// dbPlaceholder is where the PostgreSQL and MySQL starters takes the database init
// --db names.
const dbPlaceholder = "${DATABASE_URL:-DBURL}"

// filled is a file system of starters whose file name has its database
// filled in.
type filled struct {
	embed.FS
	name, db string
}

func (f filled) ReadFile(name string) ([]byte, error) {
	data, err := f.FS.ReadFile(name)
	if err != nil || name != f.name {
		return data, err
	}
	return bytes.Replace(data, []byte(dbPlaceholder), []byte("${DATABASE_URL:-"+f.db+"}"), 1), nil
}

// initDBStarter is the starter of init --target http --db s: the
// PostgreSQL one for a postgres:// URL with a host, the MySQL one for a
// mysql:// URL with a host or a Go MySQL DSN over TCP that the MySQL
// driver reads; "" for anything else.
func initDBStarter(s string) string {
	switch effects.KindOf(s) {
	case effects.Postgres:
		if u, err := url.Parse(s); err == nil && (u.Scheme == "postgres" || u.Scheme == "postgresql") && u.Host != "" {
			return "starter/http-postgres.yaml"
		}
	case effects.MySQL:
		u, err := url.Parse(s)
		viaURL := err == nil && u.Scheme == "mysql" && u.Host != ""
		viaDSN := effects.NativeMySQL(s) && !strings.Contains(s, "unix(") // the proxy relays TCP only
		if _, err := effects.Parse(s); err == nil && (viaURL || viaDSN) {
			return "starter/http-mysql.yaml"
		}
	}
	return ""
}

// yamlQuoted is s as it may stand inside a YAML double-quoted string.
func yamlQuoted(s string) string {
	return strings.NewReplacer(`\`, `\\`, `"`, `\"`).Replace(s)
}

// writeStarter writes the files of from into dir, each under its own
// path, or, when rename is given, only the files it names, each under the
// path it gives; then it says next on stderr (%s: dir).
func writeStarter(s *Streams, dir string, from fs.FS, rename map[string]string, next string) error {
	var names []string
	err := fs.WalkDir(from, ".", func(path string, d fs.DirEntry, err error) error {
		if _, named := rename[path]; err == nil && !d.IsDir() && (rename == nil || named) {
			names = append(names, path)
		}
		return err
	})
	dest := func(n string) string {
		if r, ok := rename[n]; ok {
			n = r
		}
		return filepath.Join(dir, filepath.FromSlash(n))
	}
	if err != nil {
		return err
	}
	for _, n := range names {
		target := dest(n)
		if _, err := os.Stat(target); err == nil {
			return problem.Usagef("%s already exists; init writes nothing over existing files (choose another folder)", target)
		} else if !errors.Is(err, fs.ErrNotExist) {
			return err
		}
	}
	for _, n := range names {
		data, err := fs.ReadFile(from, n)
		if err != nil {
			return err
		}
		target := dest(n)
		if err := os.MkdirAll(filepath.Dir(target), 0o755); err != nil {
			return err
		}
		// O_EXCL: a file that appeared since the check is still not overwritten.
		f, err := os.OpenFile(target, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
		if err != nil {
			return err
		}
		if _, err := f.Write(data); err != nil {
			f.Close()
			return err
		}
		if err := f.Close(); err != nil {
			return err
		}
		fmt.Fprintf(s.Err, "wrote %s\n", target)
	}
	fmt.Fprintf(s.Err, next+"\n", dir)
	return nil
}
