package broker

import "time"

// Window keeps the looks a drain took of a broker (a durable's counters,
// a queue's, a group's offsets) over the last Span, and the one just
// before it: the baseline a drain that timed out counts its progress
// from, so that a consumer slow under the nemesis is told from one that
// is stuck.
type Window[T any] struct {
	Span  time.Duration
	looks []look[T]
}

type look[T any] struct {
	at time.Time
	v  T
}

// Add keeps v, seen at at, and lets go of the looks before the last one
// at or before at - Span.
func (w *Window[T]) Add(at time.Time, v T) {
	w.looks = append(w.looks, look[T]{at, v})
	i := 0
	for i+1 < len(w.looks) && !w.looks[i+1].at.After(at.Add(-w.Span)) {
		i++
	}
	w.looks = w.looks[i:]
}

// Ends are the first look kept and the last, and the time between them;
// ok is false before the first look.
func (w *Window[T]) Ends() (first, last T, over time.Duration, ok bool) {
	if len(w.looks) == 0 {
		return first, last, 0, false
	}
	f, l := w.looks[0], w.looks[len(w.looks)-1]
	return f.v, l.v, l.at.Sub(f.at), true
}
