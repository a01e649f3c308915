package external

import (
	"context"
	"errors"
	"time"

	"github.com/redeliver/redeliver/pkg/broker"
	"github.com/redeliver/redeliver/pkg/consumer"
	"github.com/redeliver/redeliver/pkg/proc"
	"github.com/redeliver/redeliver/pkg/runner"
	"github.com/redeliver/redeliver/pkg/scenario"
	"github.com/redeliver/redeliver/pkg/sqlproxy"
	"github.com/redeliver/redeliver/pkg/standin"
)

// brokerStatementCrash is statementCrash behind a broker, with one
// started instance: the delivery is published while the proxy follows
// the statements tied to it (by its event id or key, and then by the
// transaction that carries one), and at the boundary the file names, or
// this trial's under crash: statements (none: the run records the
// boundaries), the instance is killed, its held connection cut, and the
// instance restarted. The broker redelivers as after a real crash, and
// the check's drain waits for that redelivery.
func (sys *system) brokerStatementCrash(ctx context.Context, c runner.Call, ev Event, key string, tolerate bool) (Answer, error) {
	st := c.St
	at := boundary(st.Crash, c.Hold.Statement)
	var bw brokerWatch
	before, _ := sys.sess.db.Rows(ctx, &key)
	a, err := sys.once(ctx, c, ev, key, true, func() (Answer, error) {
		var err error
		bw, err = sys.sess.brokerWatched(ctx, ev, at, true)
		c.Rec.Counters().Apart += len(bw.others)
		return bw.a, err
	})
	trace, others, marked, reached := bw.trace, bw.others, bw.marked, bw.reached
	if err != nil || a.Err != nil {
		return a, err
	}
	what := crashWords(c)
	switch {
	case len(trace) == 0 && len(others) == 0:
		// No statement came through the proxy while the delivery was
		// in flight: no statement fault could land.
		return a, sys.bypassed(ctx, c, ev, key, before)
	case len(trace) == 0 || !marked:
		// Statements came, and none could be tied to the delivery: a
		// boundary among them would be a guess, and a pass would claim
		// kills at the delivery's own statements.
		shown := others
		if len(shown) == 0 {
			shown = trace
		}
		c.Rec.Trace(statementsOf(shown, nil))
		c.Rec.Fail(runner.Miss{Kind: runner.MissUntied, What: what, Event: ev.ID, Key: key, URL: "${" + sys.sess.dbVar + "}", Lines: traceLines(shown)})
		return a, nil
	case at == nil:
		if past, err := sys.wrotePast(ctx, c, ev, key, before, trace); past || err != nil {
			c.Rec.Trace(bw.traced(sys.sess, nil))
			return a, err
		}
		c.Rec.Boundaries(killBoundaries(trace, true, false))
		c.Rec.Trace(bw.traced(sys.sess, nil))
		return a, nil
	case !reached:
		c.Rec.Trace(bw.traced(sys.sess, nil))
		c.Rec.Fail(runner.Miss{Kind: runner.MissNotReached, What: what, Lines: traceLines(trace), Said: "its broker (it took the message)"})
		return a, nil
	}
	// The redelivery the broker made on its own after the kill follows
	// the killed attempt's statements, as over HTTP.
	c.Rec.Trace(withRedelivery(bw.traced(sys.sess, at), statementsOf(bw.again, nil)))
	return a, nil
}

// brokerWatch is one delivery watched behind a broker.
type brokerWatch struct {
	a             Answer
	trace, others []sqlproxy.Statement
	marked        bool
	reached       bool
	// said is the ack as the trace's marker says it ("acked", "offset
	// committed"), when the broker showed it while the watch was on;
	// empty where the broker cannot show it (RabbitMQ) or it came after.
	said string
	// ackAtKill: the ack was seen only once the killed instance was gone
	// (RabbitMQ), so it came before the kill and nothing says how long.
	ackAtKill bool
	// inWork: the kill came before the delivery's transaction ended —
	// the statement held never ran, a transaction of it was open, or no
	// transaction of it had committed yet (see txEnded).
	inWork bool
	// again are the statements the restarted instance ran for the
	// message the broker handed out again after the kill, when the
	// broker showed no ack before it and a statement of them carried the
	// delivery's mark.
	again []sqlproxy.Statement
}

// traced is the delivery's trace, the ack marked where the broker
// showed it (s's ackUnseen where it cannot show it).
func (bw *brokerWatch) traced(s *Session, hit *sqlproxy.Boundary) []consumer.Statement {
	stmts := statementsOf(bw.trace, hit)
	if bw.ackAtKill {
		// Seen only once the instance was gone: before the kill,
		// which came at the held statement.
		for i := range stmts {
			if stmts[i].Held {
				stmts[i].AnsweredBefore = bw.said
				break
			}
		}
		return stmts
	}
	markAnswer(stmts, bw.trace, watch{a: bw.a, said: bw.said, reached: bw.reached})
	if unseen := s.ackUnseen(); unseen != "" && len(stmts) > 0 {
		stmts[0].AckUnseen = unseen
	}
	return stmts
}

// ackPoll is how often the broker is asked whether the delivery was
// acked, while its statements are followed: the trace's ack marker is
// late by up to this (and a round trip).
const ackPoll = 10 * time.Millisecond

// brokerWatched publishes one delivery while the proxy follows its
// statements, those tied to it by its marks (trace) and the others let
// through meanwhile (others), past the ack, until the delivery's
// connections are idle outside a transaction and quiet (answerQuiet): a
// consumer that acks first and commits after goes on working on it.
// Held at at, the started instance — the one there is, which owns every
// connection — is killed (SIGKILL to its process group), the held
// connection cut (the database rolls back what it had not committed) and
// the instance restarted: the broker hands the message out again as
// after any crash (JetStream once its AckWait passes, RabbitMQ as soon as
// the channel closes, Kafka to the member that reads the partition from
// its last committed offset) — unless it was acked already. With again,
// the statements the restarted instance runs for that redelivery are
// followed too (redelivered), until the broker says the message was
// taken and the delivery's connections are idle.
//
// The ack is seen where the broker shows it to another client: JetStream
// in the durable's info (nothing pending, nothing awaiting an ack), Kafka
// in the group's committed offsets; each is asked every ackPoll, so the
// trace's marker may come a look late, a statement or more. RabbitMQ shows a
// client only the queue's ready messages: a message taken and acked looks
// like one taken and held, and the watch, which follows on all the same,
// marks no ack while the instance lives. Once it is killed, a queue with
// no consumer and nothing ready shows the message was acked before the
// kill (amqp.Publisher.ReadyOnceGone), and the held statement is marked.
func (s *Session) brokerWatched(ctx context.Context, ev Event, at *sqlproxy.Boundary, again bool) (brokerWatch, error) {
	s.settleBefore(ctx)
	w, err := s.proxy.Watch(at, ev.ID, ev.Key)
	if err != nil {
		return brokerWatch{}, err
	}
	f := &brokerFollowing{s: s, w: w, ackWord: s.ackWord()}
	f.out.a = s.dl.Deliver(ctx, ev, nil)
	if f.out.a.Err != nil {
		w.Stop()
		return f.out, nil
	}
	dctx, cancel := context.WithCancel(ctx)
	defer cancel()
	f.watchAck(dctx)
	err = f.follow(ctx)
	if err != nil {
		w.Cut()
		w.Stop()
		return f.out, err
	}
	if f.out.reached {
		cancel()
		if err := f.killHeld(ctx); err != nil {
			return f.out, err
		}
	}
	out := f.out
	out.trace = w.Stop()
	out.others, out.marked = w.Others(), w.Marked()
	if !out.reached {
		return out, nil
	}
	out.inWork = !at.After || f.open || !txEnded(out.trace, at)
	out.a.Crashed, out.a.CrashCame = true, Unknown
	if f.acked {
		// The broker showed the ack before the hold: the kill came
		// after it.
		out.a.CrashCame, out.a.InWork = AfterAnswer, out.inWork
	}
	return f.restart(ctx, ev, again, out)
}

// brokerFollowing is one delivery of brokerWatched while the proxy
// follows it: the drain of the broker's queue (drained, nil once it
// answered), the first look that shows the ack (seen), and what it saw.
type brokerFollowing struct {
	s       *Session
	w       *sqlproxy.Watch
	ackWord string // the broker's word for an ack; "": it shows none
	acked   bool
	drained chan error
	seen    chan struct{}
	// tick and limit run once the consumer took the message.
	ticker      *time.Ticker
	tick, limit <-chan time.Time
	// owner is the instance that held the connection, killed at killed;
	// open: a transaction was open on that connection then.
	owner  *proc.Process
	killed time.Time
	open   bool
	out    brokerWatch
}

func (f *brokerFollowing) ack(said string) { f.acked, f.out.said = true, said }

// killHeld, once the delivery is held, waits for the drain to end, takes
// an ack the broker shows now for one that came before the hold, kills
// the instance that holds the held connection (owner) and cuts that
// connection. Where the broker shows no ack, a queue found empty once
// the instance is gone says it acked before the kill. No instance found
// holding the connection stops the watch, and is the error.
func (f *brokerFollowing) killHeld(ctx context.Context) error {
	s, w := f.s, f.w
	if f.drained != nil {
		<-f.drained
	}
	if !f.acked && f.ackWord != "" && s.ackedNow(ctx) {
		// The held instance can ack nothing more: an ack the
		// broker shows now came before the held statement.
		f.ack(f.ackWord)
	}
	f.open = w.InTransaction()
	if f.owner = s.holder(w); f.owner == nil {
		w.Cut()
		w.Stop()
		return s.unowned()
	}
	f.owner.Kill()
	f.killed = time.Now()
	w.Cut()
	if !f.acked && s.ackUnseen() != "" {
		if ready, known := s.readyOnceGone(ctx); known && ready == 0 {
			f.ack("acked at the latest")
			f.out.ackAtKill = true
		}
	}
	return nil
}

// restart restarts the killed instance and returns out with the kill's
// and the restart's times; with again, and no ack shown before the
// kill, it returns the statements of the broker's redelivery too
// (redelivered).
func (f *brokerFollowing) restart(ctx context.Context, ev Event, again bool, out brokerWatch) (brokerWatch, error) {
	// The watch of the redelivery is on before the restart: a broker
	// hands the message to the restarted instance as soon as it
	// consumes.
	var next *sqlproxy.Watch
	var err error
	if again && !f.acked {
		if next, err = f.s.proxy.Watch(nil, ev.ID, ev.Key); err != nil {
			return out, err
		}
	}
	if err := f.owner.Restart(ctx); err != nil {
		if next != nil {
			next.Stop()
		}
		return out, err
	}
	out.a.KilledAt, out.a.Restarted = f.killed, time.Now()
	if next != nil {
		if out.again, err = f.s.redelivered(ctx, next); err != nil {
			return out, err
		}
	}
	return out, nil
}

// watchAck starts the drain, and, where the broker shows acks, the looks
// for the ack: seen is closed on the first that shows it, and the drain
// waits for a second one.
func (f *brokerFollowing) watchAck(ctx context.Context) {
	f.drained = make(chan error, 1)
	go func() { f.drained <- f.s.takenAs(ctx, broker.DrainOptions{Poll: ackPoll}) }()
	if f.ackWord == "" {
		return
	}
	f.seen = make(chan struct{})
	go func() {
		for !f.s.ackedNow(ctx) {
			select {
			case <-ctx.Done():
				return
			case <-time.After(ackPoll):
			}
		}
		close(f.seen)
	}()
}

// took: the broker says the consumer took the message; its statements
// are followed from now on until its work is over.
func (f *brokerFollowing) took() {
	f.w.Answered()
	if f.tick == nil {
		f.tick, f.limit = f.ticker.C, time.After(idleLimit)
	}
}

// follow waits until the delivery is held at the watched boundary or,
// once the consumer took the message, its statements are over
// (answerQuiet) or idleLimit passed; not held, it waits for the drain's
// second look and for what the consumer still runs.
func (f *brokerFollowing) follow(ctx context.Context) error {
	f.ticker = time.NewTicker(5 * time.Millisecond)
	defer f.ticker.Stop()
	var err error
follow:
	for {
		select {
		case <-f.w.Held():
			f.out.reached = true
			break follow
		case <-f.seen:
			f.seen = nil
			f.ack(f.ackWord)
			f.took()
		case err = <-f.drained:
			if err != nil {
				break follow
			}
			f.drained = nil
			if f.ackWord != "" && !f.acked {
				f.ack(f.ackWord)
			}
			f.took()
		case <-f.tick:
			if f.s.begun(f.w) && f.w.Finished(answerQuiet) {
				break follow
			}
		case <-f.limit:
			break follow
		case <-ctx.Done():
			err = ctx.Err()
			break follow
		}
	}
	if err == nil && !f.out.reached && f.drained != nil {
		// Followed to its end from the first look that showed the ack:
		// the drain has its second look to make.
		err = <-f.drained
	}
	if err == nil && !f.out.reached {
		// What the consumer still runs (given up following, or not the
		// delivery's) is waited out before the effects are read.
		err = f.s.quiet(ctx)
	}
	return err
}

// redelivered follows on w the statements the restarted instance runs
// for the message the broker hands out again, until the broker says the
// consumer took everything published (as the check's drain does) and
// the delivery's connections are idle outside a transaction and quiet
// (answerQuiet), or idleLimit passed. It returns them only where one
// carried the delivery's mark: unmarked, they cannot be told from
// another's. A drain that fails is the check's to say, when it drains.
func (s *Session) redelivered(ctx context.Context, w *sqlproxy.Watch) ([]sqlproxy.Statement, error) {
	err := s.taken(ctx)
	if err == nil {
		w.Answered()
		tick := time.NewTicker(5 * time.Millisecond)
		defer tick.Stop()
		limit := time.After(idleLimit)
	follow:
		for !s.begun(w) || !w.Finished(answerQuiet) {
			select {
			case <-tick.C:
			case <-limit:
				break follow
			case <-ctx.Done():
				break follow
			}
		}
	}
	stmts := w.Stop()
	if ctx.Err() != nil {
		return nil, ctx.Err()
	}
	if err != nil || !w.Marked() {
		return nil, nil
	}
	return stmts, nil
}

// begun says whether the delivery watched on w may be over as far as
// its statements go: where the broker shows acks, its drain said so;
// where it shows none (RabbitMQ), a message taken is not a message done,
// and an instance may take a while before its first statement, so none
// of its statements yet means it has not begun (until idleLimit).
func (s *Session) begun(w *sqlproxy.Watch) bool {
	return s.ackUnseen() == "" || w.Began()
}

// txEnded reports whether a transaction of a delivery killed at at had
// ended by the kill: the server answered a COMMIT of it before the held
// statement, or the held one, held after its answer. A consumer that
// would have begun another transaction after (marker-after-effect's
// second) cannot be told from one that was done: what it has not sent
// redeliver cannot see.
func txEnded(trace []sqlproxy.Statement, at *sqlproxy.Boundary) bool {
	for _, st := range trace {
		held := at.Names(st)
		if held && !at.After {
			return false
		}
		if st.Committed() {
			return true
		}
		if held {
			return false
		}
	}
	return false
}

// ackedNow asks the broker once whether the consumer acked everything
// published, where it shows acks (JetStream, Kafka).
func (s *Session) ackedNow(ctx context.Context) bool {
	bd, ok := s.dl.(*brokerDeliverer)
	if !ok {
		return false
	}
	c, err := bd.pub.Counts(ctx)
	return err == nil && c.Acked != broker.Unknown && c.Pending == 0 && (c.Unacked == broker.Unknown || c.Unacked == 0)
}

// readyOnceGone asks a RabbitMQ target's queue, once the instances are
// gone, how many messages it holds ready with no consumer left (known:
// none was left within 5 s).
func (s *Session) readyOnceGone(ctx context.Context) (ready int, known bool) {
	bd, ok := s.dl.(*brokerDeliverer)
	if !ok {
		return 0, false
	}
	q, ok := bd.pub.(interface {
		ReadyOnceGone(context.Context, time.Duration) (int, bool)
	})
	if !ok {
		return 0, false
	}
	return q.ReadyOnceGone(ctx, 5*time.Second)
}

// ackWord is how the trace marks the ack where the target's broker shows
// it ("acked", "offset committed"), or "" where it does not (RabbitMQ).
func (s *Session) ackWord() string {
	if bd, ok := s.dl.(*brokerDeliverer); ok {
		return bd.adapter.AckWord
	}
	return ""
}

// ackUnseen names the target's broker where it shows no other client
// the consumer's ack (RabbitMQ), or is "".
func (s *Session) ackUnseen() string {
	if bd, ok := s.dl.(*brokerDeliverer); ok && bd.adapter.AckWord == "" {
		return bd.adapter.Name
	}
	return ""
}

// taken waits until the broker says the consumer has taken everything
// published (acked it, or, for RabbitMQ, holds it), as the check's drain
// does, without counting.
func (s *Session) taken(ctx context.Context) error {
	return s.takenAs(ctx, broker.DrainOptions{})
}

// takenAs is taken with the drain's poll and settle time of o (zero:
// the broker's defaults); its timeout is the target's.
func (s *Session) takenAs(ctx context.Context, o broker.DrainOptions) error {
	bd, ok := s.dl.(*brokerDeliverer)
	if !ok {
		return nil
	}
	o.Timeout = s.t.DrainTimeout()
	_, err := bd.pub.Drain(ctx, o)
	if err != nil {
		if died, msg := s.diedByItself(); died {
			return errors.New(msg)
		}
	}
	return err
}

// brokerCallCrash is crashAtCall behind a broker: the delivery is
// published, and when an instance makes the call the crash names, it is
// held there (before it is performed, or after, its answer withheld),
// the instance that made it killed (with several, the one whose process
// holds the call's connection: caller), the call cut and the instance
// restarted; the broker redelivers as after any crash. reached
// is false when the broker says the instance took the message and no such
// call came.
func (s *Session) brokerCallCrash(ctx context.Context, ev Event, c *scenario.Crash) (a Answer, call standin.Call, reached bool, err error) {
	ch := s.holdCall(c.Method, c.Path, 1, c.AfterStatement)
	defer ch.stop()
	a = s.dl.Deliver(ctx, ev, nil)
	if a.Err != nil {
		return a, call, false, nil
	}
	dctx, cancel := context.WithCancel(ctx)
	defer cancel()
	drained := make(chan error, 1)
	go func() { drained <- s.taken(dctx) }()
	select {
	case h := <-ch.held:
		reached, call = true, h.Call()
		cancel()
		<-drained
		owner := s.caller(h)
		if owner == nil {
			h.Cut()
			return a, call, true, s.callUnowned(call)
		}
		owner.Kill()
		killed := time.Now()
		h.Cut()
		a.Crashed, a.CrashCame = true, Unknown
		if err := owner.Restart(ctx); err != nil {
			return a, call, true, err
		}
		a.KilledAt, a.Restarted = killed, time.Now()
		return a, call, true, nil
	case err = <-drained:
		return a, call, false, err
	case <-ctx.Done():
		return a, call, false, ctx.Err()
	}
}
