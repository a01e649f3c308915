package replay

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/redeliver/redeliver/pkg/consumer"
	"github.com/redeliver/redeliver/pkg/handler"
	"github.com/redeliver/redeliver/pkg/invariant"
	"github.com/redeliver/redeliver/pkg/ledger"
	"github.com/redeliver/redeliver/pkg/sqlite"
)

// TestSplitIsOneStore: a replay split in parts reports exactly what one
// store handling the deliveries in order reports (outcomes, counts, broken
// invariants, their examples and effect ids, unexpected failures), for
// every strategy a split replay runs, on generated captures with repeated
// and reused ids, shared business keys and bad records, under every
// injection a split replay takes.
func TestSplitIsOneStore(t *testing.T) {
	t.Parallel()
	strategies := []handler.Strategy{handler.EventID, handler.ConsumerScoped, handler.None, handler.CheckThenAct, handler.MarkerAfterEffect}
	// Each run replays its capture twice (one store, then 2 or 3
	// parts); 12 captures reach every breach below.
	runs := 12
	dir := t.TempDir()
	reached := map[string]int{}
	// The last run is larger: more broken keys and events than the
	// examples keep, so the parts' lists are cut before they are merged.
	for seed := 1; seed <= runs+1; seed++ {
		rng := rand.New(rand.NewPCG(uint64(seed), 11))
		name := filepath.Join(dir, fmt.Sprintf("capture-%d.ndjson", seed))
		lines := 20 + rng.IntN(200)
		if seed > runs {
			lines = 1500
		}
		writeMixedCapture(t, rng, name, lines)
		o := Options{
			Inputs:    []string{name},
			DB:        ledger.Memory,
			Seed:      int64(seed),
			Redeliver: rng.Float64() * 0.5,
			Crash:     rng.Float64() * 0.4,
			Republish: rng.Float64() * 0.3,
			MaxBad:    1000,
			Examples:  1 + rng.IntN(5),
			Handler:   handler.Config{Strategy: strategies[rng.IntN(len(strategies))]},
			Compare:   rng.IntN(3) == 0, // the strategy table reads the key counts of all parts
		}
		if seed > runs {
			o.Compare = false // six more replays of the large capture would double the test's time
		}
		if rng.IntN(3) == 0 {
			o.CrashAt = []consumer.FaultPoint{DefaultCrashAt[rng.IntN(len(DefaultCrashAt))]}
		}
		o.OpenSplit = sqlite.OpenSplitLedger
		o.Parallel = 1
		if n := splitParts(o); n != 1 {
			t.Fatalf("seed %d: %d parts, want one store", seed, n)
		}
		want := reportJSON(t, o)
		parts := 2 + seed%2 // two parts, or three
		o.Parallel = parts
		if n := splitParts(o); n != parts {
			t.Fatalf("seed %d: %d parts, want %d: the replay is not split", seed, n, parts)
		}
		if got := reportJSON(t, o); got != want {
			t.Fatalf("seed %d, strategy %s, %d parts: the report differs from one store's\none store:\n%s\nsplit:\n%s", seed, o.Handler.Strategy, parts, want, got)
		}
		var rep Report
		json.Unmarshal([]byte(want), &rep)
		for _, v := range rep.Violations {
			reached[v.Invariant]++
		}
		if rep.Injected.Republished > 0 {
			reached["republished"]++
		}
		if rep.Outcomes.Conflict > 0 {
			reached["conflict"]++
		}
		if len(rep.Strategies) > 0 {
			reached["strategies"]++
		}
	}
	// The captures must reach what the parts could get wrong, or the test
	// could not fail.
	for _, what := range []string{string(invariant.DuplicateEffect.Name), string(invariant.DuplicateKey.Name), "republished", "conflict", "strategies"} {
		if reached[what] == 0 {
			t.Errorf("no generated replay reached %s (reached: %v)", what, reached)
		}
	}
}

// writeMixedCapture writes a CloudEvents capture: ids from a small pool (so they
// repeat), an id now and then reused with another amount, business keys
// shared between ids, and a bad line now and then.
func writeMixedCapture(t *testing.T, rng *rand.Rand, name string, lines int) {
	t.Helper()
	var b strings.Builder
	ids := 3 + rng.IntN(60)
	if lines > 1000 {
		ids = lines / 2
	}
	for i := 0; i < lines; i++ {
		if i > 0 && rng.IntN(40) == 0 {
			b.WriteString(`{"specversion":"1.0","source":"/orders","type":"order.paid","data":{}}` + "\n") // no id
			continue
		}
		id := rng.IntN(ids)
		order := id
		if rng.IntN(6) == 0 {
			order = rng.IntN(ids)
		}
		amount := 10
		if rng.IntN(12) == 0 {
			amount = 11
		}
		fmt.Fprintf(&b, `{"specversion":"1.0","id":"evt-%d","source":"/orders","type":"order.paid","subject":"order-%d","data":{"orderId":"order-%d","amount":%d}}`+"\n", id, order, order, amount)
	}
	if err := os.WriteFile(name, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
}

func reportJSON(t *testing.T, o Options) string {
	t.Helper()
	rep, err := runSQLite(context.Background(), o)
	if err != nil {
		t.Fatalf("replay with %d parts: %v", o.Parallel, err)
	}
	// The totals over the capture are compared too: a part counts its
	// deliveries at their places in the whole capture.
	b, err := json.MarshalIndent(struct {
		*Report
		OverWidth   int64
		OverBuckets []Bucket
	}{rep, rep.Over.Width(), rep.Over.Buckets}, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// failingPart is a split ledger whose part fails before it reads its feed:
// the part's function is never called, as when its store cannot begin.
type failingPart struct {
	ledger.Split
	part int
}

var errPartFailed = errors.New("part could not begin")

func (f failingPart) RunParts(ctx context.Context, run func(ctx context.Context, part int, s ledger.OrderedStore) error) error {
	return f.Split.RunParts(ctx, func(ctx context.Context, part int, s ledger.OrderedStore) error {
		if part == f.part {
			return errPartFailed
		}
		return run(ctx, part, s)
	})
}

// TestSplitPartFailsAtOnce: when a part of a split replay fails before it
// reads a delivery, the reader and the other parts stop and the replay
// returns the part's error; none of them waits on a part that is gone.
func TestSplitPartFailsAtOnce(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	for _, parts := range []int{2, 3} {
		for part := 0; part < parts; part++ {
			// Every event of the capture goes to the part that fails, so
			// the reader fills its feed while the others get nothing.
			name := filepath.Join(dir, fmt.Sprintf("capture-%d-%d.ndjson", parts, part))
			var b strings.Builder
			for i, n := 0, 0; n < 8*laneChunk; i++ {
				id := fmt.Sprintf("evt-%d", i)
				if int(uint64(fnv64("/orders/"+id))%uint64(parts)) != part { // a CloudEvent's id is its source's
					continue
				}
				n++
				fmt.Fprintf(&b, `{"specversion":"1.0","id":%q,"source":"/orders","type":"order.paid","data":{"orderId":"o-%d","amount":10}}`+"\n", id, i)
			}
			if err := os.WriteFile(name, []byte(b.String()), 0o644); err != nil {
				t.Fatal(err)
			}
			o := Options{Inputs: []string{name}, DB: ledger.Memory, Seed: 1, MaxBad: 1000, Parallel: parts}
			o.Handler.Strategy = handler.EventID
			o.Open = sqlite.OpenLedger
			o.OpenSplit = func(ctx context.Context, cfg handler.Config, n int) (ledger.Split, error) {
				s, err := sqlite.OpenSplitLedger(ctx, cfg, n)
				if err != nil {
					return nil, err
				}
				return failingPart{s, part}, nil
			}
			ctx, cancel := context.WithCancel(context.Background())
			done := make(chan error, 1)
			go func() {
				_, err := Run(ctx, o)
				done <- err
			}()
			select {
			case err := <-done:
				if !errors.Is(err, errPartFailed) {
					t.Errorf("%d parts, part %d failed: the replay returned %v, want the part's error", parts, part, err)
				}
			case <-time.After(20 * time.Second):
				cancel() // unblocks the reader, so the replay ends
				<-done
				t.Fatalf("%d parts, part %d failed before reading its feed: the replay still ran after 20s (the reader or the other parts waited on it)", parts, part)
			}
			cancel()
		}
	}
}
