package inject

import "iter"

// Rewind is --rewind N as both replays inject it: a consumer group that
// rebalances to an older offset every 2N to 4N deliveries of the capture
// and is handed its last N deliveries again, in order. When each
// rebalance comes is drawn from --seed and the position of the rebalance
// before it (0 for the first), so the same seed and capture rebalance
// after the same positions with and without --target, and a resumed
// replay after the positions the interrupted one did.
type Rewind[T any] struct {
	seed int64
	ring []T // the last N deliveries; ring[at] the oldest once it is full
	at   int
	next int64 // deliveries to go before the next rebalance
}

// NewRewind is the schedule of --rewind n (n > 0) under seed.
func NewRewind[T any](seed int64, n int) *Rewind[T] {
	r := &Rewind[T]{seed: seed, ring: make([]T, 0, n)}
	r.next = r.gap(0)
	return r
}

// gap is how many deliveries pass before the rebalance after the one
// that came after the delivery at pos.
func (r *Rewind[T]) gap(pos int64) int64 {
	n := uint64(cap(r.ring))
	return int64(2*n + Draw(r.seed, pos, SlotRebalance)%(2*n+1))
}

// Add keeps d, the capture's delivery at pos (each position once, in
// order), and reports whether a rebalance comes after it; Again then
// yields the deliveries it hands over again.
func (r *Rewind[T]) Add(pos int64, d T) bool {
	if len(r.ring) < cap(r.ring) {
		r.ring = append(r.ring, d)
	} else {
		r.ring[r.at] = d
		r.at = (r.at + 1) % len(r.ring)
	}
	r.next--
	if r.next > 0 {
		return false
	}
	r.next = r.gap(pos)
	return true
}

// Again yields the last N deliveries kept (fewer before N came), oldest
// first.
func (r *Rewind[T]) Again() iter.Seq[T] {
	return func(yield func(T) bool) {
		for i := range r.ring {
			if !yield(r.ring[(r.at+i)%len(r.ring)]) {
				return
			}
		}
	}
}

// Len is how many deliveries Again yields.
func (r *Rewind[T]) Len() int { return len(r.ring) }
