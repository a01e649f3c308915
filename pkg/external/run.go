package external

import (
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"math/rand/v2"
	"net"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/redeliver/redeliver/pkg/consumer"
	"github.com/redeliver/redeliver/pkg/effects"
	"github.com/redeliver/redeliver/pkg/handler"
	"github.com/redeliver/redeliver/pkg/invariant"
	"github.com/redeliver/redeliver/pkg/problem"
	"github.com/redeliver/redeliver/pkg/redact"
	"github.com/redeliver/redeliver/pkg/report/words"
	"github.com/redeliver/redeliver/pkg/runner"
	"github.com/redeliver/redeliver/pkg/scenario"
	"github.com/redeliver/redeliver/pkg/template"
	"github.com/tidwall/gjson"
)

// Strategy is what a target-mode file's results name as their strategy.
const Strategy handler.Strategy = "target"

// Options tune a target run.
type Options struct {
	// Seed chooses the delays of crash: random.
	Seed int64
}

// Session is a target being tested: its channel, its started process
// (if any) and its effects database.
type Session struct {
	t    *scenario.Target
	fx   *scenario.Effects
	dl   deliverer
	proc *Process // the first instance, or nil
	// procs are every instance of start (start.instances), proc first.
	procs []*Process
	db    *effects.DB
}

// Open connects to the effects database, starts the consumer (when the
// target says how) and runs the reset statements. Close stops it.
func Open(ctx context.Context, t *scenario.Target, fx *scenario.Effects) (*Session, error) {
	s := &Session{t: t, fx: fx}
	db, err := effects.Open(ctx, fx)
	if err != nil {
		return nil, err
	}
	s.db = db
	if t.Broker() {
		// The broker first: with create: true, the stream or queue must
		// exist before the consumer starts reading it.
		bd, err := openBroker(ctx, t)
		if err != nil {
			db.Close()
			return nil, err
		}
		s.dl = bd
	} else {
		s.dl = newDeliverer(t)
	}
	if t.Start != nil {
		if err := s.startInstances(ctx); err != nil {
			s.Close()
			return nil, err
		}
	}
	if err := db.Reset(ctx); err != nil {
		s.Close()
		return nil, err
	}
	if err := db.CheckIgnored(ctx); err != nil {
		s.Close()
		return nil, err
	}
	return s, nil
}

// Close stops the started consumer (SIGTERM, then SIGKILL to its process
// group) and closes the database.
func (s *Session) Close() {
	var wg sync.WaitGroup
	for _, p := range s.procs {
		wg.Add(1)
		go func() { defer wg.Done(); p.Stop() }()
	}
	wg.Wait()
	s.closeBroker()
	s.db.Close()
}

// startInstances starts every instance of the consumer, each in its own
// process group, with REDELIVER_INSTANCE set to its number (1, 2, …).
// On a failure the ones started are left for Close to stop.
func (s *Session) startInstances(ctx context.Context) error {
	if err := RefuseIfAnswered(ctx, s.t.Start); err != nil {
		return err
	}
	n := max(s.t.Start.Instances, 1)
	for i := 1; i <= n; i++ {
		spec := *s.t.Start
		if n > 1 {
			spec.Env = map[string]string{}
			for k, v := range s.t.Start.Env {
				spec.Env[k] = v
			}
			spec.Env["REDELIVER_INSTANCE"] = strconv.Itoa(i)
		}
		p, err := StartProcess(ctx, &spec)
		if err != nil {
			return err
		}
		s.procs = append(s.procs, p)
	}
	s.proc = s.procs[0]
	return nil
}

// diedByItself reports an instance that exited without being killed.
func (s *Session) diedByItself() (bool, string) {
	for _, p := range s.procs {
		if died, msg := p.DiedByItself(); died {
			return true, msg
		}
	}
	return false, ""
}

// crashInstance kills a random instance (SIGKILL to its process group),
// starts it again and waits until it is ready.
func (s *Session) crashInstance(ctx context.Context, rng *rand.Rand) error {
	if len(s.procs) == 0 {
		return nil
	}
	return s.procs[rng.IntN(len(s.procs))].Crash(ctx)
}

// Process is the started consumer, or nil.
func (s *Session) Process() *Process { return s.proc }

// Describe names the target in words.
func (s *Session) Describe() string {
	d := s.dl.Describe()
	if s.proc != nil {
		d += ", started as " + s.proc.Command()
		if len(s.procs) > 1 {
			d += fmt.Sprintf(" (%d instances)", len(s.procs))
		}
	}
	return d
}

// DescribeEffects names the effect table and database in words.
func (s *Session) DescribeEffects() string {
	what := "query"
	if s.fx.Table != "" {
		what = fmt.Sprintf("table %s (key %s)", s.fx.Table, s.fx.Key)
	}
	return what + " in " + effects.Describe(s.fx.DB)
}

// KeyOf is the business key a delivery should make an effect for.
func KeyOf(t template.Template, envelope []byte) string {
	return t.Expand(func(name string) string { return gjson.GetBytes(envelope, name).String() })
}

// deliver sends one event and classifies what came back as the harness
// sees it: an answer, or an error that ends the run (nothing listens, the
// consumer exited by itself, it hung past its timeout unless the step
// expected no answer).
func (s *Session) deliver(ctx context.Context, ev Event, kill <-chan struct{}) Answer {
	return s.dl.Deliver(ctx, ev, kill)
}

// harnessError says why an answer ends the run, or returns nil.
func (s *Session) harnessError(a Answer, ev Event, tolerateTimeout bool) error {
	if s.proc != nil {
		if a.Err != nil && !a.Killed && !a.TimedOut && s.t.HTTP != nil && s.dying() {
			// The consumer is on its way out: give its exit the time
			// to be seen.
			s.proc.exited(2 * time.Second)
		}
		if died, msg := s.diedByItself(); died {
			return errors.New(msg)
		}
	}
	if s.t.Broker() && a.Err != nil {
		return a.Err
	}
	var xe *ExecError
	switch {
	case errors.As(a.Err, &xe):
		return xe
	case a.Killed:
		return nil
	case a.Refused:
		if s.t.HTTP != nil {
			return fmt.Errorf("cannot reach the consumer at %s: connection refused (is it running? target start can run it)", redact.String(s.t.HTTP.URL))
		}
	case a.TimedOut && !tolerateTimeout:
		return fmt.Errorf("the consumer (%s) did not answer %s within %s: it hangs, or its timeout is too short", s.dl.Describe(), ev.ID, s.t.Timeout())
	}
	return nil
}

// dying reports whether the started consumer is exiting, after a delivery
// to it got no answer. Its process says so where the system shows it
// (Linux); elsewhere, a consumer whose address refuses connections is
// taken for dying. A reset from a consumer that lives on is only a reset,
// and costs no wait.
func (s *Session) dying() bool {
	if exiting, known := s.proc.exiting(); known {
		return exiting
	}
	return !s.listening()
}

// listening reports whether an HTTP target's address accepts a connection.
func (s *Session) listening() bool {
	u, err := url.Parse(s.t.HTTP.URL)
	if err != nil {
		return false
	}
	host := u.Host
	if u.Port() == "" {
		port := "80"
		if u.Scheme == "https" {
			port = "443"
		}
		host = net.JoinHostPort(u.Hostname(), port)
	}
	c, err := net.DialTimeout("tcp", host, 200*time.Millisecond)
	if err != nil {
		return false
	}
	c.Close()
	return true
}

// crash kills the consumer after d — the started process for HTTP, the
// delivery's own process for exec — whether or not it has answered, then
// restarts it and waits until it is ready.
func (s *Session) crash(ctx context.Context, ev Event, d time.Duration) (Answer, error) {
	kill := make(chan struct{})
	answers := make(chan Answer, 1)
	go func() { answers <- s.dl.Deliver(ctx, ev, kill) }()
	timer := time.NewTimer(d)
	defer timer.Stop()
	var a Answer
	answered := false
	select {
	case <-timer.C:
	case <-ctx.Done():
		return <-answers, ctx.Err()
	case a = <-answers:
		// It answered first; the kill still comes at d, as a crash would.
		answered = true
		select {
		case <-timer.C:
		case <-ctx.Done():
			return a, ctx.Err()
		}
	}
	if s.proc != nil {
		s.proc.Kill()
	}
	close(kill)
	if !answered {
		a = <-answers
		a.Killed = interrupted(a)
	}
	// A delivery that timed out had no answer when the kill came either.
	a.CrashCame = AfterAnswer
	if a.Killed || a.TimedOut {
		a.CrashCame = BeforeAnswer
	}
	if s.proc != nil {
		if err := s.proc.Restart(ctx); err != nil {
			return a, err
		}
		s.dl.Forget()
	}
	return a, nil
}

// interrupted reports whether an answer that came back after the kill
// was cut short by it: an exec process killed before it exited, or an
// HTTP request that got no status. A status or an exit that raced the
// kill and won is the consumer's own answer, and it stands.
func interrupted(a Answer) bool {
	return a.Killed || (a.Status == 0 && a.Err != nil && !a.TimedOut)
}

// run is one scenario file on its way.
type run struct {
	s        *scenario.Scenario
	sess     *Session
	rng      *rand.Rand
	history  []*Delivery
	seen     map[string]bool // event ids and keys delivered so far
	acked    map[string]bool // event ids the consumer acked so far
	reported map[string]bool
	broker   brokerCounts
	mu       sync.Mutex
}

// checkRun is one check on its way.
type checkRun struct {
	*run
	res   *runner.CheckResult
	index int
}

// RunFile runs every check of a target-mode scenario file.
func RunFile(ctx context.Context, s *scenario.Scenario, opts Options) (*runner.FileResult, error) {
	res := &runner.FileResult{File: s.File, Name: s.Name, Strategy: Strategy, Invariants: Invariants}
	sess, err := Open(ctx, s.Target, s.Effects)
	if err != nil {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		return nil, problem.Environmentf(problem.Pos{File: s.File}, errors.New(withLeft(err.Error(), notCompleted(s, 0, 0))))
	}
	defer sess.Close()
	res.Target, res.Effects = sess.Describe(), sess.DescribeEffects()
	h := fnv.New64a()
	h.Write([]byte(s.File))
	r := &run{s: s, sess: sess, rng: rand.New(rand.NewPCG(uint64(opts.Seed), h.Sum64())), seen: map[string]bool{}, acked: map[string]bool{}, reported: map[string]bool{}}
	for i, c := range s.Checks {
		start := time.Now()
		cr := &checkRun{run: r, res: &runner.CheckResult{Name: c.Name, Pos: c.Pos, Declared: c.Violations}, index: i + 1}
		step, err := cr.check(ctx, c)
		if err != nil {
			if ctx.Err() != nil {
				return res, ctx.Err()
			}
			return res, problem.Environmentf(problem.Pos{File: s.File}, errors.New(withLeft(err.Error(), notCompleted(s, i, step))))
		}
		cr.res.Duration = time.Since(start)
		res.Checks = append(res.Checks, *cr.res)
		res.Counters.Add(cr.res.Counters)
		res.Counters.Effects = cr.res.Counters.Effects
	}
	return res, nil
}

// check runs one check; on an error it returns the step (0-based) it
// stopped at.
func (cr *checkRun) check(ctx context.Context, c *scenario.Check) (int, error) {
	for i, st := range c.Steps {
		if err := ctx.Err(); err != nil {
			return i, err
		}
		var err error
		switch st.Kind {
		case scenario.Deliver:
			err = cr.deliverStep(ctx, i+1, st)
		case scenario.Inspect:
			if err = cr.drain(ctx); err == nil {
				err = cr.inspect(ctx, i+1, st.State)
			}
		case scenario.Advance:
			// The consumer keeps its own clock: nothing to move.
		}
		if err != nil {
			return i, err
		}
	}
	if err := cr.drain(ctx); err != nil {
		return len(c.Steps), err
	}
	if c.Expect != nil {
		if err := cr.inspect(ctx, 0, c.Expect); err != nil {
			return len(c.Steps), err
		}
	}
	rows, err := cr.sess.db.Rows(ctx, nil)
	if err != nil {
		return len(c.Steps), err
	}
	table := cr.sess.fx.Table
	if table == "" {
		table = "the effects query"
	}
	for _, v := range judge(cr.history, rows, table) {
		if cr.reported[v.Key()] {
			continue
		}
		cr.reported[v.Key()] = true
		cr.res.Violations = append(cr.res.Violations, v)
	}
	cr.res.Counters.Effects = len(rows)
	runner.Verdict(cr.res, c)
	return len(c.Steps), cr.line(ctx, c)
}

// drain waits for a broker target's consumer to take what was published,
// and adds what the broker redelivered meanwhile to the check's counters.
func (cr *checkRun) drain(ctx context.Context) error {
	if !cr.sess.t.Broker() {
		return nil
	}
	if err := cr.sess.drain(ctx, &cr.broker); err != nil {
		return err
	}
	cr.res.Counters.BrokerRedelivered += int(cr.broker.delta)
	cr.res.Counters.Uncounted = cr.broker.uncounted
	cr.broker.delta = 0
	return nil
}

func (cr *checkRun) fail(step int, pos consumer.Location, m words.Miss) {
	cr.res.Failures = append(cr.res.Failures, runner.Failure{Step: step, Pos: pos, Message: m.Message, Expected: m.Expected, Got: m.Got})
}

// deliverStep runs one deliver step with its faults.
func (cr *checkRun) deliverStep(ctx context.Context, step int, st *scenario.Step) error {
	ev := EventOf(st.Event.Envelope)
	ev.MsgID = st.MessageID
	key := KeyOf(cr.sess.fx.KeyOf, st.Event.Envelope)
	if st.Concurrent > 0 {
		return cr.concurrent(ctx, step, st, ev, key)
	}
	tolerate := st.Expect != nil && st.Expect.Answer == string(Unacked)
	for n := 1; n <= st.Times; n++ {
		if st.Delay > 0 {
			if err := sleep(ctx, st.Delay); err != nil {
				return err
			}
		}
		a, err := cr.faulted(ctx, step, st, ev, key, tolerate)
		if err != nil {
			return err
		}
		if st.Expect == nil {
			if _, err := cr.redeliver(ctx, step, st, ev, key, a); err != nil {
				return err
			}
		}
		cr.expect(step, n, st, a)
	}
	return nil
}

// redeliver redelivers an event whose delivery got no ack, as a broker
// would, after the wait the consumer asked for (Retry-After), until it is
// answered or maxRedeliveries went unanswered; never-acked judges what
// is left. A broker target's broker redelivers by itself.
func (cr *checkRun) redeliver(ctx context.Context, step int, st *scenario.Step, ev Event, key string, a Answer) (Answer, error) {
	if cr.sess.t.Broker() {
		return a, nil
	}
	for n := 0; n < maxRedeliveries && a.Kind == Unacked; n++ {
		if a.RetryAfter > 0 {
			if err := sleep(ctx, a.RetryAfter); err != nil {
				return a, err
			}
		}
		var err error
		if a, err = cr.plain(ctx, step, st, ev, key, false); err != nil {
			return a, err
		}
	}
	return a, nil
}

// faulted delivers once with the step's faults, and redelivers as a broker
// would when no answer arrived; it returns the last answer.
func (cr *checkRun) faulted(ctx context.Context, step int, st *scenario.Step, ev Event, key string, tolerate bool) (Answer, error) {
	switch {
	case st.Drop:
		a, err := cr.once(ctx, step, st, ev, key, tolerate, func() (Answer, error) {
			a := cr.sess.deliver(ctx, ev, nil)
			if a.Err == nil {
				a.Kind, a.Dropped = Unacked, true
			}
			return a, nil
		})
		if err != nil || !a.Dropped {
			return a, err
		}
		return cr.plain(ctx, step, st, ev, key, tolerate)
	case st.Crash != nil && cr.sess.t.Broker():
		// Publish, then kill a random instance: the broker redelivers
		// whatever that instance held unacknowledged.
		d := cr.crashDelays(st.Crash)[0]
		return cr.once(ctx, step, st, ev, key, true, func() (Answer, error) {
			a := cr.sess.deliver(ctx, ev, nil)
			if a.Err != nil {
				return a, nil
			}
			if err := sleep(ctx, d); err != nil {
				return a, err
			}
			a.Crashed, a.CrashCame = true, Unknown
			return a, cr.sess.crashInstance(ctx, cr.rng)
		})
	case st.Crash != nil:
		var a Answer
		var err error
		delays := cr.crashDelays(st.Crash)
		for _, d := range delays {
			a, err = cr.once(ctx, step, st, ev, key, true, func() (Answer, error) {
				a, err := cr.sess.crash(ctx, ev, d)
				a.Crashed = true
				return a, err
			})
			if err != nil || a.Kind != Unacked {
				return a, err
			}
		}
		// No ack arrived: the broker redelivers.
		return cr.plain(ctx, step, st, ev, key, tolerate)
	}
	return cr.plain(ctx, step, st, ev, key, tolerate)
}

// crashDelays are the kill delays of a crash: one, or a sweep 0, 1, 2, 4 …
// ms up to the target's timeout.
func (cr *checkRun) crashDelays(c *scenario.Crash) []time.Duration {
	switch c.Kind {
	case scenario.CrashAfter:
		return []time.Duration{c.After}
	case scenario.CrashRandom:
		limit := min(cr.sess.t.Timeout(), 100*time.Millisecond)
		return []time.Duration{time.Duration(cr.rng.Int64N(int64(limit)))}
	}
	return SweepDelays(cr.sess.t.Timeout())
}

// SweepDelays are the kill delays of crash: sweep: 0, 1, 2, 4 … ms, up to limit.
func SweepDelays(limit time.Duration) []time.Duration {
	out := []time.Duration{0}
	for d := time.Millisecond; d <= limit; d *= 2 {
		out = append(out, d)
	}
	return out
}

func (cr *checkRun) plain(ctx context.Context, step int, st *scenario.Step, ev Event, key string, tolerate bool) (Answer, error) {
	return cr.once(ctx, step, st, ev, key, tolerate, func() (Answer, error) { return cr.sess.deliver(ctx, ev, nil), nil })
}

// once makes one delivery through send, records it, and compares the
// key's rows before and after a conflict answer.
func (cr *checkRun) once(ctx context.Context, step int, st *scenario.Step, ev Event, key string, tolerate bool, send func() (Answer, error)) (Answer, error) {
	var before []effects.Row
	seen := cr.seen[ev.ID] || cr.seen["\x00"+key]
	acked := cr.acked[ev.ID] && !cr.sess.t.Broker()
	if seen {
		var err error
		if before, err = cr.sess.db.Rows(ctx, &key); err != nil {
			return Answer{}, err
		}
	}
	a, err := send()
	if err == nil && ctx.Err() != nil {
		err = ctx.Err()
	}
	if err != nil {
		return a, err
	}
	if herr := cr.sess.harnessError(a, ev, tolerate); herr != nil {
		return a, herr
	}
	d := cr.record(step, st, ev, key, a)
	cr.seen[ev.ID], cr.seen["\x00"+key] = true, true
	if a.consumerAcked() {
		cr.acked[ev.ID] = true
	}
	if seen && (a.Kind == Conflict || acked) {
		after, err := cr.sess.db.Rows(ctx, &key)
		if err != nil {
			return a, err
		}
		if a.Kind == Conflict {
			d.Changed = changed(before, after)
			d.ChangedStore = d.Changed != ""
			cr.res.History[len(cr.res.History)-1].ChangedStore = d.ChangedStore
		} else {
			d.Duplicated = duplicated(before, after)
		}
	}
	return a, nil
}

// record appends a delivery to the history and counts it.
func (cr *checkRun) record(step int, st *scenario.Step, ev Event, key string, a Answer) *Delivery {
	cr.mu.Lock()
	defer cr.mu.Unlock()
	res := consumer.Result{Outcome: consumer.Outcome(a.Kind)}
	if a.Kind == Unacked || a.Killed {
		res.Err = errors.New(a.String())
	}
	d := &Delivery{Record: invariant.Record{Seq: len(cr.history) + 1, EventID: ev.ID, Key: key, Result: res, Check: cr.index, Step: step, Pos: st.Pos}, Answer: a, Expected: st.Expect != nil}
	cr.history = append(cr.history, d)
	cr.res.History = append(cr.res.History, d.Record)
	count(&cr.res.Counters, a, cr.seen[ev.ID], cr.sess.t.Broker())
	return d
}

// concurrent makes N deliveries of the same event at once.
func (cr *checkRun) concurrent(ctx context.Context, step int, st *scenario.Step, ev Event, key string) error {
	if st.Delay > 0 {
		if err := sleep(ctx, st.Delay); err != nil {
			return err
		}
	}
	gate := make(chan struct{})
	answers := make([]Answer, st.Concurrent)
	var wg sync.WaitGroup
	for i := range answers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-gate
			answers[i] = cr.sess.deliver(ctx, ev, nil)
		}()
	}
	close(gate)
	wg.Wait()
	if err := ctx.Err(); err != nil {
		return err
	}
	answered := false
	for _, a := range answers {
		if err := cr.sess.harnessError(a, ev, false); err != nil {
			return err
		}
		cr.record(step, st, ev, key, a)
		cr.seen[ev.ID], cr.seen["\x00"+key] = true, true
		if a.consumerAcked() {
			cr.acked[ev.ID] = true
		}
		answered = answered || a.Kind != Unacked
	}
	if !answered {
		// None of the workers took it: the broker redelivers it.
		_, err := cr.redeliver(ctx, step, st, ev, key, answers[len(answers)-1])
		return err
	}
	return nil
}

func (cr *checkRun) expect(step, n int, st *scenario.Step, a Answer) {
	e := st.Expect
	if e == nil {
		return
	}
	name := words.Step(step, n, st.Times)
	if e.Answer != "" && string(a.Kind) != e.Answer {
		cr.fail(step, st.Pos, words.Outcome(name, e.Answer, string(a.Kind), a.String()))
	}
	if e.Status != 0 && a.Status != e.Status {
		cr.fail(step, st.Pos, words.Status(name, e.Status, a.Status, a.String()))
	}
}

func (cr *checkRun) inspect(ctx context.Context, step int, s *scenario.State) error {
	name := words.Step(step, 1, 1)
	for _, rc := range s.Rows {
		n, err := cr.sess.db.Count(ctx, rc.Table)
		if err != nil {
			return err
		}
		if n != rc.N {
			cr.fail(step, rc.Pos, words.Rows(name, rc.N, rc.Table, n))
		}
	}
	for _, kc := range s.Effects {
		key := kc.Key
		rows, err := cr.sess.db.Rows(ctx, &key)
		if err != nil {
			return err
		}
		if n := int64(len(rows)); n != kc.N {
			cr.fail(step, kc.Pos, words.KeyRows(name, kc.N, kc.Key, n))
		}
	}
	return nil
}

// line is the check's report line: its say, or a summary of the answers.
func (cr *checkRun) line(ctx context.Context, c *scenario.Check) error {
	cnt := cr.res.Counters
	var names []string
	for _, v := range cr.res.Violations {
		if !contains(names, string(v.Invariant)) {
			names = append(names, string(v.Invariant))
		}
	}
	if c.Say.IsZero() {
		cr.res.Line = summary(cr.res.History, cnt, names, cr.sess.rowsWhere())
	} else if err := cr.said(ctx, c, cnt, names); err != nil {
		return err
	}
	if cnt.InterruptedNone() {
		// Whatever the line says, a PASS must not claim a crash
		// interrupted a delivery when none did.
		cr.res.Line += "; " + words.NotInterrupted(cnt.Crashed)
	}
	return nil
}

// said expands the check's say into its line.
func (cr *checkRun) said(ctx context.Context, c *scenario.Check, cnt consumer.Counters, names []string) error {
	values := runner.SayValues(cnt, names)
	// A consumer under test has no duplicate outcome: its duplicates are
	// the redeliveries it was sent.
	values["duplicates"] = strconv.Itoa(cnt.Redeliveries)
	for _, f := range c.Say.Fields() {
		if t, ok := strings.CutPrefix(f, "rows."); ok {
			n, err := cr.sess.db.Count(ctx, t)
			if err != nil {
				return err
			}
			values[f] = strconv.FormatInt(n, 10)
		}
	}
	cr.res.Line = c.Say.Expand(func(name string) string { return values[name] })
	return nil
}

// rowsWhere says whose rows the effect rows are: the whole effect table
// (or what the effects query returns), not only the check's keys.
func (s *Session) rowsWhere() string {
	if s.fx.Table != "" {
		return "in " + s.fx.Table
	}
	return "from the effects query"
}

// summary is the line of a check without say: the answers, the crashes by
// when they came, the effect rows (where: "in payments") and what was
// caught.
func summary(history []invariant.Record, c consumer.Counters, caught []string, where string) string {
	counts := map[consumer.Outcome]int{}
	for _, r := range history {
		counts[r.Result.Outcome]++
	}
	var tallies []words.Tally
	for _, k := range []Kind{Acked, Conflict, Rejected, Unacked} {
		tallies = append(tallies, words.Tally{N: counts[consumer.Outcome(k)], Word: string(k)})
	}
	tallies = append(tallies, words.Tally{N: c.Crashed, Said: words.Crashes(c.Interrupted())})
	return words.Summary(c.Deliveries, tallies, words.Count(int64(c.Effects), "effect row")+" "+where, caught)
}

func contains(xs []string, s string) bool {
	for _, x := range xs {
		if x == s {
			return true
		}
	}
	return false
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

// notCompleted lists the deliveries of the file that did not complete,
// from check ci (0-based), step from on.
func notCompleted(s *scenario.Scenario, ci, from int) string {
	var left []string
	count := 0
	for c := ci; c < len(s.Checks); c++ {
		for i, st := range s.Checks[c].Steps {
			if (c == ci && i < from) || st.Kind != scenario.Deliver {
				continue
			}
			n := max(st.Times, st.Concurrent)
			count += n
			if len(left) < 8 {
				d := st.Event.ID
				if n > 1 {
					d += fmt.Sprintf(" ×%d", n)
				}
				left = append(left, fmt.Sprintf("%s (%s)", d, st.Pos))
			}
		}
	}
	switch {
	case count == 0:
		return ""
	case count == 1:
		return "; 1 delivery did not complete: " + strings.Join(left, ", ")
	}
	more := ""
	if count > len(left) && len(left) == 8 {
		more = ", and more"
	}
	return fmt.Sprintf("; %d deliveries did not complete: %s%s", count, strings.Join(left, ", "), more)
}

// withLeft puts the list of deliveries that did not complete into an
// error's sentence, before the consumer's stderr lines if it shows them.
func withLeft(msg, left string) string {
	if i := strings.Index(msg, stderrIntro); i >= 0 {
		return msg[:i] + left + msg[i:]
	}
	return msg + left
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
		}
	}
	if broker && a.Kind == Acked {
		c.Published++
	}
}
