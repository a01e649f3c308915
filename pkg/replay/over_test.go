package replay

import (
	"math/rand/v2"
	"reflect"
	"testing"
)

// TestOver: however long a replay, its totals over its course stay in at
// most OverBuckets buckets of a width that is a power of two, count
// every delivery and crash once, each in the bucket of its place; two
// halves counted apart and merged are the whole counted at once.
func TestOver(t *testing.T) {
	tests := []struct {
		name      string
		n         int64
		wantWidth int64
		wantLen   int
	}{
		{"one delivery", 1, 1, 1},
		{"a bucket each", 100, 1, 100},
		{"one more than the buckets", 101, 2, 51},
		{"a thousand", 1000, 16, 63},
		{"a million", 1_000_000, 16384, 62},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var whole, odd, even Over
			var crashes int64
			for at := int64(0); at < tt.n; at++ {
				k, crash := int(at%5), at%7 == 0
				if crash {
					crashes++
				}
				whole.Add(at, k, crash)
				if at%2 == 0 {
					even.Add(at, k, crash)
				} else {
					odd.Add(at, k, crash)
				}
			}
			if whole.Width() != tt.wantWidth || len(whole.Buckets) != tt.wantLen {
				t.Fatalf("%d buckets %d wide, want %d buckets %d wide", len(whole.Buckets), whole.Width(), tt.wantLen, tt.wantWidth)
			}
			var n, c int64
			for i, b := range whole.Buckets {
				in := int64(0)
				for _, x := range b.Outcomes {
					in += x
				}
				if last := i == len(whole.Buckets)-1; !last && in != whole.Width() {
					t.Errorf("bucket %d counts %d deliveries, want %d", i, in, whole.Width())
				}
				n, c = n+in, c+b.Crashes
			}
			if whole.Places() != tt.n || even.Places() != tt.n-1+tt.n%2 {
				t.Errorf("the buckets span %d and %d places, want %d", whole.Places(), even.Places(), tt.n)
			}
			if n != tt.n || c != crashes {
				t.Errorf("the buckets count %d deliveries and %d crashes, want %d and %d", n, c, tt.n, crashes)
			}
			even.merge(odd)
			if !reflect.DeepEqual(even.Buckets, whole.Buckets) || even.Width() != whole.Width() {
				t.Errorf("merged halves differ from the whole: %d buckets %d wide, want %d %d wide", len(even.Buckets), even.Width(), len(whole.Buckets), whole.Width())
			}
		})
	}
}

// TestOverMergeUneven: parts that reached different widths merge into
// the wider one's buckets.
func TestOverMergeUneven(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	var whole, a, b Over
	for at := int64(0); at < 5000; at++ {
		whole.Add(at, 0, false)
		if at < 4900 && rng.IntN(10) > 0 {
			a.Add(at, 0, false)
		} else {
			b.Add(at, 0, false)
		}
	}
	a.merge(b)
	if !reflect.DeepEqual(a.Buckets, whole.Buckets) {
		t.Errorf("merged parts of widths differ from the whole: %v, want %v", a.Buckets, whole.Buckets)
	}
}

// BenchmarkOverAdd: a counter per delivery, no allocation.
func BenchmarkOverAdd(b *testing.B) {
	var o Over
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		o.Add(int64(i), i%5, false)
	}
}

// TestOverKillsAndWait: a kill on a timer counts a crash where it came and
// no delivery; the wait for a broker's consumer stretches the course to
// its end and marks where it began, counting nothing.
func TestOverKillsAndWait(t *testing.T) {
	var o Over
	for ms := int64(0); ms < 35; ms++ {
		o.Add(ms, 0, false)
	}
	o.Waited(35, 9_999)
	for _, ms := range []int64{20, 4_000, 9_000} {
		o.Kill(ms)
	}
	if o.Places() != 10_000 || o.Settled != 35 {
		t.Fatalf("the course spans %d places, the wait began at %d; want 10000 and 35", o.Places(), o.Settled)
	}
	var deliveries, crashes int64
	var at []int64
	for i, b := range o.Buckets {
		for _, n := range b.Outcomes {
			deliveries += n
		}
		if b.Crashes > 0 {
			crashes += b.Crashes
			at = append(at, int64(i)*o.Width())
		}
	}
	if deliveries != 35 || crashes != 3 {
		t.Errorf("counted %d deliveries and %d crashes, want 35 and 3", deliveries, crashes)
	}
	if len(at) != 3 || at[0] > 20 || at[1] > 4_000 || at[1]+o.Width() <= 4_000 || at[2] > 9_000 || at[2]+o.Width() <= 9_000 {
		t.Errorf("the crashes are counted in the buckets from %v (each %d wide), want those of 20, 4000 and 9000", at, o.Width())
	}
	var none Over
	none.Waited(0, 0)
	if none.Settled != 0 || len(none.Buckets) != 0 {
		t.Errorf("a wait of no time marks the course: %+v", none)
	}
}
