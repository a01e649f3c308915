package builtin

import (
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"maps"
	"time"

	"github.com/redeliver/redeliver/pkg/consumer"
	"github.com/redeliver/redeliver/pkg/handler"
	"github.com/redeliver/redeliver/pkg/invariant"
	"github.com/redeliver/redeliver/pkg/runner"
	"github.com/redeliver/redeliver/pkg/scenario"
)

// Store is a database the built-in handler writes to and the checker
// reads.
type Store interface {
	handler.Store
	Count(ctx context.Context, table string) (int64, error)
	Markers(ctx context.Context) ([]handler.Marker, error)
	Effects(ctx context.Context) ([]handler.Effect, error)
	Close() error
}

// Opener creates a fresh store for one scenario file.
type Opener func(ctx context.Context, s *scenario.Scenario) (Store, error)

// RunFile runs every check of a scenario through the built-in handler, on
// stores open creates (see Run).
func RunFile(ctx context.Context, s *scenario.Scenario, open Opener) (*runner.FileResult, error) {
	return runner.Run(ctx, s, Kind(s, open))
}

// Kind is the kind of system the built-in handler is: the file's
// handler on a store open creates, with the payment gateway its strategy
// may call. Its concurrent steps are explored at the fault points the
// strategy reaches.
func Kind(s *scenario.Scenario, open Opener) runner.Kind {
	return runner.Kind{
		Open: func(ctx context.Context, s *scenario.Scenario) (runner.System, error) {
			store, err := open(ctx, s)
			if err != nil {
				return nil, err
			}
			b, err := newBuiltin(s, store)
			if err != nil {
				store.Close()
				return nil, err
			}
			return b, nil
		},
		Reaches: s.Handler.Strategy.Reaches,
	}
}

// builtin is the built-in handler on its store: a System.
type builtin struct {
	s        *scenario.Scenario
	store    Store
	gateway  *handler.PaymentGateway
	h        *handler.Handler
	now      time.Time
	attempts map[[2]string]int
	// The last digest read, and the store's version then (see digest).
	digested   bool
	digestAt   uint64
	lastDigest uint64
}

func newBuiltin(s *scenario.Scenario, store Store) (*builtin, error) {
	b := &builtin{s: s, store: store, now: runner.Epoch, attempts: map[[2]string]int{}}
	if s.Handler.Strategy.CallsOut() {
		g, err := handler.NewPaymentGateway()
		if err != nil {
			return nil, err
		}
		b.gateway = g
	}
	b.h = handler.New(s.Handler.Config, store, b.gatewayOrNil(), func() time.Time { return b.now })
	return b, nil
}

func (b *builtin) gatewayOrNil() handler.Gateway {
	if b.gateway == nil {
		return nil
	}
	return b.gateway
}

func (b *builtin) Close() error {
	if b.gateway != nil {
		b.gateway.Close()
	}
	return b.store.Close()
}

func (b *builtin) Describe(fr *runner.FileResult) { fr.Strategy = b.s.Handler.Strategy }

func (b *builtin) Advance(d time.Duration) { b.now = b.now.Add(d) }

// Settle has nothing to wait for: the handler answers when it is done.
func (b *builtin) Settle(context.Context, *consumer.Counters) error { return nil }

func (b *builtin) Count(ctx context.Context, table string) (int64, error) {
	return b.store.Count(ctx, table)
}

// delivery is what a deliver step hands the handler.
func (b *builtin) delivery(st *scenario.Step) (consumer.Delivery, string) {
	d := consumer.Delivery{EventID: st.Event.ID, Source: st.Event.Source, Consumer: st.Consumer, Schema: st.Event.Schema, Envelope: st.Event.Envelope, At: st.Pos}
	if d.Consumer == "" {
		d.Consumer = b.s.Handler.Consumer
	}
	return d, b.h.Scope(d)
}

func (b *builtin) Deliver(ctx context.Context, c runner.Call) (consumer.Result, error) {
	d, scope := b.delivery(c.St)
	unit := [2]string{d.EventID, scope}
	b.attempts[unit]++
	d.Attempt = b.attempts[unit]
	var before uint64
	redelivery := d.Attempt > 1
	keepsMarkers := b.s.Handler.Strategy.KeepsMarkers()
	if redelivery && keepsMarkers {
		var err error
		if before, err = b.digest(ctx); err != nil {
			return consumer.Result{}, err
		}
	}
	// One delivery on its own takes microseconds and waits for no other
	// worker: it is not interrupted halfway (a context that can be
	// cancelled costs database/sql a goroutine per query), the run stops
	// before the next one.
	if err := ctx.Err(); err != nil {
		return consumer.Result{}, err
	}
	span := invariant.Span{Sent: time.Now()}
	res := b.h.Handle(context.WithoutCancel(ctx), d, handler.FailAt(c.St.Fail))
	span.Answered = time.Now()
	rec, err := b.record(ctx, c, d, scope, res, span, true)
	if err != nil {
		return res, err
	}
	if res.Outcome == consumer.Conflict && redelivery && keepsMarkers {
		after, err := b.digest(ctx)
		if err != nil {
			return res, err
		}
		rec.ChangedStore = after != before
	}
	return res, nil
}

// record records one delivery the handler made, when and on which lane
// it ran, and counts it; repeat: it may be kept as a repeat of the record
// before.
func (b *builtin) record(ctx context.Context, c runner.Call, d consumer.Delivery, scope string, res consumer.Result, span invariant.Span, repeat bool) (*invariant.Record, error) {
	var se *handler.StoreError
	if errors.As(res.Err, &se) {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		return nil, fmt.Errorf("delivering %s (%s): %w", d.EventID, c.St.Pos, se.Err)
	}
	rec := c.Rec.Record(invariant.Record{EventID: d.EventID, Consumer: scope, Key: res.Key, Result: res, At: b.now, Span: span}, repeat)
	cnt := c.Rec.Counters()
	cnt.Deliveries++
	if d.Attempt > 1 {
		cnt.Redeliveries++
	}
	switch res.Outcome {
	case consumer.Processed:
		cnt.Processed++
		cnt.Effects++
	case consumer.Duplicate:
		cnt.Duplicates++
	case consumer.Conflict:
		cnt.Conflicts++
	case consumer.Failed:
		cnt.Failed++
	case consumer.Crashed:
		cnt.Crashed++
		cnt.Effects++
	}
	if x := res.External; x != nil {
		var kc *handler.KeyConflictError
		if errors.As(x.Err, &kc) {
			cnt.KeyConflicts++
		}
		if res.Outcome == consumer.Failed && x.Err == nil {
			cnt.FailedAfterExternal++
		}
	}
	return rec, nil
}

// Inspect checks the markers and the charges a state expects.
func (b *builtin) Inspect(ctx context.Context, step int, s *scenario.State, miss func(consumer.Location, runner.Miss)) error {
	if len(s.Processed)+len(s.NotProcessed) > 0 {
		markers, err := b.store.Markers(ctx)
		if err != nil {
			return err
		}
		marked := func(ref scenario.EventRef) bool {
			for _, m := range markers {
				if m.EventID == ref.ID && (ref.Consumer == "" || m.Consumer == ref.Consumer) {
					return true
				}
			}
			return false
		}
		for _, ref := range s.Processed {
			if !marked(ref) {
				miss(ref.Pos, runner.Miss{Kind: runner.MissMarked, Step: step, Event: ref.ID, Consumer: ref.Consumer, Flag: true})
			}
		}
		for _, ref := range s.NotProcessed {
			if marked(ref) {
				miss(ref.Pos, runner.Miss{Kind: runner.MissMarked, Step: step, Event: ref.ID, Consumer: ref.Consumer})
			}
		}
	}
	if s.Charges != nil {
		n, err := b.charges(ctx)
		if err != nil {
			return err
		}
		if n != *s.Charges {
			miss(s.ChargesPos, runner.Miss{Kind: runner.MissCharges, Step: step, WantN: int64(*s.Charges), GotN: int64(n)})
		}
	}
	return nil
}

func (b *builtin) charges(ctx context.Context) (int, error) {
	if b.gateway == nil {
		return 0, nil
	}
	chs, err := b.gateway.Charges(ctx)
	return len(chs), err
}

// state reads what the checker looks at.
func (b *builtin) state(ctx context.Context) (invariant.State, error) {
	var st invariant.State
	var err error
	if st.Markers, err = b.store.Markers(ctx); err != nil {
		return st, err
	}
	if st.Effects, err = b.store.Effects(ctx); err != nil {
		return st, err
	}
	if b.gateway != nil {
		chs, err := b.gateway.Charges(ctx)
		if err != nil {
			return st, err
		}
		for _, c := range chs {
			st.Charges = append(st.Charges, invariant.Charge{ID: c.ID, IdempotencyKey: c.IdempotencyKey, OrderRef: c.OrderRef})
		}
	}
	if ret := b.s.Handler.Retention; ret > 0 {
		st.Horizon = b.now.Add(-ret)
	}
	return st, nil
}

// versioned is a store that tells when what it holds may have changed:
// Version stands still while it holds the same.
type versioned interface {
	Version() uint64
}

// digest fingerprints what the store holds, to tell whether a conflict
// changed it (its markers and effects). A versioned store is read again
// only once its version moved.
func (b *builtin) digest(ctx context.Context) (uint64, error) {
	v, ok := b.store.(versioned)
	if !ok {
		return b.readDigest(ctx)
	}
	ver := v.Version()
	if b.digested && b.digestAt == ver {
		return b.lastDigest, nil
	}
	d, err := b.readDigest(ctx)
	if err != nil {
		return 0, err
	}
	b.digested, b.digestAt, b.lastDigest = true, ver, d
	return d, nil
}

func (b *builtin) readDigest(ctx context.Context) (uint64, error) {
	st, err := b.state(ctx)
	if err != nil {
		return 0, err
	}
	h := fnv.New64a()
	for _, m := range st.Markers {
		fmt.Fprintf(h, "m\x00%s\x00%s\x00%s\x00%s\x00%d\n", m.EventID, m.Consumer, m.Identity, m.BusinessKey, m.At.UnixNano())
	}
	for _, e := range st.Effects {
		fmt.Fprintf(h, "e\x00%d\x00%s\x00%s\x00%s\x00%s\n", e.ID, e.EventID, e.Consumer, e.BusinessKey, e.Payload)
	}
	return h.Sum64(), nil
}

// Judge decides the catalogue's invariants over the whole run's history
// and what the store and the gateway hold, and reconciles the two.
func (b *builtin) Judge(ctx context.Context, history []invariant.Record, res *runner.CheckResult) ([]invariant.Violation, error) {
	st, err := b.state(ctx)
	if err != nil {
		return nil, err
	}
	if b.gateway != nil {
		rec := invariant.Reconcile(st)
		res.Reconciliation = rec.Findings(b.s.Handler.Effect)
		// Reconciliation describes the state at the end of the check; the
		// file's totals take the last check's figures, not a sum.
		res.Counters.OrphanCharges = len(rec.OrphanCharges)
		res.Counters.UnchargedEffects = len(rec.Uncharged)
	}
	return invariant.Check(b.s.Handler.Strategy, b.s.Handler.Effect, history, st), nil
}

// Total adds a check's counters to the file's; the reconciliation's are
// the last check's.
func (b *builtin) Total(file *consumer.Counters, c consumer.Counters) {
	file.Add(c)
	file.OrphanCharges, file.UnchargedEffects = c.OrphanCharges, c.UnchargedEffects
}

// Say gives {charges}.
func (b *builtin) Say(ctx context.Context, _ *runner.CheckResult, values map[string]int64, fields []string) error {
	for _, f := range fields {
		if f == "charges" {
			n, err := b.charges(ctx)
			if err != nil {
				return err
			}
			values[f] = int64(n)
		}
	}
	return nil
}

// Summary is what the handler counted: what came of each delivery.
func (b *builtin) Summary(res *runner.CheckResult) runner.Summary {
	c := res.Counters
	return runner.Summary{Deliveries: c.Deliveries, Tallies: []runner.Tally{
		{N: c.Processed, Word: "processed"},
		{N: c.Duplicates, Word: "duplicate", Plural: true},
		{N: c.Conflicts, Word: "conflict", Plural: true},
		{N: c.Failed, Word: "failure", Plural: true},
		{N: c.Crashed, Word: "crashed"},
	}}
}

// storeSnapshotter is a store that can copy what it holds and put the
// copy back.
type storeSnapshotter interface {
	Snapshot(ctx context.Context) (restore func(context.Context) error, release func(), err error)
}

func (b *builtin) CanSnapshot() bool {
	_, ok := b.store.(storeSnapshotter)
	return ok
}

// Snapshot copies the store, the clock, the attempts and the gateway's
// ledger; restore puts them all back.
func (b *builtin) Snapshot(ctx context.Context) (func(context.Context) error, func(), error) {
	restoreStore, release, err := b.store.(storeSnapshotter).Snapshot(ctx)
	if err != nil {
		return nil, nil, err
	}
	now, attempts := b.now, maps.Clone(b.attempts)
	var ledger *handler.GatewayLedger
	if b.gateway != nil {
		l := b.gateway.Snapshot()
		ledger = &l
	}
	restore := func(ctx context.Context) error {
		if err := restoreStore(ctx); err != nil {
			return err
		}
		b.now, b.attempts = now, maps.Clone(attempts)
		if ledger != nil {
			b.gateway.Restore(*ledger)
		}
		// The store's version may stand where it stood before the
		// restore while holding something else: read the digest again.
		b.digested = false
		return nil
	}
	return restore, release, nil
}
