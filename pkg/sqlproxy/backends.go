package sqlproxy

// The server processes of the proxy's connections. A client that dies
// inside a transaction leaves its server process running whatever it ran
// last (a pg_sleep, a query that ignores its socket): the server notices
// the closed socket only when it next writes to it, and meanwhile holds
// its locks. The proxy keeps each connection's process id and cancel key,
// so that redeliver can end them as a real crash would have.

import (
	"context"
	"encoding/binary"
	"fmt"
)

// Backend is a server process a connection through the proxy was given:
// its process id and the key that cancels what it runs.
type Backend struct {
	PID int32
	// Open: the client's connection to the proxy is still open.
	Open bool
	key  []byte
}

// keep records a connection's server process from its BackendKeyData.
func (p *Proxy) keep(body []byte) {
	if len(body) < 8 {
		return
	}
	b := Backend{PID: int32(binary.BigEndian.Uint32(body)), key: append([]byte(nil), body[4:]...)}
	p.mu.Lock()
	if p.backends == nil {
		p.backends = map[int32]Backend{}
	}
	p.backends[b.PID] = b
	track := p.track
	p.mu.Unlock()
	if track != nil {
		track(b.PID, true)
	}
}

// Track has f told of each server process the proxy learns (known) and
// of each it forgets: what Backends lists. Call it before the first
// connection.
func (p *Proxy) Track(f func(pid int32, known bool)) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.track = f
}

// Backends lists the server processes of every connection made through
// the proxy and not forgotten, whether the connection is still open or
// not (Open says which).
func (p *Proxy) Backends() []Backend {
	p.mu.Lock()
	defer p.mu.Unlock()
	open := map[int32]bool{}
	for c := range p.conns {
		open[c.pidOf()] = true
	}
	out := make([]Backend, 0, len(p.backends))
	for _, b := range p.backends {
		b.Open = open[b.PID]
		out = append(out, b)
	}
	return out
}

// Forget drops server processes known to have ended.
func (p *Proxy) Forget(pids []int32) {
	p.mu.Lock()
	for _, pid := range pids {
		delete(p.backends, pid)
	}
	track := p.track
	p.mu.Unlock()
	if track != nil {
		for _, pid := range pids {
			track(pid, false)
		}
	}
}

// Cancel asks the server to cancel what b is running, on a connection of
// its own, as a client's cancel request would: a query waiting or
// sleeping ends with an error, and its transaction with it.
func (p *Proxy) Cancel(ctx context.Context, b Backend) error {
	if p.mysql {
		return errMySQLCancel
	}
	nc, err := p.dial(ctx)
	if err != nil {
		return fmt.Errorf("cannot reach the database to cancel backend %d: %w", b.PID, err)
	}
	defer nc.Close()
	if dl, ok := ctx.Deadline(); ok {
		nc.SetDeadline(dl)
	}
	msg := make([]byte, 12, 12+len(b.key))
	binary.BigEndian.PutUint32(msg[0:4], uint32(12+len(b.key)))
	binary.BigEndian.PutUint32(msg[4:8], codeCancel)
	binary.BigEndian.PutUint32(msg[8:12], uint32(b.PID))
	msg = append(msg, b.key...)
	if _, err := nc.Write(msg); err != nil {
		return fmt.Errorf("cannot cancel backend %d: %w", b.PID, err)
	}
	// The server answers nothing and closes the connection: wait for that,
	// so that the request has been read before the caller looks again.
	var one [1]byte
	nc.Read(one[:])
	return nil
}
