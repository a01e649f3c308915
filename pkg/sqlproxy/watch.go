package sqlproxy

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"
)

// Boundary is a point between a delivery's statements: before a statement
// reaches the server, or after the server answered it and before the
// consumer sees the answer.
type Boundary struct {
	// Index is the statement's place in the delivery (1-based), or, with
	// Lane, in that lane's statements; 0 when Words names it.
	Index int
	// Words names the first statement that begins with them (case and
	// spacing ignored): "insert into payments", "commit".
	Words string
	// Lane, when not 0, counts Index in one worker's statements.
	Lane  int
	After bool
	// Marked: the delivery's statements are told from the others by its
	// marks (see Proxy.Watch): an autocommitted statement that carries
	// none of them, or a transaction none of whose statements does, is
	// not the delivery's, and is neither counted nor held.
	Marked bool
}

// String names the boundary in words: "before statement 2",
// "after COMMIT".
func (b Boundary) String() string {
	where := "before"
	if b.After {
		where = "after"
	}
	switch {
	case b.Words != "":
		return where + " " + strings.ToUpper(Words(b.Words))
	case b.Lane > 0:
		return fmt.Sprintf("%s worker %d's statement %d", where, b.Lane, b.Index)
	}
	return fmt.Sprintf("%s statement %d", where, b.Index)
}

// Watch follows one delivery's statements, from Proxy.Watch to Stop.
type Watch struct {
	p  *Proxy
	at *Boundary
	h  *hold

	// marks are the delivery's event id and key, as a statement's text or
	// bound values carry them.
	marks []string

	mu    sync.Mutex
	stmts []*Statement
	// others are the statements let through while the watch was on that
	// are not the delivery's: a background job's, or the end of a
	// transaction an earlier delivery began.
	others  []*Statement
	lanes   map[int]int // connection id → lane
	count   map[int]int // lane → statements sent so far
	conns   map[int]*conn
	hit     *Statement
	marked  bool
	settled bool

	// answered is when the consumer answered the delivery (Answered);
	// zero until it did.
	answered time.Time
	// last is when the delivery's latest statement came, and active
	// the connections its statements came on, by id: Finished looks at
	// them. Until a statement carried a mark (anyMark), every statement
	// of the watch counts as the delivery's.
	last    time.Time
	active  map[int]*conn
	anyMark bool
	// lastOn is when the delivery's latest statement came on each of
	// its connections, by id (Over).
	lastOn map[int]time.Time
}

// ErrBusy is returned when a watch is already on.
var ErrBusy = errors.New("the database proxy already watches a delivery")

// Watch starts following a delivery: the statements sent from now on are
// the delivery's — but those of a transaction begun before it, which
// belong to whoever began it — and at, when it is given, is the boundary
// where the proxy holds the statement's connection (see Held).
//
// marks, when given, are the delivery's event id and key. A transaction
// begun while the watch is on is the delivery's when one of its
// statements carries a mark (as a whole word, in its text or a bound
// value), and so is an autocommitted statement that carries one. A watch
// without a boundary keeps the unmarked ones aside only if some
// statement carried a mark (Marked says so once it stopped), and keeps
// every transaction begun while it was on otherwise; a boundary says by
// its Marked field.
func (p *Proxy) Watch(at *Boundary, marks ...string) (*Watch, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return nil, ErrClosed
	}
	if p.watch != nil {
		return nil, ErrBusy
	}
	w := &Watch{p: p, at: at, lanes: map[int]int{}, count: map[int]int{}, conns: map[int]*conn{}, active: map[int]*conn{}}
	for _, m := range marks {
		if m != "" {
			w.marks = append(w.marks, m)
		}
	}
	if at != nil {
		w.h = newHold()
	}
	p.watch = w
	return w, nil
}

// Held is closed when a connection is held at the boundary: before the
// statement reached the server, or with its answer kept from the consumer.
// It is nil for a watch without a boundary.
func (w *Watch) Held() <-chan struct{} {
	if w.h == nil {
		return nil
	}
	return w.h.reached
}

// Hit is the statement the boundary was reached at, or nil.
func (w *Watch) Hit() *Statement {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.hit
}

// Cut ends the held connection without relaying what it holds: what the
// server did not get it never gets, what it answered the consumer never
// sees. The server rolls back an open transaction of that connection.
func (w *Watch) Cut() {
	if w.h != nil {
		w.h.end(false)
	}
}

// Release lets the held connection go on as if it had not been held.
// The held statement's answer reaches the consumer only now, and its next
// statement comes a moment after: the connection's quiet (Over) counts
// from the release, not from when the held statement came.
func (w *Watch) Release() {
	if w.h == nil {
		return
	}
	w.mu.Lock()
	if w.hit != nil {
		w.noteOn(w.hit.Conn, time.Now())
	}
	w.mu.Unlock()
	w.h.end(true)
}

// Answered tells the watch that the consumer answered the delivery: the
// statements sent from now on are marked AfterAnswer — a consumer that
// acknowledges first and works after goes on sending the delivery's
// statements — and Finished can tell when they are over.
func (w *Watch) Answered() {
	w.mu.Lock()
	if w.answered.IsZero() {
		w.answered = time.Now()
	}
	w.mu.Unlock()
}

// hasAnswered reports whether Answered was called.
func (w *Watch) hasAnswered() bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	return !w.answered.IsZero()
}

// Finished reports, once the consumer answered, whether the delivery's
// work is over as far as the database can tell: no statement of the
// delivery came for quiet (since the answer, or since its latest one),
// each connection a statement of it came on is idle outside a
// transaction with no statement waiting for its answer (or closed), and
// no transaction begun while the watch is on is still open. While no
// statement carried a mark, a statement after the answer cannot be told
// from a background job's, and quiet runs from the answer alone. It is
// false before Answered.
func (w *Watch) Finished(quiet time.Duration) bool {
	w.mu.Lock()
	since := w.last
	if w.answered.After(since) || !w.anyMark {
		since = w.answered
	}
	answered := !w.answered.IsZero()
	active := make([]*conn, 0, len(w.active))
	for _, c := range w.active {
		active = append(active, c)
	}
	w.mu.Unlock()
	if !answered || time.Since(since) < quiet {
		return false
	}
	for _, c := range active {
		if c.closed.Load() {
			continue
		}
		c.mu.Lock()
		busy := len(c.pending) > 0 || c.tx.open
		c.mu.Unlock()
		if busy {
			return false
		}
	}
	w.p.mu.Lock()
	conns := make([]*conn, 0, len(w.p.conns))
	for c := range w.p.conns {
		conns = append(conns, c)
	}
	w.p.mu.Unlock()
	for _, c := range conns {
		c.mu.Lock()
		open := c.tx.open && c.tx.owner == w
		c.mu.Unlock()
		if open && !c.closed.Load() {
			return false
		}
	}
	return true
}

// InTransaction reports whether a connection a statement of the delivery
// came on is inside a transaction, as the statements it sent say: a kill
// now rolls that transaction back.
func (w *Watch) InTransaction() bool {
	w.mu.Lock()
	active := make([]*conn, 0, len(w.active))
	for _, c := range w.active {
		active = append(active, c)
	}
	w.mu.Unlock()
	for _, c := range active {
		c.mu.Lock()
		open := c.tx.open
		c.mu.Unlock()
		if open && !c.closed.Load() {
			return true
		}
	}
	return false
}

// note counts a statement of the watch's in the delivery's activity,
// which Finished waits out: one that carries a mark, one of a
// transaction that did, or any while none did yet.
func (w *Watch) note(c *conn, st *Statement) {
	if st.carries && st.txn != nil {
		st.txn.marked = true
	}
	w.mu.Lock()
	w.anyMark = w.anyMark || st.carries
	if st.carries || (st.txn != nil && st.txn.marked) || !w.anyMark {
		w.last = time.Now()
		w.active[c.id] = c
		w.noteOn(c.id, w.last)
	}
	w.mu.Unlock()
}

// Stop ends the watch and returns the delivery's statements in the order
// they were sent. A hold still on is released.
func (w *Watch) Stop() []Statement {
	w.p.mu.Lock()
	if w.p.watch == w {
		w.p.watch = nil
	}
	w.p.mu.Unlock()
	w.Release()
	w.settle()
	w.awaitOwners()
	return w.Statements()
}

// settle decides, for a watch without a boundary, which of the unmarked
// autocommitted statements and transactions are the delivery's: all of
// them when no statement carried a mark, none otherwise; the delivery's
// are numbered again, lanes and all, as a watch with a boundary numbers
// them — a transaction's statements before its first marked one just
// before that one.
func (w *Watch) settle() {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.at != nil || w.settled {
		return
	}
	w.settled = true
	for _, st := range w.stmts {
		w.marked = w.marked || st.carries
	}
	if !w.marked {
		return
	}
	kept := w.stmts[:0:0]
	for _, st := range w.stmts {
		switch {
		case st.loose && !st.carries:
			w.others = append(w.others, st)
		case st.txn == nil || st.txn.seen:
			kept = append(kept, st)
		case st.carries:
			// The transaction is the delivery's from here: what it sent
			// before is counted now, as a boundary at run time counts it.
			st.txn.seen = true
			kept = append(append(kept, st.txn.early...), st)
			st.txn.early = nil
		default:
			st.txn.early = append(st.txn.early, st)
		}
	}
	for _, st := range w.stmts {
		if st.txn != nil && !st.txn.seen && st.txn.early != nil {
			w.others = append(w.others, st.txn.early...)
			st.txn.early = nil
		}
	}
	lanes, count := map[int]int{}, map[int]int{}
	for i, st := range kept {
		lane := lanes[st.Conn]
		if lane == 0 {
			lane = len(lanes) + 1
			lanes[st.Conn] = lane
		}
		count[lane]++
		st.lock()
		st.Index, st.Lane, st.LaneIndex = i+1, lane, count[lane]
		st.unlock()
	}
	w.stmts = kept
}

// Marked reports, once the watch stopped, whether the delivery's
// statements were told from the others by its marks: the Marked a
// boundary of its statements is to carry.
func (w *Watch) Marked() bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.at != nil {
		return w.at.Marked
	}
	return w.marked
}

// Others are the statements let through while the watch was on that
// were not the delivery's, with their answers: never counted, never held.
func (w *Watch) Others() []Statement {
	w.mu.Lock()
	defer w.mu.Unlock()
	return copyStatements(w.others)
}

// Waiting are the server processes of the watched connections, but the
// held one, that sent a statement and have no answer yet: each either
// works on it or waits for a lock the held connection may hold.
func (w *Watch) Waiting() []int32 {
	w.mu.Lock()
	held := -1
	if w.hit != nil {
		held = w.hit.Conn
	}
	conns := make([]*conn, 0, len(w.conns))
	for id, c := range w.conns {
		if id != held {
			conns = append(conns, c)
		}
	}
	w.mu.Unlock()
	var out []int32
	for _, c := range conns {
		c.mu.Lock()
		busy := len(c.pending) > 0
		c.mu.Unlock()
		if pid := c.pidOf(); busy && pid != 0 {
			out = append(out, pid)
		}
	}
	return out
}

// Began reports whether a statement of the delivery has come yet.
func (w *Watch) Began() bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	return len(w.stmts) > 0
}

// Statements are the delivery's statements so far, with their answers.
func (w *Watch) Statements() []Statement {
	w.mu.Lock()
	defer w.mu.Unlock()
	return copyStatements(w.stmts)
}

func copyStatements(stmts []*Statement) []Statement {
	out := make([]Statement, len(stmts))
	for i, st := range stmts {
		st.lock()
		out[i] = *st
		st.unlock()
		if st.own != nil {
			out[i].Owner = int(st.own.v.Load())
		}
		if st.bound != nil {
			out[i].Params = st.bound.params()
		}
		out[i].hold, out[i].mu, out[i].values, out[i].own, out[i].bound = nil, nil, nil, nil, nil
	}
	return out
}

// sent counts a statement on its way to the server and holds it when the
// boundary is before it: flush sends what came before it first. It
// returns false when the connection is to end.
//
// early are the statements its transaction sent before one of them
// carried a mark, counted only now (see track): a boundary at one of
// them, before or after, is held before st — the database cannot tell
// the difference, nothing of the transaction having been read or
// written on the delivery's behalf yet.
func (w *Watch) sent(c *conn, early []*Statement, st *Statement, flush func() error) bool {
	w.mu.Lock()
	lane := w.lanes[c.id]
	if lane == 0 {
		lane = len(w.lanes) + 1
		w.lanes[c.id] = lane
		w.conns[c.id] = c
	}
	number := func(st *Statement) {
		w.count[lane]++
		st.lock()
		st.Lane, st.LaneIndex, st.Index = lane, w.count[lane], len(w.stmts)+1
		st.unlock()
		w.stmts = append(w.stmts, st)
	}
	earlyHit := false
	if len(early) > 0 {
		w.others = slices.DeleteFunc(w.others, func(o *Statement) bool { return slices.Contains(early, o) })
		for _, e := range early {
			number(e)
			if w.at != nil && w.hit == nil && w.matches(e) {
				w.hit, earlyHit = e, true
			}
		}
	}
	number(st)
	match := w.at != nil && w.hit == nil && w.matches(st)
	if match {
		w.hit = st
		st.hold = w.h
		if w.at.After {
			st.holdAnswer = true
		}
	}
	w.mu.Unlock()
	if earlyHit {
		match = true
	} else if !match || w.at.After {
		return true
	}
	if flush() != nil {
		return false
	}
	w.h.reach()
	return w.h.wait()
}

func (w *Watch) matches(st *Statement) bool { return w.at.Names(*st) }

// Names reports whether the boundary is at st: the statement its words
// begin, or its place in the delivery or in its lane — never where it
// cannot be held, inside a multi-statement query.
func (b Boundary) Names(st Statement) bool {
	switch {
	case !st.Holdable(b.After):
		return false
	case b.Words != "":
		return Matches(st.Text, b.Words)
	case b.Lane > 0:
		return st.Lane == b.Lane && st.LaneIndex == b.Index
	}
	return st.Index == b.Index
}

// hold is one held connection: reached once the boundary is met, then
// ended by a release (go on) or a cut (drop the connection).
type hold struct {
	reached  chan struct{}
	done     chan struct{}
	reachOne sync.Once
	endOne   sync.Once
	ok       bool
}

func newHold() *hold { return &hold{reached: make(chan struct{}), done: make(chan struct{})} }

func (h *hold) reach() { h.reachOne.Do(func() { close(h.reached) }) }

func (h *hold) end(ok bool) {
	h.endOne.Do(func() {
		h.ok = ok
		close(h.done)
	})
}

func (h *hold) wait() bool {
	<-h.done
	return h.ok
}

// txState is what a connection's transaction is, as the statements the
// client sent and the server's ReadyForQuery say; guarded by conn.mu.
type txState struct {
	open bool
	// owner is the watch on when the transaction began (nil: none was):
	// its statements are that delivery's, whenever they come.
	owner *Watch
	// last is the watch the connection's last statement went to, for a
	// transaction a multi-statement query left open.
	last *Watch
	// cur is the open transaction's own record.
	cur *txn
}

// txn is one transaction of a connection, for a watch that tells the
// delivery's transactions by its marks: a background job's BEGIN looks
// like the delivery's, so a transaction is the delivery's only once one
// of its statements carried a mark.
type txn struct {
	// seen: a statement of it carried a mark.
	seen bool
	// early are its statements before that, not counted (yet).
	early []*Statement
	// marked: a statement of it carried a mark, whatever the watch's
	// boundary (seen is kept for a boundary told by marks only).
	marked bool
}

// track follows a statement on its way to the server through its
// connection's transaction, and returns the watch whose delivery it is
// (nil: none); a statement a watch sees that is not its delivery's is
// kept among the watch's others.
//
// With a boundary told by marks, a statement of a transaction none of
// whose statements carried a mark yet is kept aside, and early returns
// them all once one does: they are counted then, in their order, before
// it. A transaction that ends with none is never counted.
func (c *conn) track(st *Statement) (wt *Watch, early []*Statement) {
	if Blank(st.Text) {
		return nil, nil
	}
	wt = c.p.current()
	c.mu.Lock()
	tx := &c.tx
	owner, loose := tx.owner, false
	switch {
	case !tx.open && begins(st.Text):
		owner = wt
		tx.open, tx.owner, tx.cur = true, wt, &txn{}
	case !tx.open:
		owner, loose = wt, true
	case ends(st.Text):
		tx.open, tx.owner = false, nil
	}
	if !loose {
		if tx.cur == nil {
			tx.cur = &txn{}
		}
		st.txn = tx.cur
	}
	if !tx.open {
		tx.cur = nil
	}
	tx.last = owner
	c.mu.Unlock()
	if wt == nil {
		return nil, nil
	}
	st.AfterAnswer = wt.hasAnswered()
	if owner != wt {
		wt.aside(st)
		return nil, nil
	}
	st.loose, st.carries = loose, wt.carries(st)
	wt.note(c, st)
	if wt.at == nil || !wt.at.Marked || len(wt.marks) == 0 {
		return wt, nil
	}
	switch t := st.txn; {
	case loose && !st.carries:
		wt.aside(st)
		return nil, nil
	case loose, t.seen:
		return wt, nil
	case st.carries:
		t.seen = true
		early, t.early = t.early, nil
		return wt, early
	}
	st.txn.early = append(st.txn.early, st)
	wt.aside(st)
	return nil, nil
}

// settleTx takes the server's word for the transaction once a
// ReadyForQuery answered everything the client sent; c.mu is held.
func (c *conn) settleTx(status byte) {
	if len(c.pending) > 0 {
		return
	}
	switch {
	case status == 'I':
		c.tx.open, c.tx.owner, c.tx.cur = false, nil, nil
	case !c.tx.open:
		// Left open by a query of several statements, which the proxy
		// counted whole: its transaction is as its last statement's.
		c.tx.open, c.tx.owner, c.tx.cur = true, c.tx.last, &txn{seen: true}
	}
}

// aside keeps a statement that is not the delivery's.
func (w *Watch) aside(st *Statement) {
	w.mu.Lock()
	w.others = append(w.others, st)
	w.mu.Unlock()
}

// carries reports whether a statement's text or a value bound to it
// carries one of the delivery's marks as a whole word.
func (w *Watch) carries(st *Statement) bool {
	for _, m := range w.marks {
		if hasWord([]byte(st.Text), m) {
			return true
		}
		for _, v := range st.values {
			if hasWord(v, m) {
				return true
			}
		}
	}
	return false
}

// hasWord reports whether s holds word with no letter, digit or
// underscore right before or after it: "O-30" is in "payment-O-30" and
// in "'O-30'", not in "O-300".
func hasWord(s []byte, word string) bool {
	for i := 0; ; {
		j := bytes.Index(s[i:], []byte(word))
		if j < 0 {
			return false
		}
		j += i
		end := j + len(word)
		if (j == 0 || !isMarkByte(s[j-1]) || !isMarkByte(word[0])) &&
			(end == len(s) || !isMarkByte(s[end]) || !isMarkByte(word[len(word)-1])) {
			return true
		}
		i = j + 1
	}
}

// isMarkByte is a byte that may continue an id or key: a mark must not
// be part of a longer word.
func isMarkByte(b byte) bool {
	return b == '_' || b >= '0' && b <= '9' || b >= 'a' && b <= 'z' || b >= 'A' && b <= 'Z'
}

// begins reports whether a statement opens a transaction.
func begins(text string) bool {
	s := skipComments(text)
	return Matches(s, "begin") || Matches(s, "start transaction")
}

// ends reports whether a statement ends the transaction it runs in: a
// COMMIT or ROLLBACK (not to a savepoint, not AND CHAIN), END, ABORT, or
// PREPARE TRANSACTION.
func ends(text string) bool {
	s := skipComments(text)
	w := Words(s)
	if strings.Contains(w, "and chain") && !strings.Contains(w, "and no chain") {
		return false
	}
	switch {
	case Matches(s, "rollback to"), Matches(s, "rollback work to"), Matches(s, "rollback transaction to"):
		return false
	case Matches(s, "commit"), Matches(s, "rollback"), Matches(s, "end"), Matches(s, "abort"), Matches(s, "prepare transaction"):
		return true
	}
	return false
}

// watchedValues are the values a Bind message binds, when a watch is on
// to look for the delivery's marks in them; nil otherwise.
func (c *conn) watchedValues(m message) [][]byte {
	if c.p.current() == nil {
		return nil
	}
	return bindValues(m)
}

// bindValues reads the parameter values of a Bind message (copies; a
// NULL is nil); nil when the message is malformed.
func bindValues(m message) [][]byte {
	_, rest, ok := cstring(m.body())
	if !ok {
		return nil
	}
	if _, rest, ok = cstring(rest); !ok {
		return nil
	}
	u16 := func() (int, bool) {
		if len(rest) < 2 {
			return 0, false
		}
		n := int(binary.BigEndian.Uint16(rest))
		rest = rest[2:]
		return n, true
	}
	nf, ok := u16()
	if !ok || len(rest) < 2*nf {
		return nil
	}
	rest = rest[2*nf:]
	np, ok := u16()
	if !ok {
		return nil
	}
	var out [][]byte
	for range np {
		if len(rest) < 4 {
			return nil
		}
		n := int32(binary.BigEndian.Uint32(rest))
		rest = rest[4:]
		if n < 0 {
			out = append(out, nil)
			continue
		}
		if int(n) > len(rest) {
			return nil
		}
		out = append(out, bytes.Clone(rest[:n]))
		rest = rest[n:]
	}
	return out
}

// BusyError says which connection was still busy when Idle gave up.
type BusyError struct {
	// Pid is the connection's server process (0 when not known).
	Pid int32
	// InTx: it was in a transaction; otherwise it waited for an answer
	// to Text.
	InTx  bool
	Text  string
	After time.Duration
}

func (e *BusyError) Error() string {
	what := "was still in a transaction"
	if !e.InTx {
		what = fmt.Sprintf("still waited for the answer to %q", e.Text)
	}
	return fmt.Sprintf("a connection of the consumer (server process %d) %s %s later", e.Pid, what, e.After)
}

// Idle waits until every connection is outside a transaction with no
// statement waiting for its answer — what the consumer committed is then
// all it will commit of the work it answered for — or until limit
// passed: then a *BusyError names one still busy.
func (p *Proxy) Idle(ctx context.Context, limit time.Duration) error {
	start := time.Now()
	for {
		busy := p.busy()
		if busy == nil {
			return nil
		}
		if time.Since(start) >= limit {
			busy.After = limit
			return busy
		}
		t := time.NewTimer(time.Millisecond)
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			return ctx.Err()
		}
	}
}

// busy is a connection still in a transaction or waiting for an answer,
// or nil.
func (p *Proxy) busy() *BusyError {
	p.mu.Lock()
	conns := make([]*conn, 0, len(p.conns))
	for c := range p.conns {
		conns = append(conns, c)
	}
	p.mu.Unlock()
	for _, c := range conns {
		c.mu.Lock()
		var e *BusyError
		switch {
		case len(c.pending) > 0:
			e = &BusyError{Pid: c.pidOf(), Text: shortText(c.pending[0].Text)}
		case c.tx.open:
			e = &BusyError{Pid: c.pidOf(), InTx: true}
		}
		c.mu.Unlock()
		if e != nil {
			return e
		}
	}
	return nil
}

// shortText is a statement on one line, cut to a length a message carries.
func shortText(text string) string {
	s := strings.Join(strings.Fields(text), " ")
	if r := []rune(s); len(r) > 60 {
		s = string(r[:59]) + "…"
	}
	return s
}

// readyStatus is a ReadyForQuery's transaction status: 'I' idle, 'T' in
// a transaction, 'E' in a failed one.
func readyStatus(m message) byte {
	if b := m.body(); len(b) > 0 {
		return b[0]
	}
	return 'I'
}
