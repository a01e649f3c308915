package nemesis

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"
)

type fake struct {
	mu      sync.Mutex
	crashes int
	err     error
}

func (f *fake) Crash(context.Context) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.crashes++
	return f.err
}

func run(t *testing.T, seed int64, kills int) ([]Kill, []*fake) {
	t.Helper()
	fs := []*fake{{}, {}, {}}
	n := New(time.Microsecond, seed, []Instance{fs[0], fs[1], fs[2]})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error)
	go func() { done <- n.Run(ctx) }()
	for len(n.Kills()) < kills {
		time.Sleep(time.Millisecond)
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	return n.Kills(), fs
}

func TestKillsFollowTheSeed(t *testing.T) {
	a, fs := run(t, 42, 50)
	b, _ := run(t, 42, 50)
	c, _ := run(t, 43, 50)
	same := func(x, y []Kill) bool {
		for i := 0; i < 50; i++ {
			if x[i].Instance != y[i].Instance {
				return false
			}
		}
		return true
	}
	if !same(a, b) {
		t.Error("the same seed picked different instances")
	}
	if same(a, c) {
		t.Error("seeds 42 and 43 picked the same 50 instances")
	}
	total := 0
	for i, f := range fs {
		if f.crashes == 0 {
			t.Errorf("instance %d was never killed in %d kills", i, len(a))
		}
		total += f.crashes
	}
	if total != len(a) {
		t.Errorf("%d crashes for %d kills", total, len(a))
	}
}

func TestFailedRestartStops(t *testing.T) {
	bad := &fake{err: errors.New("not ready")}
	n := New(time.Microsecond, 1, []Instance{bad})
	if err := n.Run(context.Background()); err == nil || err.Error() != "not ready" {
		t.Fatalf("got %v, want the restart's error", err)
	}
}

func TestNoInstancesWaits(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := New(time.Millisecond, 1, nil).Run(ctx); err != nil {
		t.Fatal(err)
	}
}
