// Package cmd holds redeliver's commands: each turns its flags into an
// options struct and makes one call into pkg/. NewCmdRun and its kin
// build a command whose RunE fills the options, checks what needs no I/O
// (validate), and hands them to a runF when one is given, so a test sees
// what a command line parses into without running anything; NewRoot
// gives none, and the command runs.
package cmd

import (
	"context"
	"errors"
	"os"
	"os/signal"
	"syscall"

	"github.com/redeliver/redeliver/pkg/effects"
	"github.com/redeliver/redeliver/pkg/problem"
	"github.com/redeliver/redeliver/pkg/proc"
	"github.com/spf13/cobra"
)

// Main runs redeliver with the process's arguments and streams and returns
// the exit status.
func Main() int {
	// On Linux, redeliver runs each process it starts under a copy of
	// itself that ends the process's descendants if redeliver is killed
	// (SIGKILL); in that copy, this runs the process and never returns.
	if code, ok := proc.Supervise(); ok {
		return code
	}
	// Relaying a MySQL database, redeliver runs a copy of itself that
	// ends the consumer's threads if redeliver is killed; in that copy,
	// this does its work and returns.
	if code, ok := effects.RunGuardian(); ok {
		return code
	}
	// Descendants of a started consumer that leave its process group are
	// reparented to redeliver (on Linux), and stopped with it; after the
	// run, none is left, however it ended.
	proc.Subreap()
	defer proc.EndStrays()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	return Run(ctx, System(), os.Args[1:])
}

// Run runs redeliver with the given arguments and returns the exit status.
func Run(ctx context.Context, s *Streams, args []string) int {
	root := NewRoot(s)
	root.SetArgs(args)
	err := root.ExecuteContext(ctx)
	var r *ranError
	if err != nil && !errors.As(err, &r) {
		// Cobra's own errors: an unknown command or flag, a wrong argument count.
		err = problem.UsageOf(err)
	}
	if r != nil {
		err = r.err
	}
	return exitCode(err, s)
}

// ranError marks an error returned by a command's own code, as opposed to
// one cobra raised while parsing the command line.
type ranError struct{ err error }

func (e *ranError) Error() string { return e.err.Error() }

// ran wraps a command's run function so its errors are told apart from cobra's.
func ran(f func(cmd *cobra.Command, args []string) error) func(*cobra.Command, []string) error {
	return func(cmd *cobra.Command, args []string) error {
		if err := f(cmd, args); err != nil {
			return &ranError{err}
		}
		return nil
	}
}

// NewRoot builds the command tree on the given streams.
func NewRoot(s *Streams) *cobra.Command {
	root := &cobra.Command{
		Use:   "redeliver",
		Short: "Prove an event consumer is idempotent",
		Long: `redeliver replays deliveries of events — from YAML scenarios or captured logs —
through a transactional idempotent handler, injects the faults that brokers and
crashes produce, and checks that nothing is lost and nothing happens twice.

` + exitHelp,
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.SetOut(s.Out)
	root.SetErr(s.Err)
	root.SetIn(s.In)
	root.CompletionOptions.HiddenDefaultCmd = true
	// --version prints what the version command prints.
	root.Version = versionLine()
	root.SetVersionTemplate("{{.Version}}\n")
	root.AddCommand(NewCmdRun(s, nil), NewCmdReplay(s, nil), NewCmdValidate(s, nil), NewCmdInit(s, nil), NewCmdVersion(s, nil))
	return root
}
