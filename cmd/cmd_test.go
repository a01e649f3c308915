package cmd

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/redeliver/redeliver/pkg/problem"
	"github.com/redeliver/redeliver/pkg/scenario"
)

func TestExitCode(t *testing.T) {
	tests := []struct {
		name   string
		err    error
		code   int
		stderr string
	}{
		{"pass", nil, ExitPass, ""},
		{"checks failed", problem.ErrVerdict, ExitFail, ""},
		{"invalid file", scenario.Errors{problem.Invalid(scenario.Pos{File: "a.yaml", Line: 1, Col: 2}, "bad")}, ExitUsage, "a.yaml:1:2: bad\n"},
		{"usage", problem.Usagef("--format must be text"), ExitUsage, "redeliver: --format must be text\n"},
		{"invalid capture line", problem.Invalid(problem.Pos{File: "c.ndjson", Line: 3}, "not JSON"), ExitUsage, "redeliver: c.ndjson:3: not JSON\n"},
		{"runtime", problem.Environmentf(problem.Pos{File: "a.yaml"}, errors.New("disk full")), ExitRuntime, "redeliver: a.yaml: disk full\n"},
		{"wrapped runtime", fmt.Errorf("open: %w", problem.Environmentf(problem.Pos{}, errors.New("disk full"))), ExitRuntime, "redeliver: open: disk full\n"},
		{"interrupted", fmt.Errorf("run: %w", context.Canceled), ExitInterrupted, "redeliver: interrupted\n"},
		{"unexpected", errors.New("boom"), ExitRuntime, "redeliver: boom\n"},
		{"a consumer's stderr on lines of its own", problem.Environmentf(problem.Pos{File: "a.yaml"}, errors.New("the consumer c exited by itself (exit status 3); its last stderr lines:\n    starting\n    giving up\x1b[2J")), ExitRuntime,
			"redeliver: a.yaml: the consumer c exited by itself (exit status 3); its last stderr lines:\n    | starting\n    | giving up\\x1b[2J\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var stderr bytes.Buffer
			if got := exitCode(tt.err, &Streams{Err: &stderr}); got != tt.code {
				t.Errorf("exitCode = %d, want %d", got, tt.code)
			}
			if stderr.String() != tt.stderr {
				t.Errorf("stderr = %q, want %q", stderr.String(), tt.stderr)
			}
		})
	}
}

func TestColorDecision(t *testing.T) {
	tests := []struct {
		mode string
		tty  bool
		env  map[string]string
		want bool
	}{
		{"auto", true, nil, true},
		{"auto", false, nil, false},
		{"auto", true, map[string]string{"NO_COLOR": "1"}, false},
		{"auto", false, map[string]string{"FORCE_COLOR": "1"}, true},
		{"auto", true, map[string]string{"FORCE_COLOR": "0"}, true},
		{"never", true, map[string]string{"FORCE_COLOR": "1"}, false},
		{"always", false, map[string]string{"NO_COLOR": "1"}, true},
	}
	for _, tt := range tests {
		t.Run(fmt.Sprintf("%s tty=%v %v", tt.mode, tt.tty, tt.env), func(t *testing.T) {
			s := &Streams{OutTTY: tt.tty, Getenv: func(k string) string { return tt.env[k] }}
			got, err := s.Color(tt.mode)
			if err != nil || got != tt.want {
				t.Errorf("Color(%q) = %v, %v; want %v", tt.mode, got, err, tt.want)
			}
		})
	}
}

// TestRunInjectedStreams runs the command on buffers, as a terminal: the
// report is coloured, and nothing goes to the process's own stdout.
func TestRunInjectedStreams(t *testing.T) {
	var out, errb bytes.Buffer
	s := &Streams{Out: &out, Err: &errb, OutTTY: true, Getenv: func(string) string { return "" }}
	code := Run(context.Background(), s, []string{"run", "../scenarios/seed-fixture.yaml"})
	if code != ExitPass {
		t.Fatalf("exit %d, stderr %q", code, errb.String())
	}
	if !strings.Contains(out.String(), "\x1b[32;1mPASS:") {
		t.Errorf("terminal output is not coloured: %q", out.String())
	}
}
