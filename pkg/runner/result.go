package runner

import (
	"time"

	"github.com/redeliver/redeliver/pkg/consumer"
	"github.com/redeliver/redeliver/pkg/handler"
	"github.com/redeliver/redeliver/pkg/invariant"
	"github.com/redeliver/redeliver/pkg/template"
)

// Failure is one way a check did not hold: an expectation or an invariant.
type Failure struct {
	Step int // 1-based; 0 for the check itself
	Pos  consumer.Location
	// Miss is the expectation that did not hold, or what the system
	// could not do; pkg/report words it.
	Miss *Miss
	// Message, for a broken invariant, is its sentence (the
	// catalogue's), without the location; Expected and Got its values.
	Message  string
	Expected string
	Got      string
	// Invariant is set when the failure is a broken invariant.
	Invariant invariant.Name
	// Message is what the check found; pkg/report words it with what
	// exploring the check's schedules or repeating its file added:
	// Explored and Repeated on its first failure, InSchedules on a
	// failure no schedule answered.
	Explored *ExploredFailure
	// InSchedules, on a failure of an explored check that no schedule
	// answered (a declared violation none broke), is how many ran.
	InSchedules int
	Repeated    *RepeatedFailure
}

// ExploredFailure is how a check explored under several schedules
// failed: in how many of them, and the first, 1-based, by how its
// workers were held ("held at after-check, released together").
type ExploredFailure struct {
	Schedules, Failed, First int
	// Schedule is the first that failed: the hold of each explored step.
	Schedule []ScheduleHold
	// AfterAnswer: that schedule's kill at a statement came after the
	// consumer's answer, whatever the recording saw.
	AfterAnswer bool
}

// ScheduleHold is how a schedule held one explored step: its workers at
// fault point At, released together or in worker order (InOrder), or at
// the statement boundary its system named Statement; neither is the step
// unforced.
type ScheduleHold struct {
	Step      int
	At        string
	InOrder   bool
	Statement string
}

// RepeatedFailure is how a check of a file run several times failed: in
// how many runs, the first, and in how many runs each invariant broke.
type RepeatedFailure struct {
	Runs, Failed, First int
	Broken              []Tallied
}

// CheckResult is the outcome of one check.
type CheckResult struct {
	Name   string
	Pos    consumer.Location
	Passed bool
	// Line is what the check's report line says, as facts; pkg/report
	// words it.
	Line     Line
	Failures []Failure
	// Violations are the invariants this check broke (newly, in this check).
	Violations []invariant.Violation
	Declared   []string // the violations the check declared, if it did
	Counters   consumer.Counters
	History    []invariant.Record
	Duration   time.Duration // wall time of the check, for the reports that show it
	// Reconciliation lists the gateway mismatches when the check ended
	// (external-key handlers only).
	Reconciliation []string
	// Held lists the fault points at which a concurrent step's workers were
	// held (by interleave, or while the check was explored): reached.
	Held []consumer.FaultPoint
	// Schedules is how many schedules the check was run under, when it was
	// explored (a concurrent step without interleave, or a step that
	// crashes at every statement boundary); 0 otherwise.
	Schedules int
	// Trace is the statements of the delivery a statement fault landed
	// in, with their answers, up to the kill.
	Trace []consumer.Statement
	// Unreached counts the schedules of an explored race whose boundary
	// no worker reached: the workers took another path (one found the
	// other's marker), and the run went unforced.
	Unreached int
	// Drains are the check's waits for a broker target's consumer to
	// take what it published, in order: the time the consumer spent on
	// it after the publishes; none for a target without a broker.
	Drains []Drain
	// Calls are the calls the stand-ins of a user's consumer's externals
	// received while the check ran (from its first delivery on), each
	// with when it came and what it was answered, for the HTML report's
	// timeline; none without externals.
	Calls []invariant.Call
	// boundaries are the statement boundaries a recording run saw.
	boundaries []Boundary
}

// Line is what a check's report line says, as facts: the check's say:
// template with the values of its placeholders, or what its system
// counted; then what the check's crashes interrupted, and what exploring
// its schedules or repeating its file added. pkg/report words it.
type Line struct {
	// Say is the check's say: template; zero: the line is the Summary.
	Say template.Template
	// Values are the values of the counting placeholders Say uses, by
	// name ({deliveries}, {rows.payments}); {violations} is Caught.
	Values map[string]int64
	// Summary is what the system counted, for a check without say.
	Summary Summary
	// Caught are the invariants the check broke, each once, in the order
	// they broke.
	Caught []invariant.Name
	// AfterAnswers is the check's crashes when every one came after the
	// consumer's answers and none while it still worked: they
	// interrupted nothing (0: not so).
	AfterAnswers int
	// Explored is set on a check explored under several schedules that
	// passed in every one.
	Explored *Explored
	// Repeated is set on a check of a file run several times that passed
	// in every run.
	Repeated *Repeated
}

// Summary is what a system counted in a check: its deliveries and
// tallies, and the effect rows it read when it names them.
type Summary struct {
	Deliveries int
	Tallies    []Tally
	// Effects, when set, is the effect rows the consumer's database
	// holds.
	Effects *Effects
	// Apart counts the statements of no delivery the database proxy let
	// through, never crashed at.
	Apart int
}

// Tally is one count of a summary: 3 of Word ("duplicate"), or the
// crashes by when each came against the answer.
type Tally struct {
	N    int
	Word string
	// Plural: the word takes an s when N is not 1.
	Plural bool
	// Crashes, when set, splits N by when each crash came.
	Crashes *Crashes
}

// Crashes are crashes by when each came against the consumer's answer:
// before it, after it, or not known (a broker's instance kills).
type Crashes struct{ Before, After, Unknown int }

// Effects are the rows read from a consumer's effects: from Table, or
// from its effects query when Table is empty.
type Effects struct {
	Table string
	Rows  int64
}

// Explored is what exploring a check's schedules added to its line: how
// many were run, in how many each invariant broke, and the schedules
// that tested less than they were meant to.
type Explored struct {
	Schedules int
	Caught    []Tallied
	// Unreached: schedules whose boundary no worker reached (they ran
	// unforced); Idle: schedules whose kill came after the answer and
	// after the delivery's last statement (it interrupted nothing);
	// Unraced: schedules behind a broker whose hold raced nothing.
	Unreached, Idle, Unraced int
}

// Repeated is what running a check's file several times added: the runs,
// and in how many each invariant broke.
type Repeated struct {
	Runs   int
	Broken []Tallied
}

// Tallied is an invariant with how many schedules or runs broke it.
type Tallied struct {
	Invariant invariant.Name
	N         int
}

// Drain is one wait for a broker's consumer to take what was published:
// from when it began until the broker said it had all been taken.
type Drain struct{ From, To time.Time }

// held records that workers were held at p.
func (c *CheckResult) held(p consumer.FaultPoint) {
	for _, q := range c.Held {
		if q == p {
			return
		}
	}
	c.Held = append(c.Held, p)
}

// FileResult is the outcome of one scenario file.
type FileResult struct {
	File     string
	Name     string
	Strategy handler.Strategy
	Checks   []CheckResult
	Counters consumer.Counters
	// Target and Effects say, in words, which consumer and which database
	// a target-mode file tested; empty for the built-in handler.
	Target  string
	Effects string
	// Dialect is the target's database ("postgres", "mysql", "sqlite")
	// and EffectTable the table its effects are read from ("" for a
	// query), for the diagnosis of a failing check's trace; empty for
	// the built-in handler.
	Dialect     string
	EffectTable string
	// Invariants are those the file was judged by, in catalogue order;
	// nil means every invariant of the catalogue (the built-in handler).
	Invariants []*invariant.Invariant
}

// Passed reports whether every check of the file passed.
func (f *FileResult) Passed() bool {
	for _, c := range f.Checks {
		if !c.Passed {
			return false
		}
	}
	return true
}

// Failed counts the checks that failed.
func (f *FileResult) Failed() int {
	n := 0
	for _, c := range f.Checks {
		if !c.Passed {
			n++
		}
	}
	return n
}
