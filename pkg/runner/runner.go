// Package runner runs scenario files against a consumer under test (a
// System): it hands each step's deliveries to it, records the history,
// evaluates the expectations the file wrote, asks the system for broken
// invariants after every check, and explores the schedules of concurrent
// steps where the system can hold its workers.
//
// It owns the checks, steps, history, expectations, verdict and the
// exploration of schedules; the Systems it drives live beside it, the
// built-in handler's in pkg/builtin and a user's consumer's in
// pkg/external, and import it. A check's report line, and how an
// explored check failed, it keeps as facts (Line, ExploredFailure) that
// pkg/report words, and so are an expectation that did not hold and what
// a system could not do (Miss). Of this module it imports pkg/scenario,
// pkg/handler, pkg/consumer, pkg/invariant, pkg/problem and
// pkg/template, and it never links a store, a database driver, a broker
// client, the built-in handler's System (pkg/builtin), the replay, the
// renderers (pkg/report, its words included) or a user's consumer
// (pkg/external).
package runner

import (
	"context"
	"errors"
	"maps"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/redeliver/redeliver/pkg/consumer"
	"github.com/redeliver/redeliver/pkg/invariant"
	"github.com/redeliver/redeliver/pkg/problem"
	"github.com/redeliver/redeliver/pkg/scenario"
)

// Epoch is where the scenario clock starts.
var Epoch = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// harnessError is a failure of the harness (database, I/O, the consumer's
// process), not of a check, while running file: an environment problem,
// unless what failed already said what kind of problem it is.
func harnessError(file string, err error) error {
	var p *problem.Error
	if errors.As(err, &p) {
		return p
	}
	return problem.Environmentf(problem.Pos{File: file}, err)
}

// Run runs every check of one scenario file against a system of kind k,
// opened afresh for the file. A check with a concurrent step that has no
// interleave is explored, where the kind can hold its workers: it is run
// once under each of its schedules, each time from the state the file's
// earlier checks left, and it passes only if it passes under every
// schedule (see fold). The schedules run before the file's own run, so
// that the state left at the end is that run's.
//
// A system that can snapshot itself and put the snapshot back is run
// once: the earlier checks run once, the state they left is snapshotted
// and put back before each schedule. Any other is opened afresh for each
// schedule, the earlier checks run again first.
func Run(ctx context.Context, s *scenario.Scenario, k Kind) (*FileResult, error) {
	if k.Release != nil {
		defer k.Release()
	}
	if k.Copies && concurrent(s) {
		refs, err := references(ctx, s, k)
		if err != nil {
			return bare(s), err
		}
		k.refs = refs
	}
	plans := make([][]schedule, len(s.Checks))
	explores := false
	if k.Reaches != nil {
		for i, c := range s.Checks {
			plans[i] = schedules(reachFunc(k.Reaches), c)
			explores = explores || len(plans[i]) > 1
		}
	}
	// spent is the time each check's exploration took besides its
	// schedules: the run that recorded its boundaries.
	spent := make([]time.Duration, len(s.Checks))
	for i, c := range s.Checks {
		if j := sweptStep(c, k.Statements); j > 0 {
			start := time.Now()
			plan, err := sweepPlan(ctx, s, k, plans, i, j)
			if err != nil {
				return bare(s), err
			}
			plans[i] = plan
			spent[i] = time.Since(start)
		}
	}
	var res *FileResult
	var explored [][]CheckResult
	var err error
	if explores {
		res, explored, err = runSnapshotted(ctx, s, &k, plans)
	}
	if res == nil && err == nil {
		res, explored, err = replayPrefixes(ctx, s, k, plans)
	}
	if res == nil {
		return nil, err
	}
	for i := range res.Checks {
		if len(plans[i]) > 1 {
			res.Checks[i] = fold(s.Checks[i], plans[i], append([]CheckResult{res.Checks[i]}, explored[i]...))
			res.Checks[i].Duration += spent[i]
		}
	}
	return res, err
}

// sweptStep is the first step (1-based) of a check explored at statement
// boundaries — one that crashes at every boundary, or, where the system
// sees statements, a concurrent step without interleave — or 0.
func sweptStep(c *scenario.Check, statements bool) int {
	for i, st := range c.Steps {
		if st.Kind != scenario.Deliver {
			continue
		}
		if st.Crash != nil && st.Crash.Kind == scenario.CrashStatements || statements && st.Concurrent > 0 && st.Interleave == "" {
			return i + 1
		}
	}
	return 0
}

// maxBoundaries bounds the trials of one crash: statements.
const maxBoundaries = 200

// sweepPlan runs the file up to check i once, the step that crashes at
// every statement boundary recording them, and returns the check's plan:
// the run as written (killed nowhere), then one schedule per boundary,
// each a fresh trial killed there.
func sweepPlan(ctx context.Context, s *scenario.Scenario, k Kind, plans [][]schedule, i, step int) ([]schedule, error) {
	res, err := runChecks(ctx, s, k, plans, i+1, nil)
	if err != nil {
		return nil, err
	}
	bs := res.Checks[i].boundaries
	if len(bs) > maxBoundaries {
		st := s.Checks[i].Steps[step-1]
		if st.Concurrent > 0 {
			// A race is held at every boundary, and crash: {before: …}
			// is not offered on a concurrent step.
			return nil, problem.Invalid(st.Pos, "the step's %d concurrent deliveries ran %d statements, and each of their %d boundaries would be tried, at most %d: make the step smaller, with fewer concurrent deliveries (concurrent: 2 is the race of two) or a consumer that runs fewer statements a delivery", st.Concurrent, len(bs)/2, len(bs), maxBoundaries)
		}
		return nil, problem.Invalid(st.Pos, "the step's deliveries ran %d statements, and each of their %d boundaries would be tried, at most %d: make the step smaller, or name the statements to crash at with crash: {before: …} or {after: …}", len(bs)/2, len(bs), maxBoundaries)
	}
	plan := []schedule{{steps: []int{step}, holds: []Hold{{}}}}
	for b := range bs {
		plan = append(plan, schedule{steps: []int{step}, holds: []Hold{{Statement: &bs[b]}}})
	}
	return plan, nil
}

type reachFunc func(consumer.FaultPoint) bool

func (f reachFunc) Reaches(p consumer.FaultPoint) bool { return f(p) }

// bare is a file's result before any check ran.
func bare(s *scenario.Scenario) *FileResult {
	return &FileResult{File: s.File, Name: s.Name, Strategy: s.Handler.Strategy}
}

// replayPrefixes runs each schedule of an explored check on a fresh
// system, the file's earlier checks first, then the file.
func replayPrefixes(ctx context.Context, s *scenario.Scenario, k Kind, plans [][]schedule) (*FileResult, [][]CheckResult, error) {
	explored := make([][]CheckResult, len(s.Checks))
	for i := range s.Checks {
		for j := 1; j < len(plans[i]); j++ {
			start := time.Now()
			res, err := runChecks(ctx, s, k, plans, i+1, &plans[i][j])
			if err != nil {
				return bare(s), nil, err
			}
			// The schedule took the whole trial: the system opened
			// (or reset), the earlier checks run again, this one. The
			// first trial may take a system opened before it.
			res.Checks[i].Duration = time.Since(start) + k.opened
			k.opened = 0
			explored[i] = append(explored[i], res.Checks[i])
		}
	}
	res, err := runChecks(ctx, s, k, plans, len(s.Checks), nil)
	return res, explored, err
}

// runSnapshotted runs the file once on one system, snapshotting the state
// before each explored check and putting it back before each of its
// schedules and before the file's own run of it. It returns nil results
// and no error when the system cannot snapshot, and k.Open then hands
// the system it opened to its next caller.
func runSnapshotted(ctx context.Context, s *scenario.Scenario, k *Kind, plans [][]schedule) (*FileResult, [][]CheckResult, error) {
	// An error ends the run as replaying the prefixes would: before any
	// check's result when a later check is explored (its schedules, run
	// first, would have met it), after the checks before it otherwise.
	opening := time.Now()
	sys, err := k.Open(ctx, s)
	if err != nil {
		return bare(s), nil, harnessError(s.File, err)
	}
	snap, ok := sys.(snapshotter)
	if !ok || !snap.CanSnapshot() {
		// The first run of the prefixes takes this system, and the time
		// its opening took.
		k.handOver(sys, time.Since(opening))
		return nil, nil, nil
	}
	defer sys.Close()
	r := newRun(s, sys)
	r.refs = k.refs
	explored := make([][]CheckResult, len(s.Checks))
	res := bare(s)
	sys.Describe(res)
	fail := func(i int, err error) (*FileResult, [][]CheckResult, error) {
		err = r.failed(ctx, i, err)
		for _, p := range plans[i+1:] {
			if len(p) > 1 {
				return bare(s), nil, err
			}
		}
		return res, explored, err
	}
	for i, c := range s.Checks {
		if len(plans[i]) > 1 {
			cr, err := r.explore(ctx, snap, i, c, plans[i], &explored[i])
			if err != nil {
				_, _, err = fail(i, err)
				return bare(s), nil, err
			}
			res.Checks = append(res.Checks, *cr)
			sys.Total(&res.Counters, cr.Counters)
			continue
		}
		start := time.Now()
		cr, err := r.check(ctx, i+1, c, false, nil)
		if err != nil {
			return fail(i, err)
		}
		cr.Duration = time.Since(start)
		res.Checks = append(res.Checks, *cr)
		sys.Total(&res.Counters, cr.Counters)
	}
	return res, explored, nil
}

// handOver makes k.Open hand sys, opened already, to its next caller,
// which counts opening as its own time; later callers open their own.
func (k *Kind) handOver(sys System, opening time.Duration) {
	orig := k.Open
	k.opened = opening
	handed := false
	k.Open = func(ctx context.Context, sc *scenario.Scenario) (System, error) {
		if handed {
			return orig(ctx, sc)
		}
		handed = true
		return sys, nil
	}
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
	restore, release, err := snap.Snapshot(ctx)
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
		if err := restore(ctx); err != nil {
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

// saved is what a run keeps besides its system, as it was at a snapshot.
type saved struct {
	history  []invariant.Record
	seq      int
	frozen   int
	labels   map[string]int64
	reported map[string]bool
}

func (r *run) save() saved {
	r.frozen = len(r.history)
	return saved{history: r.history, seq: r.seq, frozen: r.frozen, labels: maps.Clone(r.labels), reported: maps.Clone(r.reported)}
}

// restore puts the run back as it was at save: the history's records up
// to then are kept, those after are written over by the next deliveries.
func (r *run) restore(sv saved) {
	r.history, r.seq, r.frozen = sv.history, sv.seq, sv.frozen
	r.labels, r.reported = maps.Clone(sv.labels), maps.Clone(sv.reported)
}

func newRun(s *scenario.Scenario, sys System) *run {
	return &run{s: s, sys: sys, labels: map[string]int64{}, reported: map[string]bool{}}
}

// failed words an error that stopped check i (0-based): the run's own
// when the run was interrupted, else a harness error that lists what did
// not complete.
func (r *run) failed(ctx context.Context, i int, err error) error {
	if ctx.Err() != nil {
		return ctx.Err()
	}
	return harnessError(r.s.File, notCompleted(r.s, i, err))
}

// runChecks runs the first n checks of a file on a fresh system, each
// under the first of its schedules, but the last under last if it is
// given.
func runChecks(ctx context.Context, s *scenario.Scenario, k Kind, plans [][]schedule, n int, last *schedule) (*FileResult, error) {
	sys, err := k.Open(ctx, s)
	if err != nil {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		return nil, harnessError(s.File, notCompleted(s, 0, &stepError{step: -1, err: err}))
	}
	defer sys.Close()
	r := newRun(s, sys)
	r.refs = k.refs
	res := bare(s)
	sys.Describe(res)
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
		sys.Total(&res.Counters, cr.Counters)
	}
	return res, nil
}

type run struct {
	s       *scenario.Scenario
	sys     System
	history []invariant.Record
	// seq counts the deliveries recorded (history keeps a run of identical
	// ones as one record); the records below frozen are shared with a
	// snapshot and are not changed.
	seq      int
	frozen   int
	labels   map[string]int64
	reported map[string]bool // violations already reported by an earlier check
	// trial: the run delivers each event once (Call.One), and keeps in
	// copies the rows each concurrent step's key had after it, by check
	// and step; refs are what two such trials gave the run that judges.
	trial  bool
	copies map[[2]int]map[string][]invariant.Row
	refs   map[[2]int]invariant.Reference
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
	// step and pos are the step being run, for Record.
	step int
	pos  consumer.Location
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
			if err = cr.settle(ctx); err == nil {
				err = cr.inspect(ctx, i+1, st.State)
			}
		case scenario.Advance:
			cr.sys.Advance(st.Advance)
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

// brokered is a System whose deliveries go through a broker: its Settle
// waits for the consumer to take them, and the check records the wait.
type brokered interface{ Broker() bool }

// settle lets the system's consumer take what was delivered, and records
// how long a broker's consumer took.
func (cr *checkRun) settle(ctx context.Context) error {
	from := time.Now()
	err := cr.sys.Settle(ctx, &cr.res.Counters)
	if b, ok := cr.sys.(brokered); ok && b.Broker() && err == nil {
		cr.res.Drains = append(cr.res.Drains, Drain{From: from, To: time.Now()})
	}
	return err
}

// finish checks the check's expectations and invariants once its steps
// ran.
func (cr *checkRun) finish(ctx context.Context, c *scenario.Check) (*CheckResult, error) {
	after := func(err error) error { return &stepError{step: len(c.Steps), err: err} }
	if err := cr.settle(ctx); err != nil {
		return nil, after(err)
	}
	if n := len(cr.history); n > cr.from {
		cr.res.History = cr.history[cr.from:n:n]
	}
	if c.Expect != nil {
		if err := cr.inspect(ctx, 0, c.Expect); err != nil {
			return nil, after(err)
		}
	}
	if err := cr.invariants(ctx, c); err != nil {
		return nil, after(err)
	}
	if err := cr.line(ctx, c); err != nil {
		return nil, after(err)
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

func (cr *checkRun) fail(step int, pos consumer.Location, m Miss) {
	cr.res.Failures = append(cr.res.Failures, Failure{Step: step, Pos: pos, Miss: &m})
}

// deliver runs one deliver step: its deliveries one after another (times),
// or at once (concurrent), each after the step's delay.
func (cr *checkRun) deliver(ctx context.Context, step int, st *scenario.Step) error {
	cr.step, cr.pos = step, st.Pos
	call := Call{Check: cr.index, Step: step, St: st, Rec: cr, One: cr.trial}
	if h, ok := cr.sched.of(step); ok {
		call.Hold = h
	}
	if ref, ok := cr.refs[[2]int{cr.index, step}]; ok {
		call.OneCopy = &ref
	}
	if st.Concurrent > 0 {
		if err := sleep(ctx, st.Delay); err != nil {
			return err
		}
		res, err := cr.sys.Concurrent(ctx, call)
		if err != nil {
			return err
		}
		if st.Label != "" {
			cr.labels[st.Label] = res.EffectID
		}
		return nil
	}
	for n := 1; n <= st.Times; n++ {
		if err := sleep(ctx, st.Delay); err != nil {
			return &partialStep{done: n - 1, err: err}
		}
		call.N = n
		res, err := cr.sys.Deliver(ctx, call)
		if err != nil {
			return &partialStep{done: n - 1, err: err}
		}
		if n == 1 && st.Label != "" {
			cr.labels[st.Label] = res.EffectID
		}
		cr.expect(step, n, st, res)
	}
	return nil
}

func sleep(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return nil
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Record appends a delivery to the history. With repeat, a delivery the
// same in every way as the last one of the history (the same step of
// this check, the same outcome and effect, no error, no external call)
// is counted as a repeat of it instead (Record.Repeats): a step's times:
// of one event keeps a record or two, not one per delivery.
func (cr *checkRun) Record(rec invariant.Record, repeat bool) *invariant.Record {
	cr.seq++
	rec.Seq, rec.Check, rec.Step, rec.Pos = cr.seq, cr.index, cr.step, cr.pos
	if n := len(cr.history); repeat && n > cr.from && n > cr.frozen && repeats(&cr.history[n-1], rec) {
		last := &cr.history[n-1]
		last.Repeats++
		last.Span.Answered = rec.Span.Answered
	} else {
		cr.history = append(cr.history, rec)
	}
	return &cr.history[len(cr.history)-1]
}

// Counters are the check's counters.
func (cr *checkRun) Counters() *consumer.Counters { return &cr.res.Counters }

// Held records that workers were held at p.
func (cr *checkRun) Held(p consumer.FaultPoint) { cr.res.held(p) }

// Unreached counts a schedule whose boundary no worker reached.
func (cr *checkRun) Unreached() { cr.res.Unreached++ }

// Fail fails the check at the step being run.
func (cr *checkRun) Fail(m Miss) { cr.fail(cr.step, cr.pos, m) }

// Boundaries records a delivery's statement boundaries.
func (cr *checkRun) Boundaries(b []Boundary) { cr.res.boundaries = b }

// Trace keeps the statements of the delivery a fault landed in.
func (cr *checkRun) Trace(stmts []consumer.Statement) { cr.res.Trace = stmts }

// OneCopy keeps the rows a trial's one copy left the key of the step
// being run.
func (cr *checkRun) OneCopy(key string, rows []invariant.Row) {
	if cr.copies == nil {
		return
	}
	at := [2]int{cr.index, cr.step}
	if cr.copies[at] == nil {
		cr.copies[at] = map[string][]invariant.Row{}
	}
	cr.copies[at][key] = rows
}

// concurrent reports whether a file has a concurrent step.
func concurrent(s *scenario.Scenario) bool {
	for _, c := range s.Checks {
		for _, st := range c.Steps {
			if st.Kind == scenario.Deliver && st.Concurrent > 0 {
				return true
			}
		}
	}
	return false
}

// references runs the file twice on fresh systems, each event delivered
// once, and returns what one copy of each concurrent step's event left
// its key's rows: the first trial's rows, each column the second left
// otherwise taken for the run's own (a serial id, a clock) and not
// compared. A key the trials left with different numbers of rows has
// none.
func references(ctx context.Context, s *scenario.Scenario, k Kind) (map[[2]int]invariant.Reference, error) {
	var trials [2]map[[2]int]map[string][]invariant.Row
	for t := range trials {
		copies, err := oneCopyTrial(ctx, s, k)
		if err != nil {
			return nil, err
		}
		trials[t] = copies
	}
	refs := map[[2]int]invariant.Reference{}
	for at, keys := range trials[0] {
		for key, rows := range keys {
			second, ok := trials[1][at][key]
			if !ok {
				continue
			}
			if ref, ok := invariant.NewReference(rows, second); ok {
				refs[at] = ref
			}
		}
	}
	return refs, nil
}

// oneCopyTrial runs the checks' steps on a fresh system, up to the last
// check with a concurrent step, each event delivered once, and returns the rows each concurrent step's key had
// after it. Expectations and invariants are not judged: the trial only
// reads.
func oneCopyTrial(ctx context.Context, s *scenario.Scenario, k Kind) (map[[2]int]map[string][]invariant.Row, error) {
	sys, err := k.Open(ctx, s)
	if err != nil {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		return nil, harnessError(s.File, notCompleted(s, 0, &stepError{step: -1, err: err}))
	}
	defer sys.Close()
	r := newRun(s, sys)
	r.trial, r.copies = true, map[[2]int]map[string][]invariant.Row{}
	last := 0 // the checks after the last concurrent step's have nothing to give
	for i, c := range s.Checks {
		for _, st := range c.Steps {
			if st.Kind == scenario.Deliver && st.Concurrent > 0 {
				last = i + 1
			}
		}
	}
	for i, c := range s.Checks[:last] {
		cr := r.newCheck(i+1, c, false, nil)
		if err := cr.steps(ctx, c, 0); err != nil {
			if ctx.Err() != nil {
				return nil, ctx.Err()
			}
			return nil, harnessError(s.File, notCompleted(s, i, err))
		}
	}
	return r.copies, nil
}

// repeats reports whether rec is the delivery right after last's run and
// the same in every way but its Seq and when it ran (its Span's times).
func repeats(last *invariant.Record, rec invariant.Record) bool {
	if rec.Result.Err != nil || rec.Result.External != nil || rec.ChangedStore || rec.Seq != last.Seq+last.Repeats+1 {
		return false
	}
	x := *last
	x.Seq, x.Repeats = rec.Seq, 0
	x.Span.Sent, x.Span.Answered = rec.Span.Sent, rec.Span.Answered
	return x == rec
}

// expect compares one delivery's result with the step's expectation: the
// outcome (or a consumer's answer), its status, its error, the effect it
// shares with a label.
func (cr *checkRun) expect(step, n int, st *scenario.Step, res consumer.Result) {
	e := st.Expect
	if e == nil {
		return
	}
	at := Miss{Step: step, N: n, Of: st.Times}
	said := res.Said
	if said == "" {
		said = string(res.Outcome)
		if res.Err != nil && res.Outcome == consumer.Failed {
			said += " (" + res.Err.Error() + ")"
		}
	}
	want := string(e.Outcome)
	if e.Answer != "" {
		want = e.Answer
	}
	if want != "" && string(res.Outcome) != want {
		m := at
		m.Kind, m.Want, m.Got, m.Said = MissOutcome, want, string(res.Outcome), said
		cr.fail(step, st.Pos, m)
	}
	if e.Status != 0 && res.Status != e.Status {
		m := at
		m.Kind, m.WantN, m.GotN, m.Said = MissStatus, int64(e.Status), int64(res.Status), said
		cr.fail(step, st.Pos, m)
	}
	if e.Error != "" && (res.Err == nil || !strings.Contains(res.Err.Error(), e.Error)) {
		m := at
		m.Kind, m.Want = MissError, e.Error
		if res.Err != nil {
			m.Got, m.Flag = res.Err.Error(), true
		}
		cr.fail(step, st.Pos, m)
	}
	if e.SameEffectAs != "" {
		want := cr.labels[e.SameEffectAs]
		if res.EffectID != want || want == 0 {
			m := at
			m.Kind, m.What, m.WantN, m.GotN = MissSameEffect, e.SameEffectAs, want, res.EffectID
			cr.fail(step, st.Pos, m)
		}
	}
}

// inspect compares what the consumer holds with an expected state.
func (cr *checkRun) inspect(ctx context.Context, step int, s *scenario.State) error {
	for _, rc := range s.Rows {
		n, err := cr.sys.Count(ctx, rc.Table)
		if err != nil {
			return err
		}
		if n != rc.N {
			cr.fail(step, rc.Pos, Miss{Kind: MissRows, Step: step, WantN: rc.N, What: rc.Table, GotN: n})
		}
	}
	return cr.sys.Inspect(ctx, step, s, func(pos consumer.Location, m Miss) { cr.fail(step, pos, m) })
}

func (cr *checkRun) invariants(ctx context.Context, c *scenario.Check) error {
	vs, err := cr.sys.Judge(ctx, cr.history, cr.res)
	if err != nil {
		return err
	}
	for _, v := range vs {
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
			m := Miss{Kind: MissViolations, Wants: c.Violations, Gots: sortedKeys(got)}
			res.Failures = append(res.Failures, Failure{Pos: c.ViolationsPos, Miss: &m})
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

// line gathers the facts of the check's report line: its say with the
// values it uses, or the system's summary; and whether its crashes all
// came after the consumer's answers, said whatever its say, so that a
// PASS does not claim an interrupted delivery.
func (cr *checkRun) line(ctx context.Context, c *scenario.Check) error {
	cnt := cr.res.Counters
	l := Line{Say: c.Say}
	for _, v := range cr.res.Violations {
		if !slices.Contains(l.Caught, v.Invariant) {
			l.Caught = append(l.Caught, v.Invariant)
		}
	}
	if c.Say.IsZero() {
		l.Summary = cr.sys.Summary(cr.res)
	} else {
		l.Values = SayValues(cnt)
		fields := c.Say.Fields()
		for _, f := range fields {
			if t, ok := strings.CutPrefix(f, "rows."); ok {
				n, err := cr.sys.Count(ctx, t)
				if err != nil {
					return err
				}
				l.Values[f] = n
			}
		}
		if err := cr.sys.Say(ctx, cr.res, l.Values, fields); err != nil {
			return err
		}
	}
	if cnt.InterruptedNone() {
		l.AfterAnswers = cnt.Crashed
	}
	cr.res.Line = l
	return nil
}

// SayValues are the values of a say line's counting placeholders
// (scenario.SayPlaceholders, but {violations}, which is Line.Caught) for
// a check's counters; {charges} and {rows.TABLE} are read from the system
// by the caller.
func SayValues(cnt consumer.Counters) map[string]int64 {
	return map[string]int64{
		"deliveries":        int64(cnt.Deliveries),
		"effects":           int64(cnt.Effects),
		"duplicates":        int64(cnt.Duplicates),
		"conflicts":         int64(cnt.Conflicts),
		"failures":          int64(cnt.Failed),
		"crashes":           int64(cnt.Crashed),
		"charges":           0,
		"orphan_charges":    int64(cnt.OrphanCharges),
		"uncharged_effects": int64(cnt.UnchargedEffects),
		"key_conflicts":     int64(cnt.KeyConflicts),
	}
}
