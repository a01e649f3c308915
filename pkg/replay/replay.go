// Package replay runs a captured event log through the handler, with the
// duplicates real brokers make injected from a seed, and reports what the
// capture held, what the handler did with it and which invariants broke.
// Nothing in it grows with the length of the log: deliveries stream
// through, and the findings and invariants are counted in the database.
//
// It owns the one replay (Run, over the Consumer interface: the built-in
// handler here, a user's consumer in pkg/external), its Options and
// Report, the replay engine, the built-in handler's lanes, and the
// writing of a replay's reproducer and findings. Of this module it imports the file
// format and the inputs (pkg/scenario, pkg/capture, pkg/broker), the
// handler and its vocabulary, pkg/ledger, pkg/invariant, pkg/inject,
// pkg/runner and the small helpers (pkg/problem, pkg/escape, pkg/redact,
// pkg/template), and it never links a store, a database driver, a broker
// client, the renderers (pkg/report) or a user's consumer (pkg/external).
package replay

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"runtime/debug"
	"slices"
	"strings"
	"time"

	"github.com/redeliver/redeliver/pkg/broker"
	"github.com/redeliver/redeliver/pkg/builtin"
	"github.com/redeliver/redeliver/pkg/capture"
	"github.com/redeliver/redeliver/pkg/consumer"
	"github.com/redeliver/redeliver/pkg/escape"
	"github.com/redeliver/redeliver/pkg/handler"
	"github.com/redeliver/redeliver/pkg/inject"
	"github.com/redeliver/redeliver/pkg/ledger"
	"github.com/redeliver/redeliver/pkg/problem"
	"github.com/redeliver/redeliver/pkg/redact"
	"github.com/redeliver/redeliver/pkg/runner"
)

// Finding names something a capture can hold that --fail-on can make fatal.
type Finding string

// The capture findings.
const (
	IdentityReuse      Finding = "identity-reuse"        // an id delivered with different payloads
	RepeatedIDs        Finding = "repeated-ids"          // an id delivered more than once
	KeysWithSeveralIDs Finding = "keys-with-several-ids" // one business key under several ids
	BadRecords         Finding = "bad-records"           // records skipped under --max-bad
)

// Findings lists every finding --fail-on accepts.
var Findings = []Finding{IdentityReuse, RepeatedIDs, KeysWithSeveralIDs, BadRecords}

// Options are what a replay reads, who it delivers to, how it injects
// faults, and where it writes: one set for every kind of consumer. The
// fields marked "built-in" are the built-in handler's, and a replay into
// another consumer refuses them (Consumer.Check); those marked "target"
// are the user's consumer's.
type Options struct {
	Inputs  []string // capture files; "-" reads Stdin; nats://HOST:PORT/STREAM reads a JetStream stream
	Stdin   io.Reader
	Capture capture.Options
	// Consumer is who the captures are delivered to: nil for the built-in
	// handler on the store Open opens, or the user's consumer (pkg/external).
	Consumer Consumer
	DB       string // built-in: ":memory:" or a file (kept, and resumed on the next replay)
	Handler  handler.Config

	Seed int64
	// The faults are drawn per capture position (pkg/inject) whoever the
	// consumer is: the same seed and capture pick the same deliveries.
	Redeliver  float64               // probability of a lost ack (a crash after commit, before the ack): the broker delivers the event again
	Crash      float64               // probability of a crash mid-transaction (built-in), or of a kill -9 during a delivery (target)
	CrashAt    []consumer.FaultPoint // built-in: where such a crash happens
	Rewind     int                   // a rebalance re-delivers up to this many earlier deliveries
	Republish  float64               // built-in: probability of the same event again under a new id
	Concurrent float64               // probability of two workers at once
	// KillEvery (target, a broker's consumer): SIGKILL a random instance
	// this often, and restart it, until the broker has drained.
	KillEvery time.Duration
	// KillWorking (target, a broker's consumer through the effects proxy,
	// one instance): the probability per delivery of killing the instance
	// working on it, at a boundary of its statements.
	KillWorking float64

	MaxBad       int       // bad records skipped (and reported) before the replay stops
	FailOn       []Finding // capture findings that fail the replay
	EmitScenario string    // where to write a reproducer when an invariant breaks
	FindingsFile string    // where to write every entry behind the findings, as NDJSON
	Batch        int       // built-in: deliveries per commit (0: the store chooses)
	Examples     int       // built-in: examples per finding and invariant (default 5)
	// Compare (built-in) replays the captures again with every other
	// strategy, in memory, when they give business keys: which would
	// have been safe.
	Compare bool

	// Progress, if set, is told how many deliveries have been handled so
	// far and how many bytes of the capture files have been read.
	Progress func(deliveries, bytes int64)

	// Open (built-in) opens the store the capture is replayed into
	// (pkg/sqlite's OpenLedger); OpenScenario the store a reproducer is
	// checked on.
	Open         ledger.Opener
	OpenScenario builtin.Opener
	// OpenSplit, if set, opens the store of a replay that keeps nothing in
	// parts handled side by side (pkg/sqlite's OpenSplitLedger), one per
	// core up to four, whenever the replay allows it (see splitParts).
	OpenSplit ledger.SplitOpener
	// Parallel is --parallel: how many lanes of the replay engine run side
	// by side. For the built-in handler each is a part of the replay split
	// by event id on a store of its own: 0 lets the replay choose
	// (splitParts); above 1, a replay that cannot be split is refused
	// (whyOneLane). For a target, deliveries in flight by business key.
	Parallel int
	// Warn receives one line per skipped bad record.
	Warn io.Writer
}

// inputf is a mistake in what the replay was asked to read or do.
func inputf(format string, args ...any) error {
	return &problem.Error{Kind: problem.InvalidInput, Msg: fmt.Sprintf(format, args...)}
}

// CrashPointWords lists the points --crash-at accepts, in words.
func CrashPointWords() string {
	s := make([]string, len(DefaultCrashAt))
	for i, p := range DefaultCrashAt {
		s[i] = string(p)
	}
	return strings.Join(s, ", ")
}

// DefaultCrashAt are the mid-transaction fault points --crash uses by default.
var DefaultCrashAt = []consumer.FaultPoint{consumer.AfterCheck, consumer.AfterMarker, consumer.AfterEffect}

// validate checks the options for consumer c: the fault values, c's own
// refusals and defaults (Consumer.Check), then the captures asked for.
func (o *Options) validate(c Consumer) error {
	if err := o.CheckFaults(); err != nil {
		return inputf("%v", err)
	}
	if err := c.Check(o); err != nil {
		return err
	}
	if len(o.Inputs) == 0 {
		return inputf("replay needs at least one capture file (or - for stdin)")
	}
	stdin := 0
	for _, in := range o.Inputs {
		if in == "-" {
			stdin++
		}
	}
	if stdin > 1 {
		return inputf("- (stdin) can be read only once")
	}
	if o.EmitScenario != "" && stdin > 0 {
		return inputf("--emit-scenario reads the capture twice; save stdin to a file and replay that")
	}
	return nil
}

// CheckFaults checks the values of the faults every consumer takes: the
// probabilities, --rewind and --max-bad. The command checks them with it
// before it reads anything.
func (o *Options) CheckFaults() error {
	for _, p := range []struct {
		name string
		v    float64
	}{{"--redeliver", o.Redeliver}, {"--crash", o.Crash}, {"--republish", o.Republish}, {"--concurrent", o.Concurrent}} {
		if err := inject.Probability(p.name, p.v); err != nil {
			return err
		}
	}
	if o.Rewind < 0 || o.Rewind > maxRewind {
		return fmt.Errorf("--rewind must be between 0 and %d deliveries, not %d", maxRewind, o.Rewind)
	}
	if o.MaxBad < 0 {
		return errors.New("--max-bad must not be negative")
	}
	return nil
}

// maxRewind is the most deliveries --rewind delivers again.
const maxRewind = 1_000_000

// Check refuses what the built-in handler cannot replay with and fills in
// its defaults.
func (*builtinReplay) Check(o *Options) error {
	if err := refuseForBuiltin(o); err != nil {
		return err
	}
	if o.Examples <= 0 {
		o.Examples = 5
	}
	if o.Handler.Consumer == "" {
		o.Handler.Consumer = handler.DefaultConsumer
	}
	if o.Handler.Effect == "" {
		o.Handler.Effect = handler.DefaultEffect
	}
	if o.Handler.Strategy == "" {
		o.Handler.Strategy = handler.DefaultStrategy
	}
	if o.Handler.Strategy.UsesKey() && o.Handler.Key.IsZero() {
		o.Handler.Key = businessKeyTemplate
	}
	if o.Parallel < 0 || o.Parallel > maxParallel {
		return inputf("--parallel must be between 1 and %d, not %d", maxParallel, o.Parallel)
	}
	if why := whyOneLane(*o); o.Parallel > 1 && why != "" {
		return inputf("--parallel %d splits the built-in replay by event id into %d stores side by side, and %s; drop --parallel", o.Parallel, o.Parallel, why)
	}
	if o.Open == nil || o.EmitScenario != "" && o.OpenScenario == nil {
		return errors.New("replay: no store to replay into (Options.Open, Options.OpenScenario)")
	}
	return nil
}

// refuseForBuiltin refuses, for Check, the store, the faults and the
// strategy the built-in handler cannot replay with, filling in the default
// crash points on the way.
func refuseForBuiltin(o *Options) error {
	if strings.HasPrefix(o.DB, "postgres://") || strings.HasPrefix(o.DB, "postgresql://") {
		return inputf("replay runs on embedded SQLite: --db takes :memory: or a file, not a PostgreSQL URL (redeliver run --db postgres://… runs scenarios on PostgreSQL)")
	}
	if o.Concurrent > 0 {
		return inputf("--concurrent needs a store that runs transactions side by side; the embedded SQLite store runs one at a time, so two workers cannot race on it (drop --concurrent)")
	}
	if o.KillEvery != 0 || o.KillWorking != 0 {
		return inputf("--kill-every and --kill-working kill consumer instances a --target file starts; the built-in handler has none (use --crash)")
	}
	if len(o.CrashAt) == 0 {
		o.CrashAt = DefaultCrashAt
	}
	for _, p := range o.CrashAt {
		if p == consumer.BeforeBegin || p == consumer.AfterCommit || (p == consumer.AfterExternal && !o.Handler.Strategy.CallsOut()) {
			return inputf("--crash-at %s is not a mid-transaction point; use %s (after-commit is --redeliver)", p, CrashPointWords())
		}
	}
	if o.Handler.Strategy.CallsOut() {
		return inputf("strategy external-key calls a payment gateway; replay does not simulate one yet (use redeliver run for external-key scenarios)")
	}
	if o.Batch < 0 {
		return inputf("--batch must not be negative")
	}
	return nil
}

// maxParallel is the most lanes --parallel asks for, with or without --target.
const maxParallel = 256

// Run replays the captures into o.Consumer (the built-in handler when it
// is nil) and returns the report. An error means the replay could not be
// done (bad input, database, a consumer that failed); a report with a
// failing verdict is not an error.
func Run(ctx context.Context, o Options) (*Report, error) {
	c := o.consumer()
	if err := o.validate(c); err != nil {
		return nil, err
	}
	if err := checkInputs(o); err != nil {
		return nil, err
	}
	defer c.Close()
	rep, err := c.Replay(ctx, &o)
	if err != nil {
		return rep, err
	}
	if o.FindingsFile != "" {
		if err := writeFindings(ctx, &o, c, rep); err != nil {
			return nil, err
		}
	}
	if o.EmitScenario != "" && len(rep.Violations) > 0 {
		if err := writeReproducer(ctx, &o, c, rep); err != nil {
			return rep, err
		}
	}
	return rep, nil
}

// checkInputs refuses, before anything is opened or started, a capture
// that is not there or a stream URL that cannot be read as asked.
func checkInputs(o Options) error {
	for _, in := range o.Inputs {
		if in == "-" {
			continue
		}
		if broker.IsStreamURL(in) {
			if _, err := broker.ParseStreamURL(in); err != nil {
				return inputf("%v", err)
			}
			if f := o.Capture.Format; f != "" && f != capture.Auto && f != capture.NATS {
				return inputf("%s is a NATS stream: its messages are read as --input nats, not %s", in, f)
			}
			continue
		}
		if broker.IsTopicURL(in) {
			if _, err := broker.ParseTopicURL(in); err != nil {
				return inputf("%v", err)
			}
			if f := o.Capture.Format; f != "" && f != capture.Auto && f != capture.Kcat {
				return inputf("%s is a Kafka topic: its records are read as --input kcat, not %s", in, f)
			}
			continue
		}
		if st, err := os.Stat(in); err != nil {
			return problem.Invalid(problem.Pos{File: in}, "no such capture file")
		} else if st.IsDir() {
			return problem.Invalid(problem.Pos{File: in}, "a folder; give capture files")
		}
	}
	return nil
}

// builtinReplay is the built-in handler as a replay's consumer: the captures
// replayed into its store, which it keeps open for the findings and the
// reproducer.
type builtinReplay struct {
	db     ledger.Ledger
	log    ledger.CaptureLog
	broken []ledger.Broken
	gc     int // the GC percent to restore, when Replay set it
}

// Replay replays the captures into the store, then judges the capture's
// findings and the invariants, and compares the strategies.
func (b *builtinReplay) Replay(ctx context.Context, o *Options) (*Report, error) {
	// The Go heap of a replay is small and does not grow with the capture
	// (chunks in flight, the redelivery queue; the database lives in C
	// memory or on disk), but every delivery leaves garbage behind in the
	// driver. Collecting at 5× the live heap instead of 2× costs a few MB
	// and saves a tenth of the CPU.
	b.gc = debug.SetGCPercent(400)
	db, err := openStore(ctx, *o)
	if err != nil {
		return nil, err
	}
	b.db = db
	before, err := db.CountEffects(ctx)
	if err != nil {
		return nil, err
	}
	log, err := db.CaptureLog(ctx)
	if err != nil {
		return nil, err
	}
	b.log = log
	rep := newReport(*o, db.Resumed(), before)
	if err := replayInto(ctx, *o, db, true, rep); err != nil {
		return nil, stoppedAt(err, *o, rep)
	}
	if rep.Counters.Deliveries == 0 && rep.Capture.BadRecords == 0 && !readsStream(o.Inputs) {
		// An empty capture file proves nothing; so does a closed stdin,
		// which reads as empty. (A stream read from a sequence past its
		// end has simply nothing new.)
		return nil, heldNoEvents(o.Inputs)
	}
	if rep.Effects, err = db.CountEffects(ctx); err != nil {
		return nil, err
	}
	rep.NewEffects = rep.Effects - before
	found, broken, err := b.judge(ctx, o, rep.keyed > 0)
	if err != nil {
		return nil, err
	}
	b.broken = broken
	rep.setCapture(found)
	rep.keyedInvariants()
	rep.setViolations(broken)
	if err := rep.locate(ctx, log); err != nil {
		return nil, err
	}
	rep.decide(o.FailOn)
	if o.Compare && rep.keyed > 0 {
		if err := b.compareStrategies(ctx, o, rep); err != nil {
			return nil, err
		}
	}
	return rep, nil
}

// heldNoEvents is the error of a replay whose inputs held no events, stdin
// named as such.
func heldNoEvents(inputs []string) error {
	names := make([]string, len(inputs))
	for i, in := range inputs {
		names[i] = in
		if in == "-" {
			names[i] = "stdin"
		}
	}
	return inputf("%s held no events: nothing was replayed", escape.Line(describeInputs(names)))
}

// judge asks the store, once the captures are replayed, for the capture's
// findings and for the invariants it breaks (those of the business key
// too when keyed).
func (b *builtinReplay) judge(ctx context.Context, o *Options, keyed bool) (ledger.CaptureFindings, []ledger.Broken, error) {
	// The findings (on the replay's connection, which holds the capture
	// log) and the invariants (on another) answer side by side.
	var found ledger.CaptureFindings
	var ferr error
	done := make(chan struct{})
	findings := func() {
		defer close(done)
		found, ferr = b.log.Findings(ctx, o.Examples)
	}
	judge := b.db.Invariants
	if keyed {
		judge = b.db.KeyedInvariants
	}
	// A ledger whose database lives in one connection answers one query
	// at a time.
	if one, ok := b.db.(interface{ SideBySide() bool }); ok && !one.SideBySide() {
		findings()
	} else {
		go findings()
	}
	broken, err := judge(ctx, o.Handler.Strategy, o.Examples)
	<-done
	if err == nil {
		err = ferr
	}
	if err != nil {
		return ledger.CaptureFindings{}, nil, err
	}
	return found, broken, nil
}

// compareStrategies replays the captures again under the other strategies
// into rep.Strategies, beside the row of this replay; rep.NotCompared says
// why not when an input cannot be read twice.
func (b *builtinReplay) compareStrategies(ctx context.Context, o *Options, rep *Report) error {
	if slices.Contains(o.Inputs, "-") {
		rep.NotCompared = "stdin cannot be read again"
	} else if slices.ContainsFunc(o.Inputs, broker.IsStreamURL) {
		rep.NotCompared = "a stream is replayed once"
	} else if slices.ContainsFunc(o.Inputs, broker.IsTopicURL) {
		rep.NotCompared = "a topic is replayed once"
	} else {
		own, err := row(ctx, b.db, rep)
		if err != nil {
			return err
		}
		if rep.Strategies, err = compare(ctx, *o, own); err != nil {
			return err
		}
	}
	return nil
}

// Findings lists every entry behind the capture findings, from the
// capture log.
func (b *builtinReplay) Findings(ctx context.Context, _ *Report, add func(v any) error) error {
	return listFindings(ctx, b.log, add)
}

// Reproduce shrinks the deliveries of the first broken invariant's event
// into a scenario.
func (b *builtinReplay) Reproduce(ctx context.Context, o *Options, _ *Report) ([]byte, int, error) {
	return emit(ctx, *o, b.broken)
}

// Unfinished is the built-in replay's report of a replay that stopped
// before it had one.
func (*builtinReplay) Unfinished(o *Options) *Report { return unfinished(*o) }

// Close closes the store and the capture log, and puts the GC back.
func (b *builtinReplay) Close() error {
	var err error
	if b.log != nil {
		err = b.log.Close()
	}
	if b.db != nil {
		err = errors.Join(err, b.db.Close())
	}
	if b.gc != 0 {
		debug.SetGCPercent(b.gc)
	}
	return err
}

// openStore opens the store the replay runs into: in parts when it can be split
// (splitParts), else o.DB.
func openStore(ctx context.Context, o Options) (ledger.Ledger, error) {
	if n := splitParts(o); n > 1 {
		return o.OpenSplit(ctx, o.Handler, n)
	}
	return o.Open(ctx, o.DB, o.Handler)
}

// replayInto replays the captures into db, recording them in its capture log when
// record is set.
func replayInto(ctx context.Context, o Options, db ledger.Ledger, record bool, rep *Report) error {
	if split, ok := db.(ledger.Split); ok {
		var log ledger.Recorder
		if record {
			log = split
		}
		return runSplit(ctx, o, split, log, rep)
	}
	return replayOne(ctx, o, db, record, rep, nil)
}

// replayOne replays the captures into db in one lane, recording them in
// its capture log when record is set; watch, if not nil, sees every
// delivery.
func replayOne(ctx context.Context, o Options, db ledger.Ledger, record bool, rep *Report, watch func(step)) error {
	var log ledger.Recorder
	eng := newEngine(o, rep, &log)
	err := eng.Run(ctx, func(ctx context.Context, serve func(context.Context, int, Lane[item]) error) error {
		return db.Run(ctx, o.Batch, func(b ledger.Batch) error {
			if record {
				log = b
			}
			return serve(ctx, 0, newLane(o, eng, b, rep, watch))
		})
	})
	ended(eng, rep)
	return err
}

// readsStream reports whether an input is a broker stream (a URL), not a
// file or stdin.
func readsStream(inputs []string) bool {
	for _, in := range inputs {
		if strings.Contains(in, "://") {
			return true
		}
	}
	return false
}

// stoppedAt says what a bad record that stopped a replay on a file leaves
// behind: the deliveries before it are committed (each delivery is atomic,
// and the open batch is committed when the replay stops), and a replay of
// the corrected capture onto the same file resumes from them.
func stoppedAt(err error, o Options, rep *Report) error {
	var pe *problem.Error
	if o.DB == ledger.Memory || !errors.As(err, &pe) || pe.Kind != problem.InvalidInput || rep.Counters.Deliveries == 0 {
		return err
	}
	stopped := *pe
	n := rep.Counters.Deliveries
	what := fmt.Sprintf("the %d deliveries before it are", n)
	if n == 1 {
		what = "the delivery before it is"
	}
	stopped.Msg += fmt.Sprintf("; the replay stopped there, and %s committed to %s (replaying the corrected capture onto it resumes)", what, escape.Input(redact.String(o.DB)))
	return &stopped
}

// businessKeyTemplate is the key template of a replay's business-key
// strategies: the key comes with each delivery (Delivery.BusinessKey), so
// the template is expanded only for a record that gave none, and the
// handler then names it in its error.
var businessKeyTemplate = mustKey("{businesskey}")

// clock is the replay's fixed time: reports do not depend on when they ran.
func clock() time.Time { return runner.Epoch }

func describeInputs(ins []string) string {
	return strings.Join(ins, ", ")
}
