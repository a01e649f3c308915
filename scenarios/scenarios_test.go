package scenarios_test

import (
	"context"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/redeliver/redeliver/pkg/builtin"
	"github.com/redeliver/redeliver/pkg/handler"
	"github.com/redeliver/redeliver/pkg/report"
	"github.com/redeliver/redeliver/pkg/runner"
	"github.com/redeliver/redeliver/pkg/scenario"
	"github.com/redeliver/redeliver/pkg/sqlite"
	"github.com/redeliver/redeliver/pkg/template"
	"github.com/redeliver/redeliver/scenarios"
)

func memory(ctx context.Context, s *scenario.Scenario) (builtin.Store, error) {
	return sqlite.Create(ctx, sqlite.Memory, s.Handler.Config)
}

func library(t *testing.T, dir string) []*scenario.Scenario {
	t.Helper()
	var out []*scenario.Scenario
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || filepath.Ext(path) != ".yaml" {
			return err
		}
		s, err := scenario.LoadFile(path)
		if err != nil {
			t.Errorf("%s: %v", path, err)
			return nil
		}
		out = append(out, s)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(out) == 0 {
		t.Fatalf("no scenarios under %s", dir)
	}
	return out
}

func run(t *testing.T, s *scenario.Scenario) *runner.FileResult {
	t.Helper()
	res, err := builtin.RunFile(context.Background(), s, memory)
	if err != nil {
		t.Fatalf("%s: %v", s.File, err)
	}
	return res
}

func failures(res *runner.FileResult) string {
	var b strings.Builder
	for _, c := range res.Checks {
		for _, f := range c.Failures {
			b.WriteString(c.Name + ": " + report.FailureMessage(f) + " (" + f.Pos.String() + ")\n")
		}
	}
	return b.String()
}

// TestLibraryPasses: every shipped scenario passes as shipped.
func TestLibraryPasses(t *testing.T) {
	for _, s := range library(t, ".") {
		t.Run(s.File, func(t *testing.T) {
			if res := run(t, s); !res.Passed() {
				t.Errorf("%s fails:\n%s", s.File, failures(res))
			}
		})
	}
}

// TestUnsafeScenariosAreCaught: every check that declares violations fails
// once the declaration is removed, naming each declared invariant and an event.
func TestUnsafeScenariosAreCaught(t *testing.T) {
	caught := map[handler.Strategy]bool{}
	for _, s := range library(t, ".") {
		declared := false
		for _, c := range s.Checks {
			declared = declared || c.ViolationsDeclared
		}
		if !declared {
			continue
		}
		t.Run(s.File, func(t *testing.T) {
			want := map[*scenario.Check][]string{}
			for _, c := range s.Checks {
				if c.ViolationsDeclared {
					want[c] = c.Violations
					c.ViolationsDeclared, c.Violations = false, nil
				}
			}
			res := run(t, s)
			for i, c := range s.Checks {
				names, ok := want[c]
				if !ok {
					continue
				}
				cr := res.Checks[i]
				if cr.Passed {
					t.Fatalf("%s: passed without its violations declared", c.Name)
				}
				text := failures(&runner.FileResult{Checks: []runner.CheckResult{cr}})
				for _, n := range names {
					if !strings.Contains(text, "invariant "+n+" broken") || !strings.Contains(text, "evt-") {
						t.Errorf("%s: failure does not name invariant %s and its event:\n%s", c.Name, n, text)
					}
				}
			}
			caught[s.Handler.Strategy] = true
		})
	}
	for _, st := range []handler.Strategy{handler.None, handler.MarkerAfterEffect, handler.ExternalKey} {
		if !caught[st] {
			t.Errorf("no shipped scenario catches an unsafe %s handler", st)
		}
	}
}

// TestSafeStrategiesPassTheCauses runs every cause scenario with every safe
// strategy in place of the one the file names.
func TestSafeStrategiesPassTheCauses(t *testing.T) {
	for _, st := range handler.Strategies {
		if !st.Safe() {
			continue
		}
		for _, s := range library(t, "causes") {
			s.Handler.Strategy = st
			if st.UsesKey() {
				s.Handler.Key = template.MustParse("{data.orderId}")
			}
			if st.CallsOut() {
				s.Handler.ExternalKey = template.MustParse("payment-{data.orderId}")
				s.Handler.ExternalAmount = template.MustParse("{data.amount}")
			}
			t.Run(string(st)+"/"+s.File, func(t *testing.T) {
				if res := run(t, s); !res.Passed() {
					t.Errorf("%s with strategy %s fails:\n%s", s.File, st, failures(res))
				}
			})
		}
	}
}

// TestStarterIsShipped: init writes the shipped files, byte for byte.
func TestStarterIsShipped(t *testing.T) {
	n := 0
	err := fs.WalkDir(scenarios.Starter, ".", func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		n++
		embedded, _ := fs.ReadFile(scenarios.Starter, path)
		onDisk, err := os.ReadFile(filepath.FromSlash(path))
		if err != nil || string(onDisk) != string(embedded) {
			t.Errorf("%s: starter copy differs from the shipped file (%v)", path, err)
		}
		return nil
	})
	if err != nil || n < 5 {
		t.Fatalf("starter set has %d files (%v)", n, err)
	}
}
