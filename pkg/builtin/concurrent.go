package builtin

import (
	"context"
	"fmt"
	"io"
	"sync"
	"time"

	"github.com/redeliver/redeliver/pkg/consumer"
	"github.com/redeliver/redeliver/pkg/handler"
	"github.com/redeliver/redeliver/pkg/invariant"
	"github.com/redeliver/redeliver/pkg/runner"
)

// workerOpener is a store that can give each worker of a concurrent step a
// connection of its own (both shipped stores can). The store returned may
// be an io.Closer; it is closed when the step ends.
type workerOpener interface {
	Worker(ctx context.Context) (handler.Store, error)
}

// writeLocker is a store whose transactions take the database's one write
// lock at BEGIN (SQLite's BEGIN IMMEDIATE). Without it, a transaction blocks
// others only once it has written (PostgreSQL's row and index locks).
type writeLocker interface {
	WriteLockOnBegin() bool
}

// Concurrent delivers one event from st.Concurrent workers at the same
// moment, each through its own connection, and records every outcome.
func (b *builtin) Concurrent(ctx context.Context, c runner.Call) (consumer.Result, error) {
	st := c.St
	d, scope := b.delivery(st)
	inject := handler.FailAt(st.Fail)
	n := st.Concurrent
	unit := [2]string{d.EventID, scope}
	ds := make([]consumer.Delivery, n)
	for i := range ds {
		b.attempts[unit]++
		ds[i] = d
		ds[i].Attempt = b.attempts[unit]
	}
	var bar *barrier
	if st.Interleave != "" {
		bar = newBarrier(st.Interleave, n, st.InOrder)
	} else if c.Hold.At != "" {
		bar = newBarrier(c.Hold.At, n, c.Hold.InOrder)
	}
	workers, err := b.workers(ctx, n)
	defer func() {
		for _, w := range workers {
			if w != nil {
				w.close()
			}
		}
	}()
	if err != nil {
		return consumer.Result{}, fmt.Errorf("concurrent step (%s): %w", st.Pos, err)
	}
	results := make([]consumer.Result, n)
	spans := make([]invariant.Span, n)
	start := make(chan struct{})
	var wg sync.WaitGroup
	for i, w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			spans[i].Sent = time.Now()
			results[i] = w.h.Handle(ctx, ds[i], bar.hold(w, inject))
			spans[i].Answered = time.Now()
			bar.leave(w)
		}()
	}
	close(start) // every worker has its connection: go together
	wg.Wait()
	if bar.held() {
		c.Rec.Held(bar.point)
	}
	for i, res := range results {
		spans[i].Lane = i + 1
		if w := workers[i]; !w.held.IsZero() {
			spans[i].HeldAt, spans[i].Held, spans[i].Released = bar.point, w.held, w.let
		}
		if _, err := b.record(ctx, c, ds[i], scope, res, spans[i], false); err != nil {
			return consumer.Result{}, err
		}
	}
	return results[0], nil
}

// workers are a concurrent step's n workers, each with a handler on a
// store of its own where the store can open one (a connection); those
// opened before an error are returned with it, to be closed.
func (b *builtin) workers(ctx context.Context, n int) ([]*worker, error) {
	lockOnBegin := false
	if wl, ok := b.store.(writeLocker); ok {
		lockOnBegin = wl.WriteLockOnBegin()
	}
	workers := make([]*worker, n)
	for i := range workers {
		var store handler.Store = b.store
		if wo, ok := b.store.(workerOpener); ok {
			s, err := wo.Worker(ctx)
			if err != nil {
				return workers, err
			}
			store = s
		}
		w := &worker{index: i, store: store, lockOnBegin: lockOnBegin}
		w.h = handler.New(b.s.Handler.Config, w, b.gatewayOrNil(), func() time.Time { return b.now })
		workers[i] = w
	}
	return workers, nil
}

// worker is one concurrent worker's store. It follows the worker's
// transaction, so that a barrier knows whether a worker it holds also holds
// a lock the others may be waiting for.
type worker struct {
	index       int
	store       handler.Store
	h           *handler.Handler
	lockOnBegin bool
	goOn        chan struct{} // closed when a barrier lets the worker go; guarded by the barrier
	released    bool          // guarded by the barrier
	// held and let: when the barrier held the worker and let it go (zero
	// when it did not hold it); written by the worker's own goroutine.
	held, let time.Time

	mu    sync.Mutex
	inTx  bool
	wrote bool
}

func (w *worker) Begin(ctx context.Context) (handler.Tx, error) {
	tx, err := w.store.Begin(ctx)
	if err != nil {
		return nil, err
	}
	w.mu.Lock()
	w.inTx, w.wrote = true, false
	w.mu.Unlock()
	return &workerTx{Tx: tx, w: w}, nil
}

// holdsLock reports whether the worker is inside a transaction that other
// workers may have to wait for.
func (w *worker) holdsLock() bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.inTx && (w.lockOnBegin || w.wrote)
}

func (w *worker) ended() {
	w.mu.Lock()
	w.inTx, w.wrote = false, false
	w.mu.Unlock()
}

func (w *worker) wrote1() {
	w.mu.Lock()
	w.wrote = true
	w.mu.Unlock()
}

// release lets a held worker go (once). Called with the barrier's mu held.
func (w *worker) release() {
	if !w.released {
		w.released = true
		close(w.goOn)
	}
}

func (w *worker) close() {
	if c, ok := w.store.(io.Closer); ok {
		c.Close()
	}
}

// workerTx marks the worker as a lock holder from its first write (taken
// before the statement, since the statement itself may be what blocks).
type workerTx struct {
	handler.Tx
	w *worker
}

func (t *workerTx) InsertMarker(ctx context.Context, m handler.Marker) error {
	t.w.wrote1()
	return t.Tx.InsertMarker(ctx, m)
}

func (t *workerTx) InsertEffect(ctx context.Context, e handler.Effect) (int64, error) {
	t.w.wrote1()
	return t.Tx.InsertEffect(ctx, e)
}

func (t *workerTx) PurgeMarkers(ctx context.Context, before time.Time) error {
	t.w.wrote1()
	return t.Tx.PurgeMarkers(ctx, before)
}

func (t *workerTx) Commit() error {
	defer t.w.ended()
	return t.Tx.Commit()
}

func (t *workerTx) Rollback() error {
	defer t.w.ended()
	return t.Tx.Rollback()
}
