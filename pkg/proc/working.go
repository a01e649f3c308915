package proc

import "github.com/redeliver/redeliver/pkg/inject"

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
