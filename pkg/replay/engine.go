package replay

import (
	"context"
	"errors"
	"io"
	"sync"
	"sync/atomic"

	"github.com/redeliver/redeliver/pkg/capture"
	"github.com/redeliver/redeliver/pkg/inject"
	"golang.org/x/sync/errgroup"
)

// Engine is the one replay engine both kinds of consumer are driven by:
// the built-in handler and a user's consumer behind a --target. It reads
// the captures (OpenCapture) on a goroutine of its own and hands them over
// in chunks, skips their bad records under --max-bad, lists the captures
// read, counts the deliveries for the progress line, places every delivery
// of the capture (its position: 1 the first), plans the fault --seed draws
// for that position (inject.Rates) and the rebalances of --rewind
// (inject.Rewind), and hands each delivery to its lane. A kind of consumer
// plugs in as the executor of a lane (Lane): what it does with a delivery
// and its fault is its own.
//
// Lanes side by side: a lane key (LaneOf) puts every delivery in one of
// Lanes lanes, and one key's deliveries stay in order in its lane. With
// one lane the deliveries are handed over on the goroutine that serves the
// lane; with more, one goroutine reads and dispatches, and each lane is
// fed by a channel of its own. Whatever fails — a lane, the reading, the
// context — stops every lane and the reader; no goroutine is left waiting
// on a lane that is gone, even one that failed before it read its feed.
type Engine[T any] struct {
	Inputs  []string // capture files; "-" reads Stdin; nats:// and kafka:// read a stream or topic
	Stdin   io.Reader
	Capture capture.Options
	// Bad skips the capture's bad records (--max-bad) and stops the
	// replay at the one too many.
	Bad    MaxBad
	Seed   int64
	Rates  inject.Rates // the faults drawn for each position of the capture
	Rewind int          // --rewind: a rebalance hands over this many deliveries again
	Lanes  int          // lanes side by side (at least one)
	// Parse makes the delivery of a capture event of the file numbered
	// file (1 the first); a bad record when it cannot.
	Parse func(ev capture.Event, file int) (T, *capture.BadRecordError)
	// LaneOf is a delivery's lane key: the lane is the key modulo Lanes
	// (unused with one lane).
	LaneOf func(*T) uint64
	// Read, if set, is given each chunk read, before its deliveries are
	// handed over: the captures opened before them (numbered from 1) and
	// the chunk's items (the built-in replay records its capture log).
	Read func(files []Input, nums []int, items []Item[T]) error
	// Admit, if set, sees each delivery of the capture, in the capture's
	// order, as it is placed.
	Admit func(*T)
	// ReadError, if set, says what a capture that cannot be read further
	// means (a bad record is not such an error).
	ReadError func(file string, err error) error
	// Progress, if set, is told every Every deliveries (default 4096),
	// and at the end, how many deliveries the lanes made and how many
	// bytes of the capture files were read.
	Progress func(deliveries, bytes int64)
	Every    int64

	// Opened lists the captures read, in order, as reports name them.
	Opened []Input
	// Rebalances counts the rebalances of --rewind, Rewound the
	// deliveries they handed over again.
	Rebalances, Rewound int64

	seq       int64 // deliveries of the capture placed so far
	rewinds   *inject.Rewind[T]
	last      []int // with a rebalance: the lane's last delivery
	delivered atomic.Int64
	bytes     atomic.Int64
	progress  sync.Mutex
}

// Item is one record of a capture, parsed: a delivery, or a bad record.
type Item[T any] struct {
	Delivery T
	Bad      *capture.BadRecordError
}

// Planned is one delivery handed to a lane: the capture's delivery at Pos
// with the fault drawn for Pos, or, Rewound, one a rebalance after Pos
// hands over again (no fault is drawn for it). Last says no more of the
// lane's deliveries come at Pos: what the lane holds back until its
// position has passed is due.
type Planned[T any] struct {
	Delivery T
	Pos      int64
	Fault    inject.Fault
	Rewound  bool
	Last     bool
}

// Lane is the executor of a lane: one kind of consumer, with its own
// faults within a delivery. Deliver is called for each of the lane's
// deliveries in order, Finish once at the end of the capture (the lane
// hands over what it still holds); neither is called after one failed.
type Lane[T any] interface {
	Deliver(ctx context.Context, p Planned[T]) error
	Finish(ctx context.Context) error
}

// LaneRunner runs the lanes of a replay: it calls serve once for every
// lane, each on a goroutine of its own when there are several, with the
// lane's executor, and returns when they have returned. A runner may fail
// a lane before serving it (its store cannot begin): the others stop.
type LaneRunner[T any] func(ctx context.Context, serve func(ctx context.Context, lane int, l Lane[T]) error) error

// GoLanes is the LaneRunner of n lanes on goroutines of their own, lane i
// executed by lane(i); the first to fail stops the others.
func GoLanes[T any](n int, lane func(i int) Lane[T]) LaneRunner[T] {
	return func(ctx context.Context, serve func(ctx context.Context, i int, l Lane[T]) error) error {
		if n <= 1 {
			return serve(ctx, 0, lane(0))
		}
		g, ctx := errgroup.WithContext(ctx)
		for i := range n {
			g.Go(func() error { return serve(ctx, i, lane(i)) })
		}
		return g.Wait()
	}
}

// firstError is the first error that is not a cancellation, else the
// first.
func firstError(errs ...error) error {
	for _, err := range errs {
		if err != nil && !errors.Is(err, context.Canceled) {
			return err
		}
	}
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}

// laneChunk is how many deliveries the dispatching goroutine hands a lane
// at once.
const laneChunk = 256

// Run replays the captures into the lanes lanes runs.
func (e *Engine[T]) Run(ctx context.Context, lanes LaneRunner[T]) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	if e.Rewind > 0 {
		e.rewinds = inject.NewRewind[T](e.Seed, e.Rewind)
	}
	var err error
	if e.Lanes <= 1 {
		e.Lanes = 1
		err = lanes(ctx, func(ctx context.Context, _ int, l Lane[T]) error {
			if err := e.dispatch(ctx, func(_ int, p Planned[T]) error { return l.Deliver(ctx, p) }); err != nil {
				return err
			}
			return l.Finish(ctx)
		})
	} else {
		err = e.fan(ctx, cancel, lanes)
	}
	if err != nil {
		return err
	}
	if e.Progress != nil {
		e.Progress(e.delivered.Load(), e.bytes.Load())
	}
	return nil
}

// fan dispatches the deliveries on a goroutine of its own into a feed per
// lane. One cancel stops the dispatcher and every lane: it is called when
// a lane fails or its context ends (a runner that fails a lane before
// serving it ends the others' context, and they return), when the
// dispatcher fails, and when the runner returns; the dispatcher, which may
// be waiting to hand a lane more, stops with it and closes every feed.
func (e *Engine[T]) fan(ctx context.Context, cancel context.CancelFunc, lanes LaneRunner[T]) error {
	n := e.Lanes
	feeds := make([]chan []Planned[T], n)
	for i := range feeds {
		feeds[i] = make(chan []Planned[T], 4)
	}
	dispatched := make(chan error, 1)
	go func() { dispatched <- e.feed(ctx, cancel, feeds) }()
	err := lanes(ctx, func(ctx context.Context, i int, l Lane[T]) error {
		return serveFeed(ctx, cancel, feeds[i], l)
	})
	// A runner that returned has no lane left to feed.
	cancel()
	return firstError(<-dispatched, err)
}

// feed is fan's dispatcher: it hands the deliveries to the lanes' feeds
// laneChunk at a time, closes every feed at the end, and stops the lanes
// if it fails.
func (e *Engine[T]) feed(ctx context.Context, cancel context.CancelFunc, feeds []chan []Planned[T]) error {
	bufs := make([][]Planned[T], len(feeds))
	send := func(i int) bool {
		select {
		case feeds[i] <- bufs[i]:
			bufs[i] = make([]Planned[T], 0, laneChunk)
			return true
		case <-ctx.Done():
			return false
		}
	}
	err := e.dispatch(ctx, func(i int, p Planned[T]) error {
		bufs[i] = append(bufs[i], p)
		if len(bufs[i]) == laneChunk && !send(i) {
			return ctx.Err()
		}
		return nil
	})
	for i := range bufs {
		if err == nil && len(bufs[i]) > 0 && !send(i) {
			err = ctx.Err()
		}
		close(feeds[i])
	}
	if err != nil {
		cancel()
	}
	return err
}

// serveFeed has lane l deliver what its feed brings, in order, and finish
// once the feed is closed; a lane that fails, or whose context ends, stops
// the dispatcher and the other lanes.
func serveFeed[T any](ctx context.Context, cancel context.CancelFunc, feed <-chan []Planned[T], l Lane[T]) (err error) {
	defer func() {
		if err != nil {
			cancel()
		}
	}()
	for {
		var ps []Planned[T]
		var more bool
		select {
		case ps, more = <-feed:
		case <-ctx.Done():
			return ctx.Err()
		}
		if !more {
			break
		}
		for j := range ps {
			if err := ctx.Err(); err != nil {
				return err
			}
			if err := l.Deliver(ctx, ps[j]); err != nil {
				return err
			}
		}
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	return l.Finish(ctx)
}

// dispatch reads the captures, hands each chunk to Read, and places every
// delivery and hands it to its lane through to, in the capture's order.
func (e *Engine[T]) dispatch(ctx context.Context, to func(lane int, p Planned[T]) error) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	chunks := make(chan chunk[T], 4)
	go e.read(ctx, chunks)
	for {
		// A read blocked on a FIFO or a silent stdin must not keep an
		// interrupted replay waiting: the reader is left behind.
		var c chunk[T]
		var more bool
		select {
		case c, more = <-chunks:
		case <-ctx.Done():
			return ctx.Err()
		}
		if !more {
			break
		}
		e.Opened = append(e.Opened, c.files...)
		if e.Read != nil {
			if err := e.Read(c.files, c.nums, c.items); err != nil {
				return err
			}
		}
		for i := range c.items {
			if err := ctx.Err(); err != nil {
				return err
			}
			if err := e.place(&c.items[i], to); err != nil {
				return err
			}
		}
		if c.err != nil {
			return c.err
		}
	}
	return ctx.Err()
}

// place gives a delivery of the capture its position and fault and hands
// it over, with what a rebalance after it hands over again; a bad record
// is skipped, or stops the replay past --max-bad.
func (e *Engine[T]) place(it *Item[T], to func(lane int, p Planned[T]) error) error {
	if it.Bad != nil {
		return e.Bad.Skip(it.Bad)
	}
	e.seq++
	pos := e.seq
	if e.Admit != nil {
		e.Admit(&it.Delivery)
	}
	p := Planned[T]{Delivery: it.Delivery, Pos: pos, Fault: e.Rates.At(e.Seed, pos), Last: true}
	if e.rewinds == nil || !e.rewinds.Add(pos, it.Delivery) {
		return to(e.laneOf(&p.Delivery), p)
	}
	// A rebalance: the consumer group goes back, and the last deliveries
	// come again, each after its key's earlier ones, in its lane.
	e.Rebalances++
	if e.last == nil {
		e.last = make([]int, e.Lanes)
	}
	for i := range e.last {
		e.last[i] = -1
	}
	own := e.laneOf(&p.Delivery)
	e.last[own] = 0
	k := 0
	for d := range e.rewinds.Again() {
		k++
		e.last[e.laneOf(&d)] = k
	}
	p.Last = e.last[own] == 0
	if err := to(own, p); err != nil {
		return err
	}
	k = 0
	for d := range e.rewinds.Again() {
		k++
		l := e.laneOf(&d)
		e.Rewound++
		if err := to(l, Planned[T]{Delivery: d, Pos: pos, Rewound: true, Last: e.last[l] == k}); err != nil {
			return err
		}
	}
	return nil
}

func (e *Engine[T]) laneOf(d *T) int {
	if e.Lanes <= 1 {
		return 0
	}
	return int(e.LaneOf(d) % uint64(e.Lanes))
}

// Delivered counts a delivery a lane made, for the progress line, and
// returns how many the lanes made so far. Lanes call it side by side.
func (e *Engine[T]) Delivered() int64 {
	n := e.delivered.Add(1)
	every := e.Every
	if every <= 0 {
		every = 4096
	}
	if e.Progress != nil && n%every == 0 {
		e.progress.Lock()
		e.Progress(n, e.bytes.Load())
		e.progress.Unlock()
	}
	return n
}

// Deliveries is how many deliveries the lanes made.
func (e *Engine[T]) Deliveries() int64 { return e.delivered.Load() }

// chunk is what the reading goroutine hands over: many items at once, so
// the channel costs little per delivery.
type chunk[T any] struct {
	items []Item[T]
	files []Input // capture files opened before these items
	nums  []int   // their numbers (1 the first)
	err   error
}

// read parses the captures in a goroutine of its own.
func (e *Engine[T]) read(ctx context.Context, out chan<- chunk[T]) {
	defer close(out)
	const size = 256
	cur := chunk[T]{items: make([]Item[T], 0, size)}
	send := func() bool {
		select {
		case out <- cur:
			cur = chunk[T]{items: make([]Item[T], 0, size)}
			return true
		case <-ctx.Done():
			return false
		}
	}
	for n, name := range e.Inputs {
		rd, err := OpenCapture(ctx, name, e.Stdin, e.Capture, &e.bytes)
		if err != nil {
			cur.err = err
			send()
			return
		}
		defer rd.Close()
		cur.files = append(cur.files, rd.Input)
		cur.nums = append(cur.nums, n+1)
		for {
			ev, err := rd.Next()
			if err == io.EOF {
				break
			}
			var be *capture.BadRecordError
			if errors.As(err, &be) {
				cur.items = append(cur.items, Item[T]{Bad: be})
				if be.Fatal {
					break
				}
			} else if err != nil {
				if e.ReadError != nil {
					err = e.ReadError(rd.Input.File, err)
				}
				cur.err = err
				send()
				return
			} else {
				d, bad := e.Parse(ev, n+1)
				cur.items = append(cur.items, Item[T]{Delivery: d, Bad: bad})
			}
			if len(cur.items) == size && !send() {
				return
			}
		}
		rd.Close()
	}
	if len(cur.items) > 0 || len(cur.files) > 0 {
		send()
	}
}
