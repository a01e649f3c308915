package cmd

import (
	"context"
	"errors"
	"fmt"
	"os"
	"runtime"
	"slices"
	"time"

	"github.com/redeliver/redeliver/pkg/capture"
	"github.com/redeliver/redeliver/pkg/effects"
	"github.com/redeliver/redeliver/pkg/external"
	"github.com/redeliver/redeliver/pkg/invariant"
	"github.com/redeliver/redeliver/pkg/kafka"
	"github.com/redeliver/redeliver/pkg/nats"
	"github.com/redeliver/redeliver/pkg/problem"
	"github.com/redeliver/redeliver/pkg/replay"
	"github.com/redeliver/redeliver/pkg/report"
	"github.com/redeliver/redeliver/pkg/scenario"
	"github.com/schollz/progressbar/v3"
	"github.com/spf13/cobra"
)

// runReplayTarget replays the captures into the consumer a --target file names.
func runReplayTarget(cmd *cobra.Command, s *Streams, o *replayOptions, out *output, format capture.Format) error {
	if o.Parallel == 0 {
		o.Parallel = 1 // one delivery in flight
	}
	if o.Republish > 0 || len(o.CrashAt) > 0 || o.DB != ":memory:" {
		return problem.Usagef("--republish, --crash-at and --db are for the built-in handler; with --target the consumer keeps its own database")
	}
	for _, f := range builtInOnly {
		if cmd.Flags().Changed(f.flag) {
			return problem.Usagef("--%s %s", f.flag, f.why)
		}
	}
	var failOn []replay.Finding
	for _, f := range o.FailOn {
		fd, err := replay.ParseFinding(f)
		if err != nil {
			return problem.UsageOf(err)
		}
		if fd != replay.BadRecords {
			return problem.Usagef("--fail-on %s is a capture finding only the built-in replay counts, and a replay into a --target counts its bad records only (--fail-on bad-records, with --max-bad)", fd)
		}
		failOn = append(failOn, fd)
	}
	if o.Emit != "" {
		if slices.Contains(o.Logs, "-") {
			return problem.Usagef("--emit-scenario reads the capture twice; save stdin to a file and replay that")
		}
		if err := writable(o.Emit); err != nil {
			return problem.Usagef("cannot write the reproducer %s: %v", o.Emit, err)
		}
	}
	if o.Findings != "" {
		if err := writable(o.Findings); err != nil {
			return problem.Usagef("cannot write the findings %s: %v", o.Findings, err)
		}
	}
	// Every capture must be there before the consumer is started.
	for _, in := range o.Logs {
		if in == "-" {
			continue
		}
		if nats.IsStreamURL(in) {
			return problem.Usagef("%s: replay --target reads capture files; a JetStream stream replays through the built-in handler only (drop --target)", in)
		}
		if kafka.IsTopicURL(in) {
			return problem.Usagef("%s: replay --target reads capture files; a Kafka topic replays through the built-in handler only (drop --target)", in)
		}
		if st, err := os.Stat(in); err != nil || st.IsDir() {
			return problem.Usagef("%s: no such capture file", in)
		}
	}
	src, err := os.ReadFile(o.Target)
	if err != nil {
		return problem.Usagef("cannot read --target %s: %v", o.Target, unwrapPath(err))
	}
	t, err := scenario.LoadTarget(o.Target, src)
	if err != nil {
		return err
	}
	s.Secrets.Add(t.Secrets...)
	if e := effects.Check(t.Effects); e != nil {
		return scenario.Errors{e}
	}
	switch {
	case o.KillEvery < 0 || o.KillEvery == 0 && cmd.Flags().Changed("kill-every"):
		return problem.Usagef("--kill-every must be a positive duration such as 300ms, not %s", o.KillEvery)
	case o.KillEvery > 0 && !t.Target.Broker():
		return problem.Usagef("--kill-every kills consumer instances that read from a broker, and the target of %s is %s; use --crash", o.Target, t.Target.Channel())
	case o.KillEvery > 0 && t.Target.Start == nil:
		return problem.Usagef("--kill-every kills the consumer instances redeliver started, and %s has no target start", o.Target)
	case t.Target.Broker() && (o.Redeliver > 0 || o.Crash > 0 || o.Concurrent > 0):
		return problem.Usagef("--redeliver, --crash and --concurrent act on a delivery's answer, and a %s target has none; kill instances with --kill-every", t.Target.Channel())
	}
	if o.Crash > 0 && t.Target.Start == nil && t.Target.Exec == nil {
		return problem.Usagef("--crash kills the consumer redeliver started, and %s has no target start", o.Target)
	}
	opts := external.ReplayOptions{
		Inputs: o.Logs, Stdin: s.In,
		Capture:    capture.Options{Format: format, ID: o.ID, Key: o.Key, Payload: o.Payload, MaxRecord: o.MaxRecord},
		TargetFile: o.Target, Target: t.Target, Effects: t.Effects,
		Seed: o.Seed, Redeliver: o.Redeliver, Crash: o.Crash, Concurrent: o.Concurrent, Rewind: o.Rewind, Parallel: o.Parallel,
		MaxBad: o.MaxBad, Warn: s.Secrets.Writer(s.Err), FailOn: failOn,
		KillEvery: o.KillEvery, EmitScenario: o.Emit, TargetSource: src,
	}
	finish := func() {}
	if s.ErrTTY {
		bar := progressbar.NewOptions64(-1,
			progressbar.OptionSetWriter(s.Err),
			progressbar.OptionSetDescription("delivering"),
			progressbar.OptionShowCount(),
			progressbar.OptionShowIts(),
			progressbar.OptionSetItsString("deliveries"),
			progressbar.OptionClearOnFinish(),
			progressbar.OptionThrottle(100_000_000),
			// No redraw goroutine: it reads the bar's state unlocked (a data race).
			progressbar.OptionSetSpinnerChangeInterval(0),
		)
		opts.Progress = func(n int64) { _ = bar.Set64(n) }
		finish = func() { _ = bar.Finish() }
	}
	defer oneProcessor()()
	start := time.Now()
	fr, err := external.Replay(cmd.Context(), opts)
	finish()
	if err == nil && o.Findings != "" {
		// Every broken invariant, one a line: the text report shows the first.
		if ferr := external.WriteFindings(o.Findings, fr.File); ferr != nil {
			err = problem.Environmentf(problem.Pos{File: o.Findings}, ferr)
		}
	}
	res := &report.Replay{Duration: time.Since(start)}
	if err == nil {
		res.Report, res.Run = fr.Report, fr.File
	} else {
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
		res.Report = unfinishedTarget(o, format)
		res.Errors = problem.List(err)
	}
	if werr := out.write(s, res); werr != nil && err == nil {
		err = werr
	}
	if err != nil {
		return err
	}
	if !res.Report.Passed() {
		return problem.ErrVerdict
	}
	return nil
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

// unfinishedTarget is the report of a replay into a target that stopped
// before it had one: what it was asked to do, nothing counted, and verdict
// error.
func unfinishedTarget(o *replayOptions, format capture.Format) *replay.Report {
	r := &replay.Report{Seed: o.Seed, Inputs: []replay.Input{}, Invariants: []replay.InvariantCheck{}, Violations: []replay.Violation{},
		Target: &replay.Target{File: o.Target}, Verdict: invariant.Error}
	if format == "" {
		format = capture.Auto
	}
	for _, in := range o.Logs {
		if in == "-" {
			in = "stdin"
		}
		r.Inputs = append(r.Inputs, replay.Input{File: in, Format: string(format)})
	}
	return r
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
