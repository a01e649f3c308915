package pgproxy

import (
	"errors"
	"fmt"
	"strings"
	"sync"
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

	mu    sync.Mutex
	stmts []*Statement
	lanes map[int]int // connection id → lane
	count map[int]int // lane → statements sent so far
	conns map[int]*conn
	hit   *Statement
}

// ErrBusy is returned when a watch is already on.
var ErrBusy = errors.New("the database proxy already watches a delivery")

// Watch starts following a delivery: every statement sent from now on is
// the delivery's, and at, when it is given, is the boundary where the
// proxy holds the statement's connection (see Held).
func (p *Proxy) Watch(at *Boundary) (*Watch, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return nil, ErrClosed
	}
	if p.watch != nil {
		return nil, ErrBusy
	}
	w := &Watch{p: p, at: at, lanes: map[int]int{}, count: map[int]int{}, conns: map[int]*conn{}}
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
func (w *Watch) Release() {
	if w.h != nil {
		w.h.end(true)
	}
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
	return w.Statements()
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

// Statements are the delivery's statements so far, with their answers.
func (w *Watch) Statements() []Statement {
	w.mu.Lock()
	defer w.mu.Unlock()
	out := make([]Statement, len(w.stmts))
	for i, st := range w.stmts {
		st.lock()
		out[i] = *st
		st.unlock()
		out[i].hold, out[i].mu = nil, nil
	}
	return out
}

// sent counts a statement on its way to the server and holds it when the
// boundary is before it: flush sends what came before it first. It
// returns false when the connection is to end.
func (w *Watch) sent(c *conn, st *Statement, flush func() error) bool {
	w.mu.Lock()
	lane := w.lanes[c.id]
	if lane == 0 {
		lane = len(w.lanes) + 1
		w.lanes[c.id] = lane
		w.conns[c.id] = c
	}
	w.count[lane]++
	st.Lane, st.LaneIndex, st.Index = lane, w.count[lane], len(w.stmts)+1
	w.stmts = append(w.stmts, st)
	match := w.at != nil && w.hit == nil && w.matches(st)
	if match {
		w.hit = st
		st.hold = w.h
		if w.at.After {
			st.holdAnswer = true
		}
	}
	w.mu.Unlock()
	if !match || w.at.After {
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
