package report

import (
	"fmt"
	"strconv"

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
	if f.InSchedules > 0 {
		s = words.InNoSchedule(s, f.InSchedules)
	}
	if e := f.Explored; e != nil {
		s = words.Explored(s, e.Schedules, e.Failed, e.First, e.Name, nil)
	}
	if r := f.Repeated; r != nil {
		s = words.Repeated(s, r.Runs, r.Failed, r.First, tallied(r.Broken))
	}
	return s
}
