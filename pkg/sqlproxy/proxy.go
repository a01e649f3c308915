// Package sqlproxy stands between a consumer under test and its PostgreSQL
// database — or its MySQL or MariaDB one (ListenMySQL, mysql.go): the
// watch, boundaries, holds and transactions are the same for both, only
// the wire differs — it relays the wire protocol both ways, unchanged, and sees
// every statement the consumer sends and every answer it gets. While a
// delivery is being watched it counts the delivery's statements, keeps
// their trace, and can hold a connection exactly at a statement boundary
// — before statement k reaches the database, or after its answer and
// before the consumer sees it, with the database as the consumer would
// find it then (an autocommitted statement committed) — so that the
// consumer can be killed, or another worker let run, at that point and
// no other.
//
// Authentication passes through untouched (trust, md5, SCRAM); a request
// for TLS is answered "no", so the consumer connects in plain TCP;
// cancel requests are forwarded to the server. On MySQL the greeting
// offers no TLS, so the consumer goes on in plain TCP.
//
// It imports no other package of this module (pkg/external drives it) and
// links no database driver: it speaks both wires itself.
package sqlproxy

import (
	"bufio"
	"context"
	"encoding/binary"
	"errors"
	"io"
	"net"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// Proxy relays connections from 127.0.0.1 to one PostgreSQL server.
type Proxy struct {
	upstream string
	// mysql: it relays the MySQL protocol (mysql.go).
	mysql bool
	ln    net.Listener
	dial  func(ctx context.Context) (net.Conn, error)

	mu     sync.Mutex
	conns  map[*conn]struct{}
	watch  *Watch
	nextID int
	closed bool
	// broken is why the proxy first ended a connection itself.
	broken error
	// backends are the server processes of the connections, by pid
	// (backends.go).
	backends map[int32]Backend
	// track is told of what backends learns and forgets (Track).
	track func(pid int32, known bool)
	// tlsRefused counts the connections that asked for TLS.
	tlsRefused atomic.Int64
	// checkEvery is how often, in milliseconds, a connection's server
	// process looks whether its client is gone (0: the server's own
	// setting).
	checkEvery atomic.Int64
	// owners, when set, says who owns each connection (owner.go).
	owners *owners
	wg     sync.WaitGroup
}

// Listen starts a proxy for the server at upstream (host:port) on a free
// port of 127.0.0.1.
func Listen(upstream string) (*Proxy, error) { return listen(upstream, false) }

// Listeners start a proxy by the kind of database whose wire it relays,
// named as pkg/effects names the kinds (postgres, mysql): a database with
// a wire of its own adds its listener here.
var Listeners = map[string]func(upstream string) (*Proxy, error){
	"postgres": Listen,
	"mysql":    ListenMySQL,
}

// listen starts a proxy for the PostgreSQL server at upstream, or the
// MySQL one.
func listen(upstream string, mysql bool) (*Proxy, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	p := &Proxy{upstream: upstream, ln: ln, conns: map[*conn]struct{}{}, mysql: mysql}
	var d net.Dialer
	p.dial = func(ctx context.Context) (net.Conn, error) { return d.DialContext(ctx, "tcp", upstream) }
	p.wg.Add(1)
	go p.accept()
	return p, nil
}

// Addr is the proxy's host:port.
func (p *Proxy) Addr() string { return p.ln.Addr().String() }

// Port is the proxy's port.
func (p *Proxy) Port() int { return p.ln.Addr().(*net.TCPAddr).Port }

// TLSRefused reports how many connections asked for TLS and were told no.
func (p *Proxy) TLSRefused() int64 { return p.tlsRefused.Load() }

// CheckClients has the server process of every connection made from now
// on look every d, while a statement runs, whether the proxy's side of
// its socket is still open (client_connection_check_interval, which
// PostgreSQL 14 and later know; an older server refuses connections that
// set it). Should redeliver itself be killed, the kernel closes its
// sockets and a backend sleeping or waiting inside a statement ends
// within d, with its locks, instead of when it next writes.
func (p *Proxy) CheckClients(d time.Duration) {
	p.checkEvery.Store(d.Milliseconds())
}

// Err is why the proxy ended a connection, the first time it did: a
// message that broke the wire protocol, or too large to read whole.
func (p *Proxy) Err() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.broken
}

func (p *Proxy) broke(err error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.broken == nil {
		p.broken = err
	}
}

// Close stops listening and ends every connection.
func (p *Proxy) Close() error {
	p.mu.Lock()
	p.closed = true
	conns := make([]*conn, 0, len(p.conns))
	for c := range p.conns {
		conns = append(conns, c)
	}
	w := p.watch
	p.mu.Unlock()
	if w != nil {
		// A connection held at a boundary waits for its hold to end:
		// cut it, or it would wait for ever.
		w.Cut()
	}
	p.stopOwners()
	err := p.ln.Close()
	for _, c := range conns {
		c.close()
	}
	p.wg.Wait()
	return err
}

func (p *Proxy) accept() {
	defer p.wg.Done()
	for {
		nc, err := p.ln.Accept()
		if err != nil {
			return
		}
		p.mu.Lock()
		if p.closed {
			p.mu.Unlock()
			nc.Close()
			return
		}
		p.nextID++
		c := &conn{p: p, id: p.nextID, client: nc, stmts: map[string]string{}, preps: map[string]*prepared{}, portals: map[string]*Statement{}}
		c.own = p.ask(c.id, nc)
		p.conns[c] = struct{}{}
		p.wg.Add(1)
		p.mu.Unlock()
		go func() {
			defer p.wg.Done()
			c.serve()
			p.mu.Lock()
			delete(p.conns, c)
			p.mu.Unlock()
		}()
	}
}

// current is the watch in progress, or nil.
func (p *Proxy) current() *Watch {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.watch
}

// conn is one client connection and its connection to the server.
type conn struct {
	p        *Proxy
	id       int
	client   net.Conn
	server   net.Conn
	closeOne sync.Once
	closed   atomic.Bool // its client and server connections are closed

	// Seen by the client-to-server side only.
	stmts   map[string]string     // prepared statements by name: their text
	preps   map[string]*prepared  // and the types of their parameters
	portals map[string]*Statement // portals by name: the statement bound
	pid     atomic.Int32          // the server process, from BackendKeyData
	// syncs counts the client's Syncs; unsynced are the statements
	// bound since the last one.
	syncs    int
	unsynced []*Statement
	// describing are the statements Described whose
	// ParameterDescription has not come (c.mu).
	describing []*prepared
	// own is who owns its client end, when the proxy asks (owner.go).
	own *ownerSlot

	mu sync.Mutex
	// pending are the statements sent to the server and not yet
	// answered, in order.
	pending []*Statement
	tx      txState
	// my is a MySQL connection's state (mysql.go).
	my *myConn
}

func (c *conn) close() {
	c.closeOne.Do(func() {
		c.closed.Store(true)
		c.client.Close()
		if c.server != nil {
			c.server.Close()
		}
	})
}

// serve answers the startup of a connection, then relays it.
func (c *conn) serve() {
	if c.p.mysql {
		c.serveMySQL()
		return
	}
	defer c.close()
	for {
		st, err := readStartup(c.client)
		if err != nil {
			return
		}
		switch st.code {
		case codeSSL, codeGSSENC:
			// No TLS and no GSS encryption: the client may go on in
			// plain TCP, or give up (sslmode=require).
			if st.code == codeSSL {
				c.p.tlsRefused.Add(1)
			}
			if _, err := c.client.Write([]byte{'N'}); err != nil {
				return
			}
			continue
		case codeCancel:
			c.cancel(st.raw)
			return
		}
		server, err := c.p.dial(context.Background())
		if err != nil {
			return
		}
		c.mu.Lock()
		c.server = server
		c.mu.Unlock()
		if ms := c.p.checkEvery.Load(); ms > 0 {
			st.raw = withParam(st.raw, checkParam, strconv.FormatInt(ms, 10))
		}
		if _, err := server.Write(st.raw); err != nil {
			return
		}
		break
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		c.fromServer()
		c.close()
	}()
	c.fromClient()
	c.close()
	<-done
}

// cancel forwards a cancel request to the server on a connection of its
// own, as the protocol wants.
func (c *conn) cancel(raw []byte) {
	ctx, stop := context.WithTimeout(context.Background(), 5*time.Second)
	defer stop()
	s, err := c.p.dial(ctx)
	if err != nil {
		return
	}
	defer s.Close()
	_, _ = s.Write(raw)
	// The server closes it once it has read the request.
	_, _ = io.Copy(io.Discard, s)
}

// fromClient relays what the client sends, statement by statement.
func (c *conn) fromClient() {
	r := bufio.NewReaderSize(c.client, 32<<10)
	w := bufio.NewWriterSize(c.server, 32<<10)
	var buf []byte
	// gate is the statement whose answer is held, until its hold ends:
	// what the client sends meanwhile waits if it would run anything.
	var gate *Statement
	for {
		m, err := c.read(r, w, buf, streamsFromClient)
		if err != nil {
			return
		}
		if m.raw == nil {
			continue
		}
		buf = m.raw[:0]
		if gate != nil {
			pass, ok := gate.admit(m.typ, w)
			if !ok {
				return
			}
			if !pass {
				gate = nil
			}
		}
		sts, executed := c.starts(m)
		for _, st := range sts {
			if !c.send(st, w) {
				return
			}
		}
		if g := c.executing(executed); g != nil {
			gate = g
		}
		if _, err := w.Write(m.raw); err != nil {
			return
		}
		if r.Buffered() == 0 {
			if err := w.Flush(); err != nil {
				return
			}
		}
	}
}

// starts follows what a message from the client does to the connection's
// prepared statements, portals and syncs, and returns the statements it
// starts (sts, to be counted and held before) and the one whose execution
// it starts or runs on (executed). A statement is counted, and held
// before, at the message that starts its execution: a simple Query, or a
// Bind — where the server takes the snapshot a SELECT reads, so that
// holding the Execute alone would let it read the past.
func (c *conn) starts(m message) (sts []*Statement, executed *Statement) {
	switch m.typ {
	case 'Q':
		sts = queryStatements(queryText(m))
		// Only the last statement of a query can be held after: the
		// server answers at once for all of them.
		if n := len(sts); n > 0 {
			executed = sts[n-1]
		}
	case 'P':
		if name, text, ok := parseMsg(m); ok {
			c.stmts[name] = text
			p := &prepared{}
			if types := parseTypes(m); len(types) > 0 {
				p.types.Store(&types)
			}
			c.preps[name] = p
		}
	case 'D':
		if name, ok := describeStatement(m); ok && c.preps[name] != nil {
			c.mu.Lock()
			c.describing = append(c.describing, c.preps[name])
			c.mu.Unlock()
		}
	case 'B':
		if portal, stmt, ok := bindMsg(m); ok {
			st := &Statement{Text: c.stmts[stmt], Extended: true, Name: stmt, values: c.watchedValues(m)}
			if st.values != nil {
				st.bound = &bound{values: st.values, formats: bindFormats(m), prep: c.preps[stmt]}
			}
			c.portals[portal] = st
			c.unsynced = append(c.unsynced, st)
			sts = []*Statement{st}
		}
	case 'E':
		if portal, ok := executeMsg(m); ok {
			executed = c.portals[portal]
		}
	case 'S':
		c.syncs++
		c.mu.Lock()
		for _, st := range c.unsynced {
			st.Sync = c.syncs
		}
		c.mu.Unlock()
		clear(c.unsynced)
		c.unsynced = c.unsynced[:0]
	case 'C':
		if kind, name, ok := closeMsg(m); ok {
			if kind == 'S' {
				delete(c.stmts, name)
				delete(c.preps, name)
			} else {
				delete(c.portals, name)
			}
		}
	}
	return sts, executed
}

// executing counts an execution of executed (nil: none) and returns it
// as the gate when its answer is to be held: what the client sends until
// the hold ends waits if it would run anything.
func (c *conn) executing(executed *Statement) (gate *Statement) {
	if executed == nil {
		return nil
	}
	c.mu.Lock()
	executed.execs++
	if executed.execs > 1 && !executed.simple {
		// A suspended portal run on: its next answer is its own, not the
		// next statement's.
		c.pending = append(c.pending, executed)
	}
	if executed.holdAnswer && executed.settled == nil {
		// Before the server can answer, so that it finds where to hold.
		executed.settled = make(chan struct{})
		gate = executed
	}
	c.mu.Unlock()
	if gate != nil && executed.simple {
		gate.settle(true)
	}
	return gate
}

// admit decides, while st's answer is held, whether the client's next
// message of type typ goes on now (true) or waited for the hold to end
// (false, after the wait). COPY data always goes on: the statement
// itself needs it. In the extended protocol, where the answer is held
// is settled here: at the ReadyForQuery if a Sync comes before anything
// else runs — an autocommitted statement is committed then, as the
// consumer would find it — or at the answer itself if the client asks
// for it first (Flush) or sends another statement (a pipeline). It
// returns ok false when the connection is to end.
func (st *Statement) admit(typ byte, w *bufio.Writer) (pass, ok bool) {
	if typ == 'd' || typ == 'c' || typ == 'f' {
		return true, true
	}
	atReady, settled := st.settledAt()
	switch {
	case !settled && typ == 'S':
		st.settle(true)
		return true, true
	case !settled && typ == 'H':
		st.settle(false)
		return true, true
	case !settled && (typ == 'P' || typ == 'D' || typ == 'C'):
		// They prepare, describe or close: nothing runs.
		return true, true
	case !settled:
		st.settle(false)
		if _, err := w.Write(flushMsg); err != nil {
			return false, false
		}
	case atReady && (typ == 'S' || typ == 'H' || typ == 'P' || typ == 'D' || typ == 'C'):
		return true, true
	}
	if err := w.Flush(); err != nil {
		return false, false
	}
	return false, st.waitRelease()
}

// settle says where a held answer is held: at the ReadyForQuery, or at
// the answer.
func (st *Statement) settle(atReady bool) {
	st.atReady = atReady
	close(st.settled)
}

// settledAt is where the answer is held, once settled.
func (st *Statement) settledAt() (atReady, settled bool) {
	select {
	case <-st.settled:
		return st.atReady, true
	default:
		return false, false
	}
}

// holdsAtReady waits until the client side settled where st's answer is
// held: true at the ReadyForQuery. ok is false when the hold ended first
// (cut: the connection is to end).
func (st *Statement) holdsAtReady() (atReady, ok bool) {
	st.lock()
	settled := st.settled
	st.unlock()
	if st.hold == nil || settled == nil {
		return false, true
	}
	select {
	case <-settled:
		return st.atReady, true
	case <-st.hold.done:
		return false, st.hold.ok
	}
}

// send notes a statement on its way to the server: it is counted in the
// watch, if one is on, and held there if a boundary before it is. It
// returns false when the connection is to end.
func (c *conn) send(st *Statement, w *bufio.Writer) bool {
	st.Conn, st.mu, st.own = c.id, &c.mu, c.own
	if wt, early := c.track(st); wt != nil {
		if !wt.sent(c, early, st, func() error { return w.Flush() }) {
			return false
		}
	}
	// Under the statement's lock: the watch has it already, and a race
	// reads it as soon as its hold is let go.
	c.mu.Lock()
	st.start = time.Now()
	c.pending = append(c.pending, st)
	c.mu.Unlock()
	return true
}

// fromServer relays what the server answers, and gives each statement its
// answer.
func (c *conn) fromServer() {
	r := bufio.NewReaderSize(c.server, 32<<10)
	w := bufio.NewWriterSize(c.client, 32<<10)
	var buf []byte
	// atReady is the statement whose answer is held at the next
	// ReadyForQuery: its effect committed if it autocommits.
	var atReady *Statement
	for {
		m, err := c.read(r, w, buf, streamsFromServer)
		if err != nil {
			return
		}
		if m.raw == nil {
			continue
		}
		buf = m.raw[:0]
		var done *Statement
		switch m.typ {
		case 'K':
			if pid, ok := backendKey(m); ok {
				c.pid.Store(pid)
				c.p.keep(m.body())
			}
		case 'C':
			done = c.answer(commandTag(m), false)
		case 'I':
			done = c.answer("EMPTY", false)
		case 's':
			done = c.answer("SUSPENDED", false)
		case 'E':
			c.forgetDescribes()
			code, _ := errorCode(m)
			done = c.answer("ERROR "+code, true)
		case 't':
			c.described(m)
		case 'Z':
			done = c.ready(readyStatus(m))
			if atReady != nil {
				done, atReady = atReady, nil
			}
		}
		if done != nil && done.holdAnswer {
			var ok bool
			if atReady, ok = done.holdAnswerOf(m.typ, atReady, w); !ok {
				return
			}
		}
		if _, err := w.Write(m.raw); err != nil {
			return
		}
		if r.Buffered() == 0 {
			if err := w.Flush(); err != nil {
				return
			}
		}
	}
}

// holdAnswerOf holds st's answer, come in a message of type typ, where
// the client side settled it is held: here, until the hold is lifted, or
// at the next ReadyForQuery, when it returns st as the statement held
// there (else atReady as it was). ok is false when the connection is to
// end.
func (st *Statement) holdAnswerOf(typ byte, atReady *Statement, w *bufio.Writer) (*Statement, bool) {
	ready, ok := st.holdsAtReady()
	if !ok {
		return atReady, false
	}
	if ready && typ != 'Z' {
		return st, true
	}
	return atReady, st.awaitRelease(w)
}

// awaitRelease holds st's answer, which has come, from the client: it
// flushes what came before it, marks the hold reached and waits until
// the hold is lifted. It returns false when the connection is to end
// instead.
func (st *Statement) awaitRelease(w *bufio.Writer) bool {
	// The statement ran and its answer is here: the client does
	// not see it until the hold is lifted.
	if err := w.Flush(); err != nil {
		return false
	}
	st.reached()
	return st.waitRelease()
}

// answer gives the first statement still waiting its answer. The last
// statement of a simple query is complete only at ReadyForQuery; an
// error ends every extended statement up to the Sync, and the rest of a
// simple query.
func (c *conn) answer(tag string, isErr bool) *Statement {
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.pending) == 0 {
		return nil
	}
	st := c.pending[0]
	if st.simple && st.Part == st.Parts {
		if st.Answer == "" || isErr {
			st.Answer = tag
		}
		return nil
	}
	c.pending = c.pending[1:]
	st.finish(tag)
	return st
}

// ready ends a simple query at ReadyForQuery, and any statement an error
// before it skipped.
func (c *conn) ready(status byte) *Statement {
	c.mu.Lock()
	defer c.mu.Unlock()
	var done *Statement
	defer c.settleTx(status)
	for len(c.pending) > 0 {
		st := c.pending[0]
		c.pending = c.pending[1:]
		if st.simple && st.Part == st.Parts && st.Answer != "" {
			st.finish(st.Answer)
			done = st
			break
		}
		if st.simple && st.Part == st.Parts && st.Part <= 1 {
			st.finish("EMPTY")
			done = st
			break
		}
		st.finish("not run (an earlier error)")
		if st.simple && st.Part == st.Parts {
			done = st
			break
		}
	}
	return done
}

// Statement is one statement a consumer sent while a delivery was watched,
// and the answer it got.
type Statement struct {
	// Conn is the connection it came on; Lane its worker in the watch
	// (1, 2, … by the order the connections first sent a statement);
	// Index its place in the delivery (1-based) and LaneIndex in its lane.
	Conn, Lane, Index, LaneIndex int
	Text                         string
	// Answer is the command tag ("INSERT 0 1", "SELECT 0"), "ERROR
	// 23505", or empty while none came.
	Answer string
	// Took is how long the server took to answer.
	Took time.Duration

	// Part is its place in a simple Query of several statements, and
	// Parts their count (0 for a statement sent alone): the server runs
	// them in one go, so no boundary can be held between two of them.
	Part, Parts int

	// Extended: it came in the extended protocol (Parse, Bind, Execute),
	// prepared as Name ("" for the unnamed statement). Sync numbers, on
	// its connection, the Sync that ended it (1, 2, …): the statements
	// one Sync ended were committed together when they autocommit. 0
	// while no Sync came after it, and for a simple Query, which ends
	// itself.
	Extended bool
	Name     string
	Sync     int
	// Binary: it came in MySQL's binary protocol (COM_STMT_EXECUTE),
	// Extended too, Name the id its prepare was given; it ends itself,
	// and Sync stays 0.
	Binary bool
	// Implicit: it came on a MySQL connection whose server status said
	// autocommit was off (SET autocommit = 0, before the watch or in it):
	// outside a transaction it opened one, which lasts until a COMMIT or
	// ROLLBACK.
	Implicit bool

	// AfterAnswer: it was sent once the consumer had answered the
	// delivery, as Watch.Answered says.
	AfterAnswer bool

	// Owner is what the proxy's OwnerFunc said of the connection it came
	// on (see Proxy.Owners); 0 when not known.
	Owner int
	// Params are the values bound to it, when a watch was on as it came
	// (PostgreSQL's Bind, MySQL's COM_STMT_EXECUTE); nil otherwise.
	Params []Param
	own    *ownerSlot

	simple     bool
	start      time.Time
	mu         *sync.Mutex // its connection's, which guards Answer and Took
	holdAnswer bool        // hold the answer: the boundary after it is faulted
	hold       *hold
	execs      int           // Executes of its portal sent so far (client side)
	settled    chan struct{} // closed once atReady is known
	atReady    bool          // the answer is held at the ReadyForQuery after it
	values     [][]byte      // bound values, kept while a watch looks for marks
	bound      *bound        // and how they were bound, for Params (PostgreSQL)
	loose      bool          // autocommitted: sent outside any transaction
	carries    bool          // its text or values carry a mark of the delivery
	txn        *txn          // the transaction it was sent in (nil: autocommitted)
}

// Committed reports whether the server answered the statement as a
// commit that committed: PostgreSQL's tag COMMIT (to a COMMIT or END; one
// of an aborted transaction is answered ROLLBACK), MySQL's OK to a
// COMMIT.
func (s Statement) Committed() bool {
	return s.Answer == "COMMIT" || s.Answer == "OK" && Matches(s.Text, "commit")
}

// Started is when the statement came from the client.
func (s Statement) Started() time.Time { return s.start }

// Holdable reports whether a boundary before (after false) or after it
// can be held: not inside a multi-statement query.
func (st Statement) Holdable(after bool) bool {
	if st.Parts == 0 {
		return true
	}
	if after {
		return st.Part == st.Parts
	}
	return st.Part == 1
}

// queryStatements are the statements of a simple Query, each counted
// on its own: the server completes each with its own answer.
func queryStatements(text string) []*Statement {
	parts := splitStatements(text)
	if len(parts) <= 1 {
		return []*Statement{{Text: text, simple: true}}
	}
	out := make([]*Statement, len(parts))
	for i, p := range parts {
		out[i] = &Statement{Text: p, simple: true, Part: i + 1, Parts: len(parts)}
	}
	return out
}

func (st *Statement) lock() {
	if st.mu != nil {
		st.mu.Lock()
	}
}

func (st *Statement) unlock() {
	if st.mu != nil {
		st.mu.Unlock()
	}
}

func (st *Statement) finish(answer string) {
	st.Answer = answer
	st.Took = time.Since(st.start)
}

func (st *Statement) reached() {
	if st.hold != nil {
		st.hold.reach()
	}
}

// waitRelease blocks until the statement's hold is lifted; false: the
// connection is to end instead.
func (st *Statement) waitRelease() bool {
	if st.hold == nil {
		return true
	}
	return st.hold.wait()
}

// Blank reports whether a statement is only comments, spaces and
// semicolons — a driver's liveness check such as pgx's "-- ping", which
// database/sql sends when it reuses a connection idle for a second, or
// not, as timing has it. The proxy relays it but does not count it as a
// delivery's statement: a boundary must not move with the clock.
func Blank(text string) bool { return skipComments(text) == "" }

// skipComments is a statement past its leading comments, spaces and
// semicolons: where its first word is. An unterminated comment leaves
// nothing.
func skipComments(s string) string {
	for {
		s = strings.TrimLeft(s, " \t\r\n;")
		switch {
		case strings.HasPrefix(s, "--"):
			i := strings.IndexByte(s, '\n')
			if i < 0 {
				return ""
			}
			s = s[i+1:]
		case strings.HasPrefix(s, "/*"):
			i := skipComment(s, 0)
			if i >= len(s) && !strings.HasSuffix(s, "*/") {
				return ""
			}
			s = s[i:]
		default:
			return s
		}
	}
}

// Words are a statement's leading words as a file names them: lower case,
// single spaces.
func Words(s string) string {
	return strings.ToLower(strings.Join(strings.Fields(s), " "))
}

// Matches reports whether a statement begins with the given words (case
// and spacing ignored, whole words), past any leading comment — such as
// the one sqlcommenter puts before each statement.
func Matches(text, words string) bool {
	t, w := Words(skipComments(text)), Words(words)
	if w == "" {
		return false
	}
	if !strings.HasPrefix(t, w) {
		return false
	}
	rest := t[len(w):]
	return rest == "" || !isWordByte(rest[0]) || !isWordByte(w[len(w)-1])
}

func isWordByte(b byte) bool {
	return b == '_' || b >= '0' && b <= '9' || b >= 'a' && b <= 'z'
}

// ErrClosed is returned for a watch on a closed proxy.
var ErrClosed = errors.New("the database proxy is closed")

// pidOf is the server process of a connection, 0 before it is known.
func (c *conn) pidOf() int32 { return c.pid.Load() }

// be32 reads a big-endian int32 (for tests and the fuzz target).
func be32(b []byte) uint32 { return binary.BigEndian.Uint32(b) }

// readOnlyWords are the statements that write nothing whatever follows
// them: transaction control, settings, cursors.
var readOnlyWords = []string{"begin", "start transaction", "commit", "end", "rollback", "abort", "savepoint", "release",
	"set", "show", "reset", "discard", "deallocate", "close", "fetch", "move", "listen", "unlisten"}

// ReadOnly reports whether a statement surely wrote nothing: one of
// readOnlyWords, or a SELECT that calls no function (a SELECT may call
// one that writes, and any parenthesis counts as a call). Anything else
// may have written.
func ReadOnly(text string) bool {
	s := skipComments(text)
	if Matches(s, "select") || Matches(s, "table") || Matches(s, "values") {
		return !strings.Contains(s, "(")
	}
	for _, w := range readOnlyWords {
		if Matches(s, w) {
			return true
		}
	}
	return false
}
