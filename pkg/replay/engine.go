package replay

import (
	"container/heap"
	"context"
	"errors"
	"fmt"
	"io"
	"strconv"
	"sync/atomic"

	"github.com/redeliver/redeliver/pkg/capture"
	"github.com/redeliver/redeliver/pkg/consumer"
	"github.com/redeliver/redeliver/pkg/handler"
	"github.com/redeliver/redeliver/pkg/inject"
	"github.com/redeliver/redeliver/pkg/kafka"
	"github.com/redeliver/redeliver/pkg/ledger"
	"github.com/redeliver/redeliver/pkg/nats"
	"github.com/redeliver/redeliver/pkg/template"
)

func mustKey(s string) template.Template {
	t, err := template.Parse(s)
	if err != nil {
		panic(err)
	}
	return t
}

// item is one delivery of the capture, parsed, on its way to the handler.
type item struct {
	d        consumer.Delivery
	key      string
	identity int64 // hash of the identity the handler compares
	file     int
	marked   bool // the broker marked it as a redelivery
	bad      *capture.BadRecordError
	pos      int64 // its place among the capture's deliveries, once counted
}

// chunk is what the reading goroutine hands over: many items at once, so
// the channel costs little per delivery.
type chunk struct {
	items []item
	files []Input // capture files opened before these items
	nums  []int   // their numbers in the capture log
	err   error
}

// step is one delivery handed to the handler, with the fault injected into it.
type step struct {
	d     consumer.Delivery
	fault consumer.FaultPoint
	kind  kind
	res   consumer.Result
	pos   int64 // position in the capture of the delivery it comes from
	// order is its place in the whole replay (see orderOf), which its
	// effect is numbered by when the replay is split.
	order int64
}

type kind int

const (
	original    kind = iota
	redelivery       // after a crash before the ack
	retry            // after a crash mid-transaction
	rewound          // a rebalance re-delivered it
	republished      // the same event under a new id
)

// engine runs one replay: reads, injects, handles, counts.
type engine struct {
	o         Options
	log       ledger.Recorder // nil: the capture is not recorded
	rows      []ledger.CaptureRow
	h         *handler.Handler
	rep       *Report
	watch     func(step) // sees every delivery, when a reproducer is being collected
	seq       int64      // deliveries of the capture handed over so far
	total     int64
	queue     pending
	order     int64
	rewinds   *inject.Rewind[consumer.Delivery] // --rewind: the last deliveries, and when a rebalance hands them over again
	bad       MaxBad
	bytesRead atomic.Int64 // bytes of the capture files read so far, by the reading goroutine

	// In one part of a split replay: the part's store, told each
	// delivery's place, and the progress shared by the parts.
	ordered ledger.OrderedStore
	tick    func()
}

func newEngine(o Options, store handler.Store, log ledger.Recorder, rep *Report, watch func(step)) *engine {
	e := &engine{o: o, log: log, rep: rep, watch: watch, bad: MaxBad{Limit: o.MaxBad, Warn: o.Warn}}
	e.h = handler.New(o.Handler, store, nil, clock)
	if o.Rewind > 0 {
		e.rewinds = inject.NewRewind[consumer.Delivery](o.Seed, o.Rewind)
	}
	return e
}

// Every injected decision is a function of --seed and the position of
// the capture delivery it is about, never of what came before it (see
// pkg/inject): a replay resumed on a file makes, delivery for delivery,
// the choices the interrupted one made, whatever the handler answered in
// between.
const (
	slotRedeliver = inject.SlotRedeliver
	slotCrash     = inject.SlotCrash
	slotPoint     = inject.SlotPoint
	slotRepublish = inject.SlotRepublish
	slotGap       = inject.SlotGap
	slotLater     = inject.SlotLater // + kind<<32 + attempt: the gap after a later delivery
)

func draw(seed, pos int64, slot uint64) uint64 { return inject.Draw(seed, pos, slot) }

func chance(seed, pos int64, slot uint64) float64 { return inject.Chance(seed, pos, slot) }

func (e *engine) replay(ctx context.Context) error {
	if err := e.readAll(ctx, func(it *item) error { return e.capture(ctx, it) }); err != nil {
		return err
	}
	if err := e.drain(ctx); err != nil {
		return err
	}
	if e.o.Progress != nil {
		e.o.Progress(e.total, e.bytesRead.Load())
	}
	return nil
}

// readAll reads the captures, records them in the capture log, and calls
// each for every item, in the capture's order.
func (e *engine) readAll(ctx context.Context, each func(*item) error) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	chunks := make(chan chunk, 4)
	go e.read(ctx, chunks)
	for {
		// A read blocked on a FIFO or a silent stdin must not keep an
		// interrupted replay waiting: the reader is left behind.
		var c chunk
		var more bool
		select {
		case c, more = <-chunks:
		case <-ctx.Done():
			return ctx.Err()
		}
		if !more {
			break
		}
		e.rep.Inputs = append(e.rep.Inputs, c.files...)
		if e.log != nil {
			for i, n := range c.nums {
				if err := e.log.RecordFile(n, c.files[i].File); err != nil {
					return &handler.StoreError{Err: err}
				}
			}
		}
		if e.log != nil {
			// Between deliveries: the rows are outside every savepoint.
			e.rows = e.rows[:0]
			for i := range c.items {
				if it := &c.items[i]; it.bad == nil {
					e.rows = append(e.rows, ledger.CaptureRow{EventID: it.d.EventID, Identity: it.identity, Key: it.key, File: it.file, Line: it.d.At.Line})
				}
			}
			if err := e.log.RecordRows(e.rows); err != nil {
				return &handler.StoreError{Err: err}
			}
		}
		for i := range c.items {
			if err := ctx.Err(); err != nil {
				return err
			}
			if err := each(&c.items[i]); err != nil {
				return err
			}
		}
		if c.err != nil {
			return c.err
		}
	}
	return ctx.Err()
}

// drain hands over what is still queued once the capture is read.
func (e *engine) drain(ctx context.Context) error {
	for e.queue.Len() > 0 {
		if err := e.deliverDue(ctx, 1<<62); err != nil {
			return err
		}
	}
	return nil
}

// read parses the captures in a goroutine of its own.
func (e *engine) read(ctx context.Context, out chan<- chunk) {
	defer close(out)
	e.readInto(ctx, out)
}

func (e *engine) readInto(ctx context.Context, out chan<- chunk) {
	const size = 256
	cur := chunk{items: make([]item, 0, size)}
	send := func() bool {
		select {
		case out <- cur:
			cur = chunk{items: make([]item, 0, size)}
			return true
		case <-ctx.Done():
			return false
		}
	}
	for n, name := range e.o.Inputs {
		rd, err := OpenCapture(ctx, name, e.o.Stdin, e.o.Capture, &e.bytesRead)
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
				cur.items = append(cur.items, item{bad: be})
				if be.Fatal {
					break
				}
			} else if err != nil {
				cur.err = err
				send()
				return
			} else {
				cur.items = append(cur.items, e.parsed(ev, n+1))
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

// parsed makes the delivery of a capture event and hashes its identity.
func (e *engine) parsed(ev capture.Event, file int) item {
	// The business key the capture gives (--key, or the format's own) goes
	// with the delivery: every strategy records it with its effect, so one
	// effect per business key is checked whatever the strategy.
	d := consumer.Delivery{EventID: ev.ID, Source: ev.Source, Consumer: e.o.Handler.Consumer, Envelope: ev.Envelope, Attempt: 1, At: ev.At, BusinessKey: ev.Key}
	id, err := e.o.Handler.IdentityOf(d)
	if err != nil {
		return item{bad: &capture.BadRecordError{At: ev.At, Reason: err.Error()}}
	}
	d.Identity = id // the handler compares the same string: not computed twice
	return item{d: d, key: ev.Key, identity: fnv64(id), file: file, marked: ev.Redelivered}
}

func fnv64(s string) int64 {
	h := uint64(14695981039346656037)
	for i := 0; i < len(s); i++ {
		h ^= uint64(s[i])
		h *= 1099511628211
	}
	return int64(h)
}

// capture hands one delivery of the capture to the handler, with whatever
// --seed injects into it.
func (e *engine) capture(ctx context.Context, it *item) error {
	if ok, err := e.admit(it); !ok {
		return err
	}
	return e.deliver(ctx, it, e.seq)
}

// admit counts an item of the capture: a delivery takes the next place
// (e.seq) and ok is set; a bad record is skipped, or stops the replay past
// --max-bad.
func (e *engine) admit(it *item) (ok bool, err error) {
	if it.bad != nil {
		return false, e.skip(it)
	}
	e.seq++
	if it.key != "" {
		e.rep.keyed++
	}
	if it.marked {
		e.rep.Capture.MarkedRedelivered++
	}
	return true, nil
}

// skip counts a bad record, and stops the replay past --max-bad.
func (e *engine) skip(it *item) error {
	e.rep.Capture.BadRecords++
	return e.bad.Skip(it.bad)
}

// deliver hands the capture's delivery at pos to the handler, after what
// was queued before it, with whatever --seed injects into it. (A part of a
// split replay sees only its events' deliveries: what its queue holds for
// the places between them is handed over first.)
func (e *engine) deliver(ctx context.Context, it *item, pos int64) error {
	if err := e.deliverDue(ctx, pos-1); err != nil {
		return err
	}
	e.seq = pos
	// Same seed, same input, same replay; and a resumed replay makes the
	// same choice for each delivery as the interrupted one.
	seed := e.o.Seed
	rRepublish := chance(seed, pos, slotRepublish)
	rGap := int64(draw(seed, pos, slotGap) % 8)
	rPoint := 0
	if len(e.o.CrashAt) > 0 {
		rPoint = int(draw(seed, pos, slotPoint) % uint64(len(e.o.CrashAt)))
	}
	// The same draw as a replay into a target: the same positions get a
	// crash, or a lost ack (a crash after commit, before the ack).
	var fault consumer.FaultPoint
	rates := inject.Rates{Redeliver: e.o.Redeliver, Crash: e.o.Crash}
	switch rates.At(seed, pos) {
	case inject.Crash:
		fault = e.o.CrashAt[rPoint]
	case inject.Redeliver:
		fault = consumer.AfterCommit
	}
	if err := e.handle(ctx, step{d: it.d, fault: fault, kind: original, pos: pos, order: pos << 5}, rGap); err != nil {
		return err
	}
	if rRepublish < e.o.Republish {
		d := it.d
		e.rep.Injected.Republished++
		// Named by the position of the delivery it copies, so that a
		// resumed replay republishes under the same id.
		d.EventID = it.d.EventID + "~republish-" + strconv.FormatInt(pos, 10)
		e.schedule(step{d: d, kind: republished, pos: pos}, rGap)
	}
	if e.o.Rewind > 0 {
		if err := e.rewind(ctx, it.d); err != nil {
			return err
		}
	}
	return e.deliverDue(ctx, e.seq)
}

// handle delivers once and schedules what the broker would do next.
func (e *engine) handle(ctx context.Context, s step, gap int64) error {
	if e.ordered != nil {
		e.ordered.SetOrder(s.order)
	}
	s.res = e.h.Handle(ctx, s.d, handler.FailAt(s.fault))
	var se *handler.StoreError
	if errors.As(s.res.Err, &se) {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		return fmt.Errorf("delivering %s (%s): %w", s.d.EventID, s.d.At, se.Err)
	}
	e.rep.count(s)
	e.total++
	if e.watch != nil {
		e.watch(s)
	}
	if e.tick != nil {
		e.tick()
	} else if e.o.Progress != nil && e.total%4096 == 0 {
		e.o.Progress(e.total, e.bytesRead.Load())
	}
	var inj *handler.InjectedError
	injected := errors.As(s.res.Err, &inj)
	switch {
	case s.fault == consumer.AfterCommit && s.res.Outcome == consumer.Crashed:
		e.rep.Injected.Redelivered++
		next := s.d
		next.Attempt++
		e.schedule(step{d: next, kind: redelivery, pos: s.pos}, gap)
	case s.fault != "" && s.res.Outcome == consumer.Failed && injected:
		e.rep.Injected.Crashed++
		next := s.d
		next.Attempt++
		e.schedule(step{d: next, kind: retry, pos: s.pos}, gap)
	}
	return nil
}

// rewind keeps the last deliveries and, at seeded moments, re-delivers them
// in order, as a consumer group does after a rebalance to an older offset
// (inject.Rewind, as a replay into a target does).
func (e *engine) rewind(ctx context.Context, d consumer.Delivery) error {
	if !e.rewinds.Add(e.seq, d) {
		return nil
	}
	e.rep.Injected.Rebalances++
	for d := range e.rewinds.Again() {
		d.Attempt++
		e.rep.Injected.Rewound++
		if err := e.handle(ctx, step{d: d, kind: rewound, pos: e.seq}, 0); err != nil {
			return err
		}
	}
	return nil
}

// schedule queues a delivery the broker makes later: after gap more
// deliveries of the capture.
func (e *engine) schedule(s step, gap int64) {
	e.order++
	heap.Push(&e.queue, queued{due: e.seq + gap, order: e.order, s: s})
}

// deliverDue hands over every queued delivery due by now.
func (e *engine) deliverDue(ctx context.Context, now int64) error {
	for e.queue.Len() > 0 && e.queue[0].due <= now {
		q := heap.Pop(&e.queue).(queued)
		if e.ordered != nil {
			var err error
			if q.s.order, err = orderOf(q.due, q.s.pos, q.s.kind); err != nil {
				return err
			}
		}
		// A later delivery is not injected into again, so every event ends
		// handled; its own gap is drawn all the same.
		gap := 1 + int64(draw(e.o.Seed, q.s.pos, slotLater+uint64(q.s.kind)<<32+uint64(q.s.d.Attempt))%8)
		if err := e.handle(ctx, q.s, gap); err != nil {
			return err
		}
	}
	return nil
}

// orderOf is the place in the whole replay of a queued delivery that was
// due after the capture's delivery at due: after that delivery (whose own
// place is due<<5), before the next, and among the others due then in the
// order the queue hands them over in, by the capture delivery they come
// from (at most 7 before), a redelivery or retry before a republished
// copy. Every queued delivery comes from a capture delivery, with a gap of
// 0 to 7 (a delivery the queue hands over queues nothing more), and a
// capture delivery queues at most one of each kind.
func orderOf(due, from int64, k kind) (int64, error) {
	gap := due - from
	if gap < 0 || gap > 7 || k != redelivery && k != retry && k != republished {
		return 0, fmt.Errorf("replay: no place for a %d delivery due %d after %d", k, gap, from)
	}
	which := int64(0)
	if k == republished {
		which = 1
	}
	return due<<5 | 1<<4 | (7-gap)<<1 | which, nil
}

type queued struct {
	due, order int64
	s          step
}

// pending is a min-heap of queued deliveries by due time, then order.
type pending []queued

func (p pending) Len() int { return len(p) }
func (p pending) Less(i, j int) bool {
	if p[i].due != p[j].due {
		return p[i].due < p[j].due
	}
	return p[i].order < p[j].order
}
func (p pending) Swap(i, j int) { p[i], p[j] = p[j], p[i] }
func (p *pending) Push(x any)   { *p = append(*p, x.(queued)) }
func (p *pending) Pop() any {
	old := *p
	x := old[len(old)-1]
	*p = old[:len(old)-1]
	return x
}

// countingReader counts the bytes read from a capture file, for the
// progress line: bytes read of the file's size.
type countingReader struct {
	r io.Reader
	n *atomic.Int64
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n.Add(int64(n))
	return n, err
}

// openStream reads a JetStream stream as a capture: its messages, in
// stream order, each placed at its sequence where a file has a line.
func openStream(ctx context.Context, name string, opts capture.Options) (*capture.Reader, error) {
	u, err := nats.ParseStreamURL(name)
	if err != nil {
		return nil, inputf("%v", err)
	}
	sr, err := nats.ReadStream(ctx, u)
	if err != nil {
		return nil, err
	}
	rd, err := capture.OpenRecords(name, capture.NATS, opts, sr.Next)
	if err != nil {
		sr.Close()
		return nil, err
	}
	rd.OnClose(sr)
	return rd, nil
}

// openTopic reads a Kafka topic as a capture: its records, partition by
// partition in offset order, each placed at its place in the read where a
// file has a line.
func openTopic(ctx context.Context, name string, opts capture.Options) (*capture.Reader, error) {
	u, err := kafka.ParseTopicURL(name)
	if err != nil {
		return nil, inputf("%v", err)
	}
	tr, err := kafka.ReadTopic(ctx, u)
	if err != nil {
		return nil, err
	}
	rd, err := capture.OpenRecords(name, capture.Kcat, opts, tr.Next)
	if err != nil {
		tr.Close()
		return nil, err
	}
	rd.OnClose(tr)
	return rd, nil
}
