package journal

import (
	"fmt"
	"testing"
)

// TestSeenFilter: an id delivered is never taken for new (the journal is
// asked about it), and few new ids are taken for delivered ones.
func TestSeenFilter(t *testing.T) {
	for _, n := range []int{1, 1000, 100000} {
		t.Run(fmt.Sprint(n), func(t *testing.T) {
			f := NewSeenFilter()
			for i := 0; i < n; i++ {
				f.Add(fmt.Sprintf("evt-%d", i))
			}
			maybe := 0
			for i := 0; i < n; i++ {
				if !f.Maybe(fmt.Sprintf("evt-%d", i)) {
					t.Fatalf("evt-%d was added and is taken for new", i)
				}
				if f.Maybe(fmt.Sprintf("new-%d", i)) {
					maybe++
				}
			}
			if maybe > n/100 {
				t.Errorf("%d of %d new ids taken for delivered ones", maybe, n)
			}
		})
	}
}
