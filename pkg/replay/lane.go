package replay

import (
	"container/heap"
	"context"
	"errors"
	"fmt"
	"strconv"

	"github.com/redeliver/redeliver/pkg/capture"
	"github.com/redeliver/redeliver/pkg/consumer"
	"github.com/redeliver/redeliver/pkg/handler"
	"github.com/redeliver/redeliver/pkg/inject"
	"github.com/redeliver/redeliver/pkg/ledger"
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

// lane is the built-in handler as the executor of a lane of the replay
// engine: it hands each delivery to the handler with the fault planned for
// it at one of its fault points, and queues what the broker would do next
// (a redelivery after a lost ack, a retry after a crash mid-transaction, a
// republished copy), each due a few deliveries of the capture later.
type lane struct {
	o     Options
	eng   *Engine[item]
	h     *handler.Handler
	rep   *Report
	watch func(step) // sees every delivery, when a reproducer is being collected
	seq   int64      // position of the capture delivery handed over last
	queue pending
	order int64

	// In one part of a split replay: the part's store, told each
	// delivery's place.
	ordered ledger.OrderedStore
}

func newLane(o Options, eng *Engine[item], store handler.Store, rep *Report, watch func(step)) *lane {
	return &lane{o: o, eng: eng, rep: rep, watch: watch, h: handler.New(o.Handler, store, nil, clock)}
}

// newEngine is the replay engine of the built-in handler: deliveries
// parsed with their identity, the faults of --redeliver and --crash, and
// --rewind; its progress, bad records, the captures read, the
// rebalances and the capture log (log, when not nil) are rep's.
func newEngine(o Options, rep *Report, log *ledger.Recorder) *Engine[item] {
	var rows []ledger.CaptureRow
	return &Engine[item]{
		Inputs: o.Inputs, Stdin: o.Stdin, Capture: o.Capture,
		Bad:  MaxBad{Limit: o.MaxBad, Warn: o.Warn},
		Seed: o.Seed, Rates: inject.Rates{Redeliver: o.Redeliver, Crash: o.Crash}, Rewind: o.Rewind,
		Parse:    func(ev capture.Event, file int) (item, *capture.BadRecordError) { return parse(o, ev, file) },
		LaneOf:   func(it *item) uint64 { return uint64(fnv64(it.d.EventID)) },
		Progress: o.Progress,
		Admit: func(it *item) {
			if it.key != "" {
				rep.keyed++
			}
			if it.marked {
				rep.Capture.MarkedRedelivered++
			}
		},
		Read: func(files []Input, nums []int, items []Item[item]) error {
			rep.Inputs = append(rep.Inputs, files...)
			if log == nil || *log == nil {
				return nil
			}
			for i, n := range nums {
				if err := (*log).RecordFile(n, files[i].File); err != nil {
					return &handler.StoreError{Err: err}
				}
			}
			// Between deliveries: the rows are outside every savepoint.
			rows = rows[:0]
			for i := range items {
				if it := &items[i]; it.Bad == nil {
					d := &it.Delivery
					rows = append(rows, ledger.CaptureRow{EventID: d.d.EventID, Identity: d.identity, Key: d.key, File: d.file, Line: d.d.At.Line})
				}
			}
			if err := (*log).RecordRows(rows); err != nil {
				return &handler.StoreError{Err: err}
			}
			return nil
		},
	}
}

// ended copies into rep what the engine counted: the bad records skipped
// and the rebalances.
func ended(eng *Engine[item], rep *Report) {
	rep.Capture.BadRecords = int64(eng.Bad.Count())
	rep.Injected.Rebalances += eng.Rebalances
	rep.Injected.Rewound += eng.Rewound
}

// Every injected decision is a function of --seed and the position of
// the capture delivery it is about, never of what came before it (see
// pkg/inject): a replay resumed on a file makes, delivery for delivery,
// the choices the interrupted one made, whatever the handler answered in
// between.
const (
	slotPoint     = inject.SlotPoint
	slotRepublish = inject.SlotRepublish
	slotGap       = inject.SlotGap
	slotLater     = inject.SlotLater // + kind<<32 + attempt: the gap after a later delivery
)

func draw(seed, pos int64, slot uint64) uint64 { return inject.Draw(seed, pos, slot) }

func chance(seed, pos int64, slot uint64) float64 { return inject.Chance(seed, pos, slot) }

// parse makes the delivery of a capture event and hashes its identity.
func parse(o Options, ev capture.Event, file int) (item, *capture.BadRecordError) {
	// The business key the capture gives (--key, or the format's own) goes
	// with the delivery: every strategy records it with its effect, so one
	// effect per business key is checked whatever the strategy.
	d := consumer.Delivery{EventID: ev.ID, Source: ev.Source, Consumer: o.Handler.Consumer, Envelope: ev.Envelope, Payload: ev.Data, Attempt: 1, At: ev.At, BusinessKey: ev.Key}
	id, err := o.Handler.IdentityOf(d)
	if err != nil {
		return item{}, &capture.BadRecordError{At: ev.At, Reason: err.Error()}
	}
	d.Identity = id // the handler compares the same string: not computed twice
	return item{d: d, key: ev.Key, identity: fnv64(id), file: file, marked: ev.Redelivered}, nil
}

func fnv64(s string) int64 {
	h := uint64(14695981039346656037)
	for i := 0; i < len(s); i++ {
		h ^= uint64(s[i])
		h *= 1099511628211
	}
	return int64(h)
}

// Deliver hands the lane's delivery p to the handler, after what was
// queued before its position, with the fault planned for it at one of
// the handler's fault points. (A part of a split replay sees only its
// events' deliveries: what its queue holds for the places between them is
// handed over first.)
func (e *lane) Deliver(ctx context.Context, p Planned[item]) error {
	if p.Rewound {
		// A rebalance re-delivers it, as a consumer group does after a
		// rebalance to an older offset.
		d := p.Delivery.d
		d.Attempt++
		if err := e.handle(ctx, step{d: d, kind: rewound, pos: p.Pos}, 0); err != nil {
			return err
		}
	} else if err := e.deliver(ctx, &p.Delivery, p.Pos, p.Fault); err != nil {
		return err
	}
	if !p.Last {
		return nil
	}
	return e.deliverDue(ctx, e.seq)
}

// Finish hands over what is still queued once the capture is read.
func (e *lane) Finish(ctx context.Context) error {
	for e.queue.Len() > 0 {
		if err := e.deliverDue(ctx, 1<<62); err != nil {
			return err
		}
	}
	return nil
}

// deliver hands the capture's delivery at pos to the handler, after what
// was queued before it, with the fault planned for it.
func (e *lane) deliver(ctx context.Context, it *item, pos int64, planned inject.Fault) error {
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
	switch planned {
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
	return nil
}

// handle delivers once and schedules what the broker would do next.
func (e *lane) handle(ctx context.Context, s step, gap int64) error {
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
	if e.watch != nil {
		e.watch(s)
	}
	e.eng.Delivered()
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

// schedule queues a delivery the broker makes later: after gap more
// deliveries of the capture.
func (e *lane) schedule(s step, gap int64) {
	e.order++
	heap.Push(&e.queue, queued{due: e.seq + gap, order: e.order, s: s})
}

// deliverDue hands over every queued delivery due by now.
func (e *lane) deliverDue(ctx context.Context, now int64) error {
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
