package runner_test

import (
	"context"
	"strings"
	"testing"

	"github.com/redeliver/redeliver/pkg/builtin"
	"github.com/redeliver/redeliver/pkg/scenario"
)

// BenchmarkForcedRace times one forced race per iteration: a fresh
// database (a file, or a schema), eight workers on their own connections
// held at after-check until all have looked, then released, and the
// invariants checked. Run 1,000 of them with -benchtime 1000x.
func BenchmarkForcedRace(b *testing.B) {
	for _, st := range stores(b) {
		for _, strategy := range []string{"event-id", "check-then-act"} {
			b.Run(st.name+"/"+strategy, func(b *testing.B) {
				s, err := scenario.Load("race.yaml", []byte(strings.ReplaceAll(strings.ReplaceAll(race, "STRATEGY", strategy), "  key: \"{data.orderId}\"\n", "")))
				if err != nil {
					b.Fatal(err)
				}
				open := st.open(b)
				ctx := context.Background()
				b.ResetTimer()
				for i := 0; i < b.N; i++ {
					res, err := builtin.RunFile(ctx, s, open)
					if err != nil {
						b.Fatal(err)
					}
					if want := strategy == "event-id"; res.Checks[0].Passed != want || (len(res.Checks[0].Violations) == 0) != want {
						b.Fatalf("race %d: passed=%v with %d violations", i, res.Checks[0].Passed, len(res.Checks[0].Violations))
					}
				}
			})
		}
	}
}
