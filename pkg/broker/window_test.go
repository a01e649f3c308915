package broker

import (
	"testing"
	"time"
)

// TestWindowKeepsItsSpan: progress counts from the last look at or
// before the window's start, whatever the pace of the looks.
func TestWindowKeepsItsSpan(t *testing.T) {
	t0 := time.Now()
	for _, tt := range []struct {
		name        string
		span        time.Duration
		looks       []time.Duration
		first, last int
		over        time.Duration
	}{
		{"one a second", 10 * time.Second, seconds(0, 30), 19, 29, 10 * time.Second},
		{"shorter than the span", 10 * time.Second, seconds(0, 4), 0, 3, 3 * time.Second},
		{"a gap over the span", 10 * time.Second, []time.Duration{0, time.Second, 40 * time.Second, 41 * time.Second}, 1, 3, 40 * time.Second},
		{"one look", 10 * time.Second, []time.Duration{5 * time.Second}, 0, 0, 0},
	} {
		t.Run(tt.name, func(t *testing.T) {
			w := Window[int]{Span: tt.span}
			if _, _, _, ok := w.Ends(); ok {
				t.Fatal("an empty window has ends")
			}
			for i, d := range tt.looks {
				w.Add(t0.Add(d), i)
			}
			first, last, over, ok := w.Ends()
			if !ok || first != tt.first || last != tt.last || over != tt.over {
				t.Errorf("ends %d to %d over %s (%v), want %d to %d over %s", first, last, over, ok, tt.first, tt.last, tt.over)
			}
		})
	}
}

func seconds(from, to int) []time.Duration {
	var out []time.Duration
	for i := from; i < to; i++ {
		out = append(out, time.Duration(i)*time.Second)
	}
	return out
}
