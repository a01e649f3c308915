package replay

import (
	"cmp"
	"context"
	"fmt"
	"os"
	"runtime"
	"slices"

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
// the commits of one store) — whyOneLane says which, and --parallel N > 1
// is refused on them —; and, unless --parallel asks for parts, a process
// with one core and captures files smaller than splitBytes in all (see
// splitBytes).

// splitParts is how many parts the replay is handled in (1: not split):
// --parallel, else one per core up to four.
func splitParts(o Options) int {
	if whyOneLane(o) != "" {
		return 1
	}
	if o.Parallel > 0 {
		return o.Parallel
	}
	if small(o.Inputs) {
		return 1
	}
	return min(runtime.GOMAXPROCS(0), 4)
}

// whyOneLane says why the replay cannot be split into parts, or "" when
// it can.
func whyOneLane(o Options) string {
	switch {
	case o.DB != "" && o.DB != ledger.Memory:
		return "a replay onto a file (--db) runs in that one store, to be resumed delivery by delivery"
	case o.Handler.Strategy.UsesKey():
		return fmt.Sprintf("strategy %s dedups on the business key, whose events one store must see", o.Handler.Strategy)
	case o.Rewind > 0:
		return "a --rewind rebalance delivers again the last deliveries of every event, which one store must see"
	case o.Handler.Retention > 0:
		return "marker retention purges across events, in one store"
	case o.Batch > 0:
		return "--batch sets the commits of one store"
	case o.OpenSplit == nil:
		return "no split store was given (Options.OpenSplit)"
	}
	return ""
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

// runSplit replays into split's parts, a lane of the replay engine each;
// log, if not nil, records the capture.
func runSplit(ctx context.Context, o Options, split ledger.Split, log ledger.Recorder, rep *Report) error {
	eng := newEngine(o, rep, &log)
	eng.Lanes = split.Parts()
	reports := make([]*Report, eng.Lanes)
	err := eng.Run(ctx, func(ctx context.Context, serve func(context.Context, int, Lane[item]) error) error {
		return split.RunParts(ctx, func(ctx context.Context, part int, s ledger.OrderedStore) error {
			po := o
			po.Progress = nil
			reports[part] = newReport(po, false, 0)
			l := newLane(po, eng, s, reports[part], nil)
			l.ordered = s
			return serve(ctx, part, l)
		})
	})
	ended(eng, rep)
	if err != nil {
		return err
	}
	for _, p := range reports {
		rep.add(p)
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
