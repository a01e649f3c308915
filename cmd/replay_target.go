package cmd

import (
	"context"
	"errors"
	"fmt"
	"math"
	"net/url"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"time"

	"github.com/redeliver/redeliver/pkg/broker"
	"github.com/redeliver/redeliver/pkg/capture"
	"github.com/redeliver/redeliver/pkg/effects"
	"github.com/redeliver/redeliver/pkg/external"
	"github.com/redeliver/redeliver/pkg/problem"
	"github.com/redeliver/redeliver/pkg/redact"
	"github.com/redeliver/redeliver/pkg/replay"
	"github.com/redeliver/redeliver/pkg/report"
	"github.com/redeliver/redeliver/pkg/scenario"
	"github.com/schollz/progressbar/v3"
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
	if _, err := targetFindings(o.FailOn); err != nil {
		return err
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

// runReplayTarget replays the captures into the consumer a --target file names.
func runReplayTarget(o *ReplayOptions, out *output, format capture.Format) error {
	s := o.IO
	if o.Parallel == 0 {
		o.Parallel = 1 // one delivery in flight
	}
	failOn, err := targetFindings(o.FailOn)
	if err != nil {
		return err
	}
	if o.Emit != "" {
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
		if broker.IsStreamURL(in) || broker.IsTopicURL(in) {
			continue // read, and reached, as the replay starts
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
	for _, in := range o.Logs {
		if err := ownChannel(in, t.Target); err != nil {
			return err
		}
	}
	switch {
	case o.KillEvery < 0 || o.KillEvery == 0 && o.Changed["kill-every"]:
		return problem.Usagef("--kill-every must be a positive duration such as 300ms, not %s", o.KillEvery)
	case o.KillEvery > 0 && !t.Target.Broker():
		return problem.Usagef("--kill-every kills consumer instances that read from a broker, and the target of %s is %s; use --crash", o.Target, t.Target.Channel())
	case o.KillEvery > 0 && t.Target.Start == nil:
		return problem.Usagef("--kill-every kills the consumer instances redeliver started, and %s has no target start", o.Target)
	case o.KillEvery > 0 && o.Emit != "":
		// A scenario's faults follow deliveries; these kills follow the
		// clock while the consumer reads at its own pace, and a step cannot
		// name the instance: a reproducer without them would pass.
		return problem.Usagef("--emit-scenario cannot write the kills of --kill-every: they come by the clock, not after a delivery, so no scenario step can make them again (drop one of the two)")
	case o.KillWorking > 0 && !t.Target.Broker():
		return problem.Usagef("--kill-working kills consumer instances that read from a broker, and the target of %s is %s; use --crash", o.Target, t.Target.Channel())
	case o.KillWorking > 0 && t.Target.Start == nil:
		return problem.Usagef("--kill-working kills the consumer instance redeliver started, and %s has no target start", o.Target)
	case o.KillWorking > 0 && (t.Effects == nil || !t.Effects.Proxy):
		return problem.Usagef("--kill-working kills an instance at the statements of the delivery it works on, which redeliver sees only through its database proxy: set effects.proxy: true in %s", o.Target)
	case t.Target.Broker() && (o.Redeliver > 0 || o.Crash > 0 || o.Concurrent > 0):
		return problem.Usagef("--redeliver, --crash and --concurrent act on a delivery's answer, and a %s target has none; kill instances with --kill-every", t.Target.Channel())
	}
	if o.Crash > 0 && t.Target.Start == nil && t.Target.Exec == nil {
		return problem.Usagef("--crash kills the consumer redeliver started, and %s has no target start", o.Target)
	}
	logs, err := consumerLogs(o, out, t.Target, s.Secrets)
	if err != nil {
		return err
	}
	opts := replay.Options{
		Inputs: o.Logs, Stdin: s.In,
		Capture:  capture.Options{Format: format, ID: o.ID, Key: o.Key, Payload: o.Payload, MaxRecord: o.MaxRecord},
		Consumer: &external.ReplayTarget{File: o.Target, Source: src, Target: t.Target, Effects: t.Effects, Externals: t.Externals, Logs: logs},
		Seed:     o.Seed, Redeliver: o.Redeliver, Crash: o.Crash, Concurrent: o.Concurrent, Rewind: o.Rewind, Parallel: o.Parallel,
		MaxBad: o.MaxBad, Warn: s.Secrets.Writer(s.Err), FailOn: failOn,
		KillEvery: o.KillEvery, KillWorking: o.KillWorking, EmitScenario: o.Emit, FindingsFile: o.Findings,
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
		opts.Progress = func(n, _ int64) { _ = bar.Set64(n) }
		finish = func() { _ = bar.Finish() }
	}
	defer oneProcessor()()
	start := time.Now()
	rep, err := replay.Run(o.Context, opts)
	finish()
	res := &report.Replay{Duration: time.Since(start)}
	if err == nil {
		res.Report = rep
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
		res.Report = replay.Unfinished(opts)
		res.Errors = problem.List(err)
		if files := logs.Files(); len(files) > 0 {
			// What the consumer printed is most wanted when the replay
			// failed, and the text report is not written then.
			fmt.Fprintf(s.Err, "redeliver: the consumer's output is kept in %s\n", strings.Join(files, ", "))
		}
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

// ownChannel refuses a capture that is the stream or topic the target's
// consumer reads: every delivery would land in the capture being read,
// and the consumer would see each event twice, once from the capture
// and once from the replay.
func ownChannel(in string, t *scenario.Target) error {
	switch {
	case t.Kafka != nil && broker.IsTopicURL(in):
		u, err := broker.ParseTopicURL(in)
		if err != nil || u.Topic != t.Kafka.Topic || !slices.ContainsFunc(u.Brokers, func(b string) bool { return slices.Contains(t.Kafka.Brokers, b) }) {
			return nil
		}
		return problem.Usagef("%s is the topic the target's consumer reads; replaying it into the target would read back its own deliveries: replay another topic, or a capture of it", in)
	case t.NATS != nil && broker.IsStreamURL(in):
		u, err := broker.ParseStreamURL(in)
		if err != nil || u.Stream != t.NATS.Stream {
			return nil
		}
		if su, err := url.Parse(u.Server); err != nil || !strings.Contains(t.NATS.URL, su.Host) {
			return nil
		}
		return problem.Usagef("%s is the stream the target's consumer reads; replaying it into the target would read back its own deliveries: replay another stream, or a capture of it", in)
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
func consumerLogs(o *ReplayOptions, out *output, t *scenario.Target, secrets *redact.Secrets) (*external.ConsumerLogs, error) {
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
	return &external.ConsumerLogs{Dir: dir, Secrets: secrets}, nil
}
