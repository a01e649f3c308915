package external

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redeliver/redeliver/pkg/effects"
	"github.com/redeliver/redeliver/pkg/proc"
	"github.com/redeliver/redeliver/pkg/redact"
	"github.com/redeliver/redeliver/pkg/scenario"
	"github.com/redeliver/redeliver/pkg/sqlproxy"
	"github.com/redeliver/redeliver/pkg/template"
	"github.com/tidwall/gjson"
)

// Session is a target being tested: its channel, its started process
// (if any) and its effects database.
type Session struct {
	t    *scenario.Target
	fx   *scenario.Effects
	dl   deliverer
	proc *proc.Process // the first instance, or nil
	// procs are every instance of start (start.instances), proc first.
	procs []*proc.Process
	db    *effects.DB
	// proxy stands between the consumer and its database (effects.proxy);
	// dbURL is the database through it, the consumer's ${REDELIVER_DB_URL},
	// and jdbcURL the same for PgJDBC, its ${REDELIVER_JDBC_URL}.
	proxy *sqlproxy.Proxy
	// guardian ends the consumer's MySQL threads should redeliver be
	// killed (effects.Guardian).
	guardian *effects.Guardian
	// stands are the stand-ins of the externals the consumer calls;
	// flying counts the deliveries in flight by event, which label
	// their calls.
	stands   []*stand
	flightMu sync.Mutex
	flying   map[string]int
	dbURL    string
	jdbcURL  string
	// dbVar is the variable the consumer is pointed at the proxy with,
	// as messages name it: REDELIVER_JDBC_URL when its command or env
	// use that one alone.
	dbVar string
	// logs keeps the started instances' output, when set.
	logs *proc.ConsumerLogs
	// apart is how many statements of no delivery the last watched
	// delivery let through.
	apart int
	// killer is the nemesis of --kill-every, started at killerBegan:
	// the replay places its kills on its course.
	killer      *proc.Nemesis
	killerBegan time.Time
	// unclean is set when a delivery timed out or was refused: the
	// consumer may still be at work, or gone, and the session is not
	// used for another trial.
	unclean atomic.Bool
	// own tells which started instance owns each connection to the
	// proxy, behind a broker with several instances (owner.go); nil
	// otherwise.
	own *proc.Owners
}

// reusable reports whether the session can serve another trial after a
// reset of the effects database: every delivery was answered, every
// started instance is running, and no broker holds messages of this
// trial.
func (s *Session) reusable() bool {
	if s.t.Broker != nil || s.unclean.Load() {
		return false
	}
	for _, p := range s.procs {
		if !p.Running() {
			return false
		}
	}
	return true
}

// watching is a deliverer that marks its session unclean when a delivery
// ended with the consumer perhaps still at work on it.
type watching struct {
	deliverer
	s *Session
}

func (w watching) Deliver(ctx context.Context, ev Event, kill <-chan struct{}) Answer {
	w.s.inFlight(ev.ID, 1)
	defer w.s.inFlight(ev.ID, -1)
	a := w.deliverer.Deliver(ctx, ev, kill)
	// A kill cuts a delivery too, but the consumer was restarted where
	// it came: only a delivery the consumer may still be working on
	// leaves the session unclean.
	if a.TimedOut || a.Refused {
		w.s.unclean.Store(true)
	}
	return a
}

// Open connects to the effects database, starts the consumer (when the
// target says how) and runs the reset statements. Close stops it.
func Open(ctx context.Context, t *scenario.Target, fx *scenario.Effects) (*Session, error) {
	return open(ctx, t, fx, nil, nil)
}

// OpenWith is Open with stand-ins for the externals the consumer calls,
// started before it.
func OpenWith(ctx context.Context, t *scenario.Target, fx *scenario.Effects, exts []*scenario.External) (*Session, error) {
	return open(ctx, t, fx, exts, nil)
}

// open is OpenWith, keeping the started instances' output in logs when
// set.
func open(ctx context.Context, t *scenario.Target, fx *scenario.Effects, exts []*scenario.External, logs *proc.ConsumerLogs) (*Session, error) {
	s := &Session{t: t, fx: fx, logs: logs}
	db, err := effects.Open(ctx, fx)
	if err != nil {
		return nil, err
	}
	s.db = db
	vars, err := s.startProxyAndStandins(ctx, t, exts)
	if err != nil {
		s.Close()
		return nil, err
	}
	if len(vars) > 0 {
		t = withVars(t, vars)
		s.t = t
	}
	if t.Broker != nil {
		// The broker first: with create: true, the stream or queue must
		// exist before the consumer starts reading it.
		bd, err := openBroker(ctx, t)
		if err != nil {
			db.Close()
			return nil, err
		}
		s.dl = bd
		if t.Start != nil {
			if err := leftover(ctx, t, bd); err != nil {
				s.Close()
				return nil, err
			}
		}
	} else {
		s.dl = watching{newDeliverer(t), s}
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

// startProxyAndStandins starts the effects proxy, when the effects ask
// for it, and the externals' stand-ins, and returns the variables that
// point the consumer at them.
func (s *Session) startProxyAndStandins(ctx context.Context, t *scenario.Target, exts []*scenario.External) (map[string]string, error) {
	vars := map[string]string{}
	if s.fx.Proxy {
		if err := s.startProxy(ctx); err != nil {
			return nil, err
		}
		s.setDBVar(t)
		vars[scenario.DBURLVar], vars[scenario.JDBCURLVar] = s.dbURL, s.jdbcURL
		s.ownConnections(t)
	}
	if err := s.startStandins(ctx, exts); err != nil {
		return nil, err
	}
	for k, v := range s.externalVars() {
		vars[k] = v
	}
	return vars, nil
}

// Close stops the started consumer (SIGTERM, then SIGKILL to its process
// group) and closes the database.
func (s *Session) Close() {
	s.stopInstances()
	s.closeBroker()
	for _, st := range s.stands {
		st.rec.Close()
	}
	if s.proxy != nil {
		// The consumer is gone: what it left running in the database
		// ends now, not when the server next writes to its socket. The
		// run may have been interrupted, so this gets its own time.
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		s.endBackends(ctx)
		cancel()
		s.proxy.Close()
		s.guardian.Stop()
	}
	s.db.Close()
}

// clientCheck is how often a consumer's server process looks, while a
// statement runs, whether the proxy is still there: were redeliver killed
// with SIGKILL, nothing of it could end the consumer's backends, and one
// sleeping or waiting inside a statement would keep its locks until it
// next wrote to its socket.
const clientCheck = time.Second

// startProxy starts the proxy to the effects database.
func (s *Session) startProxy(ctx context.Context) error {
	up, err := effects.Upstream(s.fx.DB)
	if err != nil {
		return err
	}
	listen, ok := sqlproxy.Listeners[s.db.Kind()]
	if !ok {
		return fmt.Errorf("the database proxy relays no %s wire", effects.KindName(s.db.Kind()))
	}
	p, err := listen(up)
	if err != nil {
		return fmt.Errorf("cannot start the database proxy: %w", err)
	}
	s.proxy = p
	// MySQL has no client_connection_check_interval: a guardian, told
	// of each thread, ends them should redeliver be killed.
	if s.guardian, err = s.db.StartGuardian(); err != nil {
		return err
	}
	if s.guardian != nil {
		p.Track(s.guardian.Track)
	}
	// PostgreSQL 14 and later know the setting; an older server would
	// refuse every connection that sets it.
	if v, err := s.db.ServerVersion(ctx); err == nil && v >= 140000 {
		p.CheckClients(clientCheck)
	}
	if s.dbURL, err = effects.ProxyURL(s.fx.DB, p.Addr()); err != nil {
		return err
	}
	s.jdbcURL, err = effects.JDBCURL(s.fx.DB, p.Addr())
	return err
}

// withDBURL is the target with ${REDELIVER_DB_URL} filled in wherever its
// start or exec command and environment use it, and set in their
// environment.
func (s *Session) withDBURL(t *scenario.Target) *scenario.Target {
	s.setDBVar(t)
	return withVars(t, map[string]string{scenario.DBURLVar: s.dbURL, scenario.JDBCURLVar: s.jdbcURL})
}

// setDBVar notes which variable the consumer is pointed at the proxy
// with.
func (s *Session) setDBVar(t *scenario.Target) {
	s.dbVar = scenario.DBURLVar
	if uses(t, scenario.JDBCURLVar) && !uses(t, scenario.DBURLVar) {
		s.dbVar = scenario.JDBCURLVar
	}
}

// withVars is the target with each ${NAME} of vars filled in wherever its
// start or exec command and environment use it, and each set in their
// environment: the proxy's addresses, the stand-ins'.
func withVars(t *scenario.Target, vars map[string]string) *scenario.Target {
	var pairs []string
	for k, v := range vars {
		pairs = append(pairs, "${"+k+"}", v)
	}
	urls := strings.NewReplacer(pairs...)
	fill := func(command []string, env map[string]string) ([]string, map[string]string) {
		cmd := make([]string, len(command))
		for i, a := range command {
			cmd[i] = urls.Replace(a)
		}
		out := map[string]string{}
		for k, v := range vars {
			out[k] = v
		}
		for k, v := range env {
			out[k] = urls.Replace(v)
		}
		return cmd, out
	}
	c := *t
	if t.Start != nil {
		st := *t.Start
		st.Command, st.Env = fill(st.Command, st.Env)
		c.Start = &st
	}
	if t.Exec != nil {
		ex := *t.Exec
		ex.Command, ex.Env = fill(ex.Command, ex.Env)
		c.Exec = &ex
	}
	return &c
}

// uses reports whether the target's start or exec command or environment
// uses ${name}.
func uses(t *scenario.Target, name string) bool {
	ref := "${" + name + "}"
	var parts []string
	if t.Start != nil {
		parts = append(parts, t.Start.Command...)
		for _, v := range t.Start.Env {
			parts = append(parts, v)
		}
	}
	if t.Exec != nil {
		parts = append(parts, t.Exec.Command...)
		for _, v := range t.Exec.Env {
			parts = append(parts, v)
		}
	}
	return slices.ContainsFunc(parts, func(p string) bool { return strings.Contains(p, ref) })
}

// startInstances starts every instance of the consumer, each in its own
// process group, with REDELIVER_INSTANCE set to its number (1, 2, …).
// On a failure the ones started are left for Close to stop.
func (s *Session) startInstances(ctx context.Context) error {
	if err := proc.RefuseIfAnswered(ctx, s.t.Start); err != nil {
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
		p, err := proc.StartInstance(ctx, &spec, s.logs, i)
		if err != nil {
			return err
		}
		p.Dead = func(ctx context.Context) { s.endBackends(ctx) }
		s.procs = append(s.procs, p)
		if s.own != nil {
			s.own.Register(p)
		}
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
func (s *Session) Process() *proc.Process { return s.proc }

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
	if s.proxy != nil {
		// The proxy ended a connection of the consumer's: what the
		// consumer answered then says nothing of its code.
		if err := s.proxy.Err(); err != nil {
			return err
		}
	}
	if s.proc != nil {
		if a.Err != nil && !a.Killed && !a.TimedOut && s.t.HTTP != nil && s.dying() {
			// The consumer is on its way out: give its exit the time
			// to be seen.
			s.proc.Exited(2 * time.Second)
		}
		if died, msg := s.diedByItself(); died {
			return errors.New(msg)
		}
	}
	if s.t.Broker != nil && a.Err != nil {
		return a.Err
	}
	switch {
	case a.Err != nil && execError(a.Err) != nil:
		return execError(a.Err)
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

// execError is the ExecError err is or wraps, or nil.
func execError(err error) *ExecError {
	var xe *ExecError
	if errors.As(err, &xe) {
		return xe
	}
	return nil
}

// dying reports whether the started consumer is exiting, after a delivery
// to it got no answer. Its process says so where the system shows it
// (Linux); elsewhere, a consumer whose address refuses connections is
// taken for dying. A reset from a consumer that lives on is only a reset,
// and costs no wait.
func (s *Session) dying() bool {
	if exiting, known := s.proc.Exiting(); known {
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
	killed := time.Now()
	close(kill)
	if !answered {
		a = <-answers
		a.Killed = interrupted(a)
	}
	if s.proc == nil {
		// An exec delivery's process is dead once its answer is in.
		s.endBackends(ctx)
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
		a.KilledAt, a.Restarted = killed, time.Now()
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
