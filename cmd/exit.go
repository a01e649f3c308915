package cmd

import (
	"errors"
	"fmt"

	"github.com/redeliver/redeliver/pkg/problem"

	"github.com/redeliver/redeliver/pkg/escape"
)

// The documented exit statuses.
const (
	ExitPass        = 0   // every check passed
	ExitFail        = 1   // a check or invariant failed
	ExitUsage       = 2   // usage error or invalid input; nothing was run
	ExitRuntime     = 3   // runtime error: database, I/O
	ExitInterrupted = 130 // interrupted
)

const exitHelp = `Exit status:
  0    every check passed
  1    a check or invariant failed
  2    usage error or invalid input (nothing was run)
  3    runtime error (database, I/O)
  130  interrupted`

// exitCodes is the one place a kind of problem becomes an exit status.
var exitCodes = map[problem.Kind]int{
	"":                   ExitPass,
	problem.Verdict:      ExitFail,
	problem.Usage:        ExitUsage,
	problem.InvalidInput: ExitUsage,
	problem.Environment:  ExitRuntime,
	problem.Interrupted:  ExitInterrupted,
}

// exitCode maps an error to the documented exit status and says it on
// stderr: every mistake found in scenario files on a line of its own,
// anything else in one line, followed by the lines it quotes from a
// consumer's stderr (a verdict was said by the report already).
// Whatever a message quotes of the user's configuration, or of what a
// consumer printed, is masked here (Streams.mask), so a new message
// cannot leak a secret.
func exitCode(err error, s *Streams) int {
	stderr := s.Err
	kind := problem.KindOf(err)
	var es problem.Errors
	switch {
	case kind == "" || kind == problem.Verdict:
	case kind == problem.Interrupted:
		fmt.Fprintln(stderr, "redeliver: interrupted")
	case errors.As(err, &es):
		for _, e := range es {
			fmt.Fprintln(stderr, escape.Line(s.mask(e.Error())))
		}
	default:
		fmt.Fprintf(stderr, "redeliver: %s\n", escape.Message(s.mask(err.Error())))
	}
	return exitCodes[kind]
}
