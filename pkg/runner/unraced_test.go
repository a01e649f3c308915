package runner

import (
	"testing"

	"github.com/redeliver/redeliver/pkg/consumer"
	"github.com/redeliver/redeliver/pkg/scenario"
)

// TestFoldUnraced: a race behind a broker whose holds raced nothing in
// some schedules says how many among its line's facts; one none of whose
// holds raced anything fails, since a pass would claim races that never
// happened.
func TestFoldUnraced(t *testing.T) {
	c := &scenario.Check{Name: "race"}
	passed := func(unraced int) CheckResult {
		return CheckResult{Name: "race", Passed: true, Counters: consumer.Counters{Unraced: unraced}}
	}
	plan := make([]schedule, 3)
	for _, tt := range []struct {
		name    string
		results []CheckResult
		pass    bool
		unraced int
	}{
		{"every hold raced", []CheckResult{passed(0), passed(0), passed(0)}, true, 0},
		{"one hold raced nothing", []CheckResult{passed(0), passed(1), passed(0)}, true, 1},
		{"no hold raced", []CheckResult{passed(0), passed(1), passed(1)}, false, 2},
	} {
		t.Run(tt.name, func(t *testing.T) {
			got := fold(c, plan, tt.results)
			if got.Passed != tt.pass {
				t.Errorf("passed = %v, want %v (%+v)", got.Passed, tt.pass, got.Failures)
			}
			if e := got.Line.Explored; e == nil || e.Unraced != tt.unraced {
				t.Errorf("line %+v, want %d schedules unraced in it", got.Line, tt.unraced)
			}
			if !tt.pass && (len(got.Failures) == 0 || !neverRaced(got.Failures[len(got.Failures)-1], 2)) {
				t.Errorf("failures %+v, want one saying no schedule raced", got.Failures)
			}
		})
	}
}

// neverRaced reports whether f says that none of n schedules raced.
func neverRaced(f Failure, n int64) bool {
	return f.Miss != nil && f.Miss.Kind == MissNeverRaced && f.Miss.WantN == n
}
