package cmd

import (
	"errors"
	"fmt"

	"github.com/redeliver/redeliver/pkg/report"
	"github.com/redeliver/redeliver/pkg/suite"
	"github.com/spf13/cobra"
)

// runOptions are the flags of redeliver run.
type runOptions struct {
	Paths   []string
	DB      string
	Format  string
	Color   string
	Seed    int64
	Verbose bool
	Repeat  int
	Keep    bool
}

func newRunCmd(s *Streams) *cobra.Command {
	o := &runOptions{}
	c := &cobra.Command{
		Use:   "run [PATH...]",
		Short: "Run scenario files and folders (default ./scenarios)",
		Long: `Run scenario files, and folders of them (walked for *.yaml and *.yml). Every
file is validated before any runs; each file runs against a fresh database.

The report has one line per check and a verdict line. A failed check says what
was expected, what happened, and where (file:line:column).

--db chooses the database: :memory: (the default: embedded SQLite in memory),
a file path (one scenario file; the file is left for inspection), a folder
ending in / (one database file per scenario file), or a PostgreSQL URL
(postgres://USER@HOST:PORT/DATABASE): each scenario file then runs in a schema
of its own, dropped at the end unless --keep.

--repeat N runs each scenario file N times, each on a fresh database, and each
check's line says how many runs passed and how many broke which invariant.

` + exitHelp,
		Example: `  redeliver run
  redeliver run scenarios/seed-fixture.yaml --db seed.db
  redeliver run scenarios/ -v
  redeliver run scenarios/races --repeat 1000 --db postgres://postgres@127.0.0.1:5432/test`,
		RunE: ran(func(cmd *cobra.Command, args []string) error {
			o.Paths = args
			return runRun(cmd, s, o)
		}),
	}
	f := c.Flags()
	f.StringVar(&o.DB, "db", ":memory:", "database: :memory:, a file path, a folder/ for one file per scenario, or postgres://…")
	f.IntVar(&o.Repeat, "repeat", 1, "run each scenario file N times, each on a fresh database")
	f.BoolVar(&o.Keep, "keep", false, "keep the PostgreSQL schemas of the run instead of dropping them")
	f.StringVar(&o.Format, "format", "text", "report format: text")
	f.StringVar(&o.Color, "color", "auto", "colour the report: auto, always or never")
	f.Int64Var(&o.Seed, "seed", 1, "seed for every random choice")
	f.BoolVarP(&o.Verbose, "verbose", "v", false, "also print the caught violations and the counters")
	return c
}

func runRun(cmd *cobra.Command, s *Streams, o *runOptions) error {
	if len(o.Paths) == 0 {
		o.Paths = []string{"scenarios"}
	}
	if o.Format != "text" {
		return usagef("--format must be text, not %q", o.Format)
	}
	if o.Repeat < 1 {
		return usagef("--repeat must be at least 1, not %d", o.Repeat)
	}
	color, err := s.Color(o.Color)
	if err != nil {
		return err
	}
	files, err := suite.Collect(o.Paths)
	if err != nil {
		return inputErr(err)
	}
	scenarios, err := suite.Load(files)
	if err != nil {
		return inputErr(err)
	}
	res, err := suite.Run(cmd.Context(), scenarios, suite.Options{DB: o.DB, Keep: o.Keep, Repeat: o.Repeat})
	if res != nil {
		for _, k := range res.Kept {
			fmt.Fprintf(s.Err, "kept schema %s\n", k)
		}
	}
	if err != nil {
		return inputErr(err)
	}
	if err := report.Text(s.Out, res.Files, report.Options{Color: color, Verbose: o.Verbose}); err != nil {
		return err
	}
	if !res.Passed() {
		return errChecksFailed
	}
	return nil
}

// inputErr turns the suite's input errors into usage errors (exit 2).
func inputErr(err error) error {
	var ie *suite.InputError
	if errors.As(err, &ie) {
		return &usageError{err}
	}
	return err
}
