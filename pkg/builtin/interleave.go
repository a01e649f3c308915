package builtin

import (
	"context"
	"sort"
	"sync"
	"time"

	"github.com/redeliver/redeliver/pkg/consumer"
	"github.com/redeliver/redeliver/pkg/handler"
)

// stallLimit bounds how long a barrier holds workers if, against its
// reasoning below, some worker can neither reach the point nor finish.
// It is a guard against a hung run, not part of how a race is forced: a
// forced race never waits for it.
const stallLimit = 30 * time.Second

// barrier forces an interleaving of a concurrent step (`interleave: POINT`):
// every worker that reaches the fault point is held there until all of them
// have reached it, and then they are let go: all together, or (release:
// in-order) one at a time in worker order, each once the one before it has
// finished its delivery. At after-check that means every worker has looked
// the marker up before any inserts it: the race a check-then-act consumer
// loses.
//
// Holding a worker must never hold up the others for good. A worker held
// inside a transaction that others have to wait for would do that, so the
// barrier opens, for every worker at once, as soon as it holds such a worker:
//
//   - On SQLite every transaction takes the one write lock at BEGIN
//     (IMMEDIATE). A safe strategy checks inside its write transaction, so
//     the first worker to reach after-check holds the lock and the others
//     wait in BEGIN: the barrier opens at once, the lookups are serialised
//     by the lock, and the later workers find the marker. That is why the
//     safe strategies cannot race on SQLite. check-then-act checks in a
//     transaction of its own and ends it before after-check, so there all N
//     workers arrive and the race is forced on every run.
//   - On PostgreSQL a transaction blocks others only once it has written
//     (a row or unique-index entry another worker then waits on). At
//     after-check nobody has written, so all N workers check before any
//     inserts, on every strategy; the safe ones are then saved by their
//     unique constraints (the safety net), check-then-act is not.
//
// Workers that finish without reaching the point (a duplicate never reaches
// after-marker) count as arrived.
type barrier struct {
	point   consumer.FaultPoint
	n       int
	inOrder bool

	mu      sync.Mutex
	parked  []*worker // held, in arrival order
	anyHeld bool      // some worker was held at the point
	left    int
	opened  bool
	queue   []*worker // in-order: held workers still to be let go
	current *worker   // in-order: the worker let go last
}

func newBarrier(p consumer.FaultPoint, n int, inOrder bool) *barrier {
	return &barrier{point: p, n: n, inOrder: inOrder}
}

// hold returns one worker's injector: it holds the worker at the barrier's
// point, then runs inject (a fault the step also asked for).
func (b *barrier) hold(w *worker, inject handler.Injector) handler.Injector {
	if b == nil {
		return inject
	}
	return func(ctx context.Context, p consumer.FaultPoint) error {
		if p == b.point {
			b.wait(ctx, w)
		}
		if inject == nil {
			return nil
		}
		return inject(ctx, p)
	}
}

func (b *barrier) wait(ctx context.Context, w *worker) {
	b.mu.Lock()
	if b.opened || w.goOn != nil {
		b.mu.Unlock()
		return
	}
	w.goOn = make(chan struct{})
	b.parked = append(b.parked, w)
	b.anyHeld = true
	w.held = time.Now()
	b.decide()
	b.mu.Unlock()
	stall := time.NewTimer(stallLimit)
	defer stall.Stop()
	select {
	case <-w.goOn:
	case <-ctx.Done():
	case <-stall.C:
		b.mu.Lock()
		b.releaseAll()
		b.mu.Unlock()
	}
	w.let = time.Now()
}

// held reports whether the barrier held a worker at its point: the point
// was reached.
func (b *barrier) held() bool {
	if b == nil {
		return false
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.anyHeld
}

// leave is called when a worker's delivery is over.
func (b *barrier) leave(w *worker) {
	if b == nil {
		return
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	b.left++
	if !b.opened {
		b.decide()
	} else if w == b.current {
		b.next()
	}
}

// decide opens the barrier when no worker can still arrive without one of
// the held ones going on first. Called with mu held.
func (b *barrier) decide() {
	if b.opened {
		return
	}
	for _, w := range b.parked {
		if w.holdsLock() {
			b.opened = true
			b.releaseAll()
			return
		}
	}
	if len(b.parked)+b.left < b.n {
		return
	}
	b.opened = true
	if !b.inOrder {
		b.releaseAll()
		return
	}
	b.queue = append([]*worker(nil), b.parked...)
	sort.Slice(b.queue, func(i, j int) bool { return b.queue[i].index < b.queue[j].index })
	b.next()
}

// next lets the next held worker go, in worker order.
func (b *barrier) next() {
	if len(b.queue) == 0 {
		b.current = nil
		return
	}
	b.current, b.queue = b.queue[0], b.queue[1:]
	b.current.release()
}

func (b *barrier) releaseAll() {
	b.opened = true
	b.queue = nil
	for _, w := range b.parked {
		w.release()
	}
}
