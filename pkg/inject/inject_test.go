package inject

import (
	"math"
	"testing"
)

// TestDraw pins the draws: the built-in replay's reports (and a resumed
// replay) depend on every one of them staying what it was.
func TestDraw(t *testing.T) {
	tests := []struct {
		seed, pos int64
		slot      uint64
		want      uint64
	}{
		{1, 1, SlotRedeliver, 0xb300a36ba84e4116},
		{1, 2, SlotCrash, 0x2d410f6dc11bbc8a},
		{-5, 123456, SlotLater + 2<<32 + 3, 0xc3e03dfccc2ab8fb},
		{0, 0, 0, 0},
	}
	for _, tt := range tests {
		if got := Draw(tt.seed, tt.pos, tt.slot); got != tt.want {
			t.Errorf("Draw(%d, %d, %d) = %#x, want %#x", tt.seed, tt.pos, tt.slot, got, tt.want)
		}
	}
}

// TestAt: a fault is drawn per position, each in its own slot; two at
// once comes first, then a crash, then a lost ack.
func TestAt(t *testing.T) {
	all := Rates{Redeliver: 1, Crash: 1, Concurrent: 1}
	tests := []struct {
		name  string
		rates Rates
		want  Fault
	}{
		{"nothing", Rates{}, None},
		{"every ack lost", Rates{Redeliver: 1}, Redeliver},
		{"a crash before a lost ack", Rates{Redeliver: 1, Crash: 1}, Crash},
		{"two at once before anything", all, Concurrent},
	}
	for _, tt := range tests {
		for pos := int64(1); pos < 50; pos++ {
			if got := tt.rates.At(3, pos); got != tt.want {
				t.Fatalf("%s: At(3, %d) = %d, want %d", tt.name, pos, got, tt.want)
			}
		}
	}
	// Half the positions lose their ack, and the same half whatever the
	// other rates asked for, as long as they inject nothing.
	n := 0
	for pos := int64(1); pos <= 1000; pos++ {
		a := Rates{Redeliver: 0.5}.At(9, pos)
		if b := (Rates{Redeliver: 0.5, Crash: 0, Concurrent: 0}).At(9, pos); a != b {
			t.Fatalf("position %d: %d, then %d", pos, a, b)
		}
		if a == Redeliver {
			n++
		}
	}
	if n < 430 || n > 570 {
		t.Errorf("%d of 1000 positions lost their ack at 0.5", n)
	}
}

func TestProbability(t *testing.T) {
	for _, tt := range []struct {
		p  float64
		ok bool
	}{{0, true}, {0.5, true}, {1, true}, {-0.1, false}, {1.5, false}, {math.NaN(), false}, {math.Inf(1), false}} {
		err := Probability("--redeliver", tt.p)
		if (err == nil) != tt.ok {
			t.Errorf("Probability(%g) = %v", tt.p, err)
		}
	}
	if err := Probability("--crash", 2); err == nil || err.Error() != "--crash must be a probability between 0 and 1, not 2" {
		t.Errorf("the words: %v", err)
	}
}
