// Package runner runs scenario files: it hands each step's deliveries to the
// handler, records the history, evaluates the expectations the file wrote
// and asks the checker for broken invariants after every check.
package runner

import (
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"maps"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/redeliver/redeliver/pkg/consumer"
	"github.com/redeliver/redeliver/pkg/gateway"
	"github.com/redeliver/redeliver/pkg/handler"
	"github.com/redeliver/redeliver/pkg/invariant"
	"github.com/redeliver/redeliver/pkg/problem"
	"github.com/redeliver/redeliver/pkg/report/words"
	"github.com/redeliver/redeliver/pkg/scenario"
)

// Store is a database the handler writes to and the checker reads.
type Store interface {
	handler.Store
	Count(ctx context.Context, table string) (int64, error)
	Markers(ctx context.Context) ([]handler.Marker, error)
	Effects(ctx context.Context) ([]handler.Effect, error)
	Close() error
}

// Opener creates a fresh store for one scenario file.
type Opener func(ctx context.Context, s *scenario.Scenario) (Store, error)

// Epoch is where the scenario clock starts.
var Epoch = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// harnessError is a failure of the harness (database, I/O), not of a
// check, while running file: an environment problem, unless what failed
// already said what kind of problem it is.
func harnessError(file string, err error) error {
	var p *problem.Error
	if errors.As(err, &p) {
		return p
	}
	return problem.Environmentf(problem.Pos{File: file}, err)
}

// RunFile runs every check of one scenario against a fresh store. A check
// with a concurrent step that has no interleave is explored: it is run once
// under each of its schedules, each time from the state the file's earlier
// checks left, and it passes only if it passes under every schedule (see
// fold). The schedules run before the file's own run, so that the store
// left at the end is that run's.
//
// A store that can snapshot itself (snapshotter) and put the snapshot back
// is run once: the earlier checks run once, the state they left is
// snapshotted and put back before each schedule. Any other store is opened
// afresh for each schedule, the earlier checks run again first.
func RunFile(ctx context.Context, s *scenario.Scenario, open Opener) (*FileResult, error) {
	plans := make([][]schedule, len(s.Checks))
	explores := false
	for i, c := range s.Checks {
		plans[i] = schedules(s.Handler.Strategy, c)
		explores = explores || len(plans[i]) > 1
	}
	var res *FileResult
	var explored [][]CheckResult
	var err error
	if explores {
		res, explored, err = runSnapshotted(ctx, s, &open, plans)
	}
	if res == nil && err == nil {
		res, explored, err = replayPrefixes(ctx, s, open, plans)
	}
	if res == nil {
		return nil, err
	}
	for i := range res.Checks {
		if len(plans[i]) > 1 {
			res.Checks[i] = fold(s.Checks[i], plans[i], append([]CheckResult{res.Checks[i]}, explored[i]...))
		}
	}
	for _, cr := range res.Checks {
		res.Counters.Add(cr.Counters)
		res.Counters.OrphanCharges, res.Counters.UnchargedEffects = cr.Counters.OrphanCharges, cr.Counters.UnchargedEffects
	}
	return res, err
}

// replayPrefixes runs each schedule of an explored check on a fresh store,
// the file's earlier checks first, then the file.
func replayPrefixes(ctx context.Context, s *scenario.Scenario, open Opener, plans [][]schedule) (*FileResult, [][]CheckResult, error) {
	explored := make([][]CheckResult, len(s.Checks))
	for i := range s.Checks {
		for k := 1; k < len(plans[i]); k++ {
			res, err := runChecks(ctx, s, open, plans, i+1, &plans[i][k])
			if err != nil {
				return &FileResult{File: s.File, Name: s.Name, Strategy: s.Handler.Strategy}, nil, err
			}
			explored[i] = append(explored[i], res.Checks[i])
		}
	}
	res, err := runChecks(ctx, s, open, plans, len(s.Checks), nil)
	return res, explored, err
}

// snapshotter is a store that can copy what it holds and put the copy
// back (restore), leaving it exactly as it was at the copy; release drops
// the copy.
type snapshotter interface {
	Snapshot(ctx context.Context) (restore func(context.Context) error, release func(), err error)
}

// runSnapshotted runs the file once on one store, snapshotting the state
// before each explored check and putting it back before each of its
// schedules and before the file's own run of it. It returns nil results
// and no error when the store cannot snapshot, and open then hands the
// store it opened to its next caller.
func runSnapshotted(ctx context.Context, s *scenario.Scenario, open *Opener, plans [][]schedule) (*FileResult, [][]CheckResult, error) {
	// An error ends the run as replaying the prefixes would: before any
	// check's result when a later check is explored (its schedules, run
	// first, would have met it), after the checks before it otherwise.
	bare := &FileResult{File: s.File, Name: s.Name, Strategy: s.Handler.Strategy}
	orig := *open
	store, err := orig(ctx, s)
	if err != nil {
		return bare, nil, harnessError(s.File, err)
	}
	snap, ok := store.(snapshotter)
	if !ok {
		// The first run of the prefixes takes this store.
		handed := false
		*open = func(ctx context.Context, sc *scenario.Scenario) (Store, error) {
			if handed {
				return orig(ctx, sc)
			}
			handed = true
			return store, nil
		}
		return nil, nil, nil
	}
	defer store.Close()
	r, cleanup, err := newRun(s, store)
	if err != nil {
		return nil, nil, err
	}
	defer cleanup()
	explored := make([][]CheckResult, len(s.Checks))
	res := &FileResult{File: s.File, Name: s.Name, Strategy: s.Handler.Strategy}
	fail := func(i int, err error) (*FileResult, [][]CheckResult, error) {
		if ctx.Err() != nil {
			err = ctx.Err()
		} else {
			err = harnessError(s.File, notCompleted(s, i, err))
		}
		for _, p := range plans[i+1:] {
			if len(p) > 1 {
				return bare, nil, err
			}
		}
		return res, explored, err
	}
	for i, c := range s.Checks {
		if len(plans[i]) > 1 {
			cr, err := r.explore(ctx, snap, i, c, plans[i], &explored[i])
			if err != nil {
				_, _, err = fail(i, err)
				return bare, nil, err
			}
			res.Checks = append(res.Checks, *cr)
			continue
		}
		start := time.Now()
		cr, err := r.check(ctx, i+1, c, false, nil)
		if err != nil {
			return fail(i, err)
		}
		cr.Duration = time.Since(start)
		res.Checks = append(res.Checks, *cr)
	}
	return res, explored, nil
}

// explore runs check i under each of its schedules, the file's own run
// (the first schedule) last: the steps before the first explored one run
// once, and the state they leave is snapshotted and put back before each
// schedule carries on from there.
func (r *run) explore(ctx context.Context, snap snapshotter, i int, c *scenario.Check, plan []schedule, out *[]CheckResult) (*CheckResult, error) {
	first := plan[0].steps[0] - 1
	cr := r.newCheck(i+1, c, true, nil)
	start := time.Now()
	if err := cr.steps(ctx, c, 0, first); err != nil {
		return nil, err
	}
	// Each schedule's duration counts the steps before the first explored
	// one, as if it had run them.
	before := time.Since(start)
	restoreStore, release, err := snap.Snapshot(ctx)
	if err != nil {
		return nil, err
	}
	defer release()
	saved := r.save()
	for k := 1; k < len(plan); k++ {
		start := time.Now().Add(-before)
		sc := cr.fork(&plan[k])
		if err := sc.steps(ctx, c, first); err != nil {
			return nil, err
		}
		res, err := sc.finish(ctx, c)
		if err != nil {
			return nil, err
		}
		res.Duration = time.Since(start)
		// The next schedule writes its deliveries where this one's are in
		// the run's history: the result keeps copies.
		res.History = slices.Clone(res.History)
		res.Violations = slices.Clone(res.Violations)
		for i := range res.Violations {
			if by := res.Violations[i].By; by != nil {
				rec := *by
				res.Violations[i].By = &rec
			}
		}
		*out = append(*out, *res)
		if err := restoreStore(ctx); err != nil {
			return nil, err
		}
		r.restore(saved)
	}
	start = time.Now().Add(-before)
	if err := cr.steps(ctx, c, first); err != nil {
		return nil, err
	}
	res, err := cr.finish(ctx, c)
	if err != nil {
		return nil, err
	}
	res.Duration = time.Since(start)
	return res, nil
}

// saved is what a run keeps besides its store, as it was at a snapshot.
type saved struct {
	now      time.Time
	history  []invariant.Record
	seq      int
	frozen   int
	attempts map[[2]string]int
	labels   map[string]int64
	reported map[string]bool
	ledger   *gateway.Ledger
}

func (r *run) save() saved {
	r.frozen = len(r.history)
	sv := saved{now: r.now, history: r.history, seq: r.seq, frozen: r.frozen, attempts: maps.Clone(r.attempts), labels: maps.Clone(r.labels), reported: maps.Clone(r.reported)}
	if r.gateway != nil {
		l := r.gateway.Snapshot()
		sv.ledger = &l
	}
	return sv
}

// restore puts the run back as it was at save: the history's records up
// to then are kept, those after are written over by the next deliveries.
func (r *run) restore(sv saved) {
	r.now, r.history, r.seq, r.frozen = sv.now, sv.history, sv.seq, sv.frozen
	r.attempts, r.labels, r.reported = maps.Clone(sv.attempts), maps.Clone(sv.labels), maps.Clone(sv.reported)
	if sv.ledger != nil {
		r.gateway.Restore(*sv.ledger)
	}
}

// newRun starts a run of s on store; cleanup closes its gateway.
func newRun(s *scenario.Scenario, store Store) (*run, func(), error) {
	r := &run{s: s, store: store, now: Epoch, attempts: map[[2]string]int{}, labels: map[string]int64{}, reported: map[string]bool{}}
	cleanup := func() {}
	if s.Handler.Strategy.CallsOut() {
		g, err := gateway.New()
		if err != nil {
			return nil, nil, harnessError(s.File, err)
		}
		cleanup = func() { g.Close() }
		r.gateway = g
	}
	r.h = handler.New(s.Handler.Config, store, r.gatewayOrNil(), func() time.Time { return r.now })
	return r, cleanup, nil
}

// runChecks runs the first n checks of a file on a fresh store, each under
// the first of its schedules, but the last under last if it is given.
func runChecks(ctx context.Context, s *scenario.Scenario, open Opener, plans [][]schedule, n int, last *schedule) (*FileResult, error) {
	store, err := open(ctx, s)
	if err != nil {
		return nil, harnessError(s.File, err)
	}
	defer store.Close()
	r, cleanup, err := newRun(s, store)
	if err != nil {
		return nil, err
	}
	defer cleanup()
	res := &FileResult{File: s.File, Name: s.Name, Strategy: s.Handler.Strategy}
	for i, c := range s.Checks[:n] {
		var sched *schedule
		if i == n-1 {
			sched = last
		}
		start := time.Now()
		cr, err := r.check(ctx, i+1, c, len(plans[i]) > 1, sched)
		if err != nil {
			if ctx.Err() != nil {
				return res, ctx.Err()
			}
			return res, harnessError(s.File, notCompleted(s, i, err))
		}
		cr.Duration = time.Since(start)
		res.Checks = append(res.Checks, *cr)
	}
	return res, nil
}

type run struct {
	s       *scenario.Scenario
	store   Store
	gateway *gateway.Gateway
	h       *handler.Handler
	now     time.Time
	history []invariant.Record
	// seq counts the deliveries recorded (history keeps a run of identical
	// ones as one record); the records below frozen are shared with a
	// snapshot and are not changed.
	seq      int
	frozen   int
	attempts map[[2]string]int
	labels   map[string]int64
	reported map[string]bool // violations already reported by an earlier check
	// The last digest read, and the store's version then (see digest).
	digested   bool
	digestAt   uint64
	lastDigest uint64
}

func (r *run) gatewayOrNil() handler.Gateway {
	if r.gateway == nil {
		return nil
	}
	return r.gateway
}

// checkRun is one check on its way.
type checkRun struct {
	*run
	res   *CheckResult
	index int
	// explored: the check is run under several schedules, and sched is
	// the one of this run (nil: every explored step unforced).
	explored bool
	sched    *schedule
	// from is where the check's deliveries start in the run's history:
	// the result's History is that part of it, not a copy.
	from int
}

func (r *run) check(ctx context.Context, index int, c *scenario.Check, explored bool, sched *schedule) (*CheckResult, error) {
	cr := r.newCheck(index, c, explored, sched)
	if err := cr.steps(ctx, c, 0); err != nil {
		return nil, err
	}
	return cr.finish(ctx, c)
}

func (r *run) newCheck(index int, c *scenario.Check, explored bool, sched *schedule) *checkRun {
	return &checkRun{run: r, res: &CheckResult{Name: c.Name, Pos: c.Pos, Declared: c.Violations}, index: index, explored: explored, sched: sched, from: len(r.history)}
}

// steps runs the check's steps from the one at index from (0-based) to the
// end, or up to the one at index to when it is given.
func (cr *checkRun) steps(ctx context.Context, c *scenario.Check, from int, to ...int) error {
	end := len(c.Steps)
	if len(to) > 0 {
		end = to[0]
	}
	for i := from; i < end; i++ {
		st := c.Steps[i]
		if err := ctx.Err(); err != nil {
			return err
		}
		var err error
		switch st.Kind {
		case scenario.Deliver:
			err = cr.deliver(ctx, i+1, st)
		case scenario.Inspect:
			err = cr.inspect(ctx, i+1, st.State)
		case scenario.Advance:
			cr.now = cr.now.Add(st.Advance)
		}
		if err != nil {
			se := &stepError{step: i, err: err}
			var pe *partialStep
			if errors.As(err, &pe) {
				se.done, se.err = pe.done, pe.err
			}
			return se
		}
	}
	return nil
}

// finish checks the check's expectations and invariants once its steps ran.
func (cr *checkRun) finish(ctx context.Context, c *scenario.Check) (*CheckResult, error) {
	if n := len(cr.history); n > cr.from {
		cr.res.History = cr.history[cr.from:n:n]
	}
	if c.Expect != nil {
		if err := cr.inspect(ctx, 0, c.Expect); err != nil {
			return nil, err
		}
	}
	if err := cr.invariants(ctx, c); err != nil {
		return nil, err
	}
	if err := cr.line(ctx, c); err != nil {
		return nil, err
	}
	return cr.res, nil
}

// fork is a copy of the check's result so far, for another schedule to
// carry on from: what the copy appends does not reach cr's.
func (cr *checkRun) fork(sched *schedule) *checkRun {
	res := *cr.res
	res.Failures = res.Failures[:len(res.Failures):len(res.Failures)]
	res.Held = res.Held[:len(res.Held):len(res.Held)]
	return &checkRun{run: cr.run, res: &res, index: cr.index, explored: cr.explored, sched: sched, from: cr.from}
}

func (cr *checkRun) fail(step int, pos consumer.Location, m words.Miss) {
	cr.res.Failures = append(cr.res.Failures, Failure{Step: step, Pos: pos, Message: m.Message, Expected: m.Expected, Got: m.Got})
}

func (cr *checkRun) deliver(ctx context.Context, step int, st *scenario.Step) error {
	d := consumer.Delivery{EventID: st.Event.ID, Source: st.Event.Source, Consumer: st.Consumer, Schema: st.Event.Schema, Envelope: st.Event.Envelope, At: st.Pos}
	if d.Consumer == "" {
		d.Consumer = cr.s.Handler.Consumer
	}
	scope := cr.h.Scope(d)
	inject := handler.FailAt(st.Fail)
	if st.Concurrent > 0 {
		return cr.concurrent(ctx, step, st, d, scope, inject)
	}
	for n := 1; n <= st.Times; n++ {
		rec, err := cr.one(ctx, step, st, d, scope, inject, true)
		if err != nil {
			return &partialStep{done: n - 1, err: err}
		}
		if n == 1 && st.Label != "" {
			cr.labels[st.Label] = rec.Result.EffectID
		}
		cr.expect(step, n, st, rec)
	}
	return nil
}

// one delivers once and records it; repeat: it may be kept as a repeat of
// the record before (see record).
func (cr *checkRun) one(ctx context.Context, step int, st *scenario.Step, d consumer.Delivery, scope string, inject handler.Injector, repeat bool) (invariant.Record, error) {
	unit := [2]string{d.EventID, scope}
	cr.attempts[unit]++
	d.Attempt = cr.attempts[unit]
	var before uint64
	redelivery := d.Attempt > 1
	if redelivery && cr.s.Handler.Strategy.KeepsMarkers() {
		var err error
		if before, err = cr.digest(ctx); err != nil {
			return invariant.Record{}, err
		}
	}
	// One delivery on its own takes microseconds and waits for no other
	// worker: it is not interrupted halfway (a context that can be
	// cancelled costs database/sql a goroutine per query), the run stops
	// before the next one.
	if err := ctx.Err(); err != nil {
		return invariant.Record{}, err
	}
	res := cr.h.Handle(context.WithoutCancel(ctx), d, inject)
	rec, err := cr.record(ctx, step, st, d, scope, res, repeat)
	if err != nil {
		return rec, err
	}
	if res.Outcome == consumer.Conflict && redelivery && cr.s.Handler.Strategy.KeepsMarkers() {
		after, err := cr.digest(ctx)
		if err != nil {
			return rec, err
		}
		rec.ChangedStore = after != before
		cr.history[len(cr.history)-1].ChangedStore = rec.ChangedStore
	}
	return rec, nil
}

// record appends a delivery to the history and counts it. With repeat, a
// delivery the same in every way as the last one of the history (the
// same step of this check, the same outcome and effect, no error, no
// external call) is counted as a repeat of it instead (Record.Repeats):
// a step's times: of one event keeps a record or two, not one per
// delivery.
func (cr *checkRun) record(ctx context.Context, step int, st *scenario.Step, d consumer.Delivery, scope string, res consumer.Result, repeat bool) (invariant.Record, error) {
	var se *handler.StoreError
	if errors.As(res.Err, &se) {
		if ctx.Err() != nil {
			return invariant.Record{}, ctx.Err()
		}
		return invariant.Record{}, fmt.Errorf("delivering %s (%s): %w", d.EventID, st.Pos, se.Err)
	}
	cr.seq++
	rec := invariant.Record{Seq: cr.seq, EventID: d.EventID, Consumer: scope, Key: res.Key, Result: res, At: cr.now, Check: cr.index, Step: step, Pos: st.Pos}
	if n := len(cr.history); repeat && n > cr.from && n > cr.frozen && repeats(&cr.history[n-1], rec) {
		cr.history[n-1].Repeats++
	} else {
		cr.history = append(cr.history, rec)
	}
	c := &cr.res.Counters
	c.Deliveries++
	if d.Attempt > 1 {
		c.Redeliveries++
	}
	switch res.Outcome {
	case consumer.Processed:
		c.Processed++
		c.Effects++
	case consumer.Duplicate:
		c.Duplicates++
	case consumer.Conflict:
		c.Conflicts++
	case consumer.Failed:
		c.Failed++
	case consumer.Crashed:
		c.Crashed++
		c.Effects++
	}
	if x := res.External; x != nil {
		var kc *gateway.KeyConflictError
		if errors.As(x.Err, &kc) {
			c.KeyConflicts++
		}
		if res.Outcome == consumer.Failed && x.Err == nil {
			c.FailedAfterExternal++
		}
	}
	return rec, nil
}

// repeats reports whether rec is the delivery right after last's run and
// the same in every way but its Seq.
func repeats(last *invariant.Record, rec invariant.Record) bool {
	if rec.Result.Err != nil || rec.Result.External != nil || rec.ChangedStore || rec.Seq != last.Seq+last.Repeats+1 {
		return false
	}
	x := *last
	x.Seq, x.Repeats = rec.Seq, 0
	return x == rec
}

func (cr *checkRun) expect(step, n int, st *scenario.Step, rec invariant.Record) {
	e := st.Expect
	if e == nil {
		return
	}
	name := words.Step(step, n, st.Times)
	res := rec.Result
	if e.Outcome != "" && res.Outcome != e.Outcome {
		got := string(res.Outcome)
		if res.Err != nil && res.Outcome == consumer.Failed {
			got += " (" + res.Err.Error() + ")"
		}
		cr.fail(step, st.Pos, words.Outcome(name, string(e.Outcome), string(res.Outcome), got))
	}
	if e.Error != "" && (res.Err == nil || !strings.Contains(res.Err.Error(), e.Error)) {
		cr.fail(step, st.Pos, words.Error(name, e.Error, res.Err))
	}
	if e.SameEffectAs != "" {
		want := cr.labels[e.SameEffectAs]
		if res.EffectID != want || want == 0 {
			cr.fail(step, st.Pos, words.SameEffect(name, e.SameEffectAs, want, res.EffectID))
		}
	}
}

func (cr *checkRun) inspect(ctx context.Context, step int, s *scenario.State) error {
	name := words.Step(step, 1, 1)
	for _, rc := range s.Rows {
		n, err := cr.store.Count(ctx, rc.Table)
		if err != nil {
			return err
		}
		if n != rc.N {
			cr.fail(step, rc.Pos, words.Rows(name, rc.N, rc.Table, n))
		}
	}
	if len(s.Processed)+len(s.NotProcessed) > 0 {
		markers, err := cr.store.Markers(ctx)
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
				cr.fail(step, ref.Pos, words.Marked(name, words.Event(ref.ID, ref.Consumer), true))
			}
		}
		for _, ref := range s.NotProcessed {
			if marked(ref) {
				cr.fail(step, ref.Pos, words.Marked(name, words.Event(ref.ID, ref.Consumer), false))
			}
		}
	}
	if s.Charges != nil {
		n, err := cr.charges(ctx)
		if err != nil {
			return err
		}
		if n != *s.Charges {
			cr.fail(step, s.ChargesPos, words.Charges(name, *s.Charges, n))
		}
	}
	return nil
}

func (r *run) charges(ctx context.Context) (int, error) {
	if r.gateway == nil {
		return 0, nil
	}
	chs, err := r.gateway.Charges(ctx)
	return len(chs), err
}

// state reads what the checker looks at.
func (r *run) state(ctx context.Context) (invariant.State, error) {
	var st invariant.State
	var err error
	if st.Markers, err = r.store.Markers(ctx); err != nil {
		return st, err
	}
	if st.Effects, err = r.store.Effects(ctx); err != nil {
		return st, err
	}
	if r.gateway != nil {
		chs, err := r.gateway.Charges(ctx)
		if err != nil {
			return st, err
		}
		for _, c := range chs {
			st.Charges = append(st.Charges, invariant.Charge{ID: c.ID, IdempotencyKey: c.IdempotencyKey, OrderRef: c.OrderRef})
		}
	}
	if ret := r.s.Handler.Retention; ret > 0 {
		st.Horizon = r.now.Add(-ret)
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
func (r *run) digest(ctx context.Context) (uint64, error) {
	v, ok := r.store.(versioned)
	if !ok {
		return r.readDigest(ctx)
	}
	ver := v.Version()
	if r.digested && r.digestAt == ver {
		return r.lastDigest, nil
	}
	d, err := r.readDigest(ctx)
	if err != nil {
		return 0, err
	}
	r.digested, r.digestAt, r.lastDigest = true, ver, d
	return d, nil
}

func (r *run) readDigest(ctx context.Context) (uint64, error) {
	st, err := r.state(ctx)
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

func (cr *checkRun) invariants(ctx context.Context, c *scenario.Check) error {
	st, err := cr.state(ctx)
	if err != nil {
		return err
	}
	if cr.gateway != nil {
		rec := invariant.Reconcile(st)
		cr.res.Reconciliation = rec.Findings(cr.s.Handler.Effect)
		// Reconciliation describes the state at the end of the check; the
		// file's totals take the last check's figures, not a sum.
		cr.res.Counters.OrphanCharges = len(rec.OrphanCharges)
		cr.res.Counters.UnchargedEffects = len(rec.Uncharged)
	}
	for _, v := range invariant.Check(cr.s.Handler.Strategy, cr.s.Handler.Effect, cr.history, st) {
		if cr.reported[v.Key()] {
			continue
		}
		cr.reported[v.Key()] = true
		cr.res.Violations = append(cr.res.Violations, v)
	}
	if cr.explored {
		scheduleVerdict(cr.res, c)
	} else {
		Verdict(cr.res, c)
	}
	return nil
}

// Verdict turns a check's broken invariants into failures — each one, or,
// when the check declares violations, a mismatch with the declared list —
// and decides whether the check passed.
func Verdict(res *CheckResult, c *scenario.Check) {
	got := map[string]bool{}
	for _, v := range res.Violations {
		got[string(v.Invariant)] = true
	}
	if !c.ViolationsDeclared {
		for _, v := range res.Violations {
			f := Failure{Message: v.String(), Invariant: v.Invariant, Expected: "no violation", Got: string(v.Invariant), Pos: c.Pos}
			if v.By != nil {
				f.Step, f.Pos = v.By.Step, v.By.Pos
			}
			res.Failures = append(res.Failures, f)
		}
	} else {
		want := map[string]bool{}
		for _, w := range c.Violations {
			want[w] = true
		}
		var missing, extra []string
		for _, w := range c.Violations {
			if !got[w] {
				missing = append(missing, w)
			}
		}
		for g := range got {
			if !want[g] {
				extra = append(extra, g)
			}
		}
		sort.Strings(extra)
		if len(missing) > 0 || len(extra) > 0 {
			m := words.Violations(c.Violations, sortedKeys(got))
			res.Failures = append(res.Failures, Failure{Pos: c.ViolationsPos, Message: m.Message, Expected: m.Expected, Got: m.Got})
			for _, v := range res.Violations {
				if !want[string(v.Invariant)] {
					f := Failure{Message: v.String(), Invariant: v.Invariant, Expected: "no violation", Got: string(v.Invariant), Pos: c.Pos}
					if v.By != nil {
						f.Step, f.Pos = v.By.Step, v.By.Pos
					}
					res.Failures = append(res.Failures, f)
				}
			}
		}
	}
	res.Passed = len(res.Failures) == 0
}

func sortedKeys(m map[string]bool) []string {
	var out []string
	for _, inv := range invariant.All {
		if m[string(inv.Name)] {
			out = append(out, string(inv.Name))
		}
	}
	return out
}

func (cr *checkRun) line(ctx context.Context, c *scenario.Check) error {
	cnt := cr.res.Counters
	if c.Say.IsZero() {
		cr.res.Line = summary(cnt, cr.res.Violations)
		return nil
	}
	var names []string
	for _, v := range cr.res.Violations {
		if !contains(names, string(v.Invariant)) {
			names = append(names, string(v.Invariant))
		}
	}
	values := SayValues(cnt, names)
	for _, f := range c.Say.Fields() {
		switch {
		case strings.HasPrefix(f, "rows."):
			n, err := cr.store.Count(ctx, strings.TrimPrefix(f, "rows."))
			if err != nil {
				return err
			}
			values[f] = strconv.FormatInt(n, 10)
		case f == "charges":
			n, err := cr.charges(ctx)
			if err != nil {
				return err
			}
			values[f] = strconv.Itoa(n)
		}
	}
	cr.res.Line = c.Say.Expand(func(name string) string { return values[name] })
	return nil
}

// SayValues are the values of a say line's placeholders
// (scenario.SayPlaceholders) for a check's counters and the invariants it
// broke; {charges} and {rows.TABLE} are read from the stores by the caller.
func SayValues(cnt consumer.Counters, violations []string) map[string]string {
	return map[string]string{
		"deliveries":        strconv.Itoa(cnt.Deliveries),
		"effects":           strconv.Itoa(cnt.Effects),
		"duplicates":        strconv.Itoa(cnt.Duplicates),
		"conflicts":         strconv.Itoa(cnt.Conflicts),
		"failures":          strconv.Itoa(cnt.Failed),
		"crashes":           strconv.Itoa(cnt.Crashed),
		"violations":        words.List(violations),
		"charges":           "0",
		"orphan_charges":    strconv.Itoa(cnt.OrphanCharges),
		"uncharged_effects": strconv.Itoa(cnt.UnchargedEffects),
		"key_conflicts":     strconv.Itoa(cnt.KeyConflicts),
	}
}

func contains(xs []string, s string) bool {
	for _, x := range xs {
		if x == s {
			return true
		}
	}
	return false
}

// summary is the report line of a check without say.
func summary(c consumer.Counters, vs []invariant.Violation) string {
	var caught []string
	for _, v := range vs {
		if !contains(caught, string(v.Invariant)) {
			caught = append(caught, string(v.Invariant))
		}
	}
	return words.Summary(c.Deliveries, []words.Tally{
		{N: c.Processed, Word: "processed"},
		{N: c.Duplicates, Word: "duplicate", Plural: true},
		{N: c.Conflicts, Word: "conflict", Plural: true},
		{N: c.Failed, Word: "failure", Plural: true},
		{N: c.Crashed, Word: "crashed"},
	}, "", caught)
}
