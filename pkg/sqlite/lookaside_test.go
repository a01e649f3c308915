//go:build !nolookaside

package sqlite

import (
	"context"
	"fmt"
	"testing"

	"modernc.org/sqlite"

	"github.com/redeliver/redeliver/pkg/consumer"
	"github.com/redeliver/redeliver/pkg/handler"
)

// TestLookasideHoldsTheReplay: with the replay store's statements
// prepared, its deliveries still find their small allocations in the
// connection's lookaside (see lookaside.go): none went to the allocator
// because the lookaside was full. SQLite's default (123 slots) misses
// thousands of times here.
func TestLookasideHoldsTheReplay(t *testing.T) {
	ctx := context.Background()
	for _, strategy := range []handler.Strategy{handler.EventID, handler.BusinessKey, handler.CheckThenAct} {
		t.Run(string(strategy), func(t *testing.T) {
			cfg := handler.Config{Strategy: strategy, Consumer: "c", Effect: "effects"}
			db := openReplayT(t, Memory, cfg)
			var hits, full int
			err := db.Run(ctx, 0, func(b *Batch) error {
				h := handler.New(cfg, b, nil, fixedClock)
				for i := 0; i < 2000; i++ {
					n := i
					if i%5 == 4 {
						n = i - 3 // a redelivery
					}
					d := consumer.Delivery{EventID: fmt.Sprintf("e%d", n), BusinessKey: fmt.Sprintf("k%d", n), Envelope: []byte(fmt.Sprintf(`{"data":{"n":%d}}`, n))}
					if r := h.Handle(ctx, d, nil); r.Outcome == consumer.Failed {
						return fmt.Errorf("delivery %d failed: %v", i, r.Err)
					}
				}
				st, ok := b.conn.(sqlite.DBStatus)
				if !ok {
					return fmt.Errorf("the driver's connection has no Status")
				}
				var err error
				if _, hits, err = st.Status(sqlite.DBStatusLookasideHit, false); err != nil {
					return err
				}
				_, full, err = st.Status(sqlite.DBStatusLookasideMissFull, false)
				return err
			})
			if err != nil {
				t.Fatal(err)
			}
			if hits == 0 || full != 0 {
				t.Errorf("lookaside: %d hits, %d misses because it was full; want hits and no such miss", hits, full)
			}
		})
	}
}
