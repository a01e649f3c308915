package external

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/redeliver/redeliver/pkg/consumer"
	"github.com/redeliver/redeliver/pkg/effects"
	"github.com/redeliver/redeliver/pkg/inject"
	"github.com/redeliver/redeliver/pkg/invariant"
	"github.com/redeliver/redeliver/pkg/runner"
	"github.com/redeliver/redeliver/pkg/scenario"
	"github.com/redeliver/redeliver/pkg/sqlproxy"
	"github.com/redeliver/redeliver/pkg/standin"
)

// watched makes one delivery while the proxy follows its statements and,
// when at is given, holds the consumer's connection at that boundary and
// kills the consumer there — the started process for HTTP, the
// delivery's own for exec — then cuts the connection (the database rolls
// back what the consumer had not committed) and restarts the consumer.
// reached is false when the delivery ended without reaching at.
func (s *Session) watched(ctx context.Context, ev Event, at *sqlproxy.Boundary) (a Answer, trace []sqlproxy.Statement, reached bool, err error) {
	w, err := s.watchedMarked(ctx, ev, at, nil)
	return w.a, w.trace, w.reached, err
}

// recorded is what the recording run of crash: statements saw of the
// boundary a trial holds: whether it came after the consumer's answer,
// and whether statements of the delivery came after it.
type recorded struct {
	afterAnswer, more, answerNext bool
}

// recordedOf is what the recording saw of a schedule's boundary (nil:
// none, the boundary was not recorded).
func recordedOf(h *runner.Boundary) *recorded {
	if h == nil {
		return nil
	}
	return &recorded{afterAnswer: h.AfterAnswer, more: !h.Last, answerNext: h.AnswerNext}
}

// watch is one watched delivery: its answer, its statements, and what
// the watch saw of them.
type watch struct {
	a     Answer
	trace []sqlproxy.Statement
	// marked: the delivery's statements were told from the others by
	// its marks (the event id and key).
	marked, reached bool
	// answered is when the consumer's own answer came, while the watch
	// was on or before the kill (zero: not then); said is that answer
	// in a word or two ("202", "exit 0").
	answered time.Time
	said     string
	// finished: after the answer, the delivery's work was over as far as
	// the database could tell (sqlproxy.Watch.Finished) when the watch
	// stopped; false when it stopped at the kill, or gave up waiting.
	finished bool
}

// answerQuiet is how long no statement of a delivery must come, once
// the consumer answered it and its connections are idle outside a
// transaction, before its statements are taken to be over: a consumer
// that answers first starts its work a moment after. An exec delivery's
// process has exited when it answers, and what it left was ended: none
// of its statements can come after, and none is waited for.
const answerQuiet = 250 * time.Millisecond

// answerInFlight bounds how long a trial held at a boundary its
// recording met after the consumer's answer waits for that answer
// before the kill: the consumer gave it before this statement, so it is
// on its way. It is also the quiet after the answer such a trial waits
// for its boundary's statement, which the recording saw come.
const answerInFlight = time.Second

// answerRace is how long a trial held at the statement the recording had
// the answer right after waits for an answer that may have been sent
// before it (recorded.answerNext).
const answerRace = 500 * time.Millisecond

// watchedMarked makes one delivery while the proxy follows its statements
// — past the consumer's answer, until the delivery's connections are idle
// outside a transaction and quiet (answerQuiet), or idleLimit after the
// answer — and, when at is given, holds and kills there as watched says.
// rec, when given, is what the recording saw of at.
func (s *Session) watchedMarked(ctx context.Context, ev Event, at *sqlproxy.Boundary, rec *recorded) (watch, error) {
	s.settleBefore(ctx)
	w, err := s.proxy.Watch(at, ev.ID, ev.Key)
	if err != nil {
		return watch{}, err
	}
	f := &following{s: s, w: w, kill: make(chan struct{}), answers: make(chan Answer, 1)}
	f.got = f.answers
	if at != nil && rec != nil && rec.afterAnswer {
		// The recording met this boundary after the answer: its
		// statement comes, if later than answerQuiet on a busy machine.
		f.quiet = answerInFlight
	}
	go func() { f.answers <- s.dl.Deliver(ctx, ev, f.kill) }()
	if err := f.follow(ctx); err != nil {
		return f.out, err
	}
	if f.out.reached {
		f.killHeld(at, rec)
	}
	out := f.out
	out.trace = w.Stop()
	out.marked = w.Marked()
	s.apart = len(w.Others())
	if out.reached && s.proc == nil {
		// An exec delivery's process is dead once its answer is in: what
		// it left running in the database ends now, as after a real
		// crash, not when the run ends.
		s.endBackends(ctx)
	}
	if out.reached && s.proc != nil {
		if err := s.proc.Restart(ctx); err != nil {
			return out, err
		}
		out.a.KilledAt, out.a.Restarted = f.killed, time.Now()
		s.dl.Forget()
	}
	return out, nil
}

// following is one delivery of watchedMarked while the proxy follows it:
// the answer it waits for (got, nil once taken) and what it saw.
type following struct {
	s        *Session
	w        *sqlproxy.Watch
	kill     chan struct{}
	answers  chan Answer
	got      chan Answer
	answered bool
	killed   time.Time
	out      watch
	// quiet, when longer than answerQuiet, is how long follow waits for
	// a statement of the delivery once the consumer answered.
	quiet time.Duration
}

// take is the delivery's answer: the consumer's own goes on being
// followed (true); none (a timeout, a reset) ends the watch.
func (f *following) take(a Answer) bool {
	f.out.a, f.answered, f.got = a, true, nil
	if !ownAnswer(a) {
		return false
	}
	f.out.answered, f.out.said = time.Now(), f.s.answerWord(a)
	f.w.Answered()
	return true
}

// follow waits until the delivery is held at the watched boundary, or,
// once the consumer answered, its statements are over (answerQuiet, or
// f.quiet when longer; none for an exec delivery, whose process has
// exited) or idleLimit passed. A context ending first kills the delivery
// and returns its error.
func (f *following) follow(ctx context.Context) error {
	quiet := max(answerQuiet, f.quiet)
	if f.s.t.Exec != nil {
		quiet = 0
	}
	// tick and limit run once the consumer answered.
	ticker := time.NewTicker(5 * time.Millisecond)
	defer ticker.Stop()
	var tick, limit <-chan time.Time
	for {
		select {
		case <-f.w.Held():
			f.out.reached = true
			return nil
		case a := <-f.got:
			if !f.take(a) {
				return nil
			}
			tick, limit = ticker.C, time.After(idleLimit)
		case <-tick:
			if f.w.Finished(quiet) {
				f.out.finished = true
				return nil
			}
		case <-limit:
			return nil
		case <-ctx.Done():
			close(f.kill)
			f.w.Cut()
			f.w.Stop()
			if !f.answered {
				f.out.a = <-f.answers
			}
			return ctx.Err()
		}
	}
}

// killHeld kills the consumer held at at and cuts its connection, and
// says of the delivery's answer whether the kill came before it or after
// (and then whether it interrupted the consumer's work). rec, when given,
// is what the recording saw of at.
func (f *following) killHeld(at *sqlproxy.Boundary, rec *recorded) {
	if !f.answered && rec != nil && (rec.afterAnswer || rec.answerNext) {
		// The recording met this boundary after the answer: the
		// consumer gave it before this statement, and the kill waits
		// for it to arrive. Met right before the answer, the answer
		// may have raced the statement there: the kill waits a
		// moment for it.
		wait := answerInFlight
		if !rec.afterAnswer {
			wait = answerRace
		}
		select {
		case a := <-f.got:
			f.take(a)
		case <-time.After(wait):
		}
	}
	// A kill after the answer interrupts the consumer's work on the
	// delivery when the statement held before never runs, a
	// transaction of it is open, or it had statements to come.
	inWork := !at.After || f.w.InTransaction() || (rec != nil && rec.more)
	spent := !inWork && rec != nil
	if f.s.proc != nil {
		f.s.proc.Kill()
	}
	f.killed = time.Now()
	close(f.kill)
	f.w.Cut()
	if !f.answered {
		f.out.a = <-f.answers
		if ownAnswer(f.out.a) {
			// Its answer was on its way when the kill came: the
			// consumer had answered, and the kill came after.
			f.answered = true
			f.out.answered, f.out.said = f.killed, f.s.answerWord(f.out.a)
		}
	}
	a := &f.out.a
	if f.answered && ownAnswer(*a) {
		a.Crashed, a.CrashCame, a.InWork, a.Spent = true, AfterAnswer, inWork, spent
	} else {
		// Held at a statement, the consumer had not answered:
		// whatever came back is the kill's doing.
		a.Killed, a.Crashed, a.CrashCame = true, true, BeforeAnswer
		if a.Kind == "" || a.Status != 0 {
			a.Kind, a.Status = Unacked, 0
		}
	}
}

// ownAnswer reports whether an answer is the consumer's own: an HTTP
// status, or an exec process's exit by itself — not a timeout, a reset or
// a kill.
func ownAnswer(a Answer) bool {
	return !a.TimedOut && !interrupted(a) && !a.Refused
}

// answerWord is a consumer's answer as the trace's marker says it:
// "202", "exit 0".
func (s *Session) answerWord(a Answer) string {
	if s.t.Exec != nil {
		return fmt.Sprintf("exit %d", a.Status)
	}
	return strconv.Itoa(a.Status)
}

// idleLimit bounds how long redeliver waits for the consumer's
// connections to be idle outside a transaction, before it watches a
// delivery or reads the effects.
const idleLimit = 5 * time.Second

// settleBefore waits until the consumer's connections are idle outside a
// transaction, so that what an earlier delivery still runs after its
// answer does not run while the next is watched. A consumer that keeps a
// transaction open is watched all the same: its statements belong to
// that transaction's delivery, and the judge says it.
func (s *Session) settleBefore(ctx context.Context) {
	if s.proxy != nil {
		_ = s.proxy.Idle(ctx, idleLimit)
	}
}

// quiet waits, with the proxy, until every connection of the consumer is
// idle outside a transaction: a consumer that answers first and commits
// after is judged by what it committed.
func (s *Session) quiet(ctx context.Context) error {
	if s.proxy == nil {
		return nil
	}
	err := s.proxy.Idle(ctx, idleLimit)
	var busy *sqlproxy.BusyError
	if errors.As(err, &busy) {
		return fmt.Errorf("%v: redeliver reads the effects only once every connection of the consumer is idle outside a transaction, and gave up waiting (a transaction left open, or a statement that runs on)", err)
	}
	return err
}

// boundary is where a statement fault lands: the one a crash names, or
// the one the schedule holds (nil: none, the run records).
func boundary(c *scenario.Crash, h *runner.Boundary) *sqlproxy.Boundary {
	if c != nil && c.Kind == scenario.CrashStatement {
		return &sqlproxy.Boundary{Words: c.Words, After: c.AfterStatement, Marked: true}
	}
	if h == nil {
		return nil
	}
	return &sqlproxy.Boundary{Lane: h.Lane, Index: h.Index, After: h.After, Marked: h.Marked}
}

// killBoundaries are the boundaries of a recorded delivery's statements,
// in order, each a kill — but those inside a query of several
// statements, which the server runs in one go. Each says whether the
// recording met it after the consumer's answer; finished: the
// recording's watch saw the delivery's work over after its last
// statement, and the boundary after it is the last (a kill there once
// the consumer answered interrupts nothing).
func killBoundaries(trace []sqlproxy.Statement, marked, finished bool) []runner.Boundary {
	var out []runner.Boundary
	// next is the statement the answer came right after, when one did:
	// the last before the first sent after the answer.
	next := -1
	for i, st := range trace {
		if st.AfterAnswer {
			next = i - 1
			break
		}
	}
	if next < 0 && finished {
		// Answered after its last statement.
		next = len(trace) - 1
	}
	for i, st := range trace {
		text := shortStatement(st.Text)
		if st.Holdable(false) {
			out = append(out, runner.Boundary{Index: st.Index, Marked: marked, AfterAnswer: st.AfterAnswer, AnswerNext: i == next,
				Name: fmt.Sprintf("killed before statement %d (%s)", st.Index, text)})
		}
		if st.Holdable(true) {
			out = append(out, runner.Boundary{Index: st.Index, After: true, Marked: marked, AfterAnswer: st.AfterAnswer, AnswerNext: i == next,
				Last: finished && i == len(trace)-1,
				Name: fmt.Sprintf("killed after statement %d (%s)", st.Index, text)})
		}
	}
	return out
}

// markAnswer puts the marker of the consumer's answer in a delivery's
// trace (stmts, made of trace): on the first statement sent once
// redeliver had the answer — or, when the kill came after the answer,
// on the held statement if that comes first: the answer was in before
// the kill there. A trace with no statement after the answer has none.
func markAnswer(stmts []consumer.Statement, trace []sqlproxy.Statement, w watch) {
	if w.said == "" {
		return
	}
	at := -1
	for i, st := range trace {
		if st.AfterAnswer {
			at = i
			break
		}
	}
	if w.reached && w.a.CrashCame == AfterAnswer {
		for i := range stmts {
			if stmts[i].Held && (at < 0 || i < at) {
				at = i
				break
			}
		}
	}
	if at >= 0 && at < len(stmts) {
		stmts[at].AnsweredBefore = w.said
	}
}

// inOrder merges the boundaries of a delivery's statements (two, or one,
// per statement of trace, in its order) with those of its external calls,
// by when each statement and each call came.
func inOrder(stmts []runner.Boundary, trace []sqlproxy.Statement, calls []timedBoundary) []runner.Boundary {
	if len(calls) == 0 {
		return stmts
	}
	started := map[int]time.Time{}
	for _, st := range trace {
		started[st.Index] = st.Started()
	}
	var out []runner.Boundary
	for _, b := range stmts {
		for len(calls) > 0 && calls[0].at.Before(started[b.Index]) {
			out = append(out, calls[0].b)
			calls = calls[1:]
		}
		out = append(out, b)
	}
	for _, c := range calls {
		out = append(out, c.b)
	}
	return out
}

// callCrash makes a delivery killed at an external call, as the
// schedule's boundary says: the trial of crash: statements at a call.
func (sys *system) callCrash(ctx context.Context, c runner.Call, ev Event, key string, tolerate bool, h *runner.Boundary) (Answer, error) {
	method, path, _ := strings.Cut(h.Call, " ")
	crash := &scenario.Crash{Kind: scenario.CrashExternal, Method: method, Path: path, AfterStatement: h.After}
	a, err := sys.once(ctx, c, ev, key, true, func() (Answer, error) {
		a, _, reached, err := sys.sess.crashAtCall(ctx, ev, crash)
		if err == nil && !reached {
			c.Rec.Fail(runner.Miss{Kind: runner.MissCallNotReached, What: "crash: statements, " + h.Name + ",", Calls: sys.sess.callsSaid(ev.ID), Said: a.Short()})
		}
		return a, err
	})
	if err != nil || a.Kind != Unacked {
		return a, err
	}
	// No ack arrived: the broker redelivers.
	return sys.plain(ctx, c, ev, key, tolerate)
}

// callsRecorded is the recording run of crash: statements where no
// statement is seen (no effects proxy): a plain delivery, whose external
// calls are the boundaries.
func (sys *system) callsRecorded(ctx context.Context, c runner.Call, ev Event, key string, tolerate bool) (Answer, error) {
	before := sys.sess.callCount()
	a, err := sys.plain(ctx, c, ev, key, tolerate)
	if err != nil {
		return a, err
	}
	var out []runner.Boundary
	for _, cb := range sys.sess.callBoundaries(ev.ID, before) {
		out = append(out, cb.b)
	}
	if len(out) == 0 {
		c.Rec.Fail(runner.Miss{Kind: runner.MissCallNotReached, What: "crash: statements", Calls: sys.sess.callsSaid(ev.ID), Said: a.Short()})
		return a, nil
	}
	c.Rec.Boundaries(out)
	return a, nil
}

// raceBoundaries are the boundaries of each worker's statements in a
// recorded race, worker by worker, each a hold while the others go on.
func raceBoundaries(trace []sqlproxy.Statement, marked bool) []runner.Boundary {
	lanes := 0
	for _, st := range trace {
		lanes = max(lanes, st.Lane)
	}
	var out []runner.Boundary
	for lane := 1; lane <= lanes; lane++ {
		for _, st := range trace {
			if st.Lane != lane || st.AfterAnswer {
				// After every answer the race is over: a statement
				// then is followed, not held.
				continue
			}
			text := shortStatement(st.Text)
			for _, after := range []bool{false, true} {
				if !st.Holdable(after) {
					continue
				}
				where := "before"
				if after {
					where = "after"
				}
				out = append(out, runner.Boundary{Lane: lane, Index: st.LaneIndex, After: after, Marked: marked,
					Name: fmt.Sprintf("worker %d held %s its statement %d (%s) while the others ran", lane, where, st.LaneIndex, text)})
			}
		}
	}
	return out
}

// shortStatement is a statement on one line, cut to a length a report
// line carries.
func shortStatement(text string) string {
	s := strings.Join(strings.Fields(text), " ")
	if r := []rune(s); len(r) > 60 {
		s = string(r[:59]) + "…"
	}
	return s
}

// statementsOf is a trace in the vocabulary the reports read, the held
// statement marked.
func statementsOf(trace []sqlproxy.Statement, hit *sqlproxy.Boundary) []consumer.Statement {
	out := make([]consumer.Statement, len(trace))
	held := -1
	if hit != nil {
		for i, st := range trace {
			if hit.Names(st) {
				held = i
				break
			}
		}
	}
	for i, st := range trace {
		out[i] = consumer.Statement{Worker: st.Lane, Text: st.Text, Answer: st.Answer, Extended: st.Extended && !st.Binary, Binary: st.Binary, Implicit: st.Implicit, Name: st.Name, Sync: st.Sync, Instance: st.Owner, Params: paramsOf(st.Params)}
		if i == held {
			out[i].Held, out[i].Before = true, !hit.After
			if !hit.After {
				out[i].Answer = ""
			}
		}
	}
	return out
}

// paramsOf are bound values in the reports' vocabulary.
func paramsOf(ps []sqlproxy.Param) []consumer.Param {
	if ps == nil {
		return nil
	}
	out := make([]consumer.Param, len(ps))
	for i, p := range ps {
		out[i] = consumer.Param{Text: p.Text, Null: p.Null, Undecoded: p.Undecoded}
	}
	return out
}

// statementCrash makes a delivery that crashes at a statement boundary:
// the one the file names, or, under crash: statements, the boundary of
// this trial (c.Hold.Kill; 0 records the delivery's boundaries instead).
func (sys *system) statementCrash(ctx context.Context, c runner.Call, ev Event, key string, tolerate bool) (Answer, error) {
	if h := c.Hold.Statement; h != nil && h.Call != "" {
		return sys.callCrash(ctx, c, ev, key, tolerate, h)
	}
	if sys.sess.proxy == nil {
		// No statement is seen: the boundaries are the external calls'.
		return sys.callsRecorded(ctx, c, ev, key, tolerate)
	}
	at := boundary(c.St.Crash, c.Hold.Statement)
	calledBefore := sys.sess.callCount()
	var wd watch
	// An exec consumer may create the effect table on its first
	// delivery: none yet is no row yet.
	before, _ := sys.sess.db.Rows(ctx, &key)
	a, err := sys.once(ctx, c, ev, key, true, func() (Answer, error) {
		var err error
		wd, err = sys.sess.watchedMarked(ctx, ev, at, recordedOf(c.Hold.Statement))
		c.Rec.Counters().Apart += sys.sess.apart
		return wd.a, err
	})
	if err != nil {
		return a, err
	}
	trace := wd.trace
	if len(trace) == 0 {
		// No statement of the delivery came through the proxy: no
		// statement fault could land, whatever the file asked.
		return a, sys.bypassed(ctx, c, ev, key, before)
	}
	traced := func(hit *sqlproxy.Boundary) []consumer.Statement {
		stmts := statementsOf(trace, hit)
		markAnswer(stmts, trace, wd)
		return sys.sess.withCalls(stmts, trace, ev.ID, calledBefore, wd.answered, wd.said)
	}
	switch {
	case at == nil:
		if past, err := sys.wrotePast(ctx, c, ev, key, before, trace); past || err != nil {
			c.Rec.Trace(traced(nil))
			return a, err
		}
		c.Rec.Boundaries(inOrder(killBoundaries(trace, wd.marked, wd.finished), trace, sys.sess.callBoundaries(ev.ID, calledBefore)))
		// The unforced run: its statements are shown too, under -v for a
		// check that passed, with the failure of one that did not.
		c.Rec.Trace(traced(nil))
		return a, nil
	case !wd.reached:
		c.Rec.Trace(traced(nil))
		c.Rec.Fail(runner.Miss{Kind: runner.MissNotReached, What: crashWords(c), Lines: traceLines(trace), Said: a.Short()})
		return a, nil
	}
	killed := traced(at)
	c.Rec.Trace(killed)
	if a.Kind != Unacked {
		return a, nil
	}
	// No ack arrived: the broker redelivers.
	return sys.redeliveredAfterKill(ctx, c, ev, key, tolerate, killed)
}

// redeliveredAfterKill makes the redelivery of a delivery killed at a
// statement (killed: its trace) and returns its answer. The redelivery
// is followed past its answer too, so that what it commits after
// answering is judged, not what it had committed when its answer came;
// its statements follow the killed attempt's in the trace, for what the
// redelivery did (found the marker, or wrote the effect again) is the
// other half of a duplicate's evidence.
func (sys *system) redeliveredAfterKill(ctx context.Context, c runner.Call, ev Event, key string, tolerate bool, killed []consumer.Statement) (Answer, error) {
	calledAgain := sys.sess.callCount()
	var again watch
	a, err := sys.once(ctx, c, ev, key, tolerate, func() (Answer, error) {
		var err error
		again, err = sys.sess.watchedMarked(ctx, ev, nil, nil)
		return again.a, err
	})
	if len(again.trace) > 0 {
		stmts := sys.sess.withCalls(statementsOf(again.trace, nil), again.trace, ev.ID, calledAgain, time.Time{}, "")
		c.Rec.Trace(withRedelivery(killed, stmts))
	}
	return a, err
}

// crashWords names the crash a step asked for as a miss says it: its
// crash:, or the statement boundary of crash: statements the schedule
// held.
func crashWords(c runner.Call) string {
	what := "crash: " + c.St.Crash.String()
	if c.Hold.Statement != nil {
		what = "crash: statements, " + c.Hold.Statement.Name + ","
	}
	return what
}

// withRedelivery is a killed attempt's statements followed by those of
// the redelivery after the kill, marked as the redelivery's. Its answer
// is not marked: a trace marks one, the killed attempt's.
func withRedelivery(killed, again []consumer.Statement) []consumer.Statement {
	if len(again) == 0 {
		return killed
	}
	for i := range again {
		again[i].Redelivery = true
	}
	return append(killed, again...)
}

// stallLimit bounds how long a race holds a worker when the others
// neither finish nor show as waiting for a lock; holdLimit brings it
// under the target's timeout.
const stallLimit = 10 * time.Second

// holdLimit is how long after its deliveries were sent a race holds a
// worker at most: stallLimit, or half the target's timeout when that is
// shorter, so that the held delivery, let go, still answers in time — a
// consumer whose deliveries share one connection has others that wait
// for it without the database seeing them wait.
func holdLimit(timeout time.Duration) time.Duration {
	if timeout > 0 && timeout/2 < stallLimit {
		return timeout / 2
	}
	return stallLimit
}

// raced makes a concurrent step's deliveries at once while the proxy
// follows their statements and the stand-ins record their calls. Held at
// the schedule's boundary — a statement, or the nth of the workers'
// calls to an HTTP stand-in — the worker that reaches it waits there
// until every other delivery has answered, or one of them waits for a
// lock (the held worker's, as the database says), and is then let go.
// Without a boundary the run records the workers' boundaries for the
// schedules to come. spans get each delivery's times, and the held one's
// hold.
func (sys *system) raced(ctx context.Context, c runner.Call, ev Event, spans []invariant.Span) ([]Answer, error) {
	if sys.sess.t.Broker != nil {
		return sys.brokerRaced(ctx, c, ev, spans)
	}
	r := &race{n: c.St.Concurrent, h: c.Hold.Statement, spans: spans}
	if h := r.h; h != nil && h.Call != "" {
		method, path, _ := strings.Cut(h.Call, " ")
		r.ch = sys.sess.holdCall(method, path, h.Lane, h.After)
		defer r.ch.stop()
	} else {
		r.at = boundary(nil, h)
	}
	before, _ := sys.sess.db.Rows(ctx, &ev.Key)
	calledBefore := sys.sess.callCount()
	sys.sess.settleBefore(ctx)
	if sys.sess.proxy != nil {
		var err error
		if r.w, err = sys.sess.proxy.Watch(r.at, ev.ID, ev.Key); err != nil {
			return nil, err
		}
	}
	r.answers = make([]Answer, r.n)
	r.done = make(chan int, r.n)
	r.finished = make([]bool, r.n)
	gate := make(chan struct{})
	for i := range r.answers {
		go func() {
			<-gate
			spans[i].Sent = time.Now()
			r.answers[i] = sys.sess.deliver(ctx, ev, nil)
			spans[i].Answered = time.Now()
			r.done <- i
		}()
	}
	r.sent = time.Now()
	close(gate)
	r.holdAndLetGo(ctx, sys)
	if r.w != nil && sys.sess.t.Exec == nil && ownAnswers(r.answers) {
		sys.sess.followPastAnswers(ctx, r.w)
	}
	var trace []sqlproxy.Statement
	if r.w != nil {
		trace = r.w.Stop()
		c.Rec.Counters().Apart += len(r.w.Others())
	}
	if err := sys.recordRace(ctx, c, ev, r, trace, before, calledBefore); err != nil {
		return nil, err
	}
	return r.answers, nil
}

// race is one delivery made by n workers at once, while the proxy
// follows their statements (w, nil without one) and the schedule holds
// one of them at a statement boundary (at) or an external call (ch).
type race struct {
	n        int
	h        *runner.Boundary
	at       *sqlproxy.Boundary
	ch       *callHold
	w        *sqlproxy.Watch
	answers  []Answer
	spans    []invariant.Span
	done     chan int // a worker's index once it has its answer
	finished []bool
	answered int
	// sent is when the deliveries went; a hold ends within holdLimit of
	// it.
	sent time.Time
	// reached: a worker was held; heldLane is which (1-based), sure
	// whether that is known; heldCall the call held, if one was.
	reached  bool
	heldLane int
	sure     bool
	heldCall *standin.Hold
}

func (r *race) got(i int) { r.finished[i] = true; r.answered++ }

// holdAndLetGo waits for every worker's answer; when one is held, it
// lets the others run (letOthersRun), lets it go, and draws the hold on
// the worker still waiting.
func (r *race) holdAndLetGo(ctx context.Context, sys *system) {
	var held <-chan struct{}
	if r.w != nil {
		held = r.w.Held()
	}
	var calls <-chan *standin.Hold
	if r.ch != nil {
		calls = r.ch.held
	}
	for r.answered < r.n {
		select {
		case i := <-r.done:
			r.got(i)
			continue
		case <-held:
		case r.heldCall = <-calls:
		}
		held, calls, r.reached = nil, nil, true
		heldAt := time.Now()
		sys.letOthersRun(ctx, r.w, r.sent, &r.answered, r.n, r.done, r.got)
		releasedAt := time.Now()
		if r.heldCall != nil {
			r.heldCall.Stop()
		} else {
			r.w.Release()
		}
		// A connection is not a request, nor is a call: the held worker
		// is the one whose delivery is still waiting once the others
		// answered. When several still wait (one of them for the held
		// one's lock), which is not known, and the hold is drawn on the
		// first of them.
		waiting := 0
		for i := range r.spans {
			if r.finished[i] {
				continue
			}
			if waiting == 0 {
				r.heldLane = i + 1
				r.spans[i].Held, r.spans[i].Released = heldAt, releasedAt
				switch {
				case r.heldCall != nil:
					r.spans[i].HeldAt = consumer.FaultPoint(callHeldWords(*r.h))
				case r.at != nil:
					r.spans[i].HeldAt = consumer.FaultPoint(heldWords(*r.at))
				}
			}
			waiting++
		}
		r.sure = waiting == 1
	}
}

// recordRace records what a race left for the check: a delivery past the
// proxy, the boundaries a recording race found, a schedule that held no
// worker, or the trace of the one that did.
func (sys *system) recordRace(ctx context.Context, c runner.Call, ev Event, r *race, trace []sqlproxy.Statement, before []effects.Row, calledBefore []int) error {
	switch {
	case r.w != nil && len(trace) == 0:
		return sys.bypassed(ctx, c, ev, ev.Key, before)
	case r.h == nil:
		var bs []runner.Boundary
		if r.w != nil {
			if past, err := sys.wrotePast(ctx, c, ev, ev.Key, before, trace); past || err != nil {
				c.Rec.Trace(statementsOf(trace, nil))
				return err
			}
			bs = raceBoundaries(trace, r.w.Marked())
		}
		c.Rec.Boundaries(append(bs, sys.sess.raceCallBoundaries(ev.ID, calledBefore)...))
		if r.w != nil {
			c.Rec.Trace(sys.sess.raceTrace(statementsOf(trace, nil), trace, ev.ID, calledBefore, nil, false, 0))
		}
	case !r.reached:
		// The workers took another path this time (one found the
		// other's marker): the run was unforced, and says so.
		c.Rec.Unreached()
	default:
		stmts := statementsReleased(trace, r.at)
		lane := 0
		if r.sure {
			matchLanes(stmts, r.heldLane, r.n)
			lane = r.heldLane
		}
		c.Rec.Trace(sys.sess.raceTrace(stmts, trace, ev.ID, calledBefore, r.heldCall, r.h != nil && r.h.After, lane))
	}
	return nil
}

// statementsReleased is the trace of a race whose worker was held at at
// and then let go, in the reports' vocabulary.
func statementsReleased(trace []sqlproxy.Statement, at *sqlproxy.Boundary) []consumer.Statement {
	stmts := statementsOf(trace, at)
	for i := range stmts {
		if stmts[i].Held {
			// Let go, it ran: its answer stands.
			stmts[i].Released, stmts[i].Answer = true, trace[i].Answer
		}
	}
	return stmts
}

// raceTrace is a race's statements with the workers' calls among them,
// in the order they came. A call is drawn on no connection (worker 0)
// when the statements came on several: which worker made it is not known.
// held, when set, is the call the schedule held (after: once performed),
// marked as held and let go, on lane (0: not known).
func (s *Session) raceTrace(stmts []consumer.Statement, trace []sqlproxy.Statement, id string, before []int, held *standin.Hold, after bool, lane int) []consumer.Statement {
	conns := map[int]bool{}
	for _, st := range stmts {
		conns[st.Worker] = true
	}
	var hc standin.Call
	if held != nil {
		hc = held.Call()
	}
	return s.withCallsMarked(stmts, trace, id, before, time.Time{}, "", func(c standin.Call, st *consumer.Statement) {
		if len(conns) > 1 {
			st.Worker = 0
		}
		if held != nil && c.External == hc.External && c.Seq == hc.Seq {
			st.Held, st.Before, st.Released, st.Lane = true, !after, true, lane
		}
	})
}

// callHeldWords names a race's hold at a call for the held worker's bar:
// "before the second POST /v1/charges".
func callHeldWords(b runner.Boundary) string {
	where := "before"
	if b.After {
		where = "after"
	}
	return fmt.Sprintf("%s the %s %s", where, ordinal(b.Lane), b.Call)
}

// ordinal is n in words as a position: "first", "second", "third", "4th".
func ordinal(n int) string {
	if n >= 1 && n <= 3 {
		return [...]string{"first", "second", "third"}[n-1]
	}
	suffix := "th"
	switch {
	case n%100 >= 11 && n%100 <= 13:
	case n%10 == 1:
		suffix = "st"
	case n%10 == 2:
		suffix = "nd"
	case n%10 == 3:
		suffix = "rd"
	}
	return strconv.Itoa(n) + suffix
}

// heldWords names a race's boundary for the hold on a worker's bar: a
// lane of the proxy is a connection, not a worker of the step.
func heldWords(b sqlproxy.Boundary) string {
	if b.Lane > 0 {
		where := "before"
		if b.After {
			where = "after"
		}
		return fmt.Sprintf("%s connection %d's statement %d", where, b.Lane, b.Index)
	}
	return b.String()
}

// matchLanes marks each statement with the worker whose delivery used its
// connection, where that is known: the held connection's is the held
// worker's, and with two workers on two connections, the other one's is
// the other's.
func matchLanes(stmts []consumer.Statement, heldLane, workers int) {
	held := 0
	var conns []int
	for _, st := range stmts {
		if st.Held {
			held = st.Worker
		}
		if !slices.Contains(conns, st.Worker) {
			conns = append(conns, st.Worker)
		}
	}
	if held == 0 {
		return
	}
	for i := range stmts {
		switch {
		case stmts[i].Worker == held:
			stmts[i].Lane = heldLane
		case workers == 2 && len(conns) == 2:
			stmts[i].Lane = 3 - heldLane
		}
	}
}

// letOthersRun waits, while a worker is held, until all the other
// deliveries have answered (counting them in answered), or one of the
// others waits for a lock (as w sees them; nil: not seen), or the hold
// limit passed since the deliveries were sent: a worker held late in its
// delivery is held for less, so that it too still answers in time.
func (sys *system) letOthersRun(ctx context.Context, w *sqlproxy.Watch, sent time.Time, answered *int, n int, done <-chan int, got func(int)) {
	tick := time.NewTicker(2 * time.Millisecond)
	defer tick.Stop()
	deadline := sent.Add(holdLimit(sys.sess.t.Timeout()))
	for *answered < n-1 {
		select {
		case i := <-done:
			got(i)
			continue
		case <-tick.C:
		case <-ctx.Done():
			return
		}
		if w == nil {
			// No statement is seen: a wait for a lock is not either.
		} else if pids := w.Waiting(); len(pids) > 0 {
			if blocked, err := sys.sess.db.Blocked(ctx, pids); err == nil && blocked {
				return
			}
		}
		if time.Now().After(deadline) {
			return
		}
	}
}

// bypassed fails a check whose delivery ran no statement through the
// proxy: with its effect rows changed, the consumer wrote to the database
// past it; without, it had no statement to fault. Either way no kill or
// hold landed, and a pass would claim one.
func (sys *system) bypassed(ctx context.Context, c runner.Call, ev Event, key string, before []effects.Row) error {
	wrote, err := sys.wrote(ctx, key, before)
	if err != nil {
		return err
	}
	c.Rec.Fail(runner.Miss{Kind: runner.MissBypassed, Event: ev.ID, URL: "${" + sys.sess.dbVar + "}", Flag: wrote})
	return nil
}

// wrote reports whether the key's rows, once the consumer's connections
// are idle, differ from before: a row changed, added or removed.
func (sys *system) wrote(ctx context.Context, key string, before []effects.Row) (bool, error) {
	if err := sys.sess.quiet(ctx); err != nil {
		return false, err
	}
	after, err := sys.sess.db.Rows(ctx, &key)
	if err != nil {
		return false, err
	}
	return changed(before, after) != "" || len(before) != len(after), nil
}

// wrotePast fails the recording trial of a delivery whose statements
// through the proxy all surely only read (sqlproxy.ReadOnly) while its
// effect rows changed: the consumer wrote past the proxy, on a connection
// of its own, and none of its writes had a boundary to be tried at. A
// statement that may have written (a function call in a SELECT counts)
// is taken to have, so this never fails a consumer that writes through
// the proxy.
func (sys *system) wrotePast(ctx context.Context, c runner.Call, ev Event, key string, before []effects.Row, trace []sqlproxy.Statement) (bool, error) {
	for _, st := range trace {
		if !sqlproxy.ReadOnly(st.Text) {
			return false, nil
		}
	}
	if wrote, err := sys.wrote(ctx, key, before); !wrote || err != nil {
		return false, err
	}
	c.Rec.Fail(runner.Miss{Kind: runner.MissWrotePast, Event: ev.ID, URL: "${" + sys.sess.dbVar + "}", Lines: traceLines(trace)})
	return true, nil
}

// traceLines are a trace's statements with their answers, one a line.
func traceLines(trace []sqlproxy.Statement) []string {
	lines := make([]string, len(trace))
	for i, t := range trace {
		lines[i] = shortStatement(t.Text) + " → " + t.Answer
		if t.Parts > 0 {
			lines[i] += fmt.Sprintf(" (statement %d of %d of one query: only before its first and after its last can a boundary be held)", t.Part, t.Parts)
		}
	}
	return lines
}

// replayBoundaries is how many statement boundaries a replay's crash is
// drawn from: before and after each of a delivery's first 8 statements.
const replayBoundaries = 16

// statementBoundary is the boundary a replay's crash at capture position
// pos lands at: boundary k of 1…replayBoundaries, drawn from --seed and
// the position (k odd: before statement (k+1)/2; even: after k/2).
func statementBoundary(seed, pos int64) *sqlproxy.Boundary {
	k := int(inject.Draw(seed, pos, inject.SlotPoint)%replayBoundaries) + 1
	return &sqlproxy.Boundary{Index: (k + 1) / 2, After: k%2 == 0, Marked: true}
}

// crashAtStatement makes a delivery killed at a statement boundary. One
// that ends before reaching it (fewer statements) is killed after its
// answer, and says so: the kill interrupted nothing. It returns the
// delivery's statements, the kill marked, for the diagnosis of a breach.
func (s *Session) crashAtStatement(ctx context.Context, ev Event, at *sqlproxy.Boundary) (Answer, []consumer.Statement, error) {
	w, err := s.watchedMarked(ctx, ev, at, nil)
	a, stmts := w.a, crashTrace(w, at)
	if err != nil || w.reached {
		return a, stmts, err
	}
	a.CrashCame = AfterAnswer
	if s.proc != nil {
		s.proc.Kill()
		killed := time.Now()
		if err := s.proc.Restart(ctx); err != nil {
			return a, stmts, err
		}
		a.KilledAt, a.Restarted = killed, time.Now()
		s.dl.Forget()
	}
	return a, stmts, nil
}

// ownAnswers reports whether every delivery got the consumer's own
// answer (not a timeout or a reset).
func ownAnswers(answers []Answer) bool {
	for _, a := range answers {
		if !ownAnswer(a) {
			return false
		}
	}
	return true
}

// followPastAnswers waits, once every worker of a race has its answer,
// until the delivery's connections are idle outside a transaction and
// quiet (answerQuiet), or idleLimit passed: a consumer that answers first
// and works after is still writing, and the check must judge what it
// did, not what it had yet to do (it read the effects before its commit,
// and called the effect lost).
func (s *Session) followPastAnswers(ctx context.Context, w *sqlproxy.Watch) {
	w.Answered()
	limit := time.After(idleLimit)
	ticker := time.NewTicker(5 * time.Millisecond)
	defer ticker.Stop()
	for !w.Finished(answerQuiet) {
		select {
		case <-ctx.Done():
			return
		case <-limit:
			return
		case <-ticker.C:
		}
	}
}
