// Package inject draws the faults a replay injects: every decision is a
// function of --seed and the position of the capture delivery it is
// about (1 for the first), never of what came before it. The built-in
// replay and a replay into a target draw from it alike, so the same seed
// and capture pick the same deliveries for a fault both can inject, and a
// resumed replay makes, delivery for delivery, the choices the
// interrupted one made.
//
// It imports no other package of this module.
package inject

import (
	"fmt"
	"math"
)

// The slots of the draws made at one position: each decision has its own,
// so that a decision does not depend on which others are asked for.
const (
	SlotRedeliver uint64 = iota + 1
	SlotCrash
	SlotPoint // where in the delivery a crash comes
	SlotRepublish
	SlotGap
	SlotRebalance
	SlotLater // + kind<<32 + attempt: the gap after a later delivery (built-in replay)
	// SlotConcurrent is far from SlotLater and the values added to it.
	SlotConcurrent uint64 = 1 << 48
)

// Draw is a 64-bit pseudo-random number for (seed, position, slot): a
// SplitMix64 finalizer over the three, so that neighbouring positions and
// slots give unrelated numbers.
func Draw(seed, pos int64, slot uint64) uint64 {
	x := uint64(seed)*0x9e3779b97f4a7c15 ^ uint64(pos)*0xbf58476d1ce4e5b9 ^ slot*0x94d049bb133111eb
	x ^= x >> 30
	x *= 0xbf58476d1ce4e5b9
	x ^= x >> 27
	x *= 0x94d049bb133111eb
	x ^= x >> 31
	return x
}

// Chance is Draw as a number in [0, 1).
func Chance(seed, pos int64, slot uint64) float64 {
	return float64(Draw(seed, pos, slot)>>11) / (1 << 53)
}

// Fault is what is injected into one delivery of the capture.
type Fault int

// The faults a delivery of the capture can get.
const (
	None Fault = iota
	// Redeliver: the consumer did the work and answered, the ack was
	// lost, and the broker delivers the event again (--redeliver).
	Redeliver
	// Crash: the consumer dies mid-delivery, and the event is delivered
	// again (--crash).
	Crash
	// Concurrent: two deliveries of the event at once (--concurrent).
	Concurrent
)

// Rates are the probabilities of the faults drawn per delivery.
type Rates struct {
	Redeliver  float64
	Crash      float64
	Concurrent float64
}

// At is the fault injected into the capture's delivery at pos: two at
// once, else a crash, else a lost ack, each drawn in its own slot.
func (r Rates) At(seed, pos int64) Fault {
	switch {
	case r.Concurrent > 0 && Chance(seed, pos, SlotConcurrent) < r.Concurrent:
		return Concurrent
	case Chance(seed, pos, SlotCrash) < r.Crash:
		return Crash
	case Chance(seed, pos, SlotRedeliver) < r.Redeliver:
		return Redeliver
	}
	return None
}

// Probability checks the value of a probability flag (--redeliver,
// --crash, --concurrent, --republish): the one sentence both replays
// refuse a value with.
func Probability(flag string, p float64) error {
	if math.IsNaN(p) || p < 0 || p > 1 {
		return fmt.Errorf("%s must be a probability between 0 and 1, not %g", flag, p)
	}
	return nil
}

// RedeliverHelp is the help of --redeliver, for both replays.
const RedeliverHelp = "probability that the ack of a delivery is lost: the consumer did the work and answered, and the broker delivers the event again"
