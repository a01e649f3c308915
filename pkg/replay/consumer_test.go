package replay

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/redeliver/redeliver/pkg/invariant"
	"github.com/redeliver/redeliver/pkg/problem"
)

// fakeConsumer is a kind of consumer as a new one would plug in: it
// records what the replay asked of it.
type fakeConsumer struct {
	refuse error // Check's answer
	broken bool  // whether its replay breaks an invariant
	calls  []string
}

func (f *fakeConsumer) Check(o *Options) error {
	f.calls = append(f.calls, "check")
	if o.Parallel < 1 {
		o.Parallel = 1
	}
	return f.refuse
}

func (f *fakeConsumer) Replay(_ context.Context, o *Options) (*Report, error) {
	f.calls = append(f.calls, "replay")
	rep := &Report{Seed: o.Seed, Invariants: []InvariantCheck{}, Violations: []Violation{}, Verdict: invariant.Pass}
	if f.broken {
		rep.Violations = append(rep.Violations, Violation{Invariant: "duplicate-effect", Count: 1})
		rep.Verdict = invariant.Fail
	}
	return rep, nil
}

func (f *fakeConsumer) Findings(_ context.Context, rep *Report, add func(v any) error) error {
	f.calls = append(f.calls, "findings")
	for _, v := range rep.Violations {
		if err := add(map[string]string{"finding": v.Invariant}); err != nil {
			return err
		}
	}
	return nil
}

func (f *fakeConsumer) Reproduce(context.Context, *Options, *Report) ([]byte, int, error) {
	f.calls = append(f.calls, "reproduce")
	return []byte("version: 1\n"), 3, nil
}

func (f *fakeConsumer) Unfinished(o *Options) *Report {
	return &Report{Seed: o.Seed, Verdict: invariant.Error}
}

func (f *fakeConsumer) Close() error {
	f.calls = append(f.calls, "close")
	return nil
}

// TestRunDrivesAnyConsumer: the one replay checks the options and the
// captures before a consumer replays, writes --findings from what the
// consumer lists and the reproducer it makes (only when an invariant
// broke), and closes it.
func TestRunDrivesAnyConsumer(t *testing.T) {
	dir := t.TempDir()
	capture := filepath.Join(dir, "c.ndjson")
	if err := os.WriteFile(capture, []byte("{}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	refused := problem.Usagef("--crash needs a consumer that can be killed")
	tests := []struct {
		name    string
		c       fakeConsumer
		inputs  []string
		opts    Options
		calls   string
		err     string
		written bool // the reproducer
	}{
		{"passes", fakeConsumer{}, []string{capture}, Options{}, "check replay findings close", "", false},
		{"breaks an invariant", fakeConsumer{broken: true}, []string{capture}, Options{}, "check replay findings reproduce close", "", true},
		{"refused by its check", fakeConsumer{refuse: refused}, []string{capture}, Options{}, "check", refused.Error(), false},
		{"a capture that is not there", fakeConsumer{}, []string{filepath.Join(dir, "missing.ndjson")}, Options{}, "check", "no such capture file", false},
		{"a fault value out of range", fakeConsumer{}, []string{capture}, Options{Redeliver: 2}, "", "--redeliver", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out := t.TempDir()
			c := tt.c
			o := tt.opts
			o.Inputs, o.Consumer, o.Seed = tt.inputs, &c, 7
			o.FindingsFile, o.EmitScenario = filepath.Join(out, "f.ndjson"), filepath.Join(out, "r.yaml")
			rep, err := Run(context.Background(), o)
			if got := strings.Join(c.calls, " "); got != tt.calls {
				t.Errorf("the consumer was asked: %q, want %q", got, tt.calls)
			}
			if tt.err != "" {
				if err == nil || !strings.Contains(err.Error(), tt.err) {
					t.Fatalf("error %v, want one saying %q", err, tt.err)
				}
				if _, serr := os.Stat(o.FindingsFile); !errors.Is(serr, os.ErrNotExist) {
					t.Errorf("a refused replay wrote its findings file")
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			found, err := os.ReadFile(o.FindingsFile)
			if err != nil {
				t.Fatal(err)
			}
			if want := strings.Repeat("{\"finding\":\"duplicate-effect\"}\n", len(rep.Violations)); string(found) != want {
				t.Errorf("findings %q, want %q", found, want)
			}
			_, serr := os.Stat(o.EmitScenario)
			if written := serr == nil; written != tt.written {
				t.Errorf("reproducer written: %v, want %v", written, tt.written)
			}
			if tt.written && (rep.Reproducer != o.EmitScenario || rep.ReproducerSteps != 3) {
				t.Errorf("the report names reproducer %q with %d deliveries, want %q with 3", rep.Reproducer, rep.ReproducerSteps, o.EmitScenario)
			}
			if !tt.written && rep.Reproducer != "" {
				t.Errorf("the report names reproducer %q, and nothing broke", rep.Reproducer)
			}
		})
	}
}

// TestUnfinishedIsTheConsumers: the report of a replay that stopped
// first is the consumer's own.
func TestUnfinishedIsTheConsumers(t *testing.T) {
	r := Unfinished(Options{Consumer: &fakeConsumer{}, Seed: 9, Inputs: []string{"c.ndjson"}})
	if r.Seed != 9 || r.Verdict != invariant.Error || r.Strategy != "" {
		t.Errorf("unfinished report %+v, want the fake consumer's (seed 9, verdict error, no strategy)", r)
	}
	if b := Unfinished(Options{Inputs: []string{"c.ndjson"}}); b.Strategy == "" {
		t.Errorf("the built-in replay's unfinished report names no strategy")
	}
}
