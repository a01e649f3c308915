package inject

import (
	"fmt"
	"slices"
	"testing"
)

// TestRewind: the rebalances of --rewind come after the positions the
// built-in replay has always drawn (moving them would change every
// report of a replay with --rewind), each handing over the last N
// deliveries, oldest first.
func TestRewind(t *testing.T) {
	for _, tt := range []struct {
		seed int64
		n    int
		want string // rebalance position: the positions it delivers again
	}{
		{1, 1, "4:[4] 6:[6] 9:[9] 13:[13] 17:[17] 20:[20] 23:[23] 26:[26] 30:[30]"},
		{1, 2, "5:[4 5] 13:[12 13] 18:[17 18] 22:[21 22] 27:[26 27]"},
		{2, 3, "10:[8 9 10] 19:[17 18 19] 28:[26 27 28]"},
		{3, 5, "19:[15 16 17 18 19]"},
		{1, 20, ""},
	} {
		t.Run(fmt.Sprintf("seed %d, --rewind %d", tt.seed, tt.n), func(t *testing.T) {
			r := NewRewind[int64](tt.seed, tt.n)
			var got []string
			for pos := int64(1); pos <= 30; pos++ {
				if !r.Add(pos, pos) {
					continue
				}
				again := slices.Collect(r.Again())
				if len(again) != r.Len() {
					t.Errorf("after %d: Again yields %d, Len says %d", pos, len(again), r.Len())
				}
				got = append(got, fmt.Sprintf("%d:%v", pos, again))
			}
			if s := fmt.Sprint(got); s != "["+tt.want+"]" {
				t.Errorf("rebalances %s, want [%s]", s, tt.want)
			}
		})
	}
}
