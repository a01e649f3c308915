package runner_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/redeliver/redeliver/pkg/builtin"
	"github.com/redeliver/redeliver/pkg/consumer"
	"github.com/redeliver/redeliver/pkg/handler"
	"github.com/redeliver/redeliver/pkg/invariant"
	"github.com/redeliver/redeliver/pkg/report"
	"github.com/redeliver/redeliver/pkg/runner"
	"github.com/redeliver/redeliver/pkg/scenario"
)

// unforced is a race with no interleave: the runner explores it.
const unforced = `version: 1
handler:
  strategy: STRATEGY
  effect: shipments
HANDLER
checks:
  - name: unforced race
    steps:
      - deliver: {id: evt-1, data: {orderId: order-1, amount: 25}}
        concurrent: 4
EXPECT
`

func unforcedRace(t *testing.T, strategy handler.Strategy, expect string) *scenario.Scenario {
	t.Helper()
	extra := ""
	if strategy.UsesKey() {
		extra = `  key: "{data.orderId}"` + "\n"
	}
	if strategy.CallsOut() {
		extra += "  external: {key: \"payment-{data.orderId}\", amount: \"{data.amount}\"}\n"
	}
	src := strings.NewReplacer("STRATEGY", string(strategy), "HANDLER\n", extra, "EXPECT\n", expect).Replace(unforced)
	s, err := scenario.Load("race.yaml", []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// TestUnforcedRaceIsCaught: check-then-act raced by 4 workers without
// interleave is caught on every run, on every store: the runner holds the
// workers at each fault point itself, and the schedule that broke the
// invariant is named, so that it can be written as interleave.
func TestUnforcedRaceIsCaught(t *testing.T) {
	s := unforcedRace(t, handler.CheckThenAct, "")
	for _, st := range stores(t) {
		t.Run(st.name, func(t *testing.T) {
			open := st.open(t)
			for run := 1; run <= 2; run++ {
				res, err := builtin.RunFile(context.Background(), s, open)
				if err != nil {
					t.Fatalf("run %d: %v", run, err)
				}
				c := res.Checks[0]
				if c.Passed {
					t.Fatalf("run %d: the race passed: %s", run, report.CheckLine(c.Line))
				}
				if c.Schedules != 11 {
					t.Errorf("run %d: %d schedules, want 11", run, c.Schedules)
				}
				f := c.Failures[0]
				msg := report.FailureMessage(f)
				if f.Invariant != invariant.DuplicateEffect.Name || !strings.Contains(msg, " schedules; first in schedule ") || !strings.Contains(msg, "held at ") && !strings.Contains(msg, "(unforced)") {
					t.Errorf("run %d: first failure %q (%s), want duplicate-effect in a named schedule", run, msg, f.Invariant)
				}
			}
		})
	}
}

// TestUnforcedRaceOnSafeStrategies: every schedule of a safe strategy
// ends with one effect and the rest duplicates, on every store (event-id:
// the unforced race of scenarios/races/event-id.yaml, TestRaceScenarios).
func TestUnforcedRaceOnSafeStrategies(t *testing.T) {
	schedules := map[handler.Strategy]int{handler.ConsumerScoped: 11, handler.BusinessKey: 11, handler.ExternalKey: 13}
	for _, st := range stores(t) {
		for _, strategy := range []handler.Strategy{handler.ConsumerScoped, handler.BusinessKey, handler.ExternalKey} {
			t.Run(st.name+"/"+string(strategy), func(t *testing.T) {
				s := unforcedRace(t, strategy, "    expect:\n      rows: {shipments: 1, processed: 1}\n")
				res, err := builtin.RunFile(context.Background(), s, st.open(t))
				if err != nil {
					t.Fatal(err)
				}
				c := res.Checks[0]
				if !c.Passed {
					t.Fatalf("failed: %+v", c.Failures)
				}
				if c.Schedules != schedules[strategy] {
					t.Errorf("%d schedules, want %d", c.Schedules, schedules[strategy])
				}
				if c.Counters.Processed != 1 || c.Counters.Duplicates != 3 {
					t.Errorf("%d processed and %d duplicates, want 1 and 3", c.Counters.Processed, c.Counters.Duplicates)
				}
			})
		}
	}
}

// TestExploredDeclaredViolations: a declared violation must break in some
// schedule, not in every one; one that breaks in none fails the check.
func TestExploredDeclaredViolations(t *testing.T) {
	tests := []struct {
		name     string
		strategy handler.Strategy
		passed   bool
		want     string // in the line when passed, in the first failure otherwise
	}{
		{"caught", handler.CheckThenAct, true, "4 deliveries"},
		{"never broken", handler.EventID, false, "expected exactly the violations duplicate-effect, got none (in 11 schedules)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := unforcedRace(t, tt.strategy, "    violations: [duplicate-effect]\n")
			res, err := builtin.RunFile(context.Background(), s, memory)
			if err != nil {
				t.Fatal(err)
			}
			c := res.Checks[0]
			if c.Passed != tt.passed {
				t.Fatalf("passed = %v, want %v: %s %+v", c.Passed, tt.passed, report.CheckLine(c.Line), c.Failures)
			}
			got := report.CheckLine(c.Line)
			if !c.Passed {
				got = report.FailureMessage(c.Failures[0])
			} else if !strings.Contains(got, "(11 schedules, caught duplicate-effect in ") {
				t.Errorf("line %q does not count the schedules that caught it", got)
			}
			if !strings.Contains(got, tt.want) {
				t.Errorf("got %q, want it to contain %q", got, tt.want)
			}
		})
	}
}

// TestHeldPointsAreReached: a point interleave held workers at is recorded
// as reached; an explored check records every point it held workers at.
func TestHeldPointsAreReached(t *testing.T) {
	tests := []struct {
		name, step string
		want       []consumer.FaultPoint
	}{
		{"interleave", "        interleave: after-check\n", []consumer.FaultPoint{consumer.AfterCheck}},
		{"explored", "", []consumer.FaultPoint{consumer.BeforeBegin, consumer.AfterCheck, consumer.AfterMarker, consumer.AfterEffect, consumer.AfterCommit}},
		{"not concurrent", "", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			src := "version: 1\nchecks:\n  - name: c\n    steps:\n      - deliver: {id: e}\n        concurrent: 2\n" + tt.step
			if tt.want == nil {
				src = "version: 1\nchecks:\n  - name: c\n    steps:\n      - deliver: {id: e}\n"
			}
			c := runSrc(t, src).Checks[0]
			if strings.Join(points(c.Held), " ") != strings.Join(points(tt.want), " ") {
				t.Errorf("held at %v, want %v", c.Held, tt.want)
			}
		})
	}
}

func points(ps []consumer.FaultPoint) []string {
	out := make([]string, len(ps))
	for i, p := range ps {
		out[i] = string(p)
	}
	return out
}

// TestExploredSchedulesStartFromThePrefix: every schedule of an explored
// check starts from exactly the state the earlier checks left, on every
// store. Without a guard each schedule writes both racing workers' effects,
// so a schedule that saw another's rows, or the run's delivery counts,
// would count more than three rows or other effect ids.
func TestExploredSchedulesStartFromThePrefix(t *testing.T) {
	const src = `version: 1
handler: {strategy: none, effect: shipments}
checks:
  - name: prefix
    steps:
      - deliver: {id: evt-1, data: {orderId: order-1}}
        times: 3
    expect:
      rows: {shipments: 3}
    violations: [duplicate-effect]
  - name: race
    steps:
      - deliver: {id: evt-2, data: {orderId: order-2}}
        concurrent: 2
    expect:
      rows: {shipments: 5}
    violations: [duplicate-effect]
    say: "{deliveries} deliveries, {effects} effects"
  - name: after
    steps:
      - deliver: {id: evt-3, data: {orderId: order-3}}
    expect:
      rows: {shipments: 6}
`
	s, err := scenario.Load("s.yaml", []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	for _, st := range stores(t) {
		t.Run(st.name, func(t *testing.T) {
			res, err := builtin.RunFile(context.Background(), s, st.open(t))
			if err != nil {
				t.Fatal(err)
			}
			race := res.Checks[1]
			if race.Schedules < 2 {
				t.Fatalf("the race ran under %d schedules, want several", race.Schedules)
			}
			for _, c := range res.Checks {
				if !c.Passed {
					t.Errorf("check %q failed: %s", c.Name, messages(c))
				}
			}
			for _, rec := range race.History {
				if rec.Result.EffectID != 4 && rec.Result.EffectID != 5 {
					t.Errorf("a racing worker wrote effect %d, want 4 or 5 (the prefix wrote 1 to 3)", rec.Result.EffectID)
				}
			}
			if race.Counters.Redeliveries != 1 {
				t.Errorf("the race counted %d redeliveries, want 1 (the second worker's)", race.Counters.Redeliveries)
			}
			if got := res.Checks[2].History[0].Seq; got != 6 {
				t.Errorf("the delivery after the race is #%d of the run, want #6", got)
			}
		})
	}
}

// TestExploredDurationCountsEveryTrial: an explored check on a system
// that cannot snapshot is reported with the time of all its trials,
// each one's opening and earlier checks included, not only the time of
// its own steps.
func TestExploredDurationCountsEveryTrial(t *testing.T) {
	const opening = 30 * time.Millisecond
	s := unforcedRace(t, handler.CheckThenAct, "")
	k := builtin.Kind(s, memory)
	open := k.Open
	k.Open = func(ctx context.Context, s *scenario.Scenario) (runner.System, error) {
		time.Sleep(opening)
		sys, err := open(ctx, s)
		// Only the System methods: no snapshot, so every schedule is a
		// trial of its own.
		return struct{ runner.System }{sys}, err
	}
	start := time.Now()
	res, err := runner.Run(context.Background(), s, k)
	if err != nil {
		t.Fatal(err)
	}
	wall := time.Since(start)
	c := res.Checks[0]
	if c.Schedules != 11 {
		t.Fatalf("%d schedules, want 11", c.Schedules)
	}
	if min := time.Duration(c.Schedules-1) * opening; c.Duration < min {
		t.Errorf("the check took %s, want at least %s (%d trials, each opened in %s)", c.Duration, min, c.Schedules-1, opening)
	}
	if c.Duration > wall {
		t.Errorf("the check took %s, more than the whole run's %s", c.Duration, wall)
	}
}
