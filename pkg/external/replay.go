package external

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sync"
	"time"

	"github.com/redeliver/redeliver/pkg/broker"
	"github.com/redeliver/redeliver/pkg/capture"
	"github.com/redeliver/redeliver/pkg/consumer"
	"github.com/redeliver/redeliver/pkg/effects"
	"github.com/redeliver/redeliver/pkg/inject"
	"github.com/redeliver/redeliver/pkg/invariant"
	"github.com/redeliver/redeliver/pkg/journal"
	"github.com/redeliver/redeliver/pkg/problem"
	"github.com/redeliver/redeliver/pkg/proc"
	"github.com/redeliver/redeliver/pkg/replay"
	"github.com/redeliver/redeliver/pkg/runner"
	"github.com/redeliver/redeliver/pkg/scenario"
)

// ReplayTarget is the user's consumer as a replay delivers to it (a
// replay.Consumer): the consumer, its effects and the stand-ins of a
// --target file. The faults are drawn per capture position as the
// built-in replay draws them (pkg/inject): the same seed and capture pick
// the same deliveries. A --redeliver drops the consumer's answer and
// delivers the event again; a --crash kills the consumer during a
// delivery (it needs start, or exec); --concurrent delivers an event
// twice at once; a --rewind rebalance every 2N to 4N deliveries makes the
// last N again, after the same positions as the built-in replay's;
// --parallel lanes go by business key, one key's deliveries in order.
// A ReplayTarget serves one replay: Reproduce reads again what its
// Replay read.
type ReplayTarget struct {
	File string // the --target file, which holds version, target and effects
	// Source is the --target file's text, whose target and effects a
	// reproducer copies.
	Source  []byte
	Target  *scenario.Target
	Effects *scenario.Effects
	// Externals are the target file's: their stand-ins run for the
	// consumer to call, and the replay judges what they received.
	Externals []*scenario.External
	// Logs, when set, keeps the output of every instance the replay
	// starts, one file per instance and start.
	Logs *proc.ConsumerLogs

	r *replayer // the replay, once Replay ran: Reproduce reads the capture again through it
}

var _ replay.Consumer = (*ReplayTarget)(nil)

// maxRedeliveries bounds how often one event is redelivered after no ack;
// an event still unacked then is never-acked.
const maxRedeliveries = 5

// ReplayError is a replay stopped by the harness or an interrupt: it says
// what was sent.
type ReplayError struct {
	Err  error
	Sent int64
}

func (e *ReplayError) Error() string {
	return fmt.Sprintf("%v (%d deliveries were sent before it stopped)", e.Err, e.Sent)
}
func (e *ReplayError) Unwrap() error { return e.Err }

// replayer is one replay on its way: the executor of every lane of the
// replay engine, which reads the captures, plans the faults and the
// rebalances and dispatches the deliveries by business key.
type replayer struct {
	o     replay.Options
	t     *ReplayTarget
	eng   *replay.Engine[job]
	sess  *Session
	crash sync.RWMutex // a crash holds it alone; deliveries share it
	mu    sync.Mutex
	j     *journal.Journal    // what the judge needs of the deliveries so far
	ids   *journal.SeenFilter // the event ids delivered: the journal is asked only on a maybe
	seq   int                 // deliveries made
	// committed: the event ids whose effect a delivery that got no ack
	// committed (a kill after the COMMIT, before the answer), under mu;
	// an acked event's is the journal's to say.
	committed map[string]bool
	// again counts the deliveries of each event after its first, under
	// mu: only the events delivered more than once have an entry.
	again map[string]int64
	rep   *replay.Report // the replay's report, built as it goes
	// The faults injected within deliveries (under mu); the engine
	// counts the rebalances.
	injected replay.Injected
	began    time.Time   // when the replay began, for over
	over     replay.Over // the deliveries by the millisecond since began
	pace     *proc.Pace  // the kills of --kill-every, when given
	// working counts the kills of --kill-working, under mu.
	working *proc.WorkingKills
	traces  crashTraces // the statements of the deliveries killed at one
}

// newEngine is the replay engine of a replay into the target: each
// captured event with its business key, the faults --seed draws for its
// position, and one lane per --parallel, by business key.
func (r *replayer) newEngine(warn io.Writer) *replay.Engine[job] {
	return &replay.Engine[job]{
		Inputs: r.o.Inputs, Stdin: r.o.Stdin, Capture: r.o.Capture,
		Bad:  replay.MaxBad{Limit: r.o.MaxBad, Warn: warn},
		Seed: r.o.Seed, Rewind: r.o.Rewind, Lanes: r.o.Parallel,
		Rates: inject.Rates{Redeliver: r.o.Redeliver, Crash: r.o.Crash, Concurrent: r.o.Concurrent},
		Parse: func(ev capture.Event, _ int) (job, *capture.BadRecordError) {
			return job{ev: ev, key: KeyOf(r.t.Effects.KeyOf, ev.Envelope)}, nil
		},
		LaneOf: func(j *job) uint64 { return uint64(fnv32a(j.key)) },
		ReadError: func(file string, err error) error {
			return problem.Environmentf(problem.Pos{File: file}, err)
		},
	}
}

// fnv32a is FNV-1a, 32 bits: a business key's lane.
func fnv32a(s string) uint32 {
	h := uint32(2166136261)
	for i := 0; i < len(s); i++ {
		h ^= uint32(s[i])
		h *= 16777619
	}
	return h
}

// Check refuses, in the words of the flags, the faults this target
// cannot take and a capture that is the channel its consumer reads, and
// makes --parallel 1 by default. It reads the target as loaded, and
// starts nothing.
func (t *ReplayTarget) Check(o *replay.Options) error {
	if o.Parallel < 1 {
		o.Parallel = 1 // one delivery in flight
	}
	for _, in := range o.Inputs {
		if err := ownChannel(in, t.Target); err != nil {
			return err
		}
	}
	if err := t.killsRefused(o); err != nil {
		return err
	}
	c := t.Target
	switch {
	case c.Broker != nil && (o.Redeliver > 0 || o.Crash > 0 || o.Concurrent > 0):
		return problem.Usagef("--redeliver, --crash and --concurrent act on a delivery's answer, and a %s target has none; kill instances with --kill-every", c.Channel())
	case o.Crash > 0 && c.Start == nil && c.Exec == nil:
		return problem.Usagef("--crash kills the consumer redeliver started, and %s has no target start", t.File)
	}
	return nil
}

// killsRefused refuses, in the words of the flags, the instance kills
// (--kill-every, --kill-working) this target cannot take.
func (t *ReplayTarget) killsRefused(o *replay.Options) error {
	c := t.Target
	switch {
	case o.KillEvery > 0 && c.Broker == nil:
		return problem.Usagef("--kill-every kills consumer instances that read from a broker, and the target of %s is %s; use --crash", t.File, c.Channel())
	case o.KillEvery > 0 && c.Start == nil:
		return problem.Usagef("--kill-every kills the consumer instances redeliver started, and %s has no target start", t.File)
	case o.KillEvery > 0 && o.EmitScenario != "":
		// A scenario's faults follow deliveries; these kills follow the
		// clock while the consumer reads at its own pace, and a step cannot
		// name the instance: a reproducer without them would pass.
		return problem.Usagef("--emit-scenario cannot write the kills of --kill-every: they come by the clock, not after a delivery, so no scenario step can make them again (drop one of the two)")
	case o.KillWorking > 0 && c.Broker == nil:
		return problem.Usagef("--kill-working kills consumer instances that read from a broker, and the target of %s is %s; use --crash", t.File, c.Channel())
	case o.KillWorking > 0 && c.Start == nil:
		return problem.Usagef("--kill-working kills the consumer instance redeliver started, and %s has no target start", t.File)
	case o.KillWorking > 0 && (t.Effects == nil || !t.Effects.Proxy):
		return problem.Usagef("--kill-working kills an instance at the statements of the delivery it works on, which redeliver sees only through its database proxy: set effects.proxy: true in %s", t.File)
	}
	return nil
}

// ownChannel refuses a capture that is the stream or topic the target's
// consumer reads: every delivery would land in the capture being read,
// and the consumer would see each event twice, once from the capture
// and once from the replay.
func ownChannel(in string, t *scenario.Target) error {
	if t.Broker == nil {
		return nil
	}
	a, err := broker.AdapterOf(t.Broker)
	if err != nil || a.ReadsBack == nil {
		return nil
	}
	log := a.ReadsBack(t.Broker, in)
	if log == "" {
		return nil
	}
	return problem.Usagef("%s is the %s the target's consumer reads; replaying it into the target would read back its own deliveries: replay another %s, or a capture of it", in, log, log)
}

// Replay delivers captured events to the target with the seeded faults,
// then judges its effect table and the stand-ins' calls into the report.
func (t *ReplayTarget) Replay(ctx context.Context, o *replay.Options) (*replay.Report, error) {
	sess, err := open(ctx, t.Target, t.Effects, t.Externals, t.Logs)
	if err != nil {
		return nil, &ReplayError{Err: err}
	}
	defer sess.Close()
	j, err := journal.Open(ctx)
	if err != nil {
		return nil, &ReplayError{Err: err}
	}
	defer j.Close()
	rep := &replay.Report{Seed: o.Seed, Invariants: []replay.InvariantCheck{}, Violations: []replay.Violation{},
		Target: &replay.Target{File: t.File, Consumer: sess.Describe(), Effects: sess.DescribeEffects(),
			Given: append([]string{}, o.Inputs...), Broker: t.Target.Broker != nil, Table: t.Effects.Table},
		Timelines: true, Verdict: invariant.Pass}
	r := &replayer{o: *o, t: t, sess: sess, j: j, ids: journal.NewSeenFilter(), rep: rep}
	t.r = r
	if o.KillWorking > 0 {
		r.working = &proc.WorkingKills{P: o.KillWorking}
	}
	r.eng = r.newEngine(o.Warn)
	if o.Progress != nil {
		r.eng.Every = 1
		r.eng.Progress = o.Progress
	}
	r.began = time.Now()
	if err := r.deliverAll(ctx); err != nil {
		return nil, &ReplayError{Err: err, Sent: r.eng.Deliveries()}
	}
	r.placeKills()
	if err := r.judge(ctx); err != nil {
		return nil, &ReplayError{Err: err, Sent: r.eng.Deliveries()}
	}
	rep.Target.Logs = t.Logs.Files()
	return rep, nil
}

// deliverAll delivers the capture and waits for the consumer to drain,
// under the nemesis when the options ask for one (its pace kept for the
// report).
func (r *replayer) deliverAll(ctx context.Context) error {
	var paceOf func() proc.Pace
	stop := func() error { return nil }
	if r.o.KillEvery > 0 {
		paceOf, stop = r.sess.nemesis(ctx, r.o.KillEvery, r.o.Seed)
		defer stop()
	}
	err := r.run(ctx)
	if err == nil {
		err = r.drain(ctx)
	}
	if serr := stop(); err == nil {
		err = serr
	}
	if err == nil {
		err = r.drainStopped(ctx)
	}
	if err != nil || paceOf == nil {
		return err
	}
	pace := paceOf()
	r.pace = &pace
	r.rep.Counters.Crashed = pace.Kills
	return nil
}

// judge judges the effect table, then the stand-ins' calls, into the
// report; external-lost, which needs every acked event, is judged by
// checks (redeliver run) alone.
func (r *replayer) judge(ctx context.Context) error {
	where := r.t.Effects.Table
	if where == "" {
		where = "the effects query"
	}
	violations, effects, err := r.j.Judge(ctx, eachRow(ctx, r.sess.db), where)
	if err != nil {
		return err
	}
	if err := r.sess.settleStandins(ctx); err != nil {
		return err
	}
	ext, err := r.sess.judgeExternals(nil)
	if err != nil {
		return err
	}
	r.rep.Breaches = append(violations, ext...)
	r.rep.History = r.brokenHistory()
	r.rep.Counters.Effects = effects
	r.judged(r.sess.dialect())
	return nil
}

// Findings lists every breach, one a line: the text report shows the
// first of each invariant.
func (t *ReplayTarget) Findings(_ context.Context, rep *replay.Report, add func(v any) error) error {
	for _, v := range rep.Breaches {
		l := finding{Finding: string(v.Invariant), ID: v.EventID, Detail: v.Detail}
		if v.By != nil {
			l.Key = v.By.Key
			if v.By.Pos.File != "" {
				l.At = v.By.Pos.String()
			}
		}
		if err := add(l); err != nil {
			return err
		}
	}
	return nil
}

// Reproduce is a target scenario that delivers the deliveries of the
// first broken key (or event), with their faults (see emit).
func (t *ReplayTarget) Reproduce(ctx context.Context, _ *replay.Options, rep *replay.Report) ([]byte, int, error) {
	if t.r == nil || len(rep.Breaches) == 0 {
		return nil, 0, errors.New("no replay into the target broke an invariant to reproduce")
	}
	return t.r.emit(ctx, rep.Breaches[0])
}

// Unfinished is the report of a replay into the target that stopped
// before it had one: what it was asked to do, nothing counted, and
// verdict error.
func (t *ReplayTarget) Unfinished(o *replay.Options) *replay.Report {
	r := &replay.Report{Seed: o.Seed, Inputs: []replay.Input{}, Invariants: []replay.InvariantCheck{}, Violations: []replay.Violation{},
		Target: &replay.Target{File: t.File, Logs: t.Logs.Files()}, Timelines: true, Verdict: invariant.Error}
	format := o.Capture.Format
	if format == "" {
		format = capture.Auto
	}
	for _, in := range o.Inputs {
		if in == "-" {
			in = "stdin"
		}
		r.Inputs = append(r.Inputs, replay.Input{File: in, Format: string(format)})
	}
	return r
}

// Close has nothing to let go of: Replay stopped the consumer.
func (t *ReplayTarget) Close() error { return nil }

// job is one captured event for a lane.
type job struct {
	ev  capture.Event
	key string
	pos int64 // its place among the capture's events (1 the first); 0: a rewound delivery, made plainly
}

// run replays the captures into the target, --parallel lanes side by side.
func (r *replayer) run(ctx context.Context) error {
	return r.eng.Run(ctx, replay.GoLanes(r.eng.Lanes, func(int) replay.Lane[job] { return r }))
}

// Deliver makes a captured event's deliveries with the fault planned for
// them; a rewound one plainly.
func (r *replayer) Deliver(ctx context.Context, p replay.Planned[job]) error {
	j := p.Delivery
	if !p.Rewound {
		j.pos = p.Pos
	}
	return r.deliver(ctx, j, p.Fault)
}

// Finish has nothing to do: every delivery's redeliveries were made with it.
func (r *replayer) Finish(context.Context) error { return nil }

// deliver makes one captured event's deliveries with its faults.
func (r *replayer) deliver(ctx context.Context, j job, fault inject.Fault) error {
	ev := EventOf(j.ev.Envelope)
	ev.Key = j.key
	if ev.ID == "" {
		ev.ID = j.ev.ID
	}
	if r.working != nil && (proc.Working{P: r.o.KillWorking, Seed: r.o.Seed}).Picks(j.pos) {
		return r.killWorking(ctx, j, ev)
	}
	switch fault {
	case inject.Concurrent:
		return r.concurrent(ctx, j, ev)
	case inject.Crash:
		return r.crashed(ctx, j, ev)
	}
	a, err := r.one(ctx, j, ev, fault == inject.Redeliver)
	if err != nil {
		return err
	}
	return r.redeliver(ctx, j, ev, a)
}

// concurrent delivers ev twice at once; when neither took it, the broker
// redelivers.
func (r *replayer) concurrent(ctx context.Context, j job, ev Event) error {
	r.mu.Lock()
	r.injected.Concurrent++
	r.mu.Unlock()
	var wg sync.WaitGroup
	answers := make([]Answer, 2)
	spans := make([]invariant.Span, 2)
	r.crash.RLock()
	for i := range answers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			spans[i].Sent, spans[i].Lane = time.Now(), i+1
			answers[i] = r.sess.deliver(ctx, ev, nil)
			spans[i].Answered = time.Now()
		}()
	}
	wg.Wait()
	r.crash.RUnlock()
	var last Answer
	for i, a := range answers {
		if err := r.sess.harnessError(a, ev, false); err != nil {
			return err
		}
		if _, err := r.record(ctx, j, ev, a, spans[i]); err != nil {
			return err
		}
		if a.Kind != Unacked {
			return nil
		}
		last = a
	}
	// Neither took it: the broker redelivers.
	return r.redeliver(ctx, j, ev, last)
}

// crashed delivers ev with a kill of the consumer (at a statement
// boundary through the proxy, else after a delay), the other deliveries
// held back meanwhile, judges what the killed delivery committed, and
// redelivers.
func (r *replayer) crashed(ctx context.Context, j job, ev Event) error {
	var a Answer
	r.crash.Lock()
	seen, judged, before, read, err := r.rowsBefore(ctx, j, ev)
	if err != nil {
		r.crash.Unlock()
		return err
	}
	sent := time.Now()
	if r.sess.proxy != nil {
		// Through the proxy the kill lands at a statement boundary
		// drawn from --seed and the position: the same on a rerun.
		var stmts []consumer.Statement
		a, stmts, err = r.sess.crashAtStatement(ctx, ev, statementBoundary(r.o.Seed, j.pos))
		r.traces.keep(ev.ID, stmts)
	} else {
		a, err = r.sess.crash(ctx, ev, crashDelay(r.sess.t.Timeout(), r.o.Seed, j.pos))
	}
	// Read while the crash still holds the others back: what changed
	// is this delivery's.
	var after []effects.Row
	if err == nil && read {
		if after, err = r.sess.db.Rows(ctx, &j.key); err != nil && !seen {
			read, err = false, nil // the consumer has not created its table yet
		}
	}
	r.crash.Unlock()
	if err != nil {
		return err
	}
	a.Crashed = true
	r.mu.Lock()
	r.injected.Crashed++
	r.mu.Unlock()
	if err := r.sess.harnessError(a, ev, true); err != nil {
		return err
	}
	span := invariant.Span{Sent: sent, Answered: time.Now(), Crash: string(a.CrashCame), Killed: a.KilledAt, Restarted: a.Restarted}
	if span.Crash == "" {
		span.Crash = "unknown"
	}
	d, err := r.record(ctx, j, ev, a, span)
	if err != nil {
		return err
	}
	if read {
		r.committedBy(d, judged, before, after)
	}
	return r.redeliver(ctx, j, ev, a)
}

// killWorking publishes a delivery drawn by --kill-working and kills the
// instance working on it at the boundary of its statements drawn from
// --seed and its position, as --crash draws one: the other lanes wait,
// and the broker is drained of what was published before, so that the
// instance works on this delivery alone when it is killed. A delivery whose statements end before the
// boundary is not killed. The broker redelivers the message as after any
// crash, unless the instance had acked it.
func (r *replayer) killWorking(ctx context.Context, j job, ev Event) error {
	at := statementBoundary(r.o.Seed, j.pos)
	r.crash.Lock()
	// What was published before is taken first: the instance then works
	// on this delivery alone, and the kill interrupts it and no other.
	err := r.sess.taken(ctx)
	sent := time.Now()
	var bw brokerWatch
	if err == nil {
		bw, err = r.sess.brokerWatched(ctx, ev, at, false)
	}
	r.crash.Unlock()
	if err != nil {
		return err
	}
	if err := r.sess.harnessError(bw.a, ev, bw.reached); err != nil {
		return err
	}
	r.mu.Lock()
	r.working.Add(bw.reached, bw.inWork, !bw.reached && len(bw.trace) == 0 && len(bw.others) > 0)
	if bw.reached {
		r.injected.Crashed++
	}
	r.mu.Unlock()
	span := invariant.Span{Sent: sent, Answered: time.Now()}
	if bw.reached {
		bw.a.InWork = bw.inWork
		span.Crash, span.Killed, span.Restarted = string(bw.a.CrashCame), bw.a.KilledAt, bw.a.Restarted
	}
	_, err = r.record(ctx, j, ev, bw.a, span)
	return err
}

// redeliver redelivers an event whose delivery got no ack, after the wait
// the consumer asked for (Retry-After), until it is answered or
// maxRedeliveries went unanswered; never-acked judges what is left.
func (r *replayer) redeliver(ctx context.Context, j job, ev Event, a Answer) error {
	for n := 0; n < maxRedeliveries && a.Kind == Unacked; n++ {
		if a.RetryAfter > 0 {
			if err := sleep(ctx, a.RetryAfter); err != nil {
				return err
			}
		}
		var err error
		if a, err = r.one(ctx, j, ev, false); err != nil {
			return err
		}
	}
	return nil
}

// rowsBefore reads the key's rows before a crash: whether the event was
// delivered before, whether its effect was committed then (a redelivery
// of it is judged), the rows, and whether they were read. A broker
// target's rows, read around an asynchronous publish, say nothing of the
// delivery, and are not read.
func (r *replayer) rowsBefore(ctx context.Context, j job, ev Event) (seen, judged bool, before []effects.Row, read bool, err error) {
	if r.sess.t.Broker != nil {
		return false, false, nil, false, nil
	}
	if seen, judged, err = r.seenBefore(ctx, ev.ID); err != nil {
		return false, false, nil, false, err
	}
	if before, err = r.sess.db.Rows(ctx, &j.key); err != nil {
		if seen {
			return false, false, nil, false, err
		}
		// A consumer may create its table on its first delivery.
		return seen, judged, nil, false, nil
	}
	return seen, judged, before, true, nil
}

// committedBy judges a crashed delivery d by the key's rows before and
// after it: a redelivery of an event whose effect was committed must
// leave them as they were, and one that changed them, though killed
// before its answer, committed the event's effect.
func (r *replayer) committedBy(d *Delivery, judged bool, before, after []effects.Row) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if judged {
		if d.Duplicated = d.afterAll(duplicated(before, after)); d.Duplicated != "" {
			r.j.Changed(d)
		}
	}
	if changed(before, after) != "" {
		if r.committed == nil {
			r.committed = map[string]bool{}
		}
		r.committed[d.EventID] = true
	}
}

// one delivers once; with drop, the answer is lost and the delivery
// counts as unacked.
func (r *replayer) one(ctx context.Context, j job, ev Event, drop bool) (Answer, error) {
	seen, acked, err := r.seenBefore(ctx, ev.ID)
	if err != nil {
		return Answer{}, err
	}
	acked = acked && r.sess.t.Broker == nil
	key := j.key
	var before []effects.Row
	var a Answer
	var span invariant.Span
	r.crash.RLock()
	if seen {
		before, err = r.sess.db.Rows(ctx, &key)
	}
	if err == nil {
		span.Sent = time.Now()
		a = r.sess.deliver(ctx, ev, nil)
		span.Answered = time.Now()
	}
	r.crash.RUnlock()
	if err != nil {
		return a, err
	}
	if ctx.Err() != nil {
		return a, ctx.Err()
	}
	if herr := r.sess.harnessError(a, ev, false); herr != nil {
		return a, herr
	}
	if drop && a.Err == nil {
		a.Kind, a.Dropped = Unacked, true
		r.mu.Lock()
		r.injected.Redelivered++
		r.mu.Unlock()
	}
	d, err := r.record(ctx, j, ev, a, span)
	if err != nil {
		return a, err
	}
	if seen && (a.Kind == Conflict || acked) {
		if err := r.judgeAgain(ctx, d, a.Kind, key, before); err != nil {
			return a, err
		}
	}
	return a, nil
}

// seenBefore says whether the event id was delivered before, and whether
// its effect was acked or committed then (the journal, and what a crash
// left, say so).
func (r *replayer) seenBefore(ctx context.Context, id string) (seen, acked bool, err error) {
	r.mu.Lock()
	if r.ids.Maybe(id) {
		seen, acked, err = r.j.Seen(ctx, id)
	}
	acked = acked || r.committed[id]
	r.mu.Unlock()
	return seen, acked, err
}

// judgeAgain judges a delivery d of an event delivered before, answered
// kind, by the key's rows before it and after: a conflict answer must
// not change them, nor a redelivery of an event whose effect was
// committed. The journal keeps d when it did.
func (r *replayer) judgeAgain(ctx context.Context, d *Delivery, kind Kind, key string, before []effects.Row) error {
	after, err := r.sess.db.Rows(ctx, &key)
	if err != nil {
		return err
	}
	if kind == Conflict {
		d.Changed = changed(before, after)
	} else {
		d.Duplicated = d.afterAll(duplicated(before, after))
	}
	if d.Changed != "" || d.Duplicated != "" {
		r.mu.Lock()
		r.j.Changed(d)
		r.mu.Unlock()
	}
	return nil
}

// record counts a delivery and keeps in the journal what the judge needs
// of it, with when it was made (span); the delivery is returned, and kept
// only if it changed its key's rows (see journal.changed).
func (r *replayer) record(ctx context.Context, j job, ev Event, a Answer, span invariant.Span) (*Delivery, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	res := consumer.Result{Outcome: consumer.Outcome(a.Kind)}
	if a.Kind == Unacked {
		res.Err = errors.New(a.String())
	}
	r.seq++
	d := &Delivery{Record: invariant.Record{Seq: r.seq, EventID: ev.ID, Key: j.key, Result: res, Pos: j.ev.At, Span: span}, Answer: a}
	seen, err := r.j.Add(ctx, d)
	if err != nil {
		return nil, err
	}
	d.nth = 1
	if seen {
		// Only the events delivered more than once are counted.
		if r.again == nil {
			r.again = map[string]int64{}
		}
		r.again[ev.ID]++
		d.nth += r.again[ev.ID]
	}
	r.ids.Add(ev.ID)
	count(&r.rep.Counters, a, seen, r.sess.t.Broker != nil)
	r.over.Add(time.Since(r.began).Milliseconds(), outcomeIndex(a.Kind), a.Crashed)
	r.eng.Delivered()
	return d, nil
}

// brokenHistory is the deliveries of the keys an invariant broke on (or
// of the event, when it has no key), in the order they were made, while
// the replay kept its deliveries in memory: the report draws their
// timelines. Nil once they moved into the journal.
func (r *replayer) brokenHistory() []invariant.Record {
	broken := map[string]bool{}
	for _, v := range r.rep.Breaches {
		if v.By != nil && v.By.Key != "" {
			broken[v.By.Key] = true
		} else {
			broken[v.EventID] = true
		}
	}
	var out []invariant.Record
	for _, h := range r.j.History() {
		d := h.(*Delivery)
		if broken[d.Key] || (d.Key == "" && broken[d.EventID]) {
			out = append(out, d.Record)
		}
	}
	return out
}

// placeKills counts the kills of --kill-every on the replay's course, each
// when it came: no delivery stands for them.
func (r *replayer) placeKills() {
	if r.sess.killer == nil {
		return
	}
	for _, k := range r.sess.killer.Kills() {
		r.over.Kill(r.sess.killerBegan.Add(k.At).Sub(r.began).Milliseconds())
	}
}

// drain waits for a broker target's consumer to take everything the
// replay published, and counts what the broker redelivered.
func (r *replayer) drain(ctx context.Context) error {
	if r.sess.t.Broker == nil {
		return nil
	}
	from := time.Since(r.began).Milliseconds()
	var bc brokerCounts
	if err := r.sess.drain(ctx, &bc); err != nil {
		return err
	}
	r.waited(from)
	r.rep.Counters.BrokerRedelivered = int(bc.delta)
	r.rep.Counters.Uncounted = bc.uncounted
	return nil
}

// waited records a wait for the broker to drain, from from (ms into the
// replay) until now, for the chart and the timelines.
func (r *replayer) waited(from int64) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.over.Waited(from, time.Since(r.began).Milliseconds())
	r.rep.Drains = append(r.rep.Drains, runner.Drain{From: r.began.Add(time.Duration(from) * time.Millisecond), To: time.Now()})
}

// drainStopped makes the end of a RabbitMQ drain exact, once the
// nemesis is over (Session.drainStopped, which does nothing for another
// target): what the stopped instances put back is taken by a restart,
// and said.
func (r *replayer) drainStopped(ctx context.Context) error {
	from := time.Since(r.began).Milliseconds()
	var bc brokerCounts
	held, err := r.sess.drainStopped(ctx, &bc, 0)
	if err != nil {
		return err
	}
	if held.Restarts == 0 && held.KilledAtStop == 0 {
		return nil
	}
	r.waited(from)
	r.rep.Counters.BrokerRedelivered += int(bc.delta)
	r.rep.Target.HeldBack = &held
	return nil
}
