package runner

import (
	"github.com/redeliver/redeliver/pkg/consumer"
	"github.com/redeliver/redeliver/pkg/invariant"
	"github.com/redeliver/redeliver/pkg/scenario"
)

// reacher tells the fault points a concurrent step's workers can be held
// at (a handler.Strategy does).
type reacher interface {
	Reaches(consumer.FaultPoint) bool
}

// MaxSchedules bounds the schedules one check is run under.
const MaxSchedules = 32

// Hold is how one concurrent step without interleave runs in a schedule:
// unforced (at is empty: the workers start together and timing decides), or
// every worker held at a fault point and then released together or one at a
// time in worker order, as `interleave:` would.
type Hold struct {
	At      consumer.FaultPoint
	InOrder bool
	// Statement, for a step explored at the consumer's statement
	// boundaries, is the boundary this run holds: a step that crashes at
	// every boundary kills there; a concurrent step holds that worker
	// there while the others run to their end or block, then lets it go.
	// Nil holds nowhere, and the system records the step's boundaries.
	Statement *Boundary
}

// Boundary is a statement boundary a system recorded: before statement
// Index reaches the database, or After its answer; Index counts the
// delivery's statements, or Lane's (a worker's connection) when Lane is
// set. Name says it in words.
type Boundary struct {
	Lane, Index int
	After       bool
	Name        string
	// Call, when set, is the external call the boundary is at ("POST
	// /v1/charges"): before the stand-in performs it, or after (After),
	// its effect performed and its answer withheld.
	Call string
	// Marked: the recorded statements were told from those of no
	// delivery by the event's id or key, and a trial tells them so too.
	Marked bool
	// AfterAnswer: the recording met it after the consumer had answered
	// the delivery (a consumer that acknowledges first and works after).
	// Last: the recording's delivery sent nothing after it — it is after
	// its last statement, every connection idle outside a transaction
	// then — so a kill there after the answer interrupts nothing.
	AfterAnswer, Last bool
	// AnswerNext: the recording had the consumer's answer right after
	// this statement, before any later one. The two travel to redeliver
	// side by side, so the answer may have been sent before the
	// statement: a trial held here waits a moment for it (a consumer that
	// answers and then commits is killed after its answer, not before it
	// arrives).
	AnswerNext bool
}

// fact is the hold of step as a report carries it.
func (h Hold) fact(step int) ScheduleHold {
	f := ScheduleHold{Step: step, At: string(h.At), InOrder: h.InOrder}
	if h.Statement != nil {
		f.Statement = h.Statement.Name
	}
	return f
}

// forces reports whether the hold changes how its step runs.
func (h Hold) forces() bool { return h.At != "" || h.Statement != nil }

// schedule gives each explored step of a check (a concurrent step without
// interleave) its hold for one run of the check.
type schedule struct {
	steps []int // the explored steps, 1-based
	holds []Hold
}

// of returns the hold of a step, if the schedule forces one (a nil
// schedule forces none).
func (s *schedule) of(step int) (Hold, bool) {
	if s == nil {
		return Hold{}, false
	}
	for i, n := range s.steps {
		if n == step && s.holds[i].forces() {
			return s.holds[i], true
		}
	}
	return Hold{}, false
}

// facts are the schedule's holds as a report carries them, to name it
// as it can be written as `interleave:`.
func (s schedule) facts() []ScheduleHold {
	out := make([]ScheduleHold, len(s.steps))
	for i, n := range s.steps {
		out[i] = s.holds[i].fact(n)
	}
	return out
}

// schedules lists the schedules a check is explored under: nil when it has
// no concurrent step without interleave. Each such step is run unforced,
// and held at every fault point the strategy can reach, released together
// and in worker order. The first schedule is every step unforced (the run
// as written); then the schedules that force one step, then two, and so on,
// each group in step order and fault point order, until MaxSchedules: the
// same schedules in the same order on every run.
func schedules(strategy reacher, c *scenario.Check) []schedule {
	var steps []int
	for i, st := range c.Steps {
		if st.Kind == scenario.Deliver && st.Concurrent > 0 && st.Interleave == "" {
			steps = append(steps, i+1)
		}
	}
	if len(steps) == 0 {
		return nil
	}
	opts := []Hold{{}}
	for _, p := range consumer.FaultPoints {
		if strategy.Reaches(p) {
			opts = append(opts, Hold{At: p}, Hold{At: p, InOrder: true})
		}
	}
	k := len(steps)
	var out []schedule
	cur := make([]Hold, k)
	var pick func(i, forced, want int)
	pick = func(i, forced, want int) {
		if len(out) == MaxSchedules {
			return
		}
		if i == k {
			out = append(out, schedule{steps: steps, holds: append([]Hold(nil), cur...)})
			return
		}
		if forced < want {
			for _, h := range opts[1:] {
				cur[i] = h
				pick(i+1, forced+1, want)
			}
		}
		if forced+(k-i-1) >= want {
			cur[i] = Hold{}
			pick(i+1, forced, want)
		}
	}
	for want := 0; want <= k; want++ {
		pick(0, 0, want)
	}
	return out
}

// scheduleVerdict is Verdict for one schedule of an explored check: a
// declared violation need not break in every schedule (a race is not lost
// in every interleaving), so only the declared ones this schedule broke are
// required here; that each breaks in some schedule is judged by fold.
func scheduleVerdict(res *CheckResult, c *scenario.Check) {
	if !c.ViolationsDeclared {
		Verdict(res, c)
		return
	}
	broke := map[string]bool{}
	for _, v := range res.Violations {
		broke[string(v.Invariant)] = true
	}
	cc := *c
	cc.Violations = nil
	for _, w := range c.Violations {
		if broke[w] {
			cc.Violations = append(cc.Violations, w)
		}
	}
	cc.ViolationsDeclared = len(cc.Violations) > 0
	Verdict(res, &cc)
}

// fold turns the results of one check under each of its schedules
// (results[0] under the first, the run as written) into the check's result.
// It fails if any schedule failed: the result is then the first failing
// schedule's, its first failure naming the schedule. Otherwise it is the
// first schedule's, with the violations every schedule broke, and it fails
// only if a declared violation broke in none.
func fold(c *scenario.Check, plan []schedule, results []CheckResult) CheckResult {
	n := len(results)
	t := tallySchedules(results)
	out := results[0]
	if t.first >= 0 {
		out = results[t.first]
	}
	out.Schedules = n
	out.Held = nil
	for _, p := range consumer.FaultPoints {
		if t.held[p] {
			out.Held = append(out.Held, p)
		}
	}
	out.Duration = 0
	for _, r := range results {
		out.Duration += r.Duration
	}
	if t.first >= 0 {
		return foldFailed(out, plan, results, t)
	}
	return foldPassed(c, out, results, t.broken)
}

// scheduleTally is what fold counts over the schedules of one check.
type scheduleTally struct {
	failed int // schedules that failed
	first  int // the first of them (0-based), -1 if none did
	// broken counts, for each invariant, the schedules that broke it;
	// held is every fault point a schedule held at.
	broken map[invariant.Name]int
	held   map[consumer.FaultPoint]bool
}

// tallySchedules counts, for fold, the schedules that failed, those that
// broke each invariant, and the fault points they held at.
func tallySchedules(results []CheckResult) scheduleTally {
	t := scheduleTally{first: -1, broken: map[invariant.Name]int{}, held: map[consumer.FaultPoint]bool{}}
	for k := range results {
		r := &results[k]
		if !r.Passed {
			t.failed++
			if t.first < 0 {
				t.first = k
			}
		}
		seen := map[invariant.Name]bool{}
		for _, v := range r.Violations {
			if !seen[v.Invariant] {
				seen[v.Invariant] = true
				t.broken[v.Invariant]++
			}
		}
		for _, p := range r.Held {
			t.held[p] = true
		}
	}
	return t
}

// foldFailed is fold's result, out, when a schedule failed: the first
// failing schedule's, its first failure naming that schedule.
func foldFailed(out CheckResult, plan []schedule, results []CheckResult, t scheduleTally) CheckResult {
	fs := append([]Failure(nil), out.Failures...)
	ef := &ExploredFailure{Schedules: len(results), Failed: t.failed, First: t.first + 1, Schedule: plan[t.first].facts()}
	if cnt := results[t.first].Counters; cnt.CrashedInWork+cnt.CrashedSpent > 0 {
		// The trial's kill at its statement came after the
		// consumer's answer, whatever the recording saw.
		ef.AfterAnswer = true
	}
	fs[0].Explored = ef
	out.Failures = fs
	out.Passed = false
	return out
}

// foldPassed is fold's result, out, when every schedule passed: the
// violations any schedule broke, and a failure for a declared violation
// that none broke, or for a race that no schedule raced; broken counts
// the schedules that broke each invariant.
func foldPassed(c *scenario.Check, out CheckResult, results []CheckResult, broken map[invariant.Name]int) CheckResult {
	n := len(results)
	// Every schedule passed: the violations are those any schedule broke,
	// each invariant once, and each declared one must be among them.
	have := map[invariant.Name]bool{}
	var union []invariant.Violation
	for _, r := range results {
		for _, v := range r.Violations {
			if !have[v.Invariant] {
				have[v.Invariant] = true
				union = append(union, v)
			}
		}
	}
	out.Violations = union
	ex := &Explored{Schedules: n}
	for _, inv := range invariant.All {
		if k := broken[inv.Name]; k > 0 {
			ex.Caught = append(ex.Caught, Tallied{Invariant: inv.Name, N: k})
		}
	}
	for _, r := range results {
		ex.Unreached += r.Unreached
		if r.Counters.CrashedSpent > 0 {
			ex.Idle++
		}
	}
	out.Unreached = ex.Unreached
	out.Line.Explored = ex
	if unraced := unracedOf(results); unraced > 0 {
		ex.Unraced = unraced
		if unraced == n-1 {
			// No hold raced anything: a pass would claim races that
			// never happened.
			out.Failures = append(out.Failures, Failure{Pos: c.Pos, Miss: &Miss{Kind: MissNeverRaced, WantN: int64(unraced)}})
			out.Passed = false
		}
	}
	u := CheckResult{Violations: union}
	Verdict(&u, c)
	if !u.Passed {
		for i := range u.Failures {
			u.Failures[i].InSchedules = n
		}
		out.Failures, out.Passed = u.Failures, false
	}
	return out
}

// unracedOf counts the schedules of a race behind a broker whose hold
// raced nothing (consumer.Counters.Unraced).
func unracedOf(results []CheckResult) int {
	k := 0
	for _, r := range results {
		if r.Counters.Unraced > 0 {
			k++
		}
	}
	return k
}
