package suite

import (
	"context"
	"fmt"

	"github.com/redeliver/redeliver/pkg/consumer"
	"github.com/redeliver/redeliver/pkg/invariant"
	"github.com/redeliver/redeliver/pkg/runner"
	"github.com/redeliver/redeliver/pkg/scenario"
)

// repeated runs one scenario file n times, each on a fresh database, and
// folds the runs into one result: each check's line ends with how many
// runs passed and how many runs broke which invariant, and a check passes
// only if it passed in every run. With n below 2 it is one plain run.
func repeated(ctx context.Context, s *scenario.Scenario, runFile func(context.Context, *scenario.Scenario) (*runner.FileResult, error), n int) (*runner.FileResult, error) {
	if n < 2 {
		return runFile(ctx, s)
	}
	tallies := make([]tally, len(s.Checks))
	var out *runner.FileResult
	for run := 1; run <= n; run++ {
		fr, err := runFile(ctx, s)
		if err != nil {
			if out != nil {
				out.Checks = foldChecks(tallies, run-1)
			}
			return out, fmt.Errorf("run %d of %d: %w", run, n, err)
		}
		if out == nil {
			out = &runner.FileResult{File: fr.File, Name: fr.Name, Strategy: fr.Strategy, Target: fr.Target, Effects: fr.Effects}
		}
		out.Counters.Add(fr.Counters)
		for i := range fr.Checks {
			tallies[i].add(run, &fr.Checks[i])
		}
	}
	out.Checks = foldChecks(tallies, n)
	return out, nil
}

// tally is one check over the runs so far.
type tally struct {
	first  runner.CheckResult // the first run's result, or the first failing run's
	failed int
	// firstFailed is the run the check first failed in (0: none).
	firstFailed int
	broken      map[invariant.Name]int // runs that broke each invariant
	counters    consumer.Counters
}

func (t *tally) add(run int, c *runner.CheckResult) {
	if run == 1 {
		t.first = *c
		t.broken = map[invariant.Name]int{}
	}
	t.counters.Add(c.Counters)
	seen := map[invariant.Name]bool{}
	for _, v := range c.Violations {
		if !seen[v.Invariant] {
			seen[v.Invariant] = true
			t.broken[v.Invariant]++
		}
	}
	if !c.Passed {
		t.failed++
		if t.firstFailed == 0 {
			t.firstFailed = run
			t.first = *c
		}
	}
	// Later runs' histories are not kept: a thousand runs must not grow
	// the report.
}

func foldChecks(tallies []tally, runs int) []runner.CheckResult {
	var out []runner.CheckResult
	for _, t := range tallies {
		if t.broken == nil {
			break // not reached in any run
		}
		c := t.first
		c.Counters = t.counters
		c.Passed = t.failed == 0
		var broken []runner.Tallied
		for _, inv := range invariant.All {
			if k := t.broken[inv.Name]; k > 0 {
				broken = append(broken, runner.Tallied{Invariant: inv.Name, N: k})
			}
		}
		if c.Passed {
			c.Line.Repeated = &runner.Repeated{Runs: runs, Broken: broken}
		} else {
			fs := make([]runner.Failure, 0, len(c.Failures)+1)
			for i, f := range c.Failures {
				if i == 0 {
					f.Repeated = &runner.RepeatedFailure{Runs: runs, Failed: t.failed, First: t.firstFailed, Broken: broken}
				}
				fs = append(fs, f)
			}
			c.Failures = fs
		}
		out = append(out, c)
	}
	return out
}
