package scenario

import (
	"errors"
	"strings"
	"testing"

	"github.com/redeliver/redeliver/pkg/handler"
)

func TestLoadConcurrentAndInterleave(t *testing.T) {
	const head = "version: 1\nchecks:\n  - name: race\n    steps:\n      - deliver: {id: evt-1}\n"
	tests := []struct {
		name    string
		step    string // the rest of the deliver step, at its indentation
		wantErr string // "" for a valid file; else file:line:col and message
		want    handler.FaultPoint
	}{
		{"forced race", "        concurrent: 2\n        interleave: after-check\n", "", handler.AfterCheck},
		{"plain race", "        concurrent: 64\n", "", ""},
		{"every point", "        concurrent: 3\n        interleave: before-begin\n", "", handler.BeforeBegin},
		{"no concurrent", "        interleave: after-check\n", "race.yaml:6:9: interleave holds concurrent workers at a fault point, so it needs concurrent: N (2 to 64) on the same step", ""},
		{"unknown point", "        concurrent: 2\n        interleave: after-lunch\n", `race.yaml:7:21: unknown fault point "after-lunch" in interleave; expected one of before-begin, after-check, after-marker, after-effect, after-external, after-commit`, ""},
		{"not a string", "        concurrent: 2\n        interleave: [after-check]\n", "race.yaml:7:21: interleave must be a string, not a list", ""},
		{"one worker", "        concurrent: 1\n", "race.yaml:6:21: concurrent must be between 2 and 64, not 1", ""},
		{"too many workers", "        concurrent: 65\n", "race.yaml:6:21: concurrent must be between 2 and 64, not 65", ""},
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
