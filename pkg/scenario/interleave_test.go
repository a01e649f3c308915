package scenario

import (
	"errors"
	"strings"
	"testing"

	"github.com/redeliver/redeliver/pkg/consumer"
)

func TestLoadConcurrentAndInterleave(t *testing.T) {
	const head = "version: 1\nchecks:\n  - name: race\n    steps:\n      - deliver: {id: evt-1}\n"
	tests := []struct {
		name    string
		step    string // the rest of the deliver step, at its indentation
		wantErr string // "" for a valid file; else file:line:col and message
		want    consumer.FaultPoint
		inOrder bool
	}{
		{"forced race", "        concurrent: 2\n        interleave: after-check\n", "", consumer.AfterCheck, false},
		{"plain race", "        concurrent: 64\n", "", "", false},
		{"every point", "        concurrent: 3\n        interleave: before-begin\n", "", consumer.BeforeBegin, false},
		{"released in order", "        concurrent: 3\n        interleave: {at: after-check, release: in-order}\n", "", consumer.AfterCheck, true},
		{"released together", "        concurrent: 3\n        interleave: {at: after-marker, release: together}\n", "", consumer.AfterMarker, false},
		{"no at", "        concurrent: 3\n        interleave: {release: in-order}\n", "race.yaml:7:21: interleave needs at: the fault point to hold the workers at", "", false},
		{"unknown release", "        concurrent: 3\n        interleave: {at: after-check, release: randomly}\n", `race.yaml:7:48: unknown release "randomly"; expected together (all held workers at once) or in-order (one at a time, in worker order)`, "", false},
		{"unknown field", "        concurrent: 3\n        interleave: {at: after-check, order: 1}\n", `race.yaml:7:39: unknown field "order" in interleave; expected one of at, release`, "", false},
		{"no concurrent", "        interleave: after-check\n", "race.yaml:6:9: interleave holds concurrent workers at a fault point, so it needs concurrent: N (2 to 64) on the same step", "", false},
		{"unknown point", "        concurrent: 2\n        interleave: after-lunch\n", `race.yaml:7:21: unknown fault point "after-lunch" in interleave; expected one of before-begin, after-check, after-marker, after-effect, after-external, after-commit`, "", false},
		{"not a string", "        concurrent: 2\n        interleave: [after-check]\n", "race.yaml:7:21: interleave must be a string, not a list", "", false},
		{"one worker", "        concurrent: 1\n", "race.yaml:6:21: concurrent must be between 2 and 64, not 1", "", false},
		{"too many workers", "        concurrent: 65\n", "race.yaml:6:21: concurrent must be between 2 and 64, not 65", "", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, err := Load("race.yaml", []byte(head+tt.step))
			if tt.wantErr == "" {
				if err != nil {
					t.Fatalf("Load: %v, want no error", err)
				}
				if got := s.Checks[0].Steps[0].Interleave; got != tt.want {
					t.Errorf("Interleave = %q, want %q", got, tt.want)
				}
				if got := s.Checks[0].Steps[0].InOrder; got != tt.inOrder {
					t.Errorf("InOrder = %v, want %v", got, tt.inOrder)
				}
				return
			}
			var errs Errors
			if !errors.As(err, &errs) {
				t.Fatalf("Load: %v, want scenario errors", err)
			}
			if got := errs.Error(); !strings.Contains(got, tt.wantErr) {
				t.Errorf("Load errors:\n%s\nwant one:\n%s", got, tt.wantErr)
			}
		})
	}
}
