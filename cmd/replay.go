package cmd

import (
	"context"
	"fmt"
	"io"
	"os"
	"slices"
	"time"

	"github.com/redeliver/redeliver/pkg/builtin"
	"github.com/redeliver/redeliver/pkg/capture"
	"github.com/redeliver/redeliver/pkg/consumer"
	"github.com/redeliver/redeliver/pkg/escape"
	"github.com/redeliver/redeliver/pkg/handler"
	"github.com/redeliver/redeliver/pkg/inject"
	"github.com/redeliver/redeliver/pkg/problem"
	"github.com/redeliver/redeliver/pkg/proc"
	"github.com/redeliver/redeliver/pkg/replay"
	"github.com/redeliver/redeliver/pkg/report"
	"github.com/redeliver/redeliver/pkg/scenario"
	"github.com/redeliver/redeliver/pkg/sqlite"
	"github.com/schollz/progressbar/v3"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// ReplayOptions are the arguments and flags of redeliver replay.
type ReplayOptions struct {
	IO      *Streams
	Context context.Context

	Logs       []string
	DB         string
	Seed       int64
	Input      string
	ID         string
	Key        string
	Payload    string
	Identity   []string
	Strategy   string
	Consumer   string
	Effect     string
	Redeliver  float64
	Crash      float64
	CrashAt    []string
	Rewind     int
	Republish  float64
	Concurrent float64
	MaxBad     int
	MaxRecord  int
	FailOn     []string
	Emit       string
	Findings   string
	Batch      int
	Compare    bool
	Target     string
	Parallel   int
	KillEvery  time.Duration
	// KillWorking (--kill-working): the probability, per delivery, of
	// killing the instance working on it, at its statements.
	KillWorking float64
	LogDir      string // --logs: the consumer's output
	Output      outputOptions
	// Changed holds the names of the flags given on the command line:
	// some are refused, or must not be zero, only when given.
	Changed map[string]bool
}

// replayLong is replay's help.
const replayLong = `Replay captured event logs through the handler, streaming them, and inject the
duplicates real brokers make. The report says what the capture holds (repeated
ids, ids reused with a different payload, business keys under several ids), what
was injected, what the handler did, which invariants broke, and the --seed value:
the same seed and input give the same report.

Formats (detected; --input forces one): CloudEvents JSON (one event, NDJSON or a
batch array; data or data_base64), kcat -J lines, SQS ReceiveMessage and Lambda
Records JSON (SNS notifications unwrapped), nats sub --dump - output, and plain
NDJSON with --id (and --key, --payload) paths. Gzip is read as is; - is stdin.

A JetStream stream is a captured log too: nats://HOST:PORT/STREAM reads it
from its first sequence (?seq=N from sequence N, &subject=S only subject S)
up to the last message stored when the replay began, through an ephemeral
consumer it deletes again. Messages in the CloudEvents NATS binding are read
as their events (ce-id and ce-source headers, or a structured body); report
lines name the stream sequence where a file has a line number.

So is a Kafka topic: kafka://HOST:PORT/TOPIC reads every partition, in
partition order and each from its first offset (?partition=N that partition
alone, &offset=N from offset N), up to the end it had when the replay began,
as kcat -J would; it joins no consumer group and commits nothing. Records in
the CloudEvents Kafka binding are read as their events (ce_id and ce_source
headers, or a structured value), keyed by the record's key; report lines
name the record's place in the read.

On a file --db a replay resumes: replaying the same log again makes no new
effects, and a replay killed mid-way and started again ends with the effects
of one uninterrupted run. A bad record stops a replay with exit status 2
(unless --max-bad skips it); on a file --db the deliveries before it stay
committed, the message says how many, and replaying the corrected capture
onto the file resumes.

` + outputHelp + `

A delivery that fails where no fault was injected (a business key that did
not resolve, say) fails the replay, with the reason and the capture line.

The faults are drawn from --seed per position in the capture, the same way
with and without --target: the same seed and capture pick the same
deliveries. --redeliver P: the consumer did the work and answered, the ack
was lost, and the broker delivers the event again (for the built-in
handler, a crash after commit, before the ack). --crash P: the consumer
dies mid-delivery and the event is delivered again (the built-in handler
mid-transaction, at a --crash-at point; a --target consumer redeliver
started is killed). A delivery drawn for both crashes. --rewind N: a
rebalance every 2N-4N deliveries delivers the last N again, after the same
positions in both.

With --target FILE (version, target and effects, as in a scenario) the
capture is delivered to your own consumer instead: --concurrent delivers an
event twice at once, --parallel N keeps N deliveries in flight (one
business key's in order); then the effect table is judged. Without
--target, --parallel N splits the replay by event id into N stores side by
side (by default one per core, up to 4, when it can be split), and is
refused where it cannot be: onto a --db file, with a business-key
strategy, --rewind or --batch. The built-in
handler's own flags (--strategy, --db, --republish, --crash-at, --identity,
--consumer, --effect, --batch, --compare) are refused; --max-bad and
--fail-on bad-records work as without it. A broken invariant shows how often it
broke and its first breaches (-v: every one; --findings FILE writes each as
a JSON line). Every format reports it as it reports the built-in replay
(the same JSON document), naming the target and its effects; and
--emit-scenario writes a target scenario that redeliver run fails the same
way: the first broken key's deliveries, with their faults.

In JUnit XML each capture is a <testsuite> with a <testcase> per invariant
checked, one for failures only where injected, and one per --fail-on
finding; TAP has a test point for each. A broken
invariant names its first examples and the capture lines that delivered
them, and its GitHub annotation points at the first of those lines.

` + exitHelp

// NewCmdReplay builds redeliver replay on the given streams. Its RunE fills
// a ReplayOptions from the arguments and flags and checks it; then it
// calls runF with it, or, when runF is nil, replays the captures.
func NewCmdReplay(s *Streams, runF func(*ReplayOptions) error) *cobra.Command {
	o := &ReplayOptions{IO: s}
	c := &cobra.Command{
		Use:   "replay LOG|nats://HOST:PORT/STREAM|kafka://HOST:PORT/TOPIC...",
		Short: "Replay captured event logs with injected duplicates and faults",
		Long:  replayLong,
		Example: `  redeliver replay capture.ndjson
  redeliver replay --target target.yaml --redeliver 0.1 --crash 0.01 --parallel 4 capture.ndjson
  redeliver replay --strategy none --redeliver 0.3 --emit-scenario repro.yaml capture.ndjson
  redeliver replay --target target.yaml --redeliver 0.3 --emit-scenario repro.yaml capture.ndjson
  kcat -C -J -b broker:9092 -t orders -e | redeliver replay --id headers.ce_id -
  redeliver replay --db replay.db --crash 0.1 --rewind 100 capture.ndjson.gz
  redeliver replay --fail-on identity-reuse --report junit=replay.xml capture.ndjson
  redeliver replay 'nats://127.0.0.1:4222/ORDERS?seq=1000'
  redeliver replay 'kafka://127.0.0.1:9092/orders?partition=0&offset=1000'`,
		Args: cobra.MinimumNArgs(1),
		RunE: ran(func(cmd *cobra.Command, args []string) error {
			o.Context = cmd.Context()
			o.Logs = args
			o.Changed = map[string]bool{}
			cmd.Flags().Visit(func(f *pflag.Flag) { o.Changed[f.Name] = true })
			if err := o.validate(); err != nil {
				return err
			}
			if runF != nil {
				return runF(o)
			}
			return runReplay(o)
		}),
	}
	replayFlags(c.Flags(), o)
	return c
}

// replayFlags defines replay's flags on f, into o.
func replayFlags(f *pflag.FlagSet, o *ReplayOptions) {
	f.StringVar(&o.DB, "db", ":memory:", "database: :memory: or a file (kept; replaying onto it again resumes)")
	f.Int64Var(&o.Seed, "seed", 1, "seed for every injected fault")
	f.StringVar(&o.Input, "input", "auto", "capture format: auto, cloudevents, kcat, sqs, nats or ndjson")
	f.StringVar(&o.ID, "id", "", "path of the event id (plain NDJSON: in the line; kcat/SQS/NATS: in the envelope, e.g. headers.ce_id)")
	f.StringVar(&o.Key, "key", "", "path of the business key, when the format gives none (e.g. data.orderId)")
	f.StringVar(&o.Payload, "payload", "", "plain NDJSON: path of the payload (default: the whole line)")
	f.StringSliceVar(&o.Identity, "identity", nil, "paths compared when an id is redelivered (default: the whole payload, canonical JSON)")
	f.StringVar(&o.Strategy, "strategy", "event-id", "handler strategy: event-id, consumer-scoped, business-key, none, check-then-act, marker-after-effect")
	f.StringVar(&o.Consumer, "consumer", handler.DefaultConsumer, "consumer name the markers and effects are written for")
	f.StringVar(&o.Effect, "effect", handler.DefaultEffect, "name of the effect table")
	f.Float64Var(&o.Redeliver, "redeliver", 0, inject.RedeliverHelp)
	f.Float64Var(&o.Crash, "crash", 0, "probability that the consumer dies mid-delivery (the built-in handler mid-transaction; a --target consumer is killed), and the event is delivered again")
	f.StringSliceVar(&o.CrashAt, "crash-at", nil, "fault points --crash picks from (default after-check,after-marker,after-effect)")
	f.IntVar(&o.Rewind, "rewind", 0, "rebalances re-deliver up to N earlier deliveries, in order")
	f.Float64Var(&o.Republish, "republish", 0, "probability of the same event again under a new transport id")
	f.Float64Var(&o.Concurrent, "concurrent", 0, "probability of two workers getting the same delivery at once (needs a store that allows it)")
	f.IntVar(&o.MaxBad, "max-bad", 0, "skip (and report) up to N bad records instead of stopping")
	f.IntVar(&o.MaxRecord, "max-record", capture.DefaultMaxRecord, "longest line or record accepted, in bytes")
	f.StringSliceVar(&o.FailOn, "fail-on", nil, "capture findings that fail the replay: identity-reuse, repeated-ids, keys-with-several-ids, bad-records")
	f.StringVar(&o.Emit, "emit-scenario", "", "when an invariant breaks, write a scenario that reproduces it to FILE (shrunk; with --target, the broken key's deliveries and their faults)")
	f.StringVar(&o.Findings, "findings", "", "write every repeated id, reused id and key under several ids (with --target: every broken invariant) to FILE, one JSON object a line")
	f.IntVar(&o.Batch, "batch", 0, "deliveries per commit; 0 lets the store choose: a file commits every second, the private :memory: database once at the end (each delivery stays atomic in its own savepoint)")
	f.BoolVar(&o.Compare, "compare", true, "when the capture gives business keys, replay it again in memory with every other strategy and say which would have been safe")
	f.StringVar(&o.Target, "target", "", "deliver to your own consumer: a file holding version, target and effects (see docs/target.md)")
	f.IntVar(&o.Parallel, "parallel", 0, "lanes side by side, one key's deliveries in order in its lane: with --target, deliveries in flight by business key (default 1); without, parts split by event id, each on a store of its own (default one per core up to 4 where the replay can be split; refused where it cannot)")
	f.BoolVarP(&o.Output.Verbose, "verbose", "v", false, "with --target: print every breach of each broken invariant, not only the first 5, and the counters")
	f.BoolVar(&o.Output.Coverage, "coverage", false, "with --target: print what the replay injected, and when each kill came against the consumer's answer")
	f.DurationVar(&o.KillEvery, "kill-every", 0, "with a broker --target: SIGKILL a random consumer instance this long after the previous restart was ready, and restart it, until the broker has drained")
	f.Float64Var(&o.KillWorking, "kill-working", 0, "with a broker --target through the effects proxy: for each delivery, with this probability drawn from --seed, SIGKILL the instance working on it at a boundary of its statements, and restart it")
	f.StringVar(&o.LogDir, "logs", "", "with a --target that starts the consumer: keep each instance's stdout and stderr in DIR, one file per instance and start (default with --report FORMAT=FILE: consumer-logs beside the first report)")
	addOutputFlags(f, &o.Output)
}

// validate refuses the flag values that need no I/O to be found wrong,
// in the order runReplay met them before it did any: the report flags,
// the values the library would quietly replace with defaults, the
// capture format and --parallel, then the flags that mean nothing with
// --target, or without it.
func (o *ReplayOptions) validate() error {
	if err := o.Output.validate(); err != nil {
		return err
	}
	if err := o.checkValues(); err != nil {
		return err
	}
	if _, err := capture.ParseFormat(o.Input); err != nil {
		return problem.UsageOf(err)
	}
	if o.Changed["parallel"] && (o.Parallel < 1 || o.Parallel > 256) {
		return problem.Usagef("--parallel must be between 1 and 256, not %d", o.Parallel)
	}
	if o.Target != "" {
		if err := o.validateTarget(); err != nil {
			return err
		}
		_, err := o.replayOptions()
		return err
	}
	if o.Output.Verbose {
		return problem.Usagef("-v lists every breach of a replay into a --target; the built-in replay's report shows the first examples of each invariant, and --format json the same")
	}
	if o.Output.Coverage {
		return problem.Usagef("--coverage says what a replay into a --target injected and when its kills came; the built-in replay's report says what it injected on its injected: line")
	}
	if o.KillEvery != 0 || o.Changed["kill-every"] {
		return problem.Usagef("--kill-every kills consumer instances a --target file starts; the built-in handler has none (use --crash)")
	}
	if o.KillWorking != 0 || o.Changed["kill-working"] {
		return problem.Usagef("--kill-working kills the consumer instance a --target file starts while it works on a delivery; the built-in handler has none (use --crash)")
	}
	if o.Changed["logs"] {
		return problem.Usagef("--logs keeps the output of the consumer instances a --target file starts; the built-in handler has none")
	}
	_, err := o.replayOptions()
	return err
}

// replayOptions is the one replay.Options the flags ask for, whoever the
// consumer is: each value is parsed here, and only here.
func (o *ReplayOptions) replayOptions() (replay.Options, error) {
	format, err := capture.ParseFormat(o.Input)
	if err != nil {
		return replay.Options{}, problem.UsageOf(err)
	}
	r := replay.Options{
		Inputs:  o.Logs,
		Capture: capture.Options{Format: format, ID: o.ID, Key: o.Key, Payload: o.Payload, MaxRecord: o.MaxRecord},
		Seed:    o.Seed, Redeliver: o.Redeliver, Crash: o.Crash, Rewind: o.Rewind, Republish: o.Republish, Concurrent: o.Concurrent,
		KillEvery: o.KillEvery, KillWorking: o.KillWorking,
		MaxBad: o.MaxBad, EmitScenario: o.Emit, FindingsFile: o.Findings, Parallel: o.Parallel,
	}
	if o.Target != "" {
		r.FailOn, err = targetFindings(o.FailOn)
		return r, err
	}
	strategy, ok := handler.ParseStrategy(o.Strategy)
	if !ok {
		return r, problem.Usagef("unknown --strategy %q", o.Strategy)
	}
	r.DB, r.Batch, r.Compare = o.DB, o.Batch, o.Compare
	r.Handler = handler.Config{Strategy: strategy, Consumer: o.Consumer, Effect: o.Effect, Identity: o.Identity}
	if r.CrashAt, err = crashPoints(o.CrashAt); err != nil {
		return r, err
	}
	r.FailOn, err = findings(o.FailOn)
	return r, err
}

// crashPoints parses the --crash-at points.
func crashPoints(words []string) ([]consumer.FaultPoint, error) {
	var crashAt []consumer.FaultPoint
	for _, p := range words {
		fp, ok := consumer.ParseFaultPoint(p)
		if !ok {
			return nil, problem.Usagef("unknown --crash-at point %q; expected one of %s", p, replay.CrashPointWords())
		}
		crashAt = append(crashAt, fp)
	}
	return crashAt, nil
}

// findings parses the --fail-on findings.
func findings(words []string) ([]replay.Finding, error) {
	var failOn []replay.Finding
	for _, f := range words {
		fd, err := replay.ParseFinding(f)
		if err != nil {
			return nil, problem.UsageOf(err)
		}
		failOn = append(failOn, fd)
	}
	return failOn, nil
}

// runReplay replays the captures, into the built-in handler or the
// consumer of a --target file, and writes the reports. What it checks
// needs I/O: the report files, stdin, the files it is to write and the
// --target file.
func runReplay(o *ReplayOptions) error {
	s := o.IO
	out, err := o.Output.prepare(s)
	if err != nil {
		return err
	}
	if err := o.checkStdin(); err != nil {
		return err
	}
	opts, err := o.replayOptions()
	if err != nil {
		return err
	}
	if err := o.checkWritable(); err != nil {
		return err
	}
	var logs *proc.ConsumerLogs
	if o.Target != "" {
		if logs, err = o.replayTarget(&opts, out); err != nil {
			return err
		}
		defer oneProcessor()()
	} else {
		opts.Open = sqlite.OpenLedger
		opts.OpenSplit = sqlite.OpenSplitLedger
		opts.OpenScenario = func(ctx context.Context, s *scenario.Scenario) (builtin.Store, error) {
			return sqlite.Create(ctx, sqlite.Memory, s.Handler.Config)
		}
	}
	// The target file's secrets are known now: nothing said of a skipped
	// record shows one.
	opts.Stdin, opts.Warn = s.In, s.Secrets.Writer(s.Err)
	finish := o.progress(&opts)
	start := time.Now()
	rep, err := replay.Run(o.Context, opts)
	finish() // the line is cleared before the report is written
	res := &report.Replay{Report: rep, Duration: time.Since(start)}
	if err != nil {
		err = o.stopped(err, logs)
		if rep == nil {
			res.Report = replay.Unfinished(opts)
		}
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

// checkWritable refuses, before anything is replayed, a reproducer (of a
// --target replay) or a findings file that cannot be written.
func (o *ReplayOptions) checkWritable() error {
	if o.Emit != "" && o.Target != "" {
		if err := writable(o.Emit); err != nil {
			return problem.Usagef("cannot write the reproducer %s: %v", o.Emit, err)
		}
	}
	if o.Findings != "" {
		if err := writable(o.Findings); err != nil {
			return problem.Usagef("cannot write the findings %s: %v", o.Findings, err)
		}
	}
	return nil
}

// progress draws the replay's progress on stderr when it is a terminal:
// the deliveries and the bytes read of the captures, or, into a target,
// the deliveries made. It returns what clears it.
func (o *ReplayOptions) progress(opts *replay.Options) (finish func()) {
	s := o.IO
	if !s.ErrTTY {
		return func() {}
	}
	if o.Target != "" {
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
		return func() { _ = bar.Finish() }
	}
	bar := progressBar(s.Err, captureSize(o.Logs))
	opts.Progress = func(deliveries, bytes int64) {
		bar.Describe(fmt.Sprintf("replaying: %d deliveries", deliveries))
		_ = bar.Set64(bytes)
	}
	return func() { _ = bar.Finish() }
}

// maxRecordLimit is the largest --max-record: one record is held in memory.
const maxRecordLimit = 1 << 30

// checkValues refuses flag values that parse but mean nothing: the library
// would quietly replace them with defaults.
func (o *ReplayOptions) checkValues() error {
	if err := o.checkShared(); err != nil {
		return err
	}
	switch {
	case o.Batch < 0:
		return problem.Usagef("--batch must be 0 (the store chooses) or a number of deliveries per commit, not %d", o.Batch)
	case o.MaxRecord < 1 || o.MaxRecord > maxRecordLimit:
		return problem.Usagef("--max-record must be between 1 and %d bytes, not %d", maxRecordLimit, o.MaxRecord)
	case o.Consumer == "":
		return problem.Usagef("--consumer must name a consumer, not be empty")
	case !sqlite.ValidTableName(o.Effect):
		return problem.Usagef("--effect %s cannot be the effect table: it must be a plain SQL identifier, and not processed or a name starting redeliver_ or sqlite_", escape.Input(o.Effect))
	}
	return nil
}

// checkStdin refuses - as a capture when stdin is closed.
func (o *ReplayOptions) checkStdin() error {
	if f, ok := o.IO.In.(*os.File); ok && slices.Contains(o.Logs, "-") {
		if _, err := f.Stat(); err != nil {
			return problem.Usagef("- reads the capture from stdin, but stdin is closed")
		}
	}
	return nil
}

// checkShared checks the values of the fault flags both replays take,
// the built-in one and one into a --target, in the words the replay
// checks them in (replay.CheckFaults): here they are usage errors.
func (o *ReplayOptions) checkShared() error {
	f := replay.Options{Redeliver: o.Redeliver, Crash: o.Crash, Republish: o.Republish, Concurrent: o.Concurrent, Rewind: o.Rewind, MaxBad: o.MaxBad}
	if err := f.CheckFaults(); err != nil {
		return problem.UsageOf(err)
	}
	return nil
}

// progressBar is the replay's progress line on a terminal: the deliveries
// handled, and the bytes read of the captures' total size (when it is
// known) with the rate. It is drawn blank at once, so the clock of the
// first rate starts with the replay, not at the first update; and it runs
// no goroutine of its own.
func progressBar(w io.Writer, total int64) *progressbar.ProgressBar {
	return progressbar.NewOptions64(total,
		progressbar.OptionSetWriter(w),
		progressbar.OptionSetDescription("replaying"),
		progressbar.OptionShowBytes(true),
		progressbar.OptionShowCount(),
		progressbar.OptionSetSpinnerChangeInterval(0),
		progressbar.OptionSetRenderBlankState(true),
		progressbar.OptionClearOnFinish(),
		progressbar.OptionThrottle(100*time.Millisecond),
	)
}

// captureSize is the total size of the capture files, or -1 when one of
// them is stdin or cannot be measured.
func captureSize(logs []string) int64 {
	var total int64
	for _, l := range logs {
		st, err := os.Stat(l)
		if l == "-" || err != nil || !st.Mode().IsRegular() {
			return -1
		}
		total += st.Size()
	}
	return total
}
