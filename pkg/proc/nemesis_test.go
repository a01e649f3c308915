package proc

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/redeliver/redeliver/pkg/report/words"
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
	n := NewNemesis(time.Microsecond, seed, []Instance{fs[0], fs[1], fs[2]})
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
	n := NewNemesis(time.Microsecond, 1, []Instance{bad})
	if err := n.Run(context.Background()); err == nil || err.Error() != "not ready" {
		t.Fatalf("got %v, want the restart's error", err)
	}
}

func TestNoInstancesWaits(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := NewNemesis(time.Millisecond, 1, nil).Run(ctx); err != nil {
		t.Fatal(err)
	}
}

// slow is an instance that takes a while to be ready again.
type slow struct{ ready time.Duration }

func (s slow) Crash(context.Context) error { time.Sleep(s.ready); return nil }

// TestPaceCountsTheRestarts: the period asked counts from when the
// previous restart was ready, so the kills come that much further apart,
// and the pace says so, with the restarts' time.
func TestPaceCountsTheRestarts(t *testing.T) {
	const every, ready = 10 * time.Millisecond, 40 * time.Millisecond
	n := NewNemesis(every, 1, []Instance{slow{ready}, slow{ready}})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error)
	go func() { done <- n.Run(ctx) }()
	for len(n.Kills()) < 5 {
		time.Sleep(time.Millisecond)
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	p := n.Pace()
	if p.Kills < 5 || p.Asked != every {
		t.Fatalf("pace = %+v, want at least 5 kills asked every %s", p, every)
	}
	if p.Restart < ready {
		t.Errorf("restarts took %s on average, want at least %s", p.Restart, ready)
	}
	// From one kill to the next: the restart, then the period.
	if p.Every < every+ready*(time.Duration(p.Kills)-1)/time.Duration(p.Kills) {
		t.Errorf("one kill every %s, want at least the period and the restart (%s, %s)", p.Every, every, ready)
	}
}

func TestPaceWords(t *testing.T) {
	ms := time.Millisecond
	for _, tt := range []struct {
		asked time.Duration
		kills []Kill
		want  string
	}{
		{2 * time.Second, nil, "no kill: the run ended within the first 2s"},
		{2 * time.Second, []Kill{{At: 2 * time.Second, Restart: 6100 * ms}},
			"one kill every 2s on average (asked every 2s, counted from when the previous restart was ready; restarts took 6.1s on average)"},
		{2 * time.Second, []Kill{{At: 2 * time.Second, Restart: 6 * time.Second}, {At: 10 * time.Second, Restart: 6200 * ms}, {At: 18200 * ms, Restart: 6400 * ms}},
			"one kill every 6.07s on average (asked every 2s, counted from when the previous restart was ready; restarts took 6.2s on average)"},
		{300 * ms, []Kill{{At: 300 * ms, Restart: 41 * ms}, {At: 641 * ms, Restart: 43 * ms}},
			"one kill every 321ms on average (asked every 300ms, counted from when the previous restart was ready; restarts took 42ms on average)"},
	} {
		p := PaceOf(tt.asked, tt.kills)
		if got := words.KillPace(p.Kills, p.Asked, p.Every, p.Restart); got != tt.want {
			t.Errorf("got  %q\nwant %q", got, tt.want)
		}
	}
}
