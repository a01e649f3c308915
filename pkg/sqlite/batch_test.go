package sqlite

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"

	"github.com/redeliver/redeliver/pkg/handler"
)

// TestBatchKeepsDeliveriesAtomic: inside one group-commit batch, a delivery
// that fails part-way rolls back alone; the others of the batch commit.
func TestBatchKeepsDeliveriesAtomic(t *testing.T) {
	tests := []struct {
		name     string
		path     string
		batch    int
		failAt   handler.FaultPoint
		wantRows int64
	}{
		{"memory, fail after marker", Memory, 4, handler.AfterMarker, 9},
		{"memory, fail after effect", Memory, 4, handler.AfterEffect, 9},
		{"file, fail after effect", "file", 3, handler.AfterEffect, 9},
		{"one delivery a batch", Memory, 1, handler.AfterEffect, 9},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx := context.Background()
			path := tt.path
			if path == "file" {
				path = filepath.Join(t.TempDir(), "replay.db")
			}
			cfg := handler.Config{Strategy: handler.EventID, Consumer: "c", Effect: "effects"}
			db, err := OpenReplay(ctx, path, cfg)
			if err != nil {
				t.Fatal(err)
			}
			defer db.Close()
			var outcomes []handler.Outcome
			err = db.Run(ctx, tt.batch, func(b *Batch) error {
				h := handler.New(cfg, b, nil, nil)
				for i := 1; i <= 10; i++ {
					d := handler.Delivery{EventID: fmt.Sprintf("e%d", i), Envelope: []byte(fmt.Sprintf(`{"data":{"n":%d}}`, i))}
					var inject handler.Injector
					if i == 5 {
						inject = handler.FailAt(tt.failAt)
					}
					outcomes = append(outcomes, h.Handle(ctx, d, inject).Outcome)
				}
				// A duplicate in the same batch finds what the batch wrote.
				outcomes = append(outcomes, h.Handle(ctx, handler.Delivery{EventID: "e1", Envelope: []byte(`{"data":{"n":1}}`)}, nil).Outcome)
				return nil
			})
			if err != nil {
				t.Fatal(err)
			}
			if outcomes[4] != handler.Failed || outcomes[10] != handler.Duplicate {
				t.Errorf("outcomes %v: want delivery 5 failed and the last a duplicate", outcomes)
			}
			n, err := db.CountEffects(ctx)
			if err != nil || n != tt.wantRows {
				t.Errorf("%d effects (%v), want %d", n, err, tt.wantRows)
			}
			broken, err := db.Invariants(ctx, cfg.Strategy, 5)
			if err != nil || len(broken) != 0 {
				t.Errorf("invariants broken: %+v (%v)", broken, err)
			}
		})
	}
}

// TestInvariantsCatch: the aggregate checks name what an unsafe consumer broke.
func TestInvariantsCatch(t *testing.T) {
	ctx := context.Background()
	cfg := handler.Config{Strategy: handler.None, Consumer: "c", Effect: "effects"}
	db, err := OpenReplay(ctx, Memory, cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	err = db.Run(ctx, 100, func(b *Batch) error {
		h := handler.New(cfg, b, nil, nil)
		for _, id := range []string{"a", "b", "a", "a"} {
			h.Handle(ctx, handler.Delivery{EventID: id, Envelope: []byte(`{"data":{}}`)}, nil)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	broken, err := db.Invariants(ctx, cfg.Strategy, 5)
	if err != nil {
		t.Fatal(err)
	}
	if len(broken) != 1 || broken[0].Invariant != "duplicate-effect" || broken[0].Count != 1 ||
		broken[0].Examples[0].Detail != "event a has 3 rows in effects (ids 1, 3, 4) for consumer c" {
		t.Errorf("broken %+v, want duplicate-effect once for event a with ids 1, 3, 4", broken)
	}
}

// TestUnmatchedRows: a marker without its effect and an effect without its
// marker are both named, wherever they fall in the index order.
func TestUnmatchedRows(t *testing.T) {
	tests := []struct {
		name     string
		strategy handler.Strategy
		markers  []string
		effects  []string
		lost     []string
		missing  []string
	}{
		{"all matched", handler.EventID, []string{"a", "b", "c"}, []string{"a", "b", "c"}, nil, nil},
		{"marker alone at the start", handler.EventID, []string{"a", "b", "c"}, []string{"b", "c"}, []string{"a"}, nil},
		{"effect alone at the end", handler.EventID, []string{"a", "b"}, []string{"a", "b", "z"}, nil, []string{"z"}},
		{"both, interleaved", handler.EventID, []string{"a", "c", "e"}, []string{"b", "c", "d"}, []string{"a", "e"}, []string{"b", "d"}},
		{"nothing stored", handler.EventID, nil, nil, nil, nil},
		{"repeated markers (check-then-act)", handler.CheckThenAct, []string{"a", "a", "b"}, []string{"a", "c"}, []string{"b"}, []string{"c"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx := context.Background()
			cfg := handler.Config{Strategy: tt.strategy, Consumer: "c", Effect: "effects"}
			db, err := OpenReplay(ctx, Memory, cfg)
			if err != nil {
				t.Fatal(err)
			}
			defer db.Close()
			for _, m := range tt.markers {
				if _, err := db.conn.ExecContext(ctx, `INSERT INTO processed(event_id, consumer, identity, processed_at) VALUES (?, 'c', 'null', 'now')`, m); err != nil {
					t.Fatal(err)
				}
			}
			for _, e := range tt.effects {
				if _, err := db.conn.ExecContext(ctx, `INSERT INTO effects(event_id, consumer, payload, created_at) VALUES (?, 'c', 'null', 'now')`, e); err != nil {
					t.Fatal(err)
				}
			}
			broken, err := db.Invariants(ctx, cfg.Strategy, 10)
			if err != nil {
				t.Fatal(err)
			}
			got := map[string][]string{}
			for _, b := range broken {
				for _, x := range b.Examples {
					got[string(b.Invariant)] = append(got[string(b.Invariant)], x.EventID)
				}
				if int(b.Count) != len(b.Examples) {
					t.Errorf("%s counted %d, with %d examples", b.Invariant, b.Count, len(b.Examples))
				}
			}
			if fmt.Sprint(got["lost-effect"]) != fmt.Sprint(tt.lost) || fmt.Sprint(got["missing-marker"]) != fmt.Sprint(tt.missing) {
				t.Errorf("lost %v, missing %v; want lost %v, missing %v", got["lost-effect"], got["missing-marker"], tt.lost, tt.missing)
			}
		})
	}
}
