package cmd

import (
	"context"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"

	"github.com/redeliver/redeliver/pkg/effects"
	"github.com/redeliver/redeliver/pkg/external"
	"github.com/redeliver/redeliver/pkg/problem"
	"github.com/redeliver/redeliver/pkg/proc"
	"github.com/redeliver/redeliver/pkg/redact"
	"github.com/redeliver/redeliver/pkg/replay"
	"github.com/redeliver/redeliver/pkg/scenario"
)

// validateTarget refuses, with --target, the built-in handler's flags,
// the capture findings a replay into a target does not count, and an
// --emit-scenario of stdin.
func (o *ReplayOptions) validateTarget() error {
	if o.Republish > 0 || len(o.CrashAt) > 0 || o.DB != ":memory:" {
		return problem.Usagef("--republish, --crash-at and --db are for the built-in handler; with --target the consumer keeps its own database")
	}
	for _, f := range builtInOnly {
		if o.Changed[f.flag] {
			return problem.Usagef("--%s %s", f.flag, f.why)
		}
	}
	if o.Changed["kill-working"] && (o.KillWorking <= 0 || o.KillWorking > 1 || math.IsNaN(o.KillWorking)) {
		return problem.Usagef("--kill-working must be a probability above 0 and at most 1, such as 0.5, not %v", o.KillWorking)
	}
	if o.KillWorking > 0 && o.KillEvery > 0 {
		return problem.Usagef("--kill-working and --kill-every both kill the consumer's instances, one at a delivery's statements, the other by the clock; give one of the two")
	}
	if o.KillWorking > 0 && o.Emit != "" {
		return problem.Usagef("--emit-scenario cannot write the kills of --kill-working yet: drop one of the two, and reproduce a failure with crash: statements in a scenario")
	}
	if o.Emit != "" && slices.Contains(o.Logs, "-") {
		return problem.Usagef("--emit-scenario reads the capture twice; save stdin to a file and replay that")
	}
	return nil
}

// targetFindings parses the --fail-on findings of a replay into a
// target: bad-records alone.
func targetFindings(words []string) ([]replay.Finding, error) {
	var failOn []replay.Finding
	for _, f := range words {
		fd, err := replay.ParseFinding(f)
		if err != nil {
			return nil, problem.UsageOf(err)
		}
		if fd != replay.BadRecords {
			return nil, problem.Usagef("--fail-on %s is a capture finding only the built-in replay counts, and a replay into a --target counts its bad records only (--fail-on bad-records, with --max-bad)", fd)
		}
		failOn = append(failOn, fd)
	}
	return failOn, nil
}

// replayTarget makes the consumer of the --target file the replay's:
// it loads the file, refuses what the target cannot take (the
// consumer's Check, before anything is made), and makes the folder that
// keeps the consumer's output.
func (o *ReplayOptions) replayTarget(opts *replay.Options, out *output) (*proc.ConsumerLogs, error) {
	s := o.IO
	src, err := os.ReadFile(o.Target)
	if err != nil {
		return nil, problem.Usagef("cannot read --target %s: %v", o.Target, unwrapPath(err))
	}
	t, err := scenario.LoadTarget(o.Target, src)
	if err != nil {
		return nil, err
	}
	s.Secrets.Add(t.Secrets...)
	if e := effects.Check(t.Effects); e != nil {
		return nil, scenario.Errors{e}
	}
	if o.KillEvery < 0 || o.KillEvery == 0 && o.Changed["kill-every"] {
		return nil, problem.Usagef("--kill-every must be a positive duration such as 300ms, not %s", o.KillEvery)
	}
	target := &external.ReplayTarget{File: o.Target, Source: src, Target: t.Target, Effects: t.Effects, Externals: t.Externals}
	if err := target.Check(opts); err != nil {
		return nil, err
	}
	if target.Logs, err = consumerLogs(o, out, t.Target, s.Secrets); err != nil {
		return nil, err
	}
	opts.Consumer = target
	return target.Logs, nil
}

// stopped is the error of a replay into a target that stopped: it says
// on stderr what was sent, and where the consumer's output is kept, and
// places a runtime error at the --target file.
func (o *ReplayOptions) stopped(err error, logs *proc.ConsumerLogs) error {
	if o.Target == "" {
		return err
	}
	s := o.IO
	var re *external.ReplayError
	if errors.As(err, &re) {
		// An interrupted or failed replay says what it sent.
		fmt.Fprintf(s.Err, "redeliver: %d deliveries were sent to the target before the replay stopped\n", re.Sent)
		err = re.Err
	}
	if !errors.Is(err, context.Canceled) && problem.KindOf(err) == problem.Environment {
		var pe *problem.Error
		if !errors.As(err, &pe) {
			err = problem.Environmentf(problem.Pos{File: o.Target}, err)
		}
	}
	if files := logs.Files(); len(files) > 0 {
		// What the consumer printed is most wanted when the replay
		// failed, and the text report is not written then.
		fmt.Fprintf(s.Err, "redeliver: the consumer's output is kept in %s\n", strings.Join(files, ", "))
	}
	return err
}

// builtInOnly are the flags of the built-in replay that mean nothing for
// a consumer of your own: given with --target, each is refused in one
// sentence rather than ignored.
var builtInOnly = []struct{ flag, why string }{
	{"strategy", "picks the built-in handler's strategy, and a --target consumer has its own (drop --strategy)"},
	{"identity", "says what the built-in handler compares when an id comes again, and a --target consumer compares what it compares (drop --identity)"},
	{"consumer", "names the consumer the built-in handler writes its markers for, and a --target file names your consumer (drop --consumer)"},
	{"effect", "names the built-in handler's effect table, and with --target the effects are those of the --target file (drop --effect)"},
	{"batch", "sets how many deliveries the built-in handler commits at once, and a --target consumer commits as it does (drop --batch)"},
	{"compare", "replays the capture again with the built-in handler's other strategies, and a --target consumer has one (drop --compare)"},
}

// oneProcessor runs Go code on one processor until the func it returns
// is called, unless GOMAXPROCS is set. A replay into a target spends its
// time waiting on the consumer: its lanes, the capture reader and the
// database reads take turns on one processor, while on two every answer
// that arrives wakes a second thread to run it, and the thread goes back
// to sleep, at the cost of system calls that on a virtual machine cost
// more than the work (measured in docs/performance.md).
func oneProcessor() (restore func()) {
	if os.Getenv("GOMAXPROCS") != "" {
		return func() {}
	}
	was := runtime.GOMAXPROCS(1)
	return func() { runtime.GOMAXPROCS(was) }
}

// consumerLogs is where the output of the instances the target starts is
// kept: --logs DIR, or with --report FORMAT=FILE consumer-logs beside the
// first report; nil when neither is given. The folder is made now, so a
// mistake costs nothing.
func consumerLogs(o *ReplayOptions, out *output, t *scenario.Target, secrets *redact.Secrets) (*proc.ConsumerLogs, error) {
	dir := o.LogDir
	given := o.Changed["logs"]
	switch {
	case given && dir == "":
		return nil, problem.Usagef("--logs needs a folder, such as --logs consumer-logs")
	case given && t.Start == nil:
		return nil, problem.Usagef("--logs keeps the output of the consumer instances redeliver starts, and %s has no target start", o.Target)
	case t.Start == nil:
		return nil, nil
	case !given && len(out.files) > 0:
		dir = filepath.Join(filepath.Dir(out.files[0].path), "consumer-logs")
	case !given:
		return nil, nil
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, problem.Usagef("cannot keep the consumer's output in %s: %v", dir, unwrapPath(err))
	}
	return &proc.ConsumerLogs{Dir: dir, Secrets: secrets}, nil
}
