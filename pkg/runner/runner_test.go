package runner_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/redeliver/redeliver/pkg/builtin"
	"github.com/redeliver/redeliver/pkg/consumer"
	"github.com/redeliver/redeliver/pkg/handler"
	"github.com/redeliver/redeliver/pkg/problem"
	"github.com/redeliver/redeliver/pkg/report"
	"github.com/redeliver/redeliver/pkg/runner"
	"github.com/redeliver/redeliver/pkg/scenario"
	"github.com/redeliver/redeliver/pkg/sqlite"
)

func memory(ctx context.Context, s *scenario.Scenario) (builtin.Store, error) {
	return sqlite.Create(ctx, sqlite.Memory, s.Handler.Config)
}

func runSrc(t *testing.T, src string) *runner.FileResult {
	t.Helper()
	s, err := scenario.Load("s.yaml", []byte(src))
	if err != nil {
		t.Fatalf("Load: %v", err)
	}
	res, err := builtin.RunFile(context.Background(), s, memory)
	if err != nil {
		t.Fatalf("RunFile: %v", err)
	}
	return res
}

func messages(c runner.CheckResult) string {
	var out []string
	for _, f := range c.Failures {
		out = append(out, report.FailureMessage(f)+" @"+f.Pos.String())
	}
	return strings.Join(out, "\n")
}

func TestCheckResults(t *testing.T) {
	const head = "version: 1\nhandler: {effect: shipments, identity: [data.o]}\nchecks:\n  - name: c\n"
	tests := []struct {
		name     string
		body     string
		passed   bool
		line     string
		failures string
	}{
		{
			name:   "say with counts and rows",
			body:   "    steps:\n      - deliver: {id: e, data: {o: 1}}\n        times: 3\n    say: \"{deliveries} calls, {effects} effect, {duplicates} dups, {rows.shipments} row, {rows.processed} marker\"\n",
			passed: true, line: "3 calls, 1 effect, 2 dups, 1 row, 1 marker",
		},
		{
			name:   "plain summary without say",
			body:   "    steps:\n      - deliver: {id: e, data: {o: 1}}\n      - deliver: {id: e, data: {o: 2}}\n      - deliver: {id: f}\n        fail: after-commit\n",
			passed: true, line: "3 deliveries: 1 processed, 1 conflict, 1 crashed",
		},
		{
			name:     "outcome of one of several deliveries",
			body:     "    steps:\n      - deliver: {id: e, data: {o: 1}}\n        times: 2\n        expect: processed\n",
			failures: "step 1 (delivery 2 of 2) expected processed, got duplicate @s.yaml:6:9",
		},
		{
			name:     "failed outcome says why",
			body:     "    steps:\n      - deliver: {id: e}\n        fail: before-begin\n        expect: processed\n",
			failures: "step 1 expected processed, got failed (Injected failure at before-begin) @s.yaml:6:9",
		},
		{
			name:     "error substring",
			body:     "    steps:\n      - deliver: {id: e}\n        expect: {error: boom}\n      - deliver: {id: f}\n        fail: after-check\n        expect: {error: boom}\n",
			failures: "step 1 expected an error containing \"boom\", got no error @s.yaml:6:9\nstep 2 expected an error containing \"boom\", got \"Injected failure at after-check\" @s.yaml:8:9",
		},
		{
			name:     "same effect as a label",
			body:     "    steps:\n      - deliver: {id: e}\n        label: first\n      - deliver: {id: f}\n        expect: {same_effect_as: first}\n",
			failures: "step 2 expected the effect of \"first\" (id 1), got effect id 2 @s.yaml:8:9",
		},
		{
			name:     "state checks",
			body:     "    steps:\n      - deliver: {id: e}\n      - expect: {rows: {shipments: 2}, processed: [x], not_processed: [e]}\n    expect: {rows: {processed: 0}}\n",
			failures: "step 2 expected 2 rows in shipments, got 1 @s.yaml:7:25\nstep 2 expected x to be marked processed, it is not @s.yaml:7:52\nstep 2 expected e not to be marked processed, it is @s.yaml:7:72\nthe check expected 0 rows in processed, got 1 @s.yaml:8:21",
		},
		{
			name:     "declared violations that did not happen",
			body:     "    violations: [duplicate-effect]\n    steps:\n      - deliver: {id: e}\n",
			failures: "expected exactly the violations duplicate-effect, got none @s.yaml:5:17",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res := runSrc(t, head+tt.body)
			c := res.Checks[0]
			if got := messages(c); got != tt.failures {
				t.Errorf("failures:\n%s\nwant:\n%s", got, tt.failures)
			}
			if c.Passed != (tt.failures == "") {
				t.Errorf("passed = %v with failures %q", c.Passed, messages(c))
			}
			if line := report.CheckLine(c.Line); tt.line != "" && line != tt.line {
				t.Errorf("line = %q, want %q", line, tt.line)
			}
		})
	}
}

func TestViolationsAreReportedOnce(t *testing.T) {
	res := runSrc(t, `version: 1
handler: {strategy: none}
checks:
  - name: breaks
    violations: [duplicate-effect]
    steps:
      - deliver: {id: e}
        times: 2
  - name: later check does not inherit it
    steps:
      - deliver: {id: f}
`)
	if !res.Checks[0].Passed || !res.Checks[1].Passed {
		t.Fatalf("checks: %q / %q", messages(res.Checks[0]), messages(res.Checks[1]))
	}
	if n := len(res.Checks[1].Violations); n != 0 {
		t.Errorf("second check re-reported %d violations", n)
	}
	if res.Counters.Deliveries != 3 || res.Counters.Redeliveries != 1 || res.Counters.Effects != 3 {
		t.Errorf("file counters = %+v", res.Counters)
	}
}

func TestCountersForTheGateway(t *testing.T) {
	res := runSrc(t, `version: 1
handler:
  strategy: external-key
  key: "{data.o}"
  external: {key: "pay-{data.o}", amount: "{data.a}"}
checks:
  - name: c
    steps:
      - deliver: {id: e, data: {o: 1, a: 5}}
        fail: after-external
      - deliver: {id: e, data: {o: 1, a: 6}}
        expect: {outcome: failed, error: "idempotency key conflict (422)"}
    say: "{key_conflicts} conflict, {orphan_charges} orphan, {charges} charge"
`)
	c := res.Checks[0]
	if line := report.CheckLine(c.Line); !c.Passed || line != "1 conflict, 1 orphan, 1 charge" {
		t.Fatalf("check: passed=%v line=%q failures=%q", c.Passed, line, messages(c))
	}
	if c.Counters.FailedAfterExternal != 1 || c.Counters.KeyConflicts != 1 || c.Counters.Failed != 2 {
		t.Errorf("counters = %+v", c.Counters)
	}
	if len(c.Reconciliation) != 1 || !strings.Contains(c.Reconciliation[0], "has no row in effects") {
		t.Errorf("reconciliation = %q", c.Reconciliation)
	}
}

// brokenStore fails every transaction: a database error is a runtime error,
// not a failed check.
type brokenStore struct{ builtin.Store }

func (brokenStore) Begin(context.Context) (handler.Tx, error) {
	return nil, errors.New("disk I/O error")
}

func TestStoreErrorIsARuntimeError(t *testing.T) {
	s, err := scenario.Load("s.yaml", []byte("version: 1\nchecks:\n  - name: c\n    steps:\n      - deliver: {id: e}\n"))
	if err != nil {
		t.Fatal(err)
	}
	open := func(ctx context.Context, s *scenario.Scenario) (builtin.Store, error) {
		st, err := memory(ctx, s)
		return brokenStore{st}, err
	}
	_, err = builtin.RunFile(context.Background(), s, open)
	if problem.KindOf(err) != problem.Environment || !strings.Contains(err.Error(), "delivering e (s.yaml:5:9): begin") && !strings.Contains(err.Error(), "disk I/O error") {
		t.Fatalf("err = %v, want an environment problem naming the delivery", err)
	}
}

func TestInterruptStopsTheRun(t *testing.T) {
	s, _ := scenario.Load("s.yaml", []byte("version: 1\nchecks:\n  - name: c\n    steps:\n      - deliver: {id: e}\n"))
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := builtin.RunFile(ctx, s, memory); !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v, want context.Canceled", err)
	}
}

// TestSayValuesCoverEveryPlaceholder: every placeholder the scenario format
// accepts has a value, so no say line expands to an empty word.
func TestSayValuesCoverEveryPlaceholder(t *testing.T) {
	values := runner.SayValues(consumer.Counters{Deliveries: 3})
	for _, p := range scenario.SayPlaceholders {
		if _, ok := values[p]; !ok && p != "violations" {
			t.Errorf("placeholder {%s} has no value", p)
		}
	}
	if _, ok := values["violations"]; ok || values["deliveries"] != 3 {
		t.Errorf("values = %v", values)
	}
}

// TestSpans: every delivery records when it ran and on which lane — a
// concurrent step's workers each on their own, held at the step's point
// and let go after it; a run of repeats from its first delivery's send to
// its last one's answer, still kept as one record.
func TestSpans(t *testing.T) {
	res := runSrc(t, `version: 1
handler: {strategy: check-then-act, effect: shipments}
checks:
  - name: repeats
    steps:
      - deliver: {id: evt-1, data: {orderId: order-1}}
        times: 5
  - name: race
    steps:
      - deliver: {id: evt-2, data: {orderId: order-2}}
        concurrent: 3
        interleave: after-check
    violations: [duplicate-effect]
`)
	rep := res.Checks[0].History
	if len(rep) != 2 || rep[1].Repeats != 3 {
		t.Fatalf("times: 5 kept %d records (the second with %d repeats), want 2, the second with 3", len(rep), rep[len(rep)-1].Repeats)
	}
	for _, rec := range rep {
		sp := rec.Span
		if sp.Sent.IsZero() || sp.Answered.Before(sp.Sent) || sp.Lane != 0 || sp.HeldAt != "" {
			t.Errorf("delivery %d: span %+v, want a send, an answer after it, lane 0, not held", rec.Seq, sp)
		}
	}
	if !rep[1].Span.Sent.After(rep[0].Span.Answered) && !rep[1].Span.Sent.Equal(rep[0].Span.Answered) {
		t.Errorf("the repeats were sent at %v, before the first delivery's answer at %v", rep[1].Span.Sent, rep[0].Span.Answered)
	}
	lanes := map[int]bool{}
	for _, rec := range res.Checks[1].History {
		sp := rec.Span
		lanes[sp.Lane] = true
		if sp.HeldAt != consumer.AfterCheck || sp.Held.Before(sp.Sent) || sp.Released.Before(sp.Held) || sp.Answered.Before(sp.Released) {
			t.Errorf("worker %d: span %+v, want held at after-check between its send and its answer", sp.Lane, sp)
		}
	}
	if len(lanes) != 3 || !lanes[1] || !lanes[2] || !lanes[3] {
		t.Errorf("the race's deliveries ran on lanes %v, want 1, 2 and 3", lanes)
	}
}
