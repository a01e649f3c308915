package runner

import (
	"errors"
	"fmt"
	"strings"

	"github.com/redeliver/redeliver/pkg/scenario"
)

// stepError is a runtime error at one step of a check (0-based), after
// done of the step's deliveries completed; step -1 is before the first
// step (the system could not be opened).
type stepError struct {
	step int
	done int
	err  error
}

// partialStep is a runtime error in a step that repeats a delivery, after
// done of them completed (and are in the history and the database).
type partialStep struct {
	done int
	err  error
}

func (e *partialStep) Error() string { return e.err.Error() }
func (e *partialStep) Unwrap() error { return e.err }

func (e *stepError) Error() string { return e.err.Error() }
func (e *stepError) Unwrap() error { return e.err }

// maxListed bounds the deliveries a runtime error names one by one.
const maxListed = 8

// notCompleted adds to a runtime error in check ci (0-based) the deliveries
// of the file that did not complete: those of the step that failed (its
// outcomes were not recorded) and of every later step. Nothing of them is
// in the report, so the user knows what to run again.
func notCompleted(s *scenario.Scenario, ci int, err error) error {
	// An error after the steps (reading the state for the check's
	// expectations and invariants) leaves the check's deliveries done.
	from, done := len(s.Checks[ci].Steps), 0
	if se, ok := err.(*stepError); ok {
		from, done = se.step, se.done
		err = se.err
	}
	left, count := undelivered(s, ci, from, done)
	if count == 0 {
		return err
	}
	more := ""
	if n := count - len(left); n > 0 && len(left) == maxListed {
		more = ", and more"
	}
	list := fmt.Sprintf("; %s: %s%s", howManyUndelivered(s.Checks[ci].Steps, from, count), strings.Join(left, ", "), more)
	var t Tailed
	if errors.As(err, &t) {
		// The consumer's stderr lines stay last.
		msg := err.Error()
		at := t.Tail()
		return &listed{msg: msg[:at] + list + msg[at:], err: err}
	}
	return fmt.Errorf("%w%s", err, list)
}

// undelivered lists, for notCompleted, the deliveries of check ci from its
// step from on, and of every later check, done of step from's having
// completed: the first maxListed of them by event id and position, and
// how many there are in all.
func undelivered(s *scenario.Scenario, ci, from, done int) (left []string, count int) {
	for c := ci; c < len(s.Checks); c++ {
		steps := s.Checks[c].Steps
		for i := range steps {
			if c == ci && i < from {
				continue
			}
			st := steps[i]
			if st.Kind != scenario.Deliver {
				continue
			}
			n := st.Times
			if st.Concurrent > 0 {
				n = st.Concurrent
			}
			if c == ci && i == from {
				n -= done // those completed before the error
			}
			count += n
			if len(left) < maxListed {
				d := st.Event.ID
				if n > 1 {
					d += fmt.Sprintf(" ×%d", n)
				}
				left = append(left, fmt.Sprintf("%s (%s)", d, st.Pos))
			}
		}
	}
	return left, count
}

// howManyUndelivered says how many of the deliveries count were not
// completed, or did not run when the system did not open (from < 0); steps
// are the failed check's, from the step that failed.
func howManyUndelivered(steps []*scenario.Step, from, count int) string {
	what := fmt.Sprintf("%d deliveries did not complete", count)
	if from >= 0 && from < len(steps) && steps[from].Kind == scenario.Deliver {
		what = fmt.Sprintf("%d deliveries, from the one that failed on, did not complete", count)
	}
	if count == 1 {
		what = "1 delivery did not complete"
	}
	if from < 0 {
		// The system did not open: none of them was sent.
		what = fmt.Sprintf("%d deliveries did not run", count)
		if count == 1 {
			what = "1 delivery did not run"
		}
	}
	return what
}

// listed is an error with the list of deliveries that did not complete
// put inside its message.
type listed struct {
	msg string
	err error
}

func (e *listed) Error() string { return e.msg }
func (e *listed) Unwrap() error { return e.err }
