package runner_test

import (
	"context"
	"fmt"
	"runtime"
	"testing"

	"github.com/redeliver/redeliver/pkg/runner"
	"github.com/redeliver/redeliver/pkg/scenario"
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
		res, err := runner.RunFile(ctx, s, memory)
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
