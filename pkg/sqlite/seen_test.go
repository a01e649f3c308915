package sqlite

import (
	"fmt"
	"testing"
)

// TestSeen: a pair that got a marker is always seen; pairs that did not
// are, but for a few, not seen.
func TestSeen(t *testing.T) {
	s := newSeen()
	const n = 100000
	for i := 0; i < n; i++ {
		s.add(fmt.Sprintf("evt-%d", i), "shipping")
	}
	for i := 0; i < n; i++ {
		if !s.has(fmt.Sprintf("evt-%d", i), "shipping") {
			t.Fatalf("evt-%d got a marker and is not seen", i)
		}
	}
	tests := []struct {
		name     string
		id       func(i int) string
		consumer string
	}{
		{"other ids", func(i int) string { return fmt.Sprintf("evt-%d", n+i) }, "shipping"},
		{"same ids, other consumer", func(i int) string { return fmt.Sprintf("evt-%d", i) }, "billing"},
		{"id and consumer run together", func(i int) string { return fmt.Sprintf("evt-%dshipping", i) }, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			wrong := 0
			for i := 0; i < n; i++ {
				if s.has(tt.id(i), tt.consumer) {
					wrong++
				}
			}
			if wrong > 10 {
				t.Errorf("%d of %d pairs without a marker are seen, want almost none", wrong, n)
			}
		})
	}
}
