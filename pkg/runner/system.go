package runner

import (
	"context"
	"time"

	"github.com/redeliver/redeliver/pkg/consumer"
	"github.com/redeliver/redeliver/pkg/invariant"
	"github.com/redeliver/redeliver/pkg/scenario"
)

// System is a consumer under test as the runner drives it: the built-in
// handler on its store (pkg/builtin), or the user's own
// consumer over HTTP, as a process or behind a broker (pkg/external). The
// runner owns what is the same for both — the checks and their steps, the
// history, the expectations, labels, the verdict, the report line, and
// the exploration of concurrent steps' schedules — and a system owns how
// a delivery is made and faulted, what it counts as, and how its effects
// are read and judged.
type System interface {
	// Deliver makes delivery c.N of a deliver step with the step's faults,
	// and the redeliveries a broker makes after it when it was not acked;
	// it records and counts each through c.Rec. It returns the result the
	// step's expectations judge.
	Deliver(ctx context.Context, c Call) (consumer.Result, error)
	// Concurrent makes a concurrent step's deliveries at once, held as
	// c.Hold says when it forces a schedule. It returns the first
	// worker's result (a label names it).
	Concurrent(ctx context.Context, c Call) (consumer.Result, error)
	// Advance moves the consumer's clock, where redeliver keeps it.
	Advance(d time.Duration)
	// Settle waits until the consumer has taken what was delivered (a
	// broker's consumer drains) and adds what that showed to c.
	Settle(ctx context.Context, c *consumer.Counters) error
	// Count returns the rows of a table of the consumer's database.
	Count(ctx context.Context, table string) (int64, error)
	// Inspect checks the parts of an expected state other than row counts
	// (markers, charges, a key's effect rows), calling miss for each
	// that does not hold; step is the step's (0: the check's expect).
	Inspect(ctx context.Context, step int, s *scenario.State, miss func(consumer.Location, Miss)) error
	// Judge returns the invariants the check's deliveries broke, read
	// from what the consumer holds now; it may set the result's
	// reconciliation and state counters.
	Judge(ctx context.Context, history []invariant.Record, res *CheckResult) ([]invariant.Violation, error)
	// Summary is what the system counted in a check, for the report
	// line of a check without say.
	Summary(res *CheckResult) Summary
	// Say gives the say placeholders only the system knows a value
	// (fields lists those the line uses).
	Say(ctx context.Context, res *CheckResult, values map[string]int64, fields []string) error
	// Total adds a check's counters to the file's.
	Total(file *consumer.Counters, check consumer.Counters)
	// Describe names the system in the file's result.
	Describe(fr *FileResult)
	Close() error
}

// Call is one delivery of a deliver step, as the runner hands it to a
// system.
type Call struct {
	Check int // 1-based
	Step  int // 1-based
	N     int // which of the step's times: 1-based (0 for a concurrent step)
	St    *scenario.Step
	// Hold is how a concurrent step's workers are held in the schedule
	// being run (zero: the step's own interleave, or unforced).
	Hold Hold
	Rec  Recorder
	// One: the call is made in a trial that delivers each event once
	// (Kind.Copies): the step delivers one plain copy of its event, or
	// none when the trial delivered that event already, and a concurrent
	// step gives the rows its key has then to Rec.OneCopy.
	One bool
	// OneCopy, for a concurrent step of a system that judges copies, is
	// what one copy of its event left the key's rows in the trials; nil
	// when there is none.
	OneCopy *invariant.Reference
}

// Recorder keeps a check's deliveries as a system makes them.
type Recorder interface {
	// Record appends a delivery to the history (Seq, Check, Step and
	// Pos are filled in). With repeat, a delivery the same in every way
	// as the last one of the history is counted as a repeat of it
	// instead. The record returned may be amended until the next
	// delivery is recorded.
	Record(rec invariant.Record, repeat bool) *invariant.Record
	// Counters are the check's counters, for the system to count the
	// delivery in.
	Counters() *consumer.Counters
	// Held records that workers were held at a fault point.
	Held(p consumer.FaultPoint)
	// Fail fails the check at the step being run: a fault the file asked
	// for that could not be made.
	Fail(m Miss)
	// Boundaries records, in a step explored at statement boundaries
	// (Call.Hold.Statement nil), the boundaries its deliveries met, in
	// the order they are to be tried, each named in words ("killed after
	// statement 2 (INSERT INTO payments …)").
	Boundaries(b []Boundary)
	// Unreached says the schedule's boundary was not reached by any
	// worker of a race: the workers took another path, unforced.
	Unreached()
	// Trace keeps the statements of the delivery a fault landed in, for
	// the report.
	Trace(stmts []consumer.Statement)
	// OneCopy keeps, in a trial that delivers each event once, the rows
	// of the key of the concurrent step being run after its one copy.
	OneCopy(key string, rows []invariant.Row)
}

// Kind is a kind of system: how to open one for a scenario file, and the
// fault points its concurrent steps' workers can be held at.
type Kind struct {
	Open func(ctx context.Context, s *scenario.Scenario) (System, error)
	// Reaches, when it is set, tells the fault points a concurrent
	// step's workers can be held at: a concurrent step without
	// interleave is then explored under every schedule. Nil: such a step
	// runs once, unforced.
	Reaches func(consumer.FaultPoint) bool
	// Statements: the system sees its consumer's statements (the
	// database proxy), so a concurrent step is explored at their
	// boundaries, as a step that crashes at every one is.
	Statements bool
	// Release, when it is set, is called once the file has run: a kind
	// that keeps a system between the trials of an explored check (a
	// started consumer, reset rather than restarted) lets it go there.
	Release func()
	// Copies: the system judges what a concurrent step's copies left
	// against what one copy leaves (Call.OneCopy), read in two trials of
	// the file that deliver each event once (Call.One) before it runs.
	Copies bool
	// refs are those trials' references, by check and step (1-based).
	refs map[[2]int]invariant.Reference
	// opened is how long opening the system Open hands to its next caller
	// took (see handOver): the trial that takes it counts it.
	opened time.Duration
}

// snapshotter is a system that can copy what it holds and put the copy
// back (restore), leaving it exactly as it was at the copy; release drops
// the copy. CanSnapshot says whether this one can.
type snapshotter interface {
	CanSnapshot() bool
	Snapshot(ctx context.Context) (restore func(context.Context) error, release func(), err error)
}

// Tailed is an error whose message ends with lines that must stay last
// (a consumer's stderr): the list of deliveries that did not complete goes
// before them, at Tail.
type Tailed interface {
	error
	Tail() int
}
