package replay

import (
	"cmp"
	"context"
	"errors"
	"os"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/redeliver/redeliver/pkg/ledger"
)

// A replay that keeps nothing is split by event id into parts handled side
// by side, one per core (up to four), each on a store of its own: one
// goroutine reads the captures and records them in the capture log, and
// hands each delivery, with its place in the capture, to the part of its
// event id. Every delivery of an event, and everything injected into it
// (its redelivery, its retry, its republished copy), is handled in one
// part, in the order a single handler would have handled them, and a
// handler's decision for a delivery depends only on its event's rows: the
// outcomes, the counts and the per-event invariants are a single store's.
// What crosses events, business keys and effect ids, the ledger answers
// over all parts (ledger.Split), the ids as one store would have numbered
// them: each delivery's place in the whole replay (its order) is known to
// its part.
//
// Not split: a replay onto a file (it is resumed delivery by delivery),
// one that dedups on the business key (a key's events would need one
// part), rebalances (they re-deliver the last deliveries of all events),
// marker retention (a purge reaches across events), --batch (it asks for
// the commits of one store), a process with one core, and captures files
// smaller than splitBytes in all (see splitBytes).

// splitParts is how many parts the replay is handled in (1: not split).
func splitParts(o Options) int {
	if o.OpenSplit == nil || o.DB != "" && o.DB != ledger.Memory || o.Handler.Strategy.UsesKey() ||
		o.Rewind > 0 || o.Handler.Retention > 0 || o.Batch > 0 {
		return 1
	}
	if o.parts > 0 {
		return o.parts
	}
	if small(o.Inputs) {
		return 1
	}
	return min(runtime.GOMAXPROCS(0), 4)
}

// splitBytes is the size of capture files below which a replay is not
// split: about 6,000 CloudEvents, replayed in under a tenth of a second
// whether split or not, where the parts' databases buy nothing.
const splitBytes = 1 << 20

// small reports whether the inputs are files smaller than splitBytes in
// all (stdin and streams are of unknown size).
func small(inputs []string) bool {
	var n int64
	for _, in := range inputs {
		st, err := os.Stat(in)
		if in == "-" || err != nil || !st.Mode().IsRegular() {
			return false
		}
		n += st.Size()
	}
	return n < splitBytes
}

// partChunk is how many deliveries the reading goroutine hands a part at once.
const partChunk = 256

// runSplit replays into split's parts; log, if not nil, records the capture.
func runSplit(ctx context.Context, o Options, split ledger.Split, log ledger.Recorder, rep *Report) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	n := split.Parts()
	feeds := make([]chan []item, n)
	for i := range feeds {
		feeds[i] = make(chan []item, 4)
	}
	read := newEngine(o, nil, log, rep, nil)

	// Progress counts the deliveries of all parts.
	var handled atomic.Int64
	var progress sync.Mutex
	tick := func() {
		if o.Progress == nil {
			return
		}
		if k := handled.Add(1); k%4096 == 0 {
			progress.Lock()
			o.Progress(k, read.bytesRead.Load())
			progress.Unlock()
		}
	}

	readErr := make(chan error, 1)
	go func() {
		chunks := make([][]item, n)
		send := func(i int) bool {
			select {
			case feeds[i] <- chunks[i]:
				chunks[i] = make([]item, 0, partChunk)
				return true
			case <-ctx.Done():
				return false
			}
		}
		err := read.readAll(ctx, func(it *item) error {
			if ok, err := read.admit(it); !ok {
				return err
			}
			it.pos = read.seq
			i := int(uint64(fnv64(it.d.EventID)) % uint64(n))
			chunks[i] = append(chunks[i], *it)
			if len(chunks[i]) == partChunk && !send(i) {
				return ctx.Err()
			}
			return nil
		})
		for i := range chunks {
			if err == nil && len(chunks[i]) > 0 && !send(i) {
				err = ctx.Err()
			}
			close(feeds[i])
		}
		if err != nil {
			cancel()
		}
		readErr <- err
	}()

	reports := make([]*Report, n)
	// One cancel stops the reader and every part: the parts' context ends
	// when any part fails, even one that fails before it reads a delivery
	// (its store cannot begin), and the reader, which may be waiting to
	// hand that part more, stops with it and closes every feed.
	err := split.RunParts(ctx, func(ctx context.Context, part int, s ledger.OrderedStore) (err error) {
		stop := context.AfterFunc(ctx, cancel)
		defer func() {
			stop()
			if err != nil {
				cancel()
			}
		}()
		po := o
		po.Progress = nil
		reports[part] = newReport(po, false, 0)
		e := newEngine(po, s, nil, reports[part], nil)
		e.ordered, e.tick = s, tick
		for {
			var items []item
			var more bool
			select {
			case items, more = <-feeds[part]:
			case <-ctx.Done():
				return ctx.Err()
			}
			if !more {
				break
			}
			for i := range items {
				if err := ctx.Err(); err != nil {
					return err
				}
				if err := e.deliver(ctx, &items[i], items[i].pos); err != nil {
					return err
				}
			}
		}
		if err := ctx.Err(); err != nil {
			return err
		}
		return e.drain(ctx)
	})
	rerr := <-readErr
	switch {
	case rerr != nil && !errors.Is(rerr, context.Canceled):
		return rerr
	case err != nil:
		return err
	case rerr != nil:
		return rerr
	}
	for _, p := range reports {
		rep.add(p)
	}
	if o.Progress != nil {
		o.Progress(handled.Load(), read.bytesRead.Load())
	}
	return nil
}

// add counts what a part of a split replay handled into r.
func (r *Report) add(p *Report) {
	r.Injected.Redelivered += p.Injected.Redelivered
	r.Injected.Crashed += p.Injected.Crashed
	r.Injected.Rebalances += p.Injected.Rebalances
	r.Injected.Rewound += p.Injected.Rewound
	r.Injected.Republished += p.Injected.Republished
	r.Injected.Concurrent += p.Injected.Concurrent
	r.Outcomes.Processed += p.Outcomes.Processed
	r.Outcomes.Duplicate += p.Outcomes.Duplicate
	r.Outcomes.Conflict += p.Outcomes.Conflict
	r.Outcomes.Failed += p.Outcomes.Failed
	r.Outcomes.Crashed += p.Outcomes.Crashed
	r.Counters.Add(p.Counters)
	r.Over.merge(p.Over)
	// The first unexpected failures of the whole replay, in its order.
	r.Unexpected.Count += p.Unexpected.Count
	r.Unexpected.Examples = append(r.Unexpected.Examples, p.Unexpected.Examples...)
	slices.SortStableFunc(r.Unexpected.Examples, func(a, b FailureExample) int { return cmp.Compare(a.order, b.order) })
	if len(r.Unexpected.Examples) > r.examples {
		r.Unexpected.Examples = r.Unexpected.Examples[:r.examples]
	}
}
