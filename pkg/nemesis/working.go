package nemesis

import (
	"fmt"
	"strings"

	"github.com/redeliver/redeliver/pkg/inject"
)

// Working is the targeted nemesis (--kill-working): for each delivery,
// with probability P drawn from --seed and the delivery's position in
// the capture, the instance working on it is killed at a boundary of its
// statements. It draws from the slot --crash draws from, so the same
// seed and capture pick the deliveries --crash would pick.
type Working struct {
	P    float64
	Seed int64
}

// Picks reports whether the delivery at capture position pos (1 the
// first) has the instance working on it killed.
func (w Working) Picks(pos int64) bool {
	return w.P > 0 && pos > 0 && inject.Chance(w.Seed, pos, inject.SlotCrash) < w.P
}

// WorkingKills counts what the targeted nemesis did, delivery by
// delivery.
type WorkingKills struct {
	P float64
	// Drawn deliveries are those Picks chose; each ends in one of Killed,
	// Missed and Untied.
	Drawn int
	// Killed: the delivery reached the boundary drawn and the instance
	// working on it was killed there. Interrupted are those of them that
	// came while its work was on: before the held statement ran, or
	// with a transaction of it open; the rest came after its
	// transaction had ended (after its COMMIT, say) and interrupted
	// nothing in the database.
	Killed, Interrupted int
	// Missed: the delivery's statements ended before the boundary drawn,
	// and no kill was made. Untied: statements came while it was
	// followed, but none could be tied to it (none carried its event id
	// or key), so none could be held.
	Missed, Untied int
}

// Add counts one drawn delivery: whether it was killed (reached) and,
// then, whether the kill interrupted its work (inWork); untied says
// that none of its statements could be tied to it.
func (k *WorkingKills) Add(reached, inWork, untied bool) {
	k.Drawn++
	switch {
	case reached:
		k.Killed++
		if inWork {
			k.Interrupted++
		}
	case untied:
		k.Untied++
	default:
		k.Missed++
	}
}

// String says what the targeted nemesis did: "--kill-working 1: 20
// deliveries drawn, 15 instance kills at their statements, 12 of them
// interrupting a delivery (3 after its transaction ended); 5 drawn
// deliveries ended before the boundary drawn (not killed)".
func (k WorkingKills) String() string {
	s := fmt.Sprintf("--kill-working %v: %s drawn", k.P, plural(k.Drawn, "delivery", "deliveries"))
	if k.Drawn == 0 {
		return s
	}
	s += fmt.Sprintf(", %s at their statements, %d of them interrupting a delivery", plural(k.Killed, "instance kill", "instance kills"), k.Interrupted)
	if after := k.Killed - k.Interrupted; after > 0 {
		s += fmt.Sprintf(" (%d after its transaction ended)", after)
	}
	var rest []string
	if k.Missed > 0 {
		rest = append(rest, fmt.Sprintf("%s ended before the boundary drawn (not killed)", plural(k.Missed, "drawn delivery", "drawn deliveries")))
	}
	if k.Untied > 0 {
		rest = append(rest, fmt.Sprintf("%s with no statement tied to it by its event id or key (not killed)", plural(k.Untied, "drawn delivery", "drawn deliveries")))
	}
	if len(rest) > 0 {
		s += "; " + strings.Join(rest, "; ")
	}
	return s
}

func plural(n int, one, many string) string {
	if n == 1 {
		return "1 " + one
	}
	return fmt.Sprintf("%d %s", n, many)
}
