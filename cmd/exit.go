package cmd

import (
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/redeliver/redeliver/pkg/runner"
	"github.com/redeliver/redeliver/pkg/scenario"
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

// usageError is a mistake in how the command was called or in its input.
type usageError struct{ err error }

func (e *usageError) Error() string { return e.err.Error() }
func (e *usageError) Unwrap() error { return e.err }

func usagef(format string, args ...any) error {
	return &usageError{fmt.Errorf(format, args...)}
}

// errChecksFailed ends a run whose report already said what failed.
var errChecksFailed = errors.New("checks failed")

// exitCode maps an error to the documented exit status and prints it.
func exitCode(err error, stderr io.Writer) int {
	var ue *usageError
	var se scenario.Errors
	var re *runner.RuntimeError
	switch {
	case err == nil:
		return ExitPass
	case errors.Is(err, errChecksFailed):
		return ExitFail
	case errors.Is(err, context.Canceled):
		fmt.Fprintln(stderr, "redeliver: interrupted")
		return ExitInterrupted
	case errors.As(err, &se):
		for _, e := range se {
			fmt.Fprintln(stderr, e.Error())
		}
		return ExitUsage
	case errors.As(err, &ue):
		fmt.Fprintf(stderr, "redeliver: %v\n", err)
		return ExitUsage
	case errors.As(err, &re):
		fmt.Fprintf(stderr, "redeliver: %v\n", err)
		return ExitRuntime
	}
	fmt.Fprintf(stderr, "redeliver: %v\n", err)
	return ExitRuntime
}
