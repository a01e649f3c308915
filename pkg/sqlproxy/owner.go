package sqlproxy

import (
	"context"
	"net"
	"net/netip"
	"sync"
	"sync/atomic"
	"time"
)

// OwnerFunc says who owns the client end of a connection the proxy
// accepted (client is its address, proxy the proxy's): a number the
// caller gives meaning to, 0 for not known. It runs on a goroutine of its
// own, may take its time, and should return once ctx ends (the proxy
// closes).
type OwnerFunc func(ctx context.Context, client, proxy netip.AddrPort) int

// owners asks an OwnerFunc about each connection accepted.
type owners struct {
	f      OwnerFunc
	ctx    context.Context
	cancel context.CancelFunc
	mu     sync.Mutex
	byConn map[int]*ownerSlot
}

// ownerSlot is what the OwnerFunc said of one connection, once it did.
type ownerSlot struct {
	v    atomic.Int64
	done chan struct{}
}

// wait waits up to d for the answer, and returns it (0: not known).
func (o *ownerSlot) wait(d time.Duration) int {
	if o == nil {
		return 0
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-o.done:
	case <-t.C:
	}
	return int(o.v.Load())
}

// Owners has the proxy ask f who owns the client end of every connection
// it accepts from now on; Owner and each Statement's Owner give the
// answer. Call it before the clients connect.
func (p *Proxy) Owners(f OwnerFunc) {
	ctx, cancel := context.WithCancel(context.Background())
	p.mu.Lock()
	p.owners = &owners{f: f, ctx: ctx, cancel: cancel, byConn: map[int]*ownerSlot{}}
	p.mu.Unlock()
}

// Owner is what the OwnerFunc said of connection id, waiting up to wait
// for its answer; 0 when it is not known (no OwnerFunc, none yet).
func (p *Proxy) Owner(id int, wait time.Duration) int {
	p.mu.Lock()
	o := p.owners
	p.mu.Unlock()
	if o == nil {
		return 0
	}
	o.mu.Lock()
	s := o.byConn[id]
	o.mu.Unlock()
	return s.wait(wait)
}

// ask starts asking about connection c (p.mu is held); nil without an
// OwnerFunc.
func (p *Proxy) ask(id int, nc net.Conn) *ownerSlot {
	o := p.owners
	if o == nil {
		return nil
	}
	s := &ownerSlot{done: make(chan struct{})}
	o.mu.Lock()
	o.byConn[id] = s
	o.mu.Unlock()
	client, cok := nc.RemoteAddr().(*net.TCPAddr)
	local, lok := nc.LocalAddr().(*net.TCPAddr)
	if !cok || !lok {
		close(s.done)
		return s
	}
	p.wg.Add(1)
	go func() {
		defer p.wg.Done()
		defer close(s.done)
		s.v.Store(int64(o.f(o.ctx, client.AddrPort(), local.AddrPort())))
	}()
	return s
}

// stopOwners ends the questions still asked: the proxy closes.
func (p *Proxy) stopOwners() {
	p.mu.Lock()
	o := p.owners
	p.mu.Unlock()
	if o != nil {
		o.cancel()
	}
}

// ownersWait bounds how long Stop waits for the owners of the watch's
// connections to be known.
const ownersWait = time.Second

// awaitOwners waits, up to ownersWait in all, until the owner of each
// connection the watch's statements came on is known.
func (w *Watch) awaitOwners() {
	w.mu.Lock()
	var slots []*ownerSlot
	for _, st := range w.stmts {
		if st.own != nil {
			slots = append(slots, st.own)
		}
	}
	w.mu.Unlock()
	limit := time.Now().Add(ownersWait)
	for _, s := range slots {
		s.wait(max(time.Until(limit), 0))
	}
}
