package report

import (
	"strings"
	"testing"

	"github.com/redeliver/redeliver/pkg/invariant"
	"github.com/redeliver/redeliver/pkg/runner"
	"github.com/redeliver/redeliver/pkg/template"
)

// said is the line of a check whose say: is text without placeholders.
func said(s string) runner.Line { return runner.Line{Say: template.MustParse(s)} }

// TestCheckLine: a check's line is worded from its facts, as the runner
// once wrote it: the say with its values or the system's summary, then
// what its crashes interrupted, then its schedules and its runs.
func TestCheckLine(t *testing.T) {
	handler := func(deliveries, processed, duplicates, crashed int) runner.Summary {
		return runner.Summary{Deliveries: deliveries, Tallies: []runner.Tally{
			{N: processed, Word: "processed"},
			{N: duplicates, Word: "duplicate", Plural: true},
			{N: 0, Word: "conflict", Plural: true},
			{N: 0, Word: "failure", Plural: true},
			{N: crashed, Word: "crashed"},
		}}
	}
	target := func(acked int, crashes runner.Crashes, table string, rows int64, apart int) runner.Summary {
		n := crashes.Before + crashes.After + crashes.Unknown
		return runner.Summary{Deliveries: acked, Tallies: []runner.Tally{
			{N: acked, Word: "acked"}, {N: 0, Word: "conflict"}, {N: 0, Word: "rejected"}, {N: 0, Word: "unacked"},
			{N: n, Crashes: &crashes},
		}, Effects: &runner.Effects{Table: table, Rows: rows}, Apart: apart}
	}
	dup := []invariant.Name{"duplicate-effect"}
	tests := []struct {
		name string
		line runner.Line
		want string
	}{
		{"the handler's summary", runner.Line{Summary: handler(5, 1, 4, 0)}, "5 deliveries: 1 processed, 4 duplicates"},
		{"what it caught", runner.Line{Summary: handler(2, 2, 0, 0), Caught: dup}, "2 deliveries: 2 processed; caught duplicate-effect"},
		{"no delivery", runner.Line{}, "state as expected"},
		{"a crash after the answer", runner.Line{Summary: target(1, runner.Crashes{After: 1}, "payments", 1, 0)},
			"1 delivery: 1 acked, 1 crash after the answer; table payments holds 1 row"},
		{"a sweep", runner.Line{Summary: target(7, runner.Crashes{Before: 6, After: 1}, "payments", 1, 0)},
			"7 deliveries: 7 acked, 7 crashes (6 before the answer, 1 after); table payments holds 1 row"},
		{"an effects query, statements apart", runner.Line{Summary: target(1, runner.Crashes{}, "", 2, 3), Caught: dup},
			"1 delivery: 1 acked; the effects query returns 2 rows; caught duplicate-effect; 3 statements of no delivery let through, never crashed at"},
		{"a say", runner.Line{Say: template.MustParse("{deliveries} sent, {rows.payments} rows, broke {violations}"),
			Values: map[string]int64{"deliveries": 3, "rows.payments": 1}, Caught: dup},
			"3 sent, 1 rows, broke duplicate-effect"},
		{"a say, nothing broken", runner.Line{Say: template.MustParse("broke {violations}")}, "broke none"},
		{"a crash that interrupted nothing", runner.Line{Summary: handler(1, 1, 0, 1), AfterAnswers: 1},
			"1 delivery: 1 processed, 1 crashed; the crash came after the answer: it interrupted no delivery"},
		{"crashes that interrupted nothing", runner.Line{Say: template.MustParse("ok"), AfterAnswers: 2},
			"ok; all 2 crashes came after the answer: none interrupted a delivery"},
		{"explored", runner.Line{Summary: handler(4, 4, 0, 0), Explored: &runner.Explored{Schedules: 11,
			Caught: []runner.Tallied{{Invariant: "duplicate-effect", N: 3}}, Unreached: 1, Idle: 2, Unraced: 1}},
			"4 deliveries: 4 processed (11 schedules, caught duplicate-effect in 3); 1 schedule's boundary was not reached (the workers took another path) and ran unforced; " +
				"2 schedules' kills came after the answer and after the delivery's last statement, its work over: they interrupted nothing; " +
				"1 schedule raced nothing: no other copy ran while its worker was held (the broker handed the copies to one instance, one after the other)"},
		{"explored, then repeated", runner.Line{Say: template.MustParse("ok"), Explored: &runner.Explored{Schedules: 2},
			Repeated: &runner.Repeated{Runs: 3, Broken: []runner.Tallied{{Invariant: "lost-effect", N: 1}}}},
			"ok (2 schedules) (3 runs: 3 passed, invariants broken: lost-effect in 1)"},
		{"repeated, nothing broken", runner.Line{Say: template.MustParse("ok"), Repeated: &runner.Repeated{Runs: 2}},
			"ok (2 runs: 2 passed, invariants broken: none)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := CheckLine(tt.line); got != tt.want {
				t.Errorf("got  %q\nwant %q", got, tt.want)
			}
		})
	}
}

// TestFailureMessage: a failure of an explored or repeated check is
// worded from its facts, as the runner once wrote it.
func TestFailureMessage(t *testing.T) {
	tests := []struct {
		name string
		f    runner.Failure
		want string
	}{
		{"plain", runner.Failure{Message: "step 1 expected x"}, "step 1 expected x"},
		{"explored", runner.Failure{Message: "invariant x broken", Explored: &runner.ExploredFailure{Schedules: 11, Failed: 2, First: 4, Schedule: []runner.ScheduleHold{{Step: 2, At: "after-check"}}}},
			"failed in 2 of 11 schedules; first in schedule 4 (held at after-check, released together): invariant x broken"},
		{"in no schedule", runner.Failure{Message: "expected exactly the violations duplicate-effect, got none", InSchedules: 11},
			"expected exactly the violations duplicate-effect, got none (in 11 schedules)"},
		{"repeated", runner.Failure{Message: "step 1 expected x", Repeated: &runner.RepeatedFailure{Runs: 3, Failed: 2, First: 1, Broken: []runner.Tallied{{Invariant: "duplicate-effect", N: 2}}}},
			"failed in 2 of 3 runs (invariants broken: duplicate-effect in 2); first in run 1: step 1 expected x"},
		{"explored, then repeated", runner.Failure{Message: "m", Explored: &runner.ExploredFailure{Schedules: 3, Failed: 1, First: 2, Schedule: []runner.ScheduleHold{{Step: 1}}},
			Repeated: &runner.RepeatedFailure{Runs: 2, Failed: 1, First: 2}},
			"failed in 1 of 2 runs (invariants broken: none); first in run 2: failed in 1 of 3 schedules; first in schedule 2 (unforced): m"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := FailureMessage(tt.f); got != tt.want {
				t.Errorf("got  %q\nwant %q", got, tt.want)
			}
		})
	}
}

// TestMissWords: each kind of miss is worded from its facts, with the
// values the structured reports carry; a step repeated with times says
// which delivery, and a schedule of several steps names each.
func TestMissWords(t *testing.T) {
	tests := []struct {
		m                  runner.Miss
		msg, expected, got string
	}{
		{runner.Miss{Kind: runner.MissOutcome, Step: 2, N: 2, Of: 3, Want: "acked", Got: "failed", Said: "failed (boom)"},
			"step 2 (delivery 2 of 3) expected acked, got failed (boom)", "acked", "failed"},
		{runner.Miss{Kind: runner.MissStatus, Step: 1, N: 1, Of: 1, WantN: 200, Said: "timeout"},
			"step 1 expected status 200, got timeout", "200", "no status"},
		{runner.Miss{Kind: runner.MissError, Step: 1, N: 1, Of: 1, Want: "boom"},
			`step 1 expected an error containing "boom", got no error`, `error containing "boom"`, "no error"},
		{runner.Miss{Kind: runner.MissError, Step: 1, N: 1, Of: 1, Want: "boom", Got: "bang", Flag: true},
			`step 1 expected an error containing "boom", got "bang"`, `error containing "boom"`, "bang"},
		{runner.Miss{Kind: runner.MissRows, WantN: 1, What: "payments", GotN: 2},
			"the check expected 1 row in payments, got 2", "1", "2"},
		{runner.Miss{Kind: runner.MissMarked, Step: 3, Event: "e1", Consumer: "billing"},
			"step 3 expected e1 (consumer billing) not to be marked processed, it is", "not marked", "marked processed"},
		{runner.Miss{Kind: runner.MissViolations, Wants: []string{"duplicate-effect"}},
			"expected exactly the violations duplicate-effect, got none", "duplicate-effect", "none"},
		{runner.Miss{Kind: runner.MissNotReached, What: "crash: statements", Said: "202"},
			"crash: statements was never reached: the delivery ran no statement, and the consumer answered 202", "crash: statements", "not reached"},
	}
	for _, tt := range tests {
		f := runner.Failure{Miss: &tt.m}
		expected, got := ExpectedGot(f)
		if msg := FailureMessage(f); msg != tt.msg || expected != tt.expected || got != tt.got {
			t.Errorf("%+v:\n got %q (%q, %q)\nwant %q (%q, %q)", tt.m, msg, expected, got, tt.msg, tt.expected, tt.got)
		}
	}
	for k := runner.MissOutcome; k <= runner.MissUntied; k++ {
		if msg := FailureMessage(runner.Failure{Miss: &runner.Miss{Kind: k}}); strings.HasPrefix(msg, "an expectation of kind") {
			t.Errorf("miss kind %d has no words: %q", k, msg)
		}
	}
	e := &runner.ExploredFailure{Schedules: 5, Failed: 1, First: 3, AfterAnswer: true,
		Schedule: []runner.ScheduleHold{{Step: 1, At: "after-check", InOrder: true}, {Step: 3, Statement: "killed after statement 2 (COMMIT)"}}}
	want := "step 1 held at after-check, released in order; step 3 killed after statement 2 (COMMIT), after the answer"
	if got := scheduleName(e); got != want {
		t.Errorf("scheduleName = %q, want %q", got, want)
	}
}
