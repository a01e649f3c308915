// Package suite runs a set of scenario files: it finds them, validates all
// of them before running any, gives each a fresh store, and runs them.
//
// Of this module it imports pkg/runner and what it runs files against (the
// stores pkg/sqlite and pkg/postgres, a user's consumer through
// pkg/external and pkg/effects), and never the renderers (pkg/report) nor
// their words: a repeated check's line and first failure carry how the
// runs went as facts (runner.Repeated, runner.RepeatedFailure).
package suite

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/redeliver/redeliver/pkg/builtin"
	"github.com/redeliver/redeliver/pkg/effects"
	"github.com/redeliver/redeliver/pkg/external"
	"github.com/redeliver/redeliver/pkg/problem"
	"github.com/redeliver/redeliver/pkg/runner"
	"github.com/redeliver/redeliver/pkg/scenario"
	"github.com/redeliver/redeliver/pkg/sqlite"
)

// inputf is a mistake in what the user asked for: a path that does not
// exist, no scenario files, a --db that cannot serve the files given.
func inputf(format string, args ...any) error {
	return &problem.Error{Kind: problem.InvalidInput, Msg: fmt.Sprintf(format, args...)}
}

// Collect expands files and folders into scenario files (*.yaml, *.yml),
// folders walked in lexical order, each file once.
func Collect(paths []string) ([]string, error) {
	var out []string
	seen := map[string]bool{}
	add := func(p string) {
		p = filepath.Clean(p)
		if !seen[p] {
			seen[p] = true
			out = append(out, p)
		}
	}
	for _, p := range paths {
		st, err := os.Stat(p)
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				return nil, inputf("%s: no such file or folder", p)
			}
			return nil, err
		}
		if !st.IsDir() {
			add(p)
			continue
		}
		var found []string
		err = filepath.WalkDir(p, func(path string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			if !d.IsDir() && isScenario(path) {
				found = append(found, path)
			}
			return nil
		})
		if err != nil {
			return nil, err
		}
		if len(found) == 0 {
			return nil, inputf("%s: no scenario files (*.yaml, *.yml) in this folder", p)
		}
		sort.Strings(found)
		for _, f := range found {
			add(f)
		}
	}
	if len(out) == 0 {
		return nil, inputf("no scenario files given")
	}
	return out, nil
}

func isScenario(path string) bool {
	ext := strings.ToLower(filepath.Ext(path))
	return ext == ".yaml" || ext == ".yml"
}

// Load validates every file and returns them all, or every mistake of every
// file. It returns ctx's error as soon as ctx is done, even while a read is
// blocked (a FIFO with no writer): the read is left behind. A --target
// file is a mistake here: it has nothing to run.
func Load(ctx context.Context, files []string) ([]*scenario.Scenario, error) {
	return load(ctx, files, false)
}

// LoadAll is Load that takes --target files (version, target and
// effects, no checks) as well as scenarios, each checked as replay
// --target checks it (Scenario.TargetFile says which is which).
func LoadAll(ctx context.Context, files []string) ([]*scenario.Scenario, error) {
	return load(ctx, files, true)
}

func load(ctx context.Context, files []string, targetFiles bool) ([]*scenario.Scenario, error) {
	var all scenario.Errors
	var out []*scenario.Scenario
	type loaded struct {
		s   *scenario.Scenario
		err error
	}
	for _, f := range files {
		done := make(chan loaded, 1)
		go func() {
			s, err := scenario.LoadFile(f)
			done <- loaded{s, err}
		}()
		var l loaded
		select {
		case l = <-done:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
		s, err := l.s, l.err
		var errs scenario.Errors
		switch {
		case errors.As(err, &errs):
			all = append(all, errs...)
		case err != nil:
			return nil, inputf("%s: %v", f, unwrapPath(err))
		default:
			// Where the reset would run is known only once the
			// environment has filled in the db: checked here, before
			// any file runs.
			if e := effects.Check(s.Effects); e != nil {
				all = append(all, e)
				continue
			}
			if s.TargetFile && !targetFiles {
				all = append(all, problem.Invalid(problem.Pos{File: f, Line: 1, Col: 1}, "a --target file (target and effects, no checks) has nothing to run: replay a capture into its consumer with redeliver replay --target %s CAPTURE, or add checks to make it a scenario", f))
				continue
			}
			out = append(out, s)
		}
	}
	if len(all) > 0 {
		return nil, all
	}
	return out, nil
}

func unwrapPath(err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}

// Options choose where the scenarios run.
type Options struct {
	// DB is ":memory:" (each file its own in-memory database), a file path
	// (one scenario file only), a folder (one database file per scenario),
	// or a postgres:// URL (each file a schema of its own).
	DB string
	// Keep leaves the PostgreSQL schemas for inspection instead of dropping them.
	Keep bool
	// Repeat runs each file this many times, each on a fresh database
	// (0 and 1: once).
	Repeat int
	// Seed chooses every random fault of a target-mode file.
	Seed int64
}

// Result is what a suite run produced.
type Result struct {
	Files []*runner.FileResult
	Store string // what the checks ran on, in words
	// Kept lists the PostgreSQL schemas left for inspection (with Keep).
	Kept []string
}

// Passed reports whether every check passed.
func (r *Result) Passed() bool {
	for _, f := range r.Files {
		if !f.Passed() {
			return false
		}
	}
	return true
}

// Run runs the scenarios in order, each against a fresh store.
func Run(ctx context.Context, scenarios []*scenario.Scenario, opts Options) (*Result, error) {
	st, err := openStores(ctx, scenarios, opts)
	if err != nil {
		return nil, err
	}
	res := &Result{Store: st.name}
	defer func() {
		st.close()
		res.Kept = st.kept()
	}()
	for i, s := range scenarios {
		// One runner for every kind of consumer: the built-in handler on
		// this file's store, or the user's own, each repetition of which
		// draws other random crash delays.
		builtin := builtin.Kind(s, st.opener(i))
		kind := func() runner.Kind { return builtin }
		if s.Target != nil {
			seed := opts.Seed
			kind = func() runner.Kind {
				seed++
				return external.ConsumerKind(s, external.Options{Seed: seed - 1})
			}
		}
		runFile := func(ctx context.Context, s *scenario.Scenario) (*runner.FileResult, error) {
			return runner.Run(ctx, s, kind())
		}
		fr, err := repeated(ctx, s, runFile, opts.Repeat)
		if fr != nil {
			res.Files = append(res.Files, fr)
		}
		if err != nil {
			return res, err
		}
	}
	return res, nil
}

// dbPaths gives each scenario its database.
func dbPaths(scenarios []*scenario.Scenario, db string) ([]string, error) {
	out := make([]string, len(scenarios))
	if db == "" || db == sqlite.Memory {
		for i := range out {
			out[i] = sqlite.Memory
		}
		return out, nil
	}
	st, err := os.Stat(db)
	isDir := err == nil && st.IsDir()
	if !isDir && strings.HasSuffix(db, string(filepath.Separator)) {
		if err := os.MkdirAll(db, 0o755); err != nil {
			return nil, err
		}
		isDir = true
	}
	if !isDir {
		if len(scenarios) > 1 {
			return nil, inputf("--db %s names one database file, but %d scenario files were given; run one file, or give a folder (--db %s/) for one database each", db, len(scenarios), strings.TrimSuffix(db, filepath.Ext(db)))
		}
		out[0] = db
		return out, nil
	}
	used := map[string]string{}
	for i, s := range scenarios {
		name := strings.TrimSuffix(filepath.ToSlash(filepath.Clean(s.File)), filepath.Ext(s.File))
		name = strings.NewReplacer("/", "-", "..", "_", ":", "_").Replace(strings.TrimPrefix(name, "./")) + ".db"
		if other, dup := used[name]; dup {
			return nil, inputf("%s and %s would share the database %s; run them separately", other, s.File, name)
		}
		used[name] = s.File
		out[i] = filepath.Join(db, name)
	}
	return out, nil
}

// Workers is the most workers any step of the scenarios delivers with at once.
func Workers(scenarios []*scenario.Scenario) int {
	n := 1
	for _, sc := range scenarios {
		for _, c := range sc.Checks {
			for _, st := range c.Steps {
				n = max(n, st.Concurrent)
			}
		}
	}
	return n
}
