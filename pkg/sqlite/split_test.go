package sqlite

import (
	"context"
	"strings"
	"testing"

	"github.com/redeliver/redeliver/pkg/handler"
	"github.com/redeliver/redeliver/pkg/invariant"
)

// TestSplitInvariants: the invariants of a replay in parts are checked over
// all of them, and the effect ids they name are counted back to the ones
// one store numbering the effects in order would give. The rows are
// written by hand, each part's effects numbered by their place in the
// whole replay, so that every breach the split replay merges is there.
func TestSplitInvariants(t *testing.T) {
	ctx := context.Background()
	cfg := handler.Config{Strategy: handler.CheckThenAct, Consumer: "c", Effect: "effects"}
	s, err := OpenSplit(ctx, cfg, 2)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	// Places 10 to 80 in the replay; one store would number them 1 to 8.
	effects := []struct {
		part  int
		at    int64
		event string
		key   string
	}{
		{0, 10, "a", "k1"}, {1, 20, "b", "k1"}, {0, 30, "a", "k2"}, {1, 40, "d", "k3"},
		{0, 50, "e", "k4"}, {1, 60, "b", "k5"}, {0, 70, "a", ""}, {1, 80, "f", "k3"},
	}
	for _, e := range effects {
		if _, err := s.parts[e.part].conn.ExecContext(ctx, `INSERT INTO effects(id, event_id, consumer, business_key, payload, created_at) VALUES (?, ?, 'c', NULLIF(?, ''), '{}', 'now')`, e.at, e.event, e.key); err != nil {
			t.Fatal(err)
		}
	}
	// Markers: "a", "b", "d" and "e" have theirs; "f" has none (missing
	// marker, id 8); "g" has a marker and no effect (lost effect).
	for part, events := range [][]string{{"a", "e"}, {"b", "d", "g"}} {
		for _, ev := range events {
			if _, err := s.parts[part].conn.ExecContext(ctx, `INSERT INTO processed(event_id, consumer, identity, processed_at) VALUES (?, 'c', 'x', 'now')`, ev); err != nil {
				t.Fatal(err)
			}
		}
	}
	if n, err := s.CountEffects(ctx); err != nil || n != 8 {
		t.Fatalf("%d effects (%v), want 8", n, err)
	}
	keys, most, several, err := s.KeyStats(ctx)
	if err != nil || keys != 5 || most != 2 || several != 2 {
		t.Fatalf("key stats %d, %d, %d (%v), want 5 keys, at most 2 effects, 2 keys with several", keys, most, several, err)
	}
	broken, err := s.KeyedInvariants(ctx, handler.CheckThenAct, 5)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, b := range broken {
		for _, ex := range b.Examples {
			got = append(got, string(b.Invariant)+": "+ex.Detail)
		}
	}
	want := []string{
		"duplicate-effect: event a has 3 rows in effects (ids 1, 3, 7) for consumer c",
		"duplicate-effect: event b has 2 rows in effects (ids 2, 6) for consumer c",
		"duplicate-key: business key k1 has 2 rows in effects (ids 1, 2, events a, b)",
		"duplicate-key: business key k3 has 2 rows in effects (ids 4, 8, events d, f)",
		"lost-effect: " + invariant.LostEffect.Say(invariant.Facts{Event: "g", Consumer: "c", Table: "effects"}),
		"missing-marker: " + invariant.MissingMarker.Say(invariant.Facts{Event: "f", Consumer: "c", Table: "effects", IDs: []string{"8"}}),
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("broken:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}
