package runner

import (
	"reflect"
	"strings"
	"testing"

	"github.com/redeliver/redeliver/pkg/handler"
	"github.com/redeliver/redeliver/pkg/report/words"
	"github.com/redeliver/redeliver/pkg/scenario"
)

func checkOf(t *testing.T, strategy handler.Strategy, steps string) *scenario.Check {
	t.Helper()
	h := "{strategy: " + string(strategy) + "}"
	if strategy.CallsOut() {
		h = "{strategy: external-key, key: \"{id}\", external: {key: \"p-{id}\", amount: \"1\"}}"
	}
	src := "version: 1\nhandler: " + h + "\nchecks:\n  - name: c\n    steps:\n" + steps
	s, err := scenario.Load("s.yaml", []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	return s.Checks[0]
}

// names words each schedule's holds as a report names them.
func names(ss []schedule) []string {
	out := make([]string, len(ss))
	for i, s := range ss {
		var parts []string
		for _, h := range s.facts() {
			name := words.Hold(h.At, h.InOrder)
			if len(s.steps) > 1 {
				name = words.Step(h.Step, 1, 1) + " " + name
			}
			parts = append(parts, name)
		}
		out[i] = strings.Join(parts, "; ")
	}
	return out
}

const racing = "      - deliver: {id: e}\n        concurrent: 2\n"

// TestSchedules: which schedules a check is explored under, in which order.
func TestSchedules(t *testing.T) {
	tests := []struct {
		name     string
		strategy handler.Strategy
		steps    string
		want     []string // nil: not explored
		n        int
	}{
		{name: "not concurrent", strategy: handler.EventID, steps: "      - deliver: {id: e}\n"},
		{name: "interleave given", strategy: handler.EventID, steps: racing + "        interleave: after-check\n"},
		{name: "event-id", strategy: handler.EventID, steps: racing, n: 11, want: []string{
			"unforced",
			"held at before-begin, released together", "held at before-begin, released in order",
			"held at after-check, released together", "held at after-check, released in order",
			"held at after-marker, released together", "held at after-marker, released in order",
			"held at after-effect, released together", "held at after-effect, released in order",
			"held at after-commit, released together", "held at after-commit, released in order",
		}},
		{name: "none reaches fewer points", strategy: handler.None, steps: racing, n: 7},
		{name: "external-key reaches every point", strategy: handler.ExternalKey, steps: racing, n: 13},
		{name: "two steps, capped", strategy: handler.EventID, steps: racing + "      - deliver: {id: f}\n      - deliver: {id: g}\n        concurrent: 2\n", n: MaxSchedules},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			strategy := tt.strategy
			got := schedules(strategy, checkOf(t, strategy, tt.steps))
			if tt.n == 0 {
				if got != nil {
					t.Fatalf("explored under %v, want not explored", names(got))
				}
				return
			}
			if len(got) != tt.n {
				t.Fatalf("%d schedules, want %d: %v", len(got), tt.n, names(got))
			}
			if tt.want != nil && !reflect.DeepEqual(names(got), tt.want) {
				t.Errorf("schedules\n%s\nwant\n%s", strings.Join(names(got), "\n"), strings.Join(tt.want, "\n"))
			}
			if again := schedules(strategy, checkOf(t, strategy, tt.steps)); !reflect.DeepEqual(names(again), names(got)) {
				t.Errorf("a second listing differs")
			}
		})
	}
}

// TestSchedulesOfSeveralSteps: the run as written first, then each step
// forced alone, in step order, before any two are forced together.
func TestSchedulesOfSeveralSteps(t *testing.T) {
	c := checkOf(t, handler.EventID, racing+"      - deliver: {id: f}\n        concurrent: 2\n")
	got := names(schedules(handler.EventID, c))
	want := []string{
		"step 1 unforced; step 2 unforced",
		"step 1 held at before-begin, released together; step 2 unforced",
	}
	if !reflect.DeepEqual(got[:2], want) {
		t.Errorf("first schedules %q, want %q", got[:2], want)
	}
	if got[10] != "step 1 held at after-commit, released in order; step 2 unforced" || got[11] != "step 1 unforced; step 2 held at before-begin, released together" {
		t.Errorf("schedules 11 and 12: %q, %q", got[10], got[11])
	}
	if got[21] != "step 1 held at before-begin, released together; step 2 held at before-begin, released together" {
		t.Errorf("schedule 22 (the first forcing both steps): %q", got[21])
	}
}
