package handler

import (
	"context"
	"errors"
	"reflect"
	"testing"
)

func TestCharge(t *testing.T) {
	ctx := context.Background()
	type call struct {
		key, amount, order string
		wantID             int64
		wantReplayed       bool
		wantConflict       bool
	}
	tests := []struct {
		name    string
		calls   []call
		charges int
	}{
		{"a known key returns the first charge", []call{{"k1", "10", "o1", 1, false, false}, {"k1", "10", "o1", 1, true, false}}, 1},
		{"a known key with another amount is a conflict", []call{{"k1", "10", "o1", 1, false, false}, {"k1", "11", "o1", 0, false, true}}, 1},
		{"a known key for another order is a conflict", []call{{"k1", "10", "o1", 1, false, false}, {"k1", "10", "o2", 0, false, true}}, 1},
		{"no key, no idempotency", []call{{"", "10", "o1", 1, false, false}, {"", "10", "o1", 2, false, false}}, 2},
		{"different keys charge separately", []call{{"k1", "10", "o1", 1, false, false}, {"k2", "10", "o1", 2, false, false}}, 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g, err := NewPaymentGateway()
			if err != nil {
				t.Fatal(err)
			}
			defer g.Close()
			for i, c := range tt.calls {
				id, replayed, err := g.Charge(ctx, c.key, c.amount, c.order)
				var kc *KeyConflictError
				if errors.As(err, &kc) != c.wantConflict || (!c.wantConflict && err != nil) {
					t.Fatalf("call %d: err %v, want conflict=%v", i+1, err, c.wantConflict)
				}
				if id != c.wantID || replayed != c.wantReplayed {
					t.Errorf("call %d: id %d replayed %v, want %d %v", i+1, id, replayed, c.wantID, c.wantReplayed)
				}
			}
			chs, _ := g.Charges(ctx)
			if len(chs) != tt.charges {
				t.Errorf("ledger has %d charges, want %d", len(chs), tt.charges)
			}
		})
	}
}

// TestSnapshotRestore: Restore puts back the ledger of the Snapshot, keys
// included, and later charges do not reach the copy.
func TestSnapshotRestore(t *testing.T) {
	ctx := context.Background()
	g, _ := NewPaymentGateway()
	g.Charge(ctx, "k1", "10", "o1")
	snap := g.Snapshot()
	want, _ := g.Charges(ctx)
	for round := 1; round <= 2; round++ {
		g.Charge(ctx, "k2", "20", "o2")
		g.Charge(ctx, "", "30", "o3")
		g.Restore(snap)
		if got, _ := g.Charges(ctx); !reflect.DeepEqual(got, want) {
			t.Fatalf("round %d: restored ledger %v, want %v", round, got, want)
		}
		if id, replayed, err := g.Charge(ctx, "k2", "21", "o2"); err != nil || replayed || id != 2 {
			t.Errorf("round %d: a new key after the restore: charge %d replayed=%v err=%v, want a new charge 2", round, id, replayed, err)
		}
		if _, replayed, _ := g.Charge(ctx, "k1", "10", "o1"); !replayed {
			t.Errorf("round %d: the key charged before the snapshot is not known after the restore", round)
		}
	}
}
