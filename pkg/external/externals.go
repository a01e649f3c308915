package external

import (
	"context"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/redeliver/redeliver/pkg/consumer"
	"github.com/redeliver/redeliver/pkg/invariant"
	"github.com/redeliver/redeliver/pkg/redact"
	"github.com/redeliver/redeliver/pkg/runner"
	"github.com/redeliver/redeliver/pkg/scenario"
	"github.com/redeliver/redeliver/pkg/sqlproxy"
	"github.com/redeliver/redeliver/pkg/standin"
	"github.com/tidwall/gjson"
)

// recorder is what every stand-in does: record the calls it receives,
// labelled with the delivery in flight.
type recorder interface {
	Calls() []standin.Call
	Reset()
	SetDelivery(id string)
	Close() error
}

// stand is one running stand-in of an external the consumer calls.
type stand struct {
	spec *scenario.External
	rec  recorder
	http *standin.HTTP      // also set for an HTTP provider: its calls can be held
	pub  *standin.Published // also set for what the consumer publishes: it settles
	// addr is what ${REDELIVER_<NAME>_URL|ADDR} expands to.
	addr string
}

// publishQuiet is how long what a consumer publishes must have been
// quiet before its stand-in is read: publishing is asynchronous, and a
// message the consumer sent just before its answer may still be on its
// way.
const publishQuiet = 200 * time.Millisecond

// settleStandins waits until no stand-in of what the consumer publishes
// has received anything for publishQuiet.
func (s *Session) settleStandins(ctx context.Context) error {
	for _, st := range s.stands {
		if st.pub != nil {
			if err := st.pub.Settle(ctx, publishQuiet); err != nil {
				return err
			}
		}
	}
	return nil
}

// startStandins starts a stand-in for each external, on a free port of
// 127.0.0.1.
func (s *Session) startStandins(ctx context.Context, exts []*scenario.External) error {
	for _, e := range exts {
		st := &stand{spec: e}
		var err error
		switch {
		case e.Publish != nil:
			p := e.Publish
			cfg := standin.PublishConfig{NATS: p.NATS, Subject: p.Subject, AMQP: p.AMQP, Queue: p.Queue, Kafka: p.Kafka, Topic: p.Topic}
			if st.pub, err = standin.StartPublished(ctx, e.Name, cfg, e.EffectKey); err != nil {
				return fmt.Errorf("cannot subscribe to what the consumer publishes (external %s): %w", e.Name, redact.Error(err))
			}
			st.rec = st.pub
		case e.HTTP != nil:
			cfg := standin.HTTPConfig{IdempotencyHeader: e.HTTP.IdempotencyHeader, Status: e.HTTP.Status, Body: e.HTTP.Body,
				Latency: e.HTTP.Latency, FailAfterEffect: e.HTTP.FailAfterEffect, FailTimes: e.HTTP.FailTimes}
			if st.http, err = standin.StartHTTP(e.Name, cfg, e.EffectKey); err == nil {
				st.rec, st.addr = st.http, st.http.URL()
			}
		default:
			var smtp *standin.SMTP
			if smtp, err = standin.StartSMTP(e.Name, e.EffectKey); err == nil {
				st.rec, st.addr = smtp, smtp.Addr()
			}
		}
		if err != nil {
			return fmt.Errorf("cannot start the stand-in of external %s: %w", e.Name, err)
		}
		s.stands = append(s.stands, st)
	}
	return nil
}

// inFlight counts a delivery of event id in (1) or out (-1) of flight,
// and labels the calls the stand-ins receive from now on with the event
// in flight: one event (a concurrent step's copies are one), or none when
// deliveries of several events are in flight at once (parallel replay
// lanes), where a call cannot be told to be one's. A subscriber to what
// the consumer publishes is told when a delivery in flight alone ends:
// what it published may arrive after its answer, and is still its.
func (s *Session) inFlight(id string, n int) {
	if len(s.stands) == 0 {
		return
	}
	s.flightMu.Lock()
	defer s.flightMu.Unlock()
	if s.flying == nil {
		s.flying = map[string]int{}
	}
	alone := len(s.flying) == 1 && s.flying[id] > 0
	if s.flying[id] += n; s.flying[id] <= 0 {
		delete(s.flying, id)
	}
	label := ""
	if len(s.flying) == 1 {
		for one := range s.flying {
			label = one
		}
	}
	for _, st := range s.stands {
		st.rec.SetDelivery(label)
		if l, ok := st.rec.(lateLabeller); ok && alone && len(s.flying) == 0 {
			l.Ended(id)
		}
	}
}

// lateLabeller is a stand-in that receives asynchronously (a subscriber
// to what the consumer publishes): what a delivery published may arrive
// after its end, and is still the delivery's.
type lateLabeller interface{ Ended(id string) }

// resetStandins forgets what the stand-ins received, with the effects
// database's reset.
func (s *Session) resetStandins() {
	for _, st := range s.stands {
		st.rec.Reset()
	}
}

// externalVars are the stand-ins' addresses by variable name.
func (s *Session) externalVars() map[string]string {
	out := map[string]string{}
	for _, st := range s.stands {
		if v := st.spec.Var(); v != "" {
			out[v] = st.addr
		}
	}
	return out
}

// externalCalls are every call the stand-ins received, as the judge reads
// them.
func (s *Session) externalCalls() []invariant.Call {
	var out []invariant.Call
	for _, st := range s.stands {
		header := ""
		if st.spec.HTTP != nil {
			header = st.spec.HTTP.IdempotencyHeader
		}
		for _, c := range st.rec.Calls() {
			out = append(out, invariant.Call{External: st.spec.Name, Seq: c.Seq, What: callWhat(c), Delivery: c.Delivery, Key: c.Key,
				IdemKey: c.IdemKey, Keyed: header != "", Header: header, Performed: c.Performed,
				At: c.At, Answer: callAnswer(c), NoAnswer: unanswered(c)})
		}
	}
	return out
}

// callsSince are the calls the stand-ins received since the first of a
// check's deliveries was sent, for its report to place on its timeline:
// those of the checks before it are left out (a stand-in keeps every call
// of its session). With no delivery that recorded when it was sent, all.
func (s *Session) callsSince(history []invariant.Record) []invariant.Call {
	if len(s.stands) == 0 {
		return nil
	}
	var from time.Time
	for _, r := range history {
		if t := r.Span.Sent; !t.IsZero() && (from.IsZero() || t.Before(from)) {
			from = t
		}
	}
	calls := s.externalCalls()
	if from.IsZero() {
		return calls
	}
	out := calls[:0]
	for _, c := range calls {
		if !c.At.Before(from) {
			out = append(out, c)
		}
	}
	return out
}

// callWhat names a call: "POST /v1/charges", or "mail to a@x".
func callWhat(c standin.Call) string {
	switch c.Method {
	case "SMTP":
		return "mail to " + strings.Join(c.To, ", ")
	case "PUBLISH":
		if c.IdemKey == "" {
			return "published to " + c.Path + " with no id"
		}
		return "published to " + c.Path + " as " + c.IdemKey
	}
	return c.Method + " " + c.Path
}

// required are the externals every acked event must reach.
func (s *Session) required() []string {
	var out []string
	for _, st := range s.stands {
		if st.spec.Required {
			out = append(out, st.spec.Name)
		}
	}
	return out
}

// judgeExternals judges the calls the stand-ins received, acked being the
// events the consumer acked and their business keys.
func (s *Session) judgeExternals(acked map[string]string) ([]invariant.Violation, error) {
	if len(s.stands) == 0 {
		return nil, nil
	}
	for _, st := range s.stands {
		calls := st.rec.Calls()
		empty := 0
		for _, c := range calls {
			if c.Key == "" {
				empty++
			}
		}
		if len(calls) > 0 && empty == len(calls) {
			// A placeholder that names nothing the calls carry (a path
			// of the wrong case): judging nothing would pass anything.
			return nil, fmt.Errorf("external %s: effect_key %s came out empty for each of its %d calls (the first: %s), so none could be judged; does each placeholder name something the calls carry?",
				st.spec.Name, st.spec.EffectKey, len(calls), callWhat(calls[0]))
		}
	}
	var out []invariant.Acked
	for id, key := range acked {
		out = append(out, invariant.Acked{Event: id, Key: key})
	}
	return invariant.JudgeCalls(s.externalCalls(), out, s.required()), nil
}

// performed counts the effects an external performed under a key.
func (s *Session) performed(external, key string) (int64, bool) {
	for _, st := range s.stands {
		if st.spec.Name != external {
			continue
		}
		var n int64
		for _, c := range st.rec.Calls() {
			if c.Performed && c.Key == key {
				n++
			}
		}
		return n, true
	}
	return 0, false
}

// crashAtCall makes a delivery killed at a call to an HTTP stand-in: the
// call the crash names is held — before it is performed, or after it is
// performed and before its answer is written — while the consumer is
// killed (the started process for HTTP, the delivery's own for exec);
// the call is then cut, unanswered, and the consumer restarted. reached
// is false when the delivery ended without making the call.
func (s *Session) crashAtCall(ctx context.Context, ev Event, c *scenario.Crash) (a Answer, call standin.Call, reached bool, err error) {
	if s.t.Broker != nil {
		return s.brokerCallCrash(ctx, ev, c)
	}
	ch := s.holdCall(c.Method, c.Path, 1, c.AfterStatement)
	defer ch.stop()
	held := ch.held
	kill := make(chan struct{})
	answers := make(chan Answer, 1)
	go func() { answers <- s.dl.Deliver(ctx, ev, kill) }()
	var killed time.Time
	select {
	case h := <-held:
		reached, call = true, h.Call()
		if s.proc != nil {
			s.proc.Kill()
		}
		killed = time.Now()
		close(kill)
		h.Cut()
		a = <-answers
		a.Killed, a.Crashed, a.CrashCame = true, true, BeforeAnswer
		if a.Kind == "" || a.Status != 0 {
			a.Kind, a.Status = Unacked, 0
		}
	case a = <-answers:
		return a, call, false, nil
	case <-ctx.Done():
		close(kill)
		return <-answers, call, false, ctx.Err()
	}
	if s.proc == nil {
		// An exec delivery's process is dead: what it left running in
		// the database ends now, as after a real crash.
		s.endBackends(ctx)
		return a, call, true, nil
	}
	if err := s.proc.Restart(ctx); err != nil {
		return a, call, true, err
	}
	a.KilledAt, a.Restarted = killed, time.Now()
	s.dl.Forget()
	return a, call, true, nil
}

// callHold is a hold at an HTTP call, arranged at every HTTP stand-in:
// held has the one a call reached.
type callHold struct {
	holds []*standin.Hold
	held  chan *standin.Hold
	done  chan struct{}
}

// holdCall arranges a hold at the nth call to "method path" each HTTP
// stand-in receives from now, before it is performed or after (see
// standin.HTTP.HoldNth). stop ends it.
func (s *Session) holdCall(method, path string, nth int, after bool) *callHold {
	ch := &callHold{held: make(chan *standin.Hold, len(s.stands)), done: make(chan struct{})}
	for _, st := range s.stands {
		if st.http == nil {
			continue
		}
		h := st.http.HoldNth(method, path, nth, after)
		ch.holds = append(ch.holds, h)
		go func() {
			select {
			case <-h.Held():
				ch.held <- h
			case <-ch.done:
			}
		}()
	}
	return ch
}

// stop lets a held call go on and takes back the holds no call reached.
func (ch *callHold) stop() {
	close(ch.done)
	for _, h := range ch.holds {
		h.Stop()
	}
}

// callCount is how many calls each stand-in has recorded so far.
func (s *Session) callCount() []int {
	out := make([]int, len(s.stands))
	for i, st := range s.stands {
		out[i] = len(st.rec.Calls())
	}
	return out
}

// timedBoundary is a boundary at an external call, and when the call
// came.
type timedBoundary struct {
	at time.Time
	b  runner.Boundary
}

// callBoundaries are the boundaries at the HTTP calls event id's delivery
// made, of the calls each stand-in recorded after its first before: before and after
// each, in the order they came. A call a delivery makes again (the same
// method and path) has its first time only: a hold takes the first match.
func (s *Session) callBoundaries(id string, before []int) []timedBoundary {
	var out []timedBoundary
	seen := map[string]bool{}
	for _, pc := range s.deliveryCalls(id, before) {
		c := pc.c
		what := c.Method + " " + c.Path
		if pc.st.http == nil || seen[what] {
			continue
		}
		seen[what] = true
		k := len(seen)
		out = append(out,
			timedBoundary{c.At, runner.Boundary{Index: k, Call: what, Name: fmt.Sprintf("killed before call %d (%s at %s)", k, what, pc.st.spec.Name)}},
			timedBoundary{c.At, runner.Boundary{Index: k, Call: what, After: true, Name: fmt.Sprintf("killed after call %d (%s at %s), its effect performed, its answer withheld", k, what, pc.st.spec.Name)}})
	}
	return out
}

// raceCallBoundaries are the boundaries at the HTTP calls a race of
// event id's deliveries made (of the calls each stand-in recorded after
// its first before): before and after the first, the second, … call to
// each "METHOD /path" to arrive, in the order the first of them came. A
// call is not known to be one worker's, so the boundary is its place
// among the workers' calls to the same method and path: holding the
// second lets the first by.
func (s *Session) raceCallBoundaries(id string, before []int) []runner.Boundary {
	arrived := map[string]int{}
	var order []string
	at := map[string]string{}
	for _, pc := range s.deliveryCalls(id, before) {
		if pc.st.http == nil {
			continue
		}
		what := pc.c.Method + " " + pc.c.Path
		if arrived[what] == 0 {
			order = append(order, what)
			at[what] = pc.st.spec.Name
		}
		arrived[what]++
	}
	var out []runner.Boundary
	for _, what := range order {
		for k := 1; k <= arrived[what]; k++ {
			out = append(out,
				runner.Boundary{Lane: k, Call: what, Name: fmt.Sprintf("the %s %s at %s held before it was performed while the others ran", ordinal(k), what, at[what])},
				runner.Boundary{Lane: k, Call: what, After: true, Name: fmt.Sprintf("the %s %s at %s held after it was performed, its answer withheld, while the others ran", ordinal(k), what, at[what])})
		}
	}
	return out
}

// placedCall is a call and the stand-in that received it.
type placedCall struct {
	c  standin.Call
	st *stand
}

// deliveryCalls are the calls labelled with event id's delivery, of those
// each stand-in recorded after its first before (nil: all), in the order
// they came.
func (s *Session) deliveryCalls(id string, before []int) []placedCall {
	var out []placedCall
	for i, st := range s.stands {
		all := st.rec.Calls()
		if i < len(before) && before[i] <= len(all) {
			all = all[before[i]:]
		}
		for _, c := range all {
			if c.Delivery == id {
				out = append(out, placedCall{c, st})
			}
		}
	}
	sort.SliceStable(out, func(a, b int) bool { return out[a].c.At.Before(out[b].c.At) })
	return out
}

// withCalls is a delivery's statements (stmts, made of trace) with the
// calls it made to the stand-ins (those each recorded after its first
// before) put among them in the order they came, each on the worker of
// the statement before it. answered, when not zero, is when the
// consumer's answer (said) came: the first call after it takes the
// answer's marker when it comes before the statement the marker is on,
// or when no statement has it.
func (s *Session) withCalls(stmts []consumer.Statement, trace []sqlproxy.Statement, id string, before []int, answered time.Time, said string) []consumer.Statement {
	return s.withCallsMarked(stmts, trace, id, before, answered, said, nil)
}

// withCallsMarked is withCalls, each call's line then given to mark (when
// not nil) with the call it stands for.
func (s *Session) withCallsMarked(stmts []consumer.Statement, trace []sqlproxy.Statement, id string, before []int, answered time.Time, said string, mark func(standin.Call, *consumer.Statement)) []consumer.Statement {
	calls := s.deliveryCalls(id, before)
	if len(calls) == 0 {
		return stmts
	}
	out := make([]consumer.Statement, 0, len(stmts)+len(calls))
	worker := 1
	marked := false
	add := func(c placedCall) {
		st := c.statement(worker)
		if !marked && said != "" && c.c.At.After(answered) {
			marked = true
			st.AnsweredBefore = said
		}
		if mark != nil {
			mark(c.c, &st)
		}
		out = append(out, st)
	}
	for i, st := range stmts {
		for len(calls) > 0 && i < len(trace) && calls[0].c.At.Before(trace[i].Started()) {
			add(calls[0])
			calls = calls[1:]
		}
		if st.AnsweredBefore != "" {
			if marked {
				st.AnsweredBefore = ""
			}
			marked = true
		}
		out = append(out, st)
		worker = max(st.Worker, 1)
	}
	for _, c := range calls {
		add(c)
	}
	return out
}

// statement is the call as a trace line on worker's connection.
func (pc placedCall) statement(worker int) consumer.Statement {
	return consumer.Statement{Worker: worker, Text: callText(pc.c, pc.st.spec), Answer: callAnswer(pc.c), External: pc.st.spec.Name}
}

// callText is a call as a trace shows it: "POST /v1/charges
// Idempotency-Key: payment-O-1", "mail to a@x", "published to S as ID".
func callText(c standin.Call, e *scenario.External) string {
	if e.HTTP == nil {
		return callWhat(c)
	}
	t := c.Method + " " + c.Path
	if h := e.HTTP.IdempotencyHeader; h != "" {
		if c.IdemKey == "" {
			t += " (no " + h + ")"
		} else {
			t += " " + h + ": " + c.IdemKey
		}
	}
	return t
}

// callAnswer is what the stand-in answered a call: "201 (ch_1)", "201
// replayed", "409", "no answer"; a mail or a message: "accepted", or
// "a repeat of its id" for one that is no new effect.
func callAnswer(c standin.Call) string {
	switch {
	case c.Method == "PUBLISH" && !c.Performed:
		return "a repeat of its id"
	case c.Method == "PUBLISH" || c.Method == "SMTP":
		return "accepted"
	case unanswered(c):
		return "no answer"
	}
	a := strconv.Itoa(c.Status)
	if id := gjson.Get(c.Answer, "id"); id.Type == gjson.String && id.Str != "" {
		a += " (" + id.Str + ")"
	}
	if c.Replayed {
		a += " replayed"
	}
	return a
}

// unanswered says an HTTP stand-in sent no answer to a call (a timeout
// fault, a call cut while held).
func unanswered(c standin.Call) bool {
	return c.Method != "PUBLISH" && c.Method != "SMTP" && c.Status == 0
}

// callsSaid lists the calls a delivery made, for a crash that named
// another.
func (s *Session) callsSaid(id string) string {
	var out []string
	for _, pc := range s.deliveryCalls(id, nil) {
		out = append(out, fmt.Sprintf("%s at %s", callWhat(pc.c), pc.st.spec.Name))
	}
	switch len(out) {
	case 0:
		return "no call to any external"
	case 1:
		return "1 call (" + out[0] + ")"
	}
	return fmt.Sprintf("%d calls (%s)", len(out), strings.Join(out, "; "))
}
