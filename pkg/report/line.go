package report

import (
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/redeliver/redeliver/pkg/report/words"
	"github.com/redeliver/redeliver/pkg/runner"
)

// CheckLine words a check's report line from its facts: its say with the
// values of its placeholders, or its system's summary; that its crashes
// interrupted nothing; then what exploring its schedules and repeating
// its file added. Every format prints this line.
func CheckLine(l runner.Line) string {
	caught := make([]string, len(l.Caught))
	for i, inv := range l.Caught {
		caught[i] = string(inv)
	}
	var s string
	if l.Say.IsZero() {
		s = summary(l.Summary, caught)
	} else {
		s = l.Say.Expand(func(name string) string {
			if name == "violations" {
				return words.List(caught)
			}
			return strconv.FormatInt(l.Values[name], 10)
		})
	}
	if l.AfterAnswers > 0 {
		s += "; " + words.NotInterrupted(l.AfterAnswers)
	}
	if e := l.Explored; e != nil {
		s = words.Explored(s, e.Schedules, 0, 0, "", tallied(e.Caught))
		if e.Unreached > 0 {
			s += "; " + words.Unreached(e.Unreached)
		}
		if e.Idle > 0 {
			s += "; " + words.InterruptedNothing(e.Idle)
		}
		if e.Unraced > 0 {
			s += "; " + words.Unraced(e.Unraced)
		}
	}
	if r := l.Repeated; r != nil {
		s = words.Repeated(s, r.Runs, 0, 0, tallied(r.Broken))
	}
	return s
}

// summary words what a system counted: "3 deliveries: 2 acked, 1 crash
// before the answer; table payments holds 2 rows; caught lost-effect".
func summary(s runner.Summary, caught []string) string {
	tallies := make([]words.Tally, 0, len(s.Tallies))
	for _, t := range s.Tallies {
		w := words.Tally{N: t.N, Word: t.Word, Plural: t.Plural}
		if c := t.Crashes; c != nil {
			w.Said = words.Crashes(c.Before, c.After, c.Unknown)
		}
		tallies = append(tallies, w)
	}
	rest := ""
	if e := s.Effects; e != nil {
		rows := words.Count(e.Rows, "row")
		rest = "the effects query returns " + rows
		if e.Table != "" {
			rest = "table " + e.Table + " holds " + rows
		}
	}
	line := words.Summary(s.Deliveries, tallies, rest, caught)
	if s.Apart > 0 {
		line += "; " + words.Count(int64(s.Apart), "statement") + " of no delivery let through, never crashed at"
	}
	return line
}

// tallied words invariants with how many schedules or runs broke each:
// "lost-effect in 2".
func tallied(ts []runner.Tallied) []string {
	var out []string
	for _, t := range ts {
		out = append(out, fmt.Sprintf("%s in %d", t.Invariant, t.N))
	}
	return out
}

// FailureMessage words a check's failure: what the check found, with how
// many schedules or runs failed when the check was explored or repeated.
// Every format prints this message.
func FailureMessage(f runner.Failure) string {
	s := f.Message
	if f.Miss != nil {
		s = missed(*f.Miss).Message
	}
	if f.InSchedules > 0 {
		s = words.InNoSchedule(s, f.InSchedules)
	}
	if e := f.Explored; e != nil {
		s = words.Explored(s, e.Schedules, e.Failed, e.First, scheduleName(e), nil)
	}
	if r := f.Repeated; r != nil {
		s = words.Repeated(s, r.Runs, r.Failed, r.First, tallied(r.Broken))
	}
	return s
}

// ExpectedGot are a failure's expected and actual values, as the
// structured reports carry them.
func ExpectedGot(f runner.Failure) (expected, got string) {
	if f.Miss != nil {
		m := missed(*f.Miss)
		return m.Expected, m.Got
	}
	return f.Expected, f.Got
}

// missed words an expectation that did not hold from its facts.
func missed(m runner.Miss) words.Miss {
	step := words.Step(m.Step, m.N, m.Of)
	switch m.Kind {
	case runner.MissOutcome:
		return words.Outcome(step, m.Want, m.Got, m.Said)
	case runner.MissStatus:
		return words.Status(step, int(m.WantN), int(m.GotN), m.Said)
	case runner.MissError:
		var err error
		if m.Flag {
			err = errors.New(m.Got)
		}
		return words.Error(step, m.Want, err)
	case runner.MissSameEffect:
		return words.SameEffect(step, m.What, m.WantN, m.GotN)
	case runner.MissRows:
		return words.Rows(step, m.WantN, m.What, m.GotN)
	case runner.MissKeyRows:
		return words.KeyRows(step, m.WantN, m.Key, m.GotN)
	case runner.MissExternalEffects:
		return words.ExternalEffects(step, m.WantN, m.What, m.Key, m.GotN)
	case runner.MissMarked:
		return words.Marked(step, words.Event(m.Event, m.Consumer), m.Flag)
	case runner.MissCharges:
		return words.Charges(step, int(m.WantN), int(m.GotN))
	case runner.MissViolations:
		return words.Violations(m.Wants, m.Gots)
	case runner.MissNeverRaced:
		return words.Miss{Message: words.NeverRaced(int(m.WantN)), Expected: "copies raced", Got: "one after the other"}
	case runner.MissCallNotReached:
		return words.CallNotReached(m.What, m.Calls, m.Said)
	case runner.MissNotReached:
		return words.NotReached(m.What, m.Lines, m.Said)
	case runner.MissBypassed:
		return words.Bypassed(m.Event, m.URL, m.Flag)
	case runner.MissWrotePast:
		return words.WrotePast(m.Event, m.URL, m.Lines)
	case runner.MissUntied:
		return words.Untied(m.What, m.Event, m.Key, m.URL, m.Lines)
	}
	return words.Miss{Message: fmt.Sprintf("an expectation of kind %d did not hold", m.Kind)}
}

// scheduleName names the schedule an explored check first failed under,
// as it can be written as interleave: ("held at after-check, released
// together"; "step 2 held at …; step 4 unforced" for several steps).
func scheduleName(e *runner.ExploredFailure) string {
	hold := func(h runner.ScheduleHold) string {
		if h.Statement != "" {
			return h.Statement
		}
		return words.Hold(h.At, h.InOrder)
	}
	var s string
	if len(e.Schedule) == 1 {
		s = hold(e.Schedule[0])
	} else {
		parts := make([]string, len(e.Schedule))
		for i, h := range e.Schedule {
			parts[i] = words.Step(h.Step, 1, 1) + " " + hold(h)
		}
		s = strings.Join(parts, "; ")
	}
	if e.AfterAnswer {
		s += ", after the answer"
	}
	return s
}
