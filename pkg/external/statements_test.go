package external

import (
	"context"
	"testing"
	"time"

	"github.com/redeliver/redeliver/pkg/scenario"
)

// TestHoldEndsHalfTheTimeoutAfterSending: a worker is held at most half
// the target's timeout after the deliveries were sent, not after it
// reached its boundary, so that a worker held late in its delivery, let
// go, still answers in time. Held past that already, it is let go at
// once; held early, it waits out the rest.
func TestHoldEndsHalfTheTimeoutAfterSending(t *testing.T) {
	sys := &system{sess: &Session{t: &scenario.Target{HTTP: &scenario.HTTPTarget{Timeout: 4 * time.Second}}}}
	for _, tt := range []struct {
		name     string
		sentAgo  time.Duration
		min, max time.Duration
	}{
		{"held after half the timeout", 3 * time.Second, 0, time.Second},
		{"held early", 1500 * time.Millisecond, 400 * time.Millisecond, 1900 * time.Millisecond},
	} {
		t.Run(tt.name, func(t *testing.T) {
			answered := 0
			start := time.Now()
			sys.letOthersRun(context.Background(), nil, start.Add(-tt.sentAgo), &answered, 2, make(chan int), func(int) {})
			if took := time.Since(start); took < tt.min || took > tt.max {
				t.Errorf("held %s, want between %s and %s", took, tt.min, tt.max)
			}
		})
	}
}
