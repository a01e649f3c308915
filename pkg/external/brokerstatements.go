package external

import (
	"context"
	"errors"
	"time"

	"github.com/redeliver/redeliver/pkg/broker"
	"github.com/redeliver/redeliver/pkg/pgproxy"
	"github.com/redeliver/redeliver/pkg/report/words"
	"github.com/redeliver/redeliver/pkg/runner"
	"github.com/redeliver/redeliver/pkg/scenario"
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
	var trace, others []pgproxy.Statement
	var reached, marked bool
	before, _ := sys.sess.db.Rows(ctx, &key)
	a, err := sys.once(ctx, c, ev, key, true, func() (Answer, error) {
		var err error
		var a Answer
		a, trace, others, marked, reached, err = sys.sess.brokerWatched(ctx, ev, at)
		c.Rec.Counters().Apart += len(others)
		return a, err
	})
	if err != nil || a.Err != nil {
		return a, err
	}
	what := "crash: " + st.Crash.String()
	if c.Hold.Statement != nil {
		what = "crash: statements, " + c.Hold.Statement.Name + ","
	}
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
		c.Rec.Fail(words.Untied(what, ev.ID, key, "${"+sys.sess.dbVar+"}", traceLines(shown)))
		return a, nil
	case at == nil:
		if past, err := sys.wrotePast(ctx, c, ev, key, before, trace); past || err != nil {
			c.Rec.Trace(statementsOf(trace, nil))
			return a, err
		}
		c.Rec.Boundaries(killBoundaries(trace, true, false))
		c.Rec.Trace(statementsOf(trace, nil))
		return a, nil
	case !reached:
		c.Rec.Trace(statementsOf(trace, nil))
		c.Rec.Fail(words.NotReached(what, traceLines(trace), "its broker (it took the message)"))
		return a, nil
	}
	c.Rec.Trace(statementsOf(trace, at))
	return a, nil
}

// brokerWatched publishes one delivery while the proxy follows its
// statements, those tied to it by its marks (trace) and the others let
// through meanwhile (others). Held at at, the started instance — the one
// there is, which owns every connection — is killed (SIGKILL to its
// process group), the held connection cut (the database rolls back what
// it had not committed) and the instance restarted: the broker hands the
// message out again as after any crash (JetStream once its AckWait
// passes, RabbitMQ as soon as the channel closes, Kafka to the member
// that reads the partition from its last committed offset). Without at,
// or with at not reached, the watch lasts until the broker says the
// consumer took the message and its connections are idle.
func (s *Session) brokerWatched(ctx context.Context, ev Event, at *pgproxy.Boundary) (a Answer, trace, others []pgproxy.Statement, marked, reached bool, err error) {
	s.settleBefore(ctx)
	w, err := s.proxy.Watch(at, ev.ID, ev.Key)
	if err != nil {
		return Answer{}, nil, nil, false, false, err
	}
	a = s.dl.Deliver(ctx, ev, nil)
	if a.Err != nil {
		w.Stop()
		return a, nil, nil, false, false, nil
	}
	dctx, cancel := context.WithCancel(ctx)
	defer cancel()
	drained := make(chan error, 1)
	go func() { drained <- s.taken(dctx) }()
	var killed time.Time
	var owner *Process // the instance that holds the connection
	select {
	case <-w.Held():
		reached = true
		cancel()
		<-drained
		if owner = s.holder(w); owner == nil {
			err = s.unowned()
			break
		}
		owner.Kill()
		killed = time.Now()
		w.Cut()
	case err = <-drained:
		if err == nil {
			err = s.quiet(ctx)
		}
	case <-ctx.Done():
		err = ctx.Err()
	}
	if err != nil {
		w.Cut()
		w.Stop()
		return a, nil, nil, false, false, err
	}
	trace = w.Stop()
	others, marked = w.Others(), w.Marked()
	if reached {
		a.Crashed, a.CrashCame = true, Unknown
		if err := owner.Restart(ctx); err != nil {
			return a, trace, others, marked, reached, err
		}
		a.KilledAt, a.Restarted = killed, time.Now()
	}
	return a, trace, others, marked, reached, nil
}

// taken waits until the broker says the consumer has taken everything
// published (acked it, or, for RabbitMQ, holds it), as the check's drain
// does, without counting.
func (s *Session) taken(ctx context.Context) error {
	bd, ok := s.dl.(*brokerDeliverer)
	if !ok {
		return nil
	}
	_, err := bd.pub.Drain(ctx, broker.DrainOptions{Timeout: s.t.DrainTimeout()})
	if err != nil {
		if died, msg := s.diedByItself(); died {
			return errors.New(msg)
		}
	}
	return err
}

// brokerCallCrash is crashAtCall behind a broker, with one started
// instance: the delivery is published, and when the instance makes the
// call the crash names, it is held there (before it is performed, or
// after, its answer withheld), the instance killed, the call cut and the
// instance restarted; the broker redelivers as after any crash. reached
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
		s.proc.Kill()
		killed := time.Now()
		h.Cut()
		a.Crashed, a.CrashCame = true, Unknown
		if err := s.proc.Restart(ctx); err != nil {
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
