package proc

import (
	"math"
	"testing"

	"github.com/redeliver/redeliver/pkg/report/words"
)

// TestWorkingPicks: the deliveries drawn are a function of --seed and
// the position, about P of them, all at 1, and a rewound delivery
// (position 0) never.
func TestWorkingPicks(t *testing.T) {
	for _, tt := range []struct {
		p        float64
		min, max int // of 10,000 positions
	}{
		{1, 10_000, 10_000},
		{0.5, 4_800, 5_200},
		{0.01, 60, 140},
	} {
		w := Working{P: tt.p, Seed: 7}
		n := 0
		for pos := int64(1); pos <= 10_000; pos++ {
			if w.Picks(pos) {
				n++
			}
			if w.Picks(pos) != (Working{P: tt.p, Seed: 7}).Picks(pos) {
				t.Fatalf("P %v: position %d drawn differently twice", tt.p, pos)
			}
		}
		if n < tt.min || n > tt.max {
			t.Errorf("P %v: %d of 10000 drawn, want %d to %d", tt.p, n, tt.min, tt.max)
		}
		if w.Picks(0) {
			t.Errorf("P %v: a rewound delivery (position 0) drawn", tt.p)
		}
	}
	same := 0
	for pos := int64(1); pos <= 1000; pos++ {
		if (Working{P: 0.5, Seed: 1}).Picks(pos) == (Working{P: 0.5, Seed: 2}).Picks(pos) {
			same++
		}
	}
	if math.Abs(float64(same)-500) > 80 {
		t.Errorf("seeds 1 and 2 agree on %d of 1000 positions, want about 500", same)
	}
}

// TestWorkingKills: each drawn delivery ends killed (interrupting its
// work or after its transaction ended), missed or untied, and the line
// says so.
func TestWorkingKills(t *testing.T) {
	for _, tt := range []struct {
		name string
		adds [][3]bool // reached, inWork, untied
		want string
	}{
		{"none drawn", nil, "--kill-working 0.5: 0 deliveries drawn"},
		{"one interrupted", [][3]bool{{true, true, false}},
			"--kill-working 0.5: 1 delivery drawn, 1 instance kill at their statements, 1 of them interrupting a delivery"},
		{"all kinds", [][3]bool{{true, true, false}, {true, false, false}, {false, false, false}, {false, false, true}, {true, true, false}},
			"--kill-working 0.5: 5 deliveries drawn, 3 instance kills at their statements, 2 of them interrupting a delivery (1 after its transaction ended); 1 drawn delivery ended before the boundary drawn (not killed); 1 drawn delivery with no statement tied to it by its event id or key (not killed)"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			k := WorkingKills{P: 0.5}
			for _, a := range tt.adds {
				k.Add(a[0], a[1], a[2])
			}
			if k.Drawn != k.Killed+k.Missed+k.Untied {
				t.Errorf("drawn %d ≠ killed %d + missed %d + untied %d", k.Drawn, k.Killed, k.Missed, k.Untied)
			}
			if got := words.WorkingKills(k.P, k.Drawn, k.Killed, k.Interrupted, k.Missed, k.Untied); got != tt.want {
				t.Errorf("got  %q\nwant %q", got, tt.want)
			}
		})
	}
}
