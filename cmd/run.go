package cmd

import (
	"context"
	"fmt"
	"time"

	"github.com/redeliver/redeliver/pkg/problem"
	"github.com/redeliver/redeliver/pkg/report"
	"github.com/redeliver/redeliver/pkg/suite"
	"github.com/spf13/cobra"
)

// RunOptions are the arguments and flags of redeliver run.
type RunOptions struct {
	IO      *Streams
	Context context.Context

	Paths  []string
	DB     string
	Seed   int64
	Repeat int
	Keep   bool
	Output outputOptions
}

// NewCmdRun builds redeliver run on the given streams. Its RunE fills a
// RunOptions from the arguments and flags and checks it; then it calls
// runF with it, or, when runF is nil, runs the scenario files.
func NewCmdRun(s *Streams, runF func(*RunOptions) error) *cobra.Command {
	o := &RunOptions{IO: s}
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

` + outputHelp + `

--coverage prints, after the text report (on stderr when stdout carries a
structured format), which fault points each strategy's checks reached: a
fault point counts only when an injected failure fired there. Every
structured report carries the same figures.

` + exitHelp,
		Example: `  redeliver run
  redeliver run scenarios/seed-fixture.yaml --db seed.db
  redeliver run scenarios/ -v
  redeliver run --report junit=redeliver.xml
  redeliver run --format json > redeliver.json
  redeliver run scenarios/races --repeat 1000 --db postgres://postgres@127.0.0.1:5432/test`,
		RunE: ran(func(cmd *cobra.Command, args []string) error {
			o.Context = cmd.Context()
			o.Paths = args
			if len(o.Paths) == 0 {
				o.Paths = []string{"scenarios"}
			}
			if err := o.validate(); err != nil {
				return err
			}
			if runF != nil {
				return runF(o)
			}
			return runRun(o)
		}),
	}
	f := c.Flags()
	f.StringVar(&o.DB, "db", ":memory:", "database: :memory:, a file path, a folder/ for one file per scenario, or postgres://…")
	f.IntVar(&o.Repeat, "repeat", 1, "run each scenario file N times, each on a fresh database")
	f.BoolVar(&o.Keep, "keep", false, "keep the PostgreSQL schemas of the run instead of dropping them")
	f.Int64Var(&o.Seed, "seed", 1, "seed for every random choice")
	addOutputFlags(f, &o.Output)
	addRunOutputFlags(f, &o.Output)
	return c
}

// validate refuses flag values that need no I/O to be found wrong.
func (o *RunOptions) validate() error {
	if o.Repeat < 1 {
		return problem.Usagef("--repeat must be at least 1, not %d", o.Repeat)
	}
	return o.Output.validate()
}

// runRun runs the scenario files and writes the reports.
func runRun(o *RunOptions) error {
	s := o.IO
	out, err := o.Output.prepare(s)
	if err != nil {
		return err
	}
	start := time.Now()
	run := &report.Run{Command: "run", Seed: o.Seed, Store: report.StoreOf(o.DB), Workers: 1}
	err = runSuite(o.Context, o, run, s)
	run.Duration = time.Since(start)
	if err != nil {
		run.Errors = problem.List(err)
	}
	return out.finish(s, run, err)
}

// runSuite loads and runs the scenario files, filling in the run's results.
func runSuite(ctx context.Context, o *RunOptions, run *report.Run, s *Streams) error {
	s.Secrets.AddFound(o.DB)
	files, err := suite.Collect(o.Paths)
	if err != nil {
		return err
	}
	scenarios, err := suite.Load(ctx, files)
	if err != nil {
		return err
	}
	for _, sc := range scenarios {
		s.Secrets.Add(sc.Secrets...)
	}
	run.Workers = suite.Workers(scenarios)
	res, err := suite.Run(ctx, scenarios, suite.Options{DB: o.DB, Keep: o.Keep, Repeat: o.Repeat, Seed: o.Seed})
	if res != nil {
		run.Files = res.Files
		for _, k := range res.Kept {
			fmt.Fprintf(s.Err, "kept schema %s\n", k)
		}
	}
	return err
}
