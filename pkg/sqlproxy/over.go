package sqlproxy

import "time"

// noteOn keeps when a statement of the delivery came on connection id;
// w.mu is held.
func (w *Watch) noteOn(id int, at time.Time) {
	if w.lastOn == nil {
		w.lastOn = map[int]time.Time{}
	}
	w.lastOn[id] = at
}

// Over reports, for each connection a statement of the delivery came on
// (by id), whether its part of the delivery is over as far as the
// database can tell: the connection is closed, or idle outside a
// transaction with no statement waiting for its answer, and no
// statement of the delivery came on it for quiet. Several copies of one
// event raced behind a broker are told apart this way, connection by
// connection, where no answer says when each is done.
func (w *Watch) Over(quiet time.Duration) map[int]bool {
	w.mu.Lock()
	type seen struct {
		c    *conn
		last time.Time
	}
	conns := make(map[int]seen, len(w.active))
	for id, c := range w.active {
		conns[id] = seen{c, w.lastOn[id]}
	}
	w.mu.Unlock()
	out := make(map[int]bool, len(conns))
	for id, s := range conns {
		if s.c.closed.Load() {
			out[id] = true
			continue
		}
		s.c.mu.Lock()
		busy := len(s.c.pending) > 0 || s.c.tx.open
		s.c.mu.Unlock()
		out[id] = !busy && time.Since(s.last) >= quiet
	}
	return out
}
