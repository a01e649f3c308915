package runner_test

import (
	"context"
	"fmt"
	"runtime"
	"testing"

	"github.com/redeliver/redeliver/pkg/builtin"
	"github.com/redeliver/redeliver/pkg/consumer"
	"github.com/redeliver/redeliver/pkg/handler"
	"github.com/redeliver/redeliver/pkg/invariant"
	"github.com/redeliver/redeliver/pkg/scenario"
	"github.com/redeliver/redeliver/pkg/sqlite"
)

// benchFile runs one scenario file b.N times in memory and reports
// deliveries per second and the bytes allocated per delivery.
func benchFile(b *testing.B, src string, deliveries int) {
	s, err := scenario.Load("bench.yaml", []byte(src))
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		res, err := builtin.RunFile(ctx, s, memory)
		if err != nil {
			b.Fatal(err)
		}
		if !res.Passed() {
			b.Fatalf("the file failed: %+v", res.Checks)
		}
	}
	b.StopTimer()
	runtime.ReadMemStats(&after)
	n := float64(b.N * deliveries)
	b.ReportMetric(n/b.Elapsed().Seconds(), "deliveries/s")
	b.ReportMetric(float64(after.TotalAlloc-before.TotalAlloc)/n, "B/delivery")
}

// BenchmarkTimes delivers one event `times:` over and over.
func BenchmarkTimes(b *testing.B) {
	for _, n := range []int{1000, 20000} {
		b.Run(fmt.Sprint(n), func(b *testing.B) {
			benchFile(b, fmt.Sprintf(`version: 1
handler: {strategy: event-id, effect: shipments}
checks:
  - name: many
    steps:
      - deliver: {id: evt-1, data: {orderId: order-1}}
        times: %d
    expect:
      rows: {shipments: 1}
`, n), n)
		})
	}
}

// BenchmarkExploreAfterPrefix explores a concurrent step without
// interleave that comes after a check of `times:` deliveries: every
// schedule starts from the state that check left.
func BenchmarkExploreAfterPrefix(b *testing.B) {
	for _, n := range []int{1000, 5000} {
		b.Run(fmt.Sprint(n), func(b *testing.B) {
			benchFile(b, fmt.Sprintf(`version: 1
handler: {strategy: event-id, effect: shipments}
checks:
  - name: prefix
    steps:
      - deliver: {id: evt-1, data: {orderId: order-1}}
        times: %d
  - name: race
    steps:
      - deliver: {id: evt-2, data: {orderId: order-2}}
        concurrent: 2
    expect:
      rows: {shipments: 2}
`, n), n+2)
		})
	}
}

// stateReads counts how often the whole state is read.
type stateReads struct {
	*sqlite.DB
	reads int
}

func (c *stateReads) Markers(ctx context.Context) ([]handler.Marker, error) {
	c.reads++
	return c.DB.Markers(ctx)
}

// TestRedeliveriesDoNotReadTheWholeState: the fingerprint a redelivery
// takes of the store (to tell whether a conflict changed it) is read again
// only when a transaction committed since, not once per redelivery: a
// `times:` step of one event reads the state a few times, however many
// times it delivers.
func TestRedeliveriesDoNotReadTheWholeState(t *testing.T) {
	for _, times := range []int{10, 200} {
		s, err := scenario.Load("s.yaml", []byte(fmt.Sprintf(`version: 1
handler: {strategy: event-id, effect: shipments}
checks:
  - name: many
    steps:
      - deliver: {id: evt-1, data: {orderId: order-1}}
        times: %d
      - deliver: {id: evt-1, data: {orderId: order-2}}
        times: 3
        expect: {outcome: conflict}
`, times)))
		if err != nil {
			t.Fatal(err)
		}
		var st *stateReads
		res, err := builtin.RunFile(context.Background(), s, func(ctx context.Context, s *scenario.Scenario) (builtin.Store, error) {
			db, err := sqlite.Create(ctx, sqlite.Memory, s.Handler.Config)
			st = &stateReads{DB: db}
			return st, err
		})
		if err != nil {
			t.Fatal(err)
		}
		if !res.Passed() {
			t.Fatalf("times %d: the file failed: %s", times, messages(res.Checks[0]))
		}
		// One read for the first redelivery, one at the end for the invariants.
		if st.reads > 2 {
			t.Errorf("times %d: the state was read %d times, want at most 2", times, st.reads)
		}
	}
}

// TestTimesKeepsRunsOfRepeats: a `times:` step of one event keeps one
// record for its first delivery and one for the run of duplicates after
// it, however many times it delivers; the history expands to one record
// per delivery, numbered in order, as the reports list them.
func TestTimesKeepsRunsOfRepeats(t *testing.T) {
	res := runSrc(t, `version: 1
handler: {strategy: event-id, effect: shipments}
checks:
  - name: many
    steps:
      - deliver: {id: evt-1, data: {orderId: order-1}}
        times: 1000
      - deliver: {id: evt-1, data: {orderId: order-2}}
        times: 3
`)
	c := res.Checks[0]
	// A conflict carries its error: each is kept.
	if got := len(c.History); got != 5 {
		t.Errorf("the history keeps %d records, want 5 (processed, a run of duplicates, 3 conflicts)", got)
	}
	var seqs []int
	outcomes := map[consumer.Outcome]int{}
	for rec := range invariant.Expand(c.History) {
		seqs = append(seqs, rec.Seq)
		outcomes[rec.Result.Outcome]++
		if rec.Repeats != 0 {
			t.Fatalf("delivery %d expands with Repeats %d", rec.Seq, rec.Repeats)
		}
	}
	if len(seqs) != 1003 || seqs[0] != 1 || seqs[1002] != 1003 {
		t.Fatalf("the history expands to %d deliveries (%v … ), want 1003 numbered 1 to 1003", len(seqs), seqs[:min(3, len(seqs))])
	}
	for i, s := range seqs {
		if s != i+1 {
			t.Fatalf("delivery %d is numbered %d", i+1, s)
		}
	}
	if outcomes[consumer.Processed] != 1 || outcomes[consumer.Duplicate] != 999 || outcomes[consumer.Conflict] != 3 {
		t.Errorf("outcomes %v, want 1 processed, 999 duplicates, 3 conflicts", outcomes)
	}
}
