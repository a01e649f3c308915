package external

import (
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"math/rand/v2"
	"strings"
	"sync"
	"time"

	"github.com/redeliver/redeliver/pkg/consumer"
	"github.com/redeliver/redeliver/pkg/effects"
	"github.com/redeliver/redeliver/pkg/handler"
	"github.com/redeliver/redeliver/pkg/invariant"
	"github.com/redeliver/redeliver/pkg/proc"
	"github.com/redeliver/redeliver/pkg/runner"
	"github.com/redeliver/redeliver/pkg/scenario"
	"github.com/redeliver/redeliver/pkg/sqlproxy"
)

// Strategy is what a target-mode file's results name as their strategy.
const Strategy handler.Strategy = "target"

// Options tune a target run.
type Options struct {
	// Seed chooses the delays of crash: random.
	Seed int64
}

// system is a user's consumer under test as the scenario runner drives
// it: a runner.System.
type system struct {
	s       *scenario.Scenario
	sess    *Session
	rng     *rand.Rand
	history []*Delivery     // the run's deliveries, as the judge reads them
	seen    map[string]bool // event ids and keys delivered so far
	acked   map[string]bool // event ids the consumer acked so far
	broker  brokerCounts
	// keep takes the session when the system is closed, for the next
	// trial (nil: the session is closed).
	keep *keeper
	// committed: event ids whose effect is in the database (the consumer
	// acked one of their deliveries, or one changed their key's rows),
	// so that each redelivery must leave the key's rows as they were.
	committed map[string]bool
	// delivered counts each event id's deliveries; dups is the run of
	// redeliveries of an event that changed its key's rows, followed
	// until another delivery changes them.
	delivered map[string]int
	dups      map[string]*dupRun
	// copied: the envelopes a trial that delivers each event once
	// (runner.Call.One) has delivered.
	copied map[string]bool
	// stopped: a settle stopped the instances (behind RabbitMQ), and the
	// next delivery starts them again (resume).
	stopped bool
}

// dupRun is the redeliveries of one event, its effect committed, that
// changed its key's rows: from what they were before the first, to
// what they are after the last (the delivery that says so).
type dupRun struct {
	from, to []effects.Row
	last     *Delivery
}

// ConsumerKind is the kind of system a user's consumer is: a session opened for
// each file, its crashes drawn from opts.Seed. Its concurrent steps are
// explored at the consumer's statement boundaries when the effects proxy
// sees them, and at its calls to HTTP stand-ins, and run once, unforced,
// when there is neither.
//
// The session of one trial of an explored check is kept for the next:
// the consumer, restarted already if the trial killed it, goes on
// running, and only the effects database is reset (see keeper).
func ConsumerKind(sc *scenario.Scenario, opts Options) runner.Kind {
	kept := &keeper{}
	return runner.Kind{Statements: sc.Effects != nil && sc.Effects.Proxy || holdsCalls(sc.Externals), Release: kept.close, Open: func(ctx context.Context, s *scenario.Scenario) (runner.System, error) {
		sess, err := kept.take(ctx)
		if sess == nil && err == nil {
			sess, err = OpenWith(ctx, s.Target, s.Effects, s.Externals)
		}
		if err != nil {
			return nil, tailed(err)
		}
		h := fnv.New64a()
		h.Write([]byte(s.File))
		return &system{s: s, sess: sess, keep: kept, rng: rand.New(rand.NewPCG(uint64(opts.Seed), h.Sum64())), seen: map[string]bool{}, acked: map[string]bool{},
			committed: map[string]bool{}, delivered: map[string]int{}, dups: map[string]*dupRun{}, copied: map[string]bool{}}, nil
	}, Copies: sc.Target != nil && sc.Target.Broker == nil}
}

// holdsCalls says whether a file declares an HTTP external, whose
// stand-in can hold the consumer's calls.
func holdsCalls(exts []*scenario.External) bool {
	for _, e := range exts {
		if e.HTTP != nil {
			return true
		}
	}
	return false
}

// keeper holds the session of a trial that ended cleanly, for the next
// trial of the same file to take instead of starting the consumer again:
// a JVM or an interpreter that takes seconds to start costs that once,
// not once per boundary. A kill restarts the consumer where it happens,
// so a kept consumer is always a live one.
type keeper struct {
	mu   sync.Mutex
	idle *Session
}

// resetWait bounds the reset of a kept session: a reset that waits longer
// on a lock (the consumer still in a transaction of the trial before)
// gives the session up, and a fresh one is opened.
const resetWait = 5 * time.Second

// take returns the kept session with its effects database reset, or nil
// when there is none or it could not be reset.
func (k *keeper) take(ctx context.Context) (*Session, error) {
	k.mu.Lock()
	s := k.idle
	k.idle = nil
	k.mu.Unlock()
	if s == nil {
		return nil, nil
	}
	if !s.reusable() {
		s.Close()
		return nil, nil
	}
	s.dl.Forget()
	s.resetStandins()
	rctx, cancel := context.WithTimeout(ctx, resetWait)
	defer cancel()
	if err := s.db.Reset(rctx); err != nil {
		s.Close()
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		return nil, nil
	}
	return s, nil
}

// put keeps s for the next trial when it can be used again, and closes
// it otherwise.
func (k *keeper) put(s *Session) {
	if !s.reusable() {
		s.Close()
		return
	}
	k.mu.Lock()
	old := k.idle
	k.idle = s
	k.mu.Unlock()
	if old != nil {
		old.Close()
	}
}

// close closes the kept session, if any.
func (k *keeper) close() {
	k.mu.Lock()
	s := k.idle
	k.idle = nil
	k.mu.Unlock()
	if s != nil {
		s.Close()
	}
}

// RunFile runs every check of a target-mode scenario file.
func RunFile(ctx context.Context, s *scenario.Scenario, opts Options) (*runner.FileResult, error) {
	return runner.Run(ctx, s, ConsumerKind(s, opts))
}

// tailError is an error whose message ends with the consumer's stderr
// lines: a runner.Tailed.
type tailError struct {
	err error
	at  int
}

func (e *tailError) Error() string { return e.err.Error() }
func (e *tailError) Unwrap() error { return e.err }
func (e *tailError) Tail() int     { return e.at }

// tailed marks an error that quotes the consumer's stderr lines, so that
// what is said after it goes before them.
func tailed(err error) error {
	if err == nil {
		return nil
	}
	if i := strings.Index(err.Error(), proc.StderrIntro); i >= 0 {
		return &tailError{err: err, at: i}
	}
	return err
}

func (sys *system) Close() error {
	if sys.keep != nil {
		sys.keep.put(sys.sess)
		return nil
	}
	sys.sess.Close()
	return nil
}

func (sys *system) Describe(fr *runner.FileResult) {
	fr.Strategy, fr.Invariants = Strategy, Invariants
	if len(sys.s.Externals) > 0 {
		fr.Invariants = append(append([]*invariant.Invariant(nil), Invariants...), invariant.Checked(invariant.Externals, nil)...)
	}
	fr.Target, fr.Effects = sys.sess.Describe(), sys.sess.DescribeEffects()
	fr.Dialect, fr.EffectTable = sys.sess.dialect()
}

// Advance has nothing to move: the consumer keeps its own clock.
func (sys *system) Advance(time.Duration) {}

// Broker says the target's deliveries go through a broker, whose
// consumer the check waits for (Settle).
func (sys *system) Broker() bool { return sys.sess.t.Broker != nil }

// Settle waits for a broker target's consumer to take what was published,
// and adds what the broker redelivered meanwhile to c; with the database
// proxy, until every connection of the consumer is idle outside a
// transaction.
func (sys *system) Settle(ctx context.Context, c *consumer.Counters) error {
	if err := sys.sess.settleStandins(ctx); err != nil {
		return err
	}
	if sys.sess.t.Broker == nil {
		return tailed(sys.sess.quiet(ctx))
	}
	// Behind RabbitMQ the instances are stopped to see that they hold
	// nothing (Session.drainStopped), and started again only when the
	// check delivers more (resume): a check's last settle leaves them
	// stopped, as Close would. The stop tells what they held, so the
	// queue need stand empty only briefly before it (stoppedSettle).
	stops := sys.sess.stopsToDrain()
	var settle time.Duration
	if stops {
		settle = stoppedSettle
	}
	if err := sys.sess.drainAs(ctx, &sys.broker, settle); err != nil {
		return tailed(err)
	}
	if stops {
		held, err := sys.sess.drainStopped(ctx, &sys.broker, settle)
		if err != nil {
			return tailed(err)
		}
		sys.stopped = true
		c.HeldBack += held.Messages
		c.HeldBackRestarts += held.Restarts
		c.KilledAtStop += held.KilledAtStop
	}
	c.BrokerRedelivered += int(sys.broker.delta)
	c.Uncounted = sys.broker.uncounted
	sys.broker.delta = 0
	return nil
}

func (sys *system) Count(ctx context.Context, table string) (int64, error) {
	return sys.sess.db.Count(ctx, table)
}

// Inspect checks the effect rows a state expects of a business key.
func (sys *system) Inspect(ctx context.Context, step int, s *scenario.State, miss func(consumer.Location, runner.Miss)) error {
	for _, kc := range s.Effects {
		key := kc.Key
		rows, err := sys.sess.db.Rows(ctx, &key)
		if err != nil {
			return err
		}
		if n := int64(len(rows)); n != kc.N {
			miss(kc.Pos, runner.Miss{Kind: runner.MissKeyRows, Step: step, WantN: kc.N, Key: kc.Key, GotN: n})
		}
	}
	for _, ec := range s.Externals {
		if n, _ := sys.sess.performed(ec.External, ec.Key); n != ec.N {
			miss(ec.Pos, runner.Miss{Kind: runner.MissExternalEffects, Step: step, WantN: ec.N, What: ec.External, Key: ec.Key, GotN: n})
		}
	}
	return nil
}

// Judge reads the effect rows and judges the run's deliveries by them.
func (sys *system) Judge(ctx context.Context, _ []invariant.Record, res *runner.CheckResult) ([]invariant.Violation, error) {
	rows, err := sys.sess.db.Rows(ctx, nil)
	if err != nil {
		return nil, err
	}
	table := sys.sess.fx.Table
	if table == "" {
		table = "the effects query"
	}
	res.Counters.Effects = len(rows)
	vs := judge(sys.history, rows, table)
	sys.blameStatements(vs, res.Trace)
	acked := map[string]string{}
	for _, d := range sys.history {
		if sys.acked[d.EventID] {
			acked[d.EventID] = d.Key
		}
	}
	ext, err := sys.sess.judgeExternals(acked)
	if err != nil {
		return nil, err
	}
	res.Calls = sys.sess.callsSince(res.History)
	return append(vs, ext...), nil
}

// blameStatements gives a race's extra effect to the delivery whose
// statements made it: of the racing deliveries of one event, the one
// whose connection wrote the effect table last, in the order the
// database saw the statements (the first write stands, the next one is
// the extra), where the worker of that connection is known.
func (sys *system) blameStatements(vs []invariant.Violation, trace []consumer.Statement) {
	table := strings.ToLower(sys.sess.fx.Table)
	lane := 0
	for _, st := range trace {
		text := strings.ToLower(st.Text)
		if st.Lane != 0 && sqlproxy.Inserted(st.Answer) > 0 &&
			(table == "" || strings.Contains(text, table)) {
			lane = st.Lane
		}
	}
	if lane == 0 {
		return
	}
	for i, v := range vs {
		if v.By == nil || v.By.Span.Lane == 0 || v.By.Span.Lane == lane ||
			(v.Invariant != invariant.DuplicateEffect.Name && v.Invariant != invariant.DuplicateKey.Name) {
			continue
		}
		// The latest: the history holds the schedules run before this one.
		for j := len(sys.history) - 1; j >= 0; j-- {
			d := sys.history[j]
			if d.Check == v.By.Check && d.Step == v.By.Step && d.EventID == v.By.EventID && d.Span.Lane == lane {
				r := d.Record
				vs[i].By = &r
				break
			}
		}
	}
}

// Total adds a check's counters to the file's; the effect rows are those
// of the whole table at the end.
func (sys *system) Total(file *consumer.Counters, c consumer.Counters) {
	file.Add(c)
	file.Effects = c.Effects
}

// Summary is the line of a check without say.
func (sys *system) Summary(res *runner.CheckResult) runner.Summary {
	return summary(res.History, res.Counters, sys.sess.fx.Table)
}

// Say: a consumer under test has no duplicate outcome; its duplicates
// are the redeliveries it was sent.
func (sys *system) Say(_ context.Context, res *runner.CheckResult, values map[string]int64, _ []string) error {
	values["duplicates"] = int64(res.Counters.Redeliveries)
	return nil
}

// event is what a deliver step sends.
func (sys *system) event(st *scenario.Step) (Event, string) {
	ev := EventOf(st.Event.Envelope)
	ev.MsgID = st.MessageID
	ev.Key = KeyOf(sys.sess.fx.KeyOf, st.Event.Envelope)
	return ev, ev.Key
}

// resume starts the instances a settle stopped again, before the check
// delivers more.
func (sys *system) resume(ctx context.Context) error {
	if !sys.stopped {
		return nil
	}
	sys.stopped = false
	return sys.sess.restartInstances(ctx)
}

// Deliver makes one delivery of a step with its faults; without an
// expectation, an unacked one is redelivered as a broker would.
func (sys *system) Deliver(ctx context.Context, c runner.Call) (consumer.Result, error) {
	if err := sys.resume(ctx); err != nil {
		return consumer.Result{}, err
	}
	st := c.St
	ev, key := sys.event(st)
	if c.One {
		return sys.oneCopy(ctx, c, ev, key)
	}
	tolerate := st.Expect != nil && st.Expect.Answer == string(Unacked)
	a, err := sys.faulted(ctx, c, ev, key, tolerate)
	if err != nil {
		return consumer.Result{}, tailed(err)
	}
	if st.Expect == nil {
		if _, err := sys.redeliver(ctx, c, ev, key, a); err != nil {
			return consumer.Result{}, tailed(err)
		}
	}
	return resultOf(a), nil
}

// resultOf is an answer as the runner's expectations read it.
func resultOf(a Answer) consumer.Result {
	res := consumer.Result{Outcome: a.Kind, Status: a.Status, Said: a.String()}
	if a.Kind == Unacked || a.Killed {
		res.Err = errors.New(a.String())
	}
	return res
}

// redeliver redelivers an event whose delivery got no ack, as a broker
// would, after the wait the consumer asked for (Retry-After), until it is
// answered or maxRedeliveries went unanswered; never-acked judges what
// is left. A broker target's broker redelivers by itself.
func (sys *system) redeliver(ctx context.Context, c runner.Call, ev Event, key string, a Answer) (Answer, error) {
	if sys.sess.t.Broker != nil {
		return a, nil
	}
	for n := 0; n < maxRedeliveries && a.Kind == Unacked; n++ {
		if a.RetryAfter > 0 {
			if err := sleep(ctx, a.RetryAfter); err != nil {
				return a, err
			}
		}
		var err error
		if a, err = sys.plain(ctx, c, ev, key, false); err != nil {
			return a, err
		}
	}
	return a, nil
}

// faulted delivers once with the step's faults, and redelivers as a broker
// would when no answer arrived; it returns the last answer.
func (sys *system) faulted(ctx context.Context, c runner.Call, ev Event, key string, tolerate bool) (Answer, error) {
	st := c.St
	switch {
	case st.Drop:
		return sys.dropped(ctx, c, ev, key, tolerate)
	case st.Crash.Statement() && sys.sess.t.Broker != nil:
		return sys.brokerStatementCrash(ctx, c, ev, key, tolerate)
	case st.Crash.Statement():
		return sys.statementCrash(ctx, c, ev, key, tolerate)
	case st.Crash != nil && st.Crash.Kind == scenario.CrashExternal:
		return sys.externalCrash(ctx, c, ev, key, tolerate)
	case st.Crash != nil && sys.sess.t.Broker != nil:
		return sys.instanceCrash(ctx, c, ev, key)
	case st.Crash != nil:
		return sys.delayedCrash(ctx, c, ev, key, tolerate)
	}
	return sys.plain(ctx, c, ev, key, tolerate)
}

// dropped makes a delivery whose answer is lost (drop: response): it
// counts as unacked, and the event is delivered again, plainly.
func (sys *system) dropped(ctx context.Context, c runner.Call, ev Event, key string, tolerate bool) (Answer, error) {
	a, err := sys.once(ctx, c, ev, key, tolerate, func() (Answer, error) {
		a := sys.sess.deliver(ctx, ev, nil)
		if a.Err == nil {
			a.Kind, a.Dropped = Unacked, true
		}
		return a, nil
	})
	if err != nil || !a.Dropped {
		return a, err
	}
	return sys.plain(ctx, c, ev, key, tolerate)
}

// externalCrash makes a delivery killed at the external call its crash
// names, and redelivers it when no ack arrived; a delivery that made no
// such call fails the check.
func (sys *system) externalCrash(ctx context.Context, c runner.Call, ev Event, key string, tolerate bool) (Answer, error) {
	st := c.St
	a, err := sys.once(ctx, c, ev, key, true, func() (Answer, error) {
		a, _, reached, err := sys.sess.crashAtCall(ctx, ev, st.Crash)
		if err == nil && !reached {
			answered := a.Short()
			if sys.sess.t.Broker != nil {
				answered = "its broker (it took the message)"
			}
			c.Rec.Fail(runner.Miss{Kind: runner.MissCallNotReached, What: "crash: " + st.Crash.String(), Calls: sys.sess.callsSaid(ev.ID), Said: answered})
		}
		return a, err
	})
	if err != nil || a.Kind != Unacked {
		return a, err
	}
	// No ack arrived: the broker redelivers.
	return sys.plain(ctx, c, ev, key, tolerate)
}

// instanceCrash publishes a delivery behind a broker and, the crash's
// delay after, kills a started instance at random and restarts it.
func (sys *system) instanceCrash(ctx context.Context, c runner.Call, ev Event, key string) (Answer, error) {
	// Publish, then kill a random instance: the broker redelivers
	// whatever that instance held unacknowledged.
	d := sys.crashDelays(c.St.Crash)[0]
	return sys.once(ctx, c, ev, key, true, func() (Answer, error) {
		a := sys.sess.deliver(ctx, ev, nil)
		if a.Err != nil {
			return a, nil
		}
		if err := sleep(ctx, d); err != nil {
			return a, err
		}
		a.Crashed, a.CrashCame = true, Unknown
		killed := time.Now()
		if err := sys.sess.crashInstance(ctx, sys.rng); err != nil || len(sys.sess.procs) == 0 {
			return a, err
		}
		a.KilledAt, a.Restarted = killed, time.Now()
		return a, nil
	})
}

// delayedCrash delivers the event once for each of the crash's delays,
// the consumer killed that long after, until a delivery is answered;
// when none is, the event is redelivered plainly.
func (sys *system) delayedCrash(ctx context.Context, c runner.Call, ev Event, key string, tolerate bool) (Answer, error) {
	var a Answer
	var err error
	for _, d := range sys.crashDelays(c.St.Crash) {
		a, err = sys.once(ctx, c, ev, key, true, func() (Answer, error) {
			a, err := sys.sess.crash(ctx, ev, d)
			a.Crashed = true
			return a, err
		})
		if err != nil || a.Kind != Unacked {
			return a, err
		}
	}
	// No ack arrived: the broker redelivers.
	return sys.plain(ctx, c, ev, key, tolerate)
}

// crashDelays are the kill delays of a crash: one, or a sweep 0, 1, 2, 4 …
// ms up to the target's timeout.
func (sys *system) crashDelays(c *scenario.Crash) []time.Duration {
	switch c.Kind {
	case scenario.CrashAfter:
		return []time.Duration{c.After}
	case scenario.CrashRandom:
		limit := min(sys.sess.t.Timeout(), 100*time.Millisecond)
		return []time.Duration{time.Duration(sys.rng.Int64N(int64(limit)))}
	}
	return SweepDelays(sys.sess.t.Timeout())
}

// SweepDelays are the kill delays of crash: sweep: 0, 1, 2, 4 … ms, up to limit.
func SweepDelays(limit time.Duration) []time.Duration {
	out := []time.Duration{0}
	for d := time.Millisecond; d <= limit; d *= 2 {
		out = append(out, d)
	}
	return out
}

func (sys *system) plain(ctx context.Context, c runner.Call, ev Event, key string, tolerate bool) (Answer, error) {
	return sys.once(ctx, c, ev, key, tolerate, func() (Answer, error) { return sys.sess.deliver(ctx, ev, nil), nil })
}

// once makes one delivery through send, records it, and compares the
// key's rows before and after: a conflict answer must not change them,
// nor a redelivery of an event whose effect was committed. A broker
// target's rows, read around an asynchronous publish, say nothing of a
// redelivery, and only a conflict's are compared.
func (sys *system) once(ctx context.Context, c runner.Call, ev Event, key string, tolerate bool, send func() (Answer, error)) (Answer, error) {
	var before []effects.Row
	seen := sys.seen[ev.ID] || sys.seen["\x00"+key]
	broker := sys.sess.t.Broker != nil
	committed := sys.committed[ev.ID] && !broker
	read := seen || !broker
	if read {
		var err error
		if before, err = sys.rowsBefore(ctx, key, committed); err != nil {
			return Answer{}, err
		}
	}
	span := invariant.Span{Sent: time.Now()}
	a, err := send()
	span.Answered = time.Now()
	if err == nil && ctx.Err() != nil {
		err = ctx.Err()
	}
	if err != nil {
		return a, err
	}
	if herr := sys.sess.harnessError(a, ev, tolerate); herr != nil {
		return a, herr
	}
	d, rec := sys.record(c, ev, key, a, span)
	sys.seen[ev.ID], sys.seen["\x00"+key] = true, true
	if a.consumerAcked() {
		sys.acked[ev.ID] = true
	}
	if !read || (broker && a.Kind != Conflict) {
		return a, nil
	}
	return a, sys.compareAfter(ctx, ev.ID, key, a, d, rec, before, seen, committed)
}

// compareAfter reads the key's rows once the consumer is quiet and
// compares them with those before the delivery (d, recorded as rec): a
// conflict answer to an event seen before must not have changed them, nor
// a redelivery of an event whose effect was committed. An answer that is
// not a conflict here is not a broker's (once compares a broker's
// conflicts only), and one that acked or changed the rows marks the
// event's effect committed.
func (sys *system) compareAfter(ctx context.Context, id, key string, a Answer, d *Delivery, rec *invariant.Record, before []effects.Row, seen, committed bool) error {
	if err := sys.sess.quiet(ctx); err != nil {
		return err
	}
	after, err := sys.sess.db.Rows(ctx, &key)
	if err != nil {
		if committed {
			return err
		}
		return nil // the consumer has not created its table yet
	}
	switch {
	case a.Kind == Conflict && seen:
		d.Changed = changed(before, after)
		d.ChangedStore = d.Changed != ""
		rec.ChangedStore = d.ChangedStore
	case committed:
		sys.duplicate(id, d, before, after)
	}
	if a.Kind != Conflict && (a.consumerAcked() || changed(before, after) != "") {
		sys.committed[id] = true
	}
	return nil
}

// rowsBefore reads the key's rows before a delivery; only an event whose
// effect was committed (committed) must have them.
func (sys *system) rowsBefore(ctx context.Context, key string, committed bool) ([]effects.Row, error) {
	before, err := sys.sess.db.Rows(ctx, &key)
	if err != nil {
		if committed {
			return nil, err
		}
		// A consumer may create its table (or SQLite file) on its
		// first delivery, and one killed before it did left none: an
		// event whose effect was never committed has no rows yet. (An
		// error that lasts is the judge's, which reads every row.)
		return nil, nil
	}
	return before, nil
}

// duplicate judges a redelivery of an event whose effect was committed,
// by the key's rows before and after it. Redeliveries that change the
// rows one after another are one finding, said by the last, from the
// rows before the first to the rows after the last.
func (sys *system) duplicate(id string, d *Delivery, before, after []effects.Row) {
	run := sys.dups[id]
	if run != nil && changed(run.to, before) != "" {
		run = nil // another delivery changed the rows since: a new run
	}
	if run == nil {
		run = &dupRun{from: before}
		sys.dups[id] = run
	}
	run.to = after
	change := duplicated(run.from, after)
	if change == "" {
		return
	}
	if run.last != nil {
		run.last.Duplicated = ""
	}
	d.Duplicated = fmt.Sprintf("%s after %d deliveries", change, sys.delivered[id])
	run.last = d
}

// oneCopy is a deliver step in a trial that delivers each event once:
// one plain copy of its event, redelivered as a broker would until it is
// answered, or none when the trial delivered the same envelope already.
func (sys *system) oneCopy(ctx context.Context, c runner.Call, ev Event, key string) (consumer.Result, error) {
	env := string(c.St.Event.Envelope)
	if sys.copied[env] {
		return consumer.Result{Outcome: Acked}, nil
	}
	sys.copied[env] = true
	a, err := sys.plain(ctx, c, ev, key, true)
	if err == nil && c.St.Expect == nil {
		a, err = sys.redeliver(ctx, c, ev, key, a)
	}
	if err != nil {
		return consumer.Result{}, tailed(err)
	}
	return resultOf(a), nil
}

// record appends a delivery to the history, when and on which lane it
// ran, and counts it; the record the runner keeps is returned beside it.
func (sys *system) record(c runner.Call, ev Event, key string, a Answer, span invariant.Span) (*Delivery, *invariant.Record) {
	if a.Crashed {
		span.Crash, span.Killed, span.Restarted = string(a.CrashCame), a.KilledAt, a.Restarted
	}
	rec := c.Rec.Record(invariant.Record{EventID: ev.ID, Key: key, Result: resultOf(a), Span: span}, false)
	d := &Delivery{Record: *rec, Answer: a, Expected: c.St.Expect != nil}
	sys.history = append(sys.history, d)
	sys.delivered[ev.ID]++
	count(c.Rec.Counters(), a, sys.seen[ev.ID], sys.sess.t.Broker != nil)
	return d, rec
}

// Concurrent makes N deliveries of the same event at once; with the
// database proxy or an HTTP stand-in, as the schedule holds their
// statements or calls.
func (sys *system) Concurrent(ctx context.Context, c runner.Call) (consumer.Result, error) {
	if err := sys.resume(ctx); err != nil {
		return consumer.Result{}, err
	}
	st := c.St
	ev, key := sys.event(st)
	if c.One {
		return sys.oneCopyKept(ctx, c, ev, key)
	}
	var answers []Answer
	spans := make([]invariant.Span, st.Concurrent)
	for i := range spans {
		spans[i].Lane = i + 1
	}
	if sys.sess.proxy != nil || holdsCalls(sys.s.Externals) {
		var err error
		if answers, err = sys.raced(ctx, c, ev, spans); err != nil {
			return consumer.Result{}, tailed(err)
		}
	} else {
		answers = sys.atOnce(ctx, ev, st.Concurrent, spans)
	}
	if err := ctx.Err(); err != nil {
		return consumer.Result{}, err
	}
	answered := false
	var last *Delivery
	for i, a := range answers {
		if err := sys.sess.harnessError(a, ev, false); err != nil {
			return consumer.Result{}, tailed(err)
		}
		last, _ = sys.record(c, ev, key, a, spans[i])
		sys.seen[ev.ID], sys.seen["\x00"+key] = true, true
		if a.consumerAcked() {
			sys.acked[ev.ID], sys.committed[ev.ID] = true, true
		}
		answered = answered || a.Kind != Unacked
	}
	if !answered {
		// None of the workers took it: the broker redelivers it.
		if _, err := sys.redeliver(ctx, c, ev, key, answers[len(answers)-1]); err != nil {
			return consumer.Result{}, tailed(err)
		}
	}
	if err := sys.copies(ctx, c, key, last); err != nil {
		return consumer.Result{}, err
	}
	return resultOf(answers[0]), nil
}

// oneCopyKept is a concurrent step in a trial that delivers each event
// once (oneCopy), and keeps the key's rows that one copy left, for the
// step's copies to be compared with in the trials that make them.
func (sys *system) oneCopyKept(ctx context.Context, c runner.Call, ev Event, key string) (consumer.Result, error) {
	res, err := sys.oneCopy(ctx, c, ev, key)
	if err != nil {
		return res, err
	}
	rows, err := sys.sess.db.Rows(ctx, &key)
	if err != nil {
		return res, err
	}
	c.Rec.OneCopy(key, rowsOf(rows))
	return res, nil
}

// atOnce makes n deliveries of ev at once, one worker each, when neither
// the proxy nor a stand-in holds them: each is timed on its span, and an
// exec target's processes read the event once all have started.
func (sys *system) atOnce(ctx context.Context, ev Event, n int, spans []invariant.Span) []Answer {
	gate := make(chan struct{})
	answers := make([]Answer, n)
	var wg sync.WaitGroup
	each := ctx
	if sys.sess.t.Exec != nil {
		each = startTogether(ctx, n)
	}
	for i := range answers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-gate
			spans[i].Sent = time.Now()
			answers[i] = sys.sess.deliver(each, ev, nil)
			spans[i].Answered = time.Now()
		}()
	}
	close(gate)
	wg.Wait()
	return answers
}

// copies compares what a concurrent step's copies left its key's rows
// with what one copy left them in the trials, and has the step's last
// delivery say how they differ.
func (sys *system) copies(ctx context.Context, c runner.Call, key string, last *Delivery) error {
	if c.OneCopy == nil || last == nil {
		return nil
	}
	after, err := sys.sess.db.Rows(ctx, &key)
	if err != nil {
		return err
	}
	if change := c.OneCopy.Against(rowsOf(after)); change != "" {
		last.Duplicated, last.AtOnce = change, int64(c.St.Concurrent)
	}
	return nil
}

// summary is the line of a check without say: the answers, the crashes by
// when they came, how many rows the effect table holds (or the effects
// query returns, when table is "") and what was caught. The rows are the
// table's, every earlier check's included, not the check's own: the line
// says so ("table payments holds 4 rows").
func summary(history []invariant.Record, c consumer.Counters, table string) runner.Summary {
	counts := map[consumer.Outcome]int{}
	for _, r := range history {
		counts[r.Result.Outcome]++
	}
	s := runner.Summary{Deliveries: c.Deliveries, Effects: &runner.Effects{Table: table, Rows: int64(c.Effects)}, Apart: c.Apart}
	for _, k := range []Kind{Acked, Conflict, Rejected, Unacked} {
		s.Tallies = append(s.Tallies, runner.Tally{N: counts[consumer.Outcome(k)], Word: string(k)})
	}
	before, after, unknown := c.Interrupted()
	s.Tallies = append(s.Tallies, runner.Tally{N: c.Crashed, Crashes: &runner.Crashes{Before: before, After: after, Unknown: unknown}})
	return s
}

func sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// count adds one delivery's answer to the counters, for a scenario's check
// and a replay alike.
func count(c *consumer.Counters, a Answer, redelivery, broker bool) {
	c.Deliveries++
	if redelivery {
		c.Redeliveries++
	}
	switch a.Kind {
	case Acked:
		c.Processed++
	case Conflict:
		c.Conflicts++
	default:
		c.Failed++
	}
	if a.Crashed {
		c.Crashed++
		switch a.CrashCame {
		case BeforeAnswer:
			c.CrashedBeforeAnswer++
		case AfterAnswer:
			c.CrashedAfterAnswer++
			if a.InWork {
				c.CrashedInWork++
			}
			if a.Spent {
				c.CrashedSpent++
			}
		}
	}
	if broker && a.Kind == Acked {
		c.Published++
	}
}
