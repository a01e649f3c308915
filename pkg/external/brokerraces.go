package external

import (
	"context"
	"time"

	"github.com/redeliver/redeliver/pkg/broker"
	"github.com/redeliver/redeliver/pkg/consumer"
	"github.com/redeliver/redeliver/pkg/invariant"
	"github.com/redeliver/redeliver/pkg/runner"
	"github.com/redeliver/redeliver/pkg/sqlproxy"
)

// brokerRaced is raced behind a broker: the event is published N times,
// as an outbox that publishes it again does, for the started instances
// to take one copy each, while the proxy follows the statements tied to
// it (by its event id or key, and the transactions that carry one). Held
// at the schedule's boundary — a worker (a connection) at one of its
// statements — that worker waits until the other copies' work is over
// (each instance that ran statements of the event, but the held one,
// idle and quiet), or one of them waits for a lock, or the hold limit
// passed; then it is let go. Without a boundary the run records the
// workers' boundaries for the schedules to come. A publish's answer is
// the broker's: each copy is acked once stored.
func (sys *system) brokerRaced(ctx context.Context, c runner.Call, ev Event, spans []invariant.Span) ([]Answer, error) {
	s := sys.sess
	n := c.St.Concurrent
	h := c.Hold.Statement
	at := boundary(nil, h)
	before, _ := s.db.Rows(ctx, &ev.Key)
	s.settleBefore(ctx)
	w, err := s.proxy.Watch(at, ev.ID, ev.Key)
	if err != nil {
		return nil, err
	}
	s.pullersWaiting(ctx, n)
	parts, err := s.spread(ctx, n)
	if err != nil {
		w.Cut()
		w.Stop()
		return nil, err
	}
	answers, refused := s.publishCopies(ctx, ev, parts, spans, n)
	if refused {
		// The broker refused a copy: the run stops there (harnessError).
		w.Cut()
		w.Stop()
		return answers, nil
	}
	reached, raced, err := s.holdCopies(ctx, w, n, at, spans)
	if err != nil {
		w.Cut()
		w.Stop()
		return nil, err
	}
	trace := w.Stop()
	c.Rec.Counters().Apart += len(w.Others())
	switch {
	case len(trace) == 0:
		if err := sys.bypassed(ctx, c, ev, ev.Key, before); err != nil {
			return nil, err
		}
	case h == nil:
		if past, err := sys.wrotePast(ctx, c, ev, ev.Key, before, trace); past || err != nil {
			c.Rec.Trace(statementsOf(trace, nil))
			return answers, err
		}
		c.Rec.Boundaries(raceBoundaries(trace, w.Marked()))
		c.Rec.Trace(statementsOf(trace, nil))
	case !reached:
		// The copies took another path this time (one found the
		// other's marker): the run was unforced, and says so.
		c.Rec.Unreached()
	default:
		c.Rec.Trace(statementsReleased(trace, at))
		if !raced {
			c.Rec.Counters().Unraced++
		}
	}
	return answers, nil
}

// publishCopies publishes n copies of ev one after another, each to its
// own member's partition where the broker is told where (parts), and
// times each on its span. refused: the broker refused a copy, and those
// after it were not published.
func (s *Session) publishCopies(ctx context.Context, ev Event, parts []int32, spans []invariant.Span, n int) (answers []Answer, refused bool) {
	answers = make([]Answer, n)
	for i := range answers {
		spans[i].Sent = time.Now()
		if parts != nil {
			answers[i] = s.dl.(*brokerDeliverer).deliverTo(ctx, ev, parts[i])
		} else {
			answers[i] = s.dl.Deliver(ctx, ev, nil)
		}
		spans[i].Answered = time.Now()
		if answers[i].Err != nil {
			return answers, true
		}
	}
	return answers, false
}

// holdCopies waits until the broker says every copy was taken and the
// work of each is over (copiesDone). A worker held at the boundary first
// waits there while the other copies run (letCopiesRun), is let go, and
// its hold is drawn on the first span; it may be held after every copy
// was taken, its instance slow to start on it. reached: a worker was
// held; raced: the hold raced the copies (Session.raced).
func (s *Session) holdCopies(ctx context.Context, w *sqlproxy.Watch, n int, at *sqlproxy.Boundary, spans []invariant.Span) (reached, raced bool, err error) {
	dctx, cancel := context.WithCancel(ctx)
	defer cancel()
	drained := make(chan error, 1)
	// Every copy handed out is all the hold needs to know: no instance
	// is killed in a race, and the check's own drain, before any effect
	// is read, still waits for the broker to stay drained for its full
	// settle time (a copy a consumer put back shows there). The broker's
	// settle here as well made each schedule a second longer.
	go func() { drained <- s.takenAs(dctx, broker.DrainOptions{Settle: answerQuiet}) }()
	taken := false
	select {
	case <-w.Held():
		reached = true
	case err = <-drained:
		taken = true
		if err == nil {
			reached, err = s.copiesFinished(ctx, w, n, w.Held())
		}
	case <-ctx.Done():
		err = ctx.Err()
	}
	if reached && err == nil {
		heldAt := time.Now()
		ran := len(w.Statements())
		held := s.letCopiesRun(ctx, w, n)
		raced = s.raced(w, ran, held)
		w.Release()
		spans[0].Held, spans[0].Released, spans[0].HeldAt = heldAt, time.Now(), consumer.FaultPoint(heldWords(*at))
		if !taken {
			err = <-drained
		}
	}
	if err == nil {
		err = s.copiesDone(ctx, w, n)
	}
	return reached, raced, err
}

// letCopiesRun waits, while a worker is held, until the other n-1
// copies' work is over (copiesOver), or one of their statements waits
// for a lock (as the database says), or the hold limit passed.
// It returns the held connection's instance (0: not known).
func (s *Session) letCopiesRun(ctx context.Context, w *sqlproxy.Watch, n int) (held int) {
	tick := time.NewTicker(5 * time.Millisecond)
	defer tick.Stop()
	deadline := time.Now().Add(holdLimit(s.t.Timeout()))
	if hit := w.Hit(); hit != nil {
		held = s.proxy.Owner(hit.Conn, ownerWait)
	}
	for {
		select {
		case <-tick.C:
		case <-ctx.Done():
			return held
		}
		if pids := w.Waiting(); len(pids) > 0 {
			if blocked, err := s.db.Blocked(ctx, pids); err == nil && blocked {
				return held
			}
		}
		if held > 0 && s.copiesOver(w, held) >= n-1 {
			return held
		}
		if time.Now().After(deadline) {
			return held
		}
	}
}

// raced reports whether a hold raced the copies: a statement of the
// delivery came while it held (ran are the statements before), or
// another instance than the held one (held) ran statements of it. Else
// the other copies neither ran before the hold nor during it: the
// broker handed them to the held instance, which takes one at a time.
func (s *Session) raced(w *sqlproxy.Watch, ran, held int) bool {
	stmts := w.Statements()
	if len(stmts) > ran {
		return true
	}
	for _, st := range stmts {
		if i := s.proxy.Owner(st.Conn, 0); i != 0 && i != held {
			return true
		}
	}
	return false
}

// copiesOver counts the instances, but held, whose part of the delivery
// is over: statements of it came on their connections, and every one of
// those is idle, outside a transaction, and quiet (sqlproxy.Watch.Over).
// Each instance takes one copy at a time, so this is the copies done.
func (s *Session) copiesOver(w *sqlproxy.Watch, held int) int {
	over := map[int]bool{}
	for id, done := range w.Over(answerQuiet) {
		i := s.proxy.Owner(id, 0)
		if i == 0 || i == held {
			continue
		}
		if v, ok := over[i]; !ok || v {
			over[i] = done
		}
	}
	k := 0
	for _, done := range over {
		if done {
			k++
		}
	}
	return k
}

// copiesDone waits, once the broker says every copy was taken, until
// their work is over (copiesFinished), then until the consumer's connections
// are all idle: what the copies committed is all they will.
func (s *Session) copiesDone(ctx context.Context, w *sqlproxy.Watch, n int) error {
	if _, err := s.copiesFinished(ctx, w, n, nil); err != nil {
		return err
	}
	return s.quiet(ctx)
}

// copiesFinished waits until the instances that ran statements of the event
// are as many as the copies (or as the instances started, when fewer)
// and the work of each is over on every connection it came on (idle,
// outside a transaction, quiet), or idleLimit passed, or held is closed
// (held: true). A copy taken is not yet begun: an instance slow to start
// on it (a loaded machine, a cache to warm) runs no statement of it for a
// while, and a trial that ended then read the effects before that copy's
// work and stopped the instance with the copy unacknowledged, back in
// the queue for the next trial to find.
func (s *Session) copiesFinished(ctx context.Context, w *sqlproxy.Watch, n int, hold <-chan struct{}) (held bool, err error) {
	if k := len(s.procs); k > 0 && k < n {
		n = k
	}
	limit := time.Now().Add(idleLimit)
	for time.Now().Before(limit) {
		// A held worker first: however its connection looks while it
		// waits, the hold must be let go before the trial ends.
		select {
		case <-hold:
			return true, nil
		default:
		}
		over := w.Over(answerQuiet)
		done := true
		for _, o := range over {
			done = done && o
		}
		if done && s.instancesOf(over) >= n {
			return false, nil
		}
		if err := sleep(ctx, 5*time.Millisecond); err != nil {
			return false, err
		}
	}
	return false, nil
}

// instancesOf counts the instances owning the connections conns names
// (by id); a connection whose owner cannot be known counts as one.
func (s *Session) instancesOf(conns map[int]bool) int {
	seen := map[int]bool{}
	for id := range conns {
		if i := s.proxy.Owner(id, ownerWait); i != 0 {
			seen[i] = true
		} else {
			seen[-1-id] = true
		}
	}
	return len(seen)
}

// pullersWaiting waits, behind JetStream, until the durable holds n pull
// requests open (NumWaiting), up to pullersWait: a consumer that asks for
// its next message only once a worker is free, as the example does, is
// then ready on every instance, and the copies go one to each instead of
// two to an instance still finishing the last schedule. A consumer that
// never pulls that way is not waited for longer; RabbitMQ's prefetch
// spreads the copies by itself.
func (s *Session) pullersWaiting(ctx context.Context, n int) {
	bd, ok := s.dl.(*brokerDeliverer)
	if !ok {
		return
	}
	w, ok := bd.pub.(interface {
		Waiting(context.Context) (int, error)
	})
	if !ok {
		return
	}
	deadline := time.Now().Add(pullersWait)
	for time.Now().Before(deadline) {
		if got, err := w.Waiting(ctx); err != nil || got >= n {
			return
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(10 * time.Millisecond):
		}
	}
}

// spreader is a broker that can hand n copies of one event to n members
// of the group at once (Kafka): one partition of each of n members, and
// a publish to a partition named, not the key's.
type spreader interface {
	Spread(ctx context.Context, n, members int, wait time.Duration) ([]int32, error)
	PublishTo(ctx context.Context, m broker.Message, partition int32) (broker.Receipt, error)
}

// spread, behind Kafka, waits until every started instance is a member
// of the group and n of them hold a partition, and returns one partition
// of each of n members, for the copies to go one to each. Kafka keeps
// one key's records in one partition, read by one member in order, so
// the copies are produced as an outbox that republishes the event with
// another partitioner than the key's puts them. Elsewhere (nil) the
// broker spreads the copies itself.
func (s *Session) spread(ctx context.Context, n int) ([]int32, error) {
	bd, ok := s.dl.(*brokerDeliverer)
	if !ok {
		return nil, nil
	}
	sp, ok := bd.pub.(spreader)
	if !ok {
		return nil, nil
	}
	return sp.Spread(ctx, n, len(s.procs), s.t.DrainTimeout())
}

// pullersWait bounds how long pullersWaiting waits.
const pullersWait = 3 * time.Second
