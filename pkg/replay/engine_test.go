package replay

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redeliver/redeliver/pkg/capture"
	"github.com/redeliver/redeliver/pkg/inject"
)

// testDelivery is what the engine tests' lanes are handed: an event and
// its business key.
type testDelivery struct{ id, key string }

func testEngine(t *testing.T, lines, keys, lanes, rewind int) *Engine[testDelivery] {
	t.Helper()
	var b strings.Builder
	for i := 1; i <= lines; i++ {
		fmt.Fprintf(&b, `{"specversion":"1.0","id":"e-%d","source":"/s","type":"t","data":{"k":"k-%d"}}`+"\n", i, i%keys)
	}
	name := filepath.Join(t.TempDir(), "capture.ndjson")
	if err := os.WriteFile(name, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	return &Engine[testDelivery]{
		Inputs: []string{name}, Seed: 7, Lanes: lanes, Rewind: rewind,
		Rates: inject.Rates{Redeliver: 0.3, Crash: 0.1},
		Parse: func(ev capture.Event, _ int) (testDelivery, *capture.BadRecordError) {
			_, k, _ := strings.Cut(string(ev.Envelope), `"k":"`)
			k, _, _ = strings.Cut(k, `"`)
			return testDelivery{id: ev.ID, key: k}, nil
		},
		LaneOf: func(d *testDelivery) uint64 { return uint64(fnv64(d.key)) },
	}
}

// recordingLane keeps what it was handed.
type recordingLane struct {
	got      []Planned[testDelivery]
	finished bool
	failAt   int // fail the delivery with this position (0: never)
}

var errLane = errors.New("the lane failed")

func (l *recordingLane) Deliver(_ context.Context, p Planned[testDelivery]) error {
	if l.failAt > 0 && p.Pos == int64(l.failAt) {
		return errLane
	}
	l.got = append(l.got, p)
	return nil
}

func (l *recordingLane) Finish(context.Context) error { l.finished = true; return nil }

// TestEngineLanes: every delivery of the capture is handed to the lane of
// its key exactly once, with its position and the fault drawn for it; one
// key's deliveries stay in order in its lane; a rebalance's deliveries
// follow the one it came after, in its lanes, and only the last a lane is
// handed at a position says so; every lane is finished.
func TestEngineLanes(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		name                string
		lines, keys, lanes  int
		rewind, wantRewound int
	}{
		{"one lane", 1000, 17, 1, 0, 0},
		{"four lanes", 1000, 17, 4, 0, 0},
		{"one lane, rewinds", 1000, 17, 1, 5, 1},
		{"three lanes, rewinds", 1000, 17, 3, 5, 1},
		{"more lanes than keys", 300, 2, 8, 3, 1},
	} {
		t.Run(tt.name, func(t *testing.T) {
			e := testEngine(t, tt.lines, tt.keys, tt.lanes, tt.rewind)
			lanes := make([]*recordingLane, tt.lanes)
			err := e.Run(context.Background(), GoLanes(tt.lanes, func(i int) Lane[testDelivery] {
				lanes[i] = &recordingLane{}
				return lanes[i]
			}))
			if err != nil {
				t.Fatal(err)
			}
			seen := map[int64]bool{}
			var rewound int64
			for i, l := range lanes {
				if !l.finished {
					t.Errorf("lane %d was not finished", i)
				}
				lastPos := map[string]int64{}
				for j, p := range l.got {
					if want := int(uint64(fnv64(p.Delivery.key)) % uint64(tt.lanes)); tt.lanes > 1 && want != i {
						t.Fatalf("%s (key %s) in lane %d, want %d", p.Delivery.id, p.Delivery.key, i, want)
					}
					if p.Pos < lastPos[p.Delivery.key] {
						t.Fatalf("lane %d: key %s at %d after %d", i, p.Delivery.key, p.Pos, lastPos[p.Delivery.key])
					}
					lastPos[p.Delivery.key] = p.Pos
					last := j == len(l.got)-1 || l.got[j+1].Pos != p.Pos
					if p.Last != last {
						t.Fatalf("lane %d, %s at %d: Last %v, want %v", i, p.Delivery.id, p.Pos, p.Last, last)
					}
					if p.Rewound {
						rewound++
						if p.Fault != inject.None {
							t.Errorf("rewound %s has fault %v, want none", p.Delivery.id, p.Fault)
						}
						continue
					}
					if p.Delivery.id != fmt.Sprintf("/s/e-%d", p.Pos) && p.Delivery.id != fmt.Sprintf("e-%d", p.Pos) {
						t.Fatalf("%s at position %d", p.Delivery.id, p.Pos)
					}
					if want := e.Rates.At(e.Seed, p.Pos); p.Fault != want {
						t.Fatalf("%d: fault %v, want %v", p.Pos, p.Fault, want)
					}
					if seen[p.Pos] {
						t.Fatalf("%d handed over twice", p.Pos)
					}
					seen[p.Pos] = true
				}
			}
			if len(seen) != tt.lines {
				t.Errorf("%d deliveries handed over, want %d", len(seen), tt.lines)
			}
			if rewound != e.Rewound || (tt.wantRewound > 0) != (rewound > 0) || (e.Rebalances > 0) != (rewound > 0) {
				t.Errorf("%d rewound handed over, engine counted %d in %d rebalances; want some: %v", rewound, e.Rewound, e.Rebalances, tt.wantRewound > 0)
			}
		})
	}
}

// TestEngineLaneFails: when a lane fails — in a delivery, or before it
// reads its feed (its runner fails it without serving it, as a store that
// cannot begin) — the dispatcher, the reader and the other lanes stop and
// Run returns the lane's error; none of them waits on a lane that is
// gone. Every delivery goes to the failing lane, so the dispatcher fills
// its feed while the others get nothing.
func TestEngineLaneFails(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		name        string
		lanes, fail int
		unserved    bool // the runner fails the lane before serving it
	}{
		{"one lane, in a delivery", 1, 0, false},
		{"one lane, unserved", 1, 0, true},
		{"two lanes, the first unserved", 2, 0, true},
		{"three lanes, the last unserved", 3, 2, true},
		{"three lanes, in a delivery", 3, 1, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			e := testEngine(t, 8*laneChunk, 5, tt.lanes, 0)
			e.LaneOf = func(*testDelivery) uint64 { return uint64(tt.fail) }
			runner := func(ctx context.Context, serve func(context.Context, int, Lane[testDelivery]) error) error {
				ctx, cancel := context.WithCancel(ctx)
				defer cancel()
				errs := make([]error, tt.lanes)
				var wg sync.WaitGroup
				for i := range tt.lanes {
					wg.Add(1)
					go func() {
						defer wg.Done()
						l := &recordingLane{}
						if i == tt.fail {
							if tt.unserved {
								errs[i] = errLane
								cancel()
								return
							}
							l.failAt = 3
						}
						if errs[i] = serve(ctx, i, l); errs[i] != nil {
							cancel()
						}
					}()
				}
				wg.Wait()
				return firstError(errs...)
			}
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			done := make(chan error, 1)
			go func() { done <- e.Run(ctx, runner) }()
			select {
			case err := <-done:
				if !errors.Is(err, errLane) {
					t.Errorf("Run returned %v, want the lane's error", err)
				}
			case <-time.After(20 * time.Second):
				cancel() // unblocks the dispatcher, so Run ends
				<-done
				t.Fatal("the lane failed, and the replay still ran after 20s (the dispatcher or the other lanes waited on it)")
			}
		})
	}
}
