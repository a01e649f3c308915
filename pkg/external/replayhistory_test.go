package external

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/redeliver/redeliver/pkg/replay"
	"github.com/redeliver/redeliver/pkg/scenario"
	"github.com/redeliver/redeliver/pkg/template"
)

// TestReplayKeepsTheBrokenKeysDeliveries: a replay of a thousand deliveries
// into a target keeps the deliveries of the keys an invariant broke on,
// each with when it was sent and answered, for the report to draw; and
// only those.
func TestReplayKeepsTheBrokenKeysDeliveries(t *testing.T) {
	dir := t.TempDir()
	in := writeCapture(t, dir, 1000)
	db := filepath.Join(dir, "fx.db")
	if err := createTable(db); err != nil {
		t.Fatal(err)
	}
	res, err := runTarget(context.Background(), &ReplayTarget{File: "t.yaml", Target: naiveTarget(t, db),
		Effects: &scenario.Effects{DB: db, Table: "payments", Key: "order_id", Event: "event_id", KeyOf: template.MustParse("{data.orderId}")}},
		replay.Options{Inputs: []string{in}, Seed: 3, Redeliver: 0.02, Parallel: 2})
	if err != nil {
		t.Fatal(err)
	}
	c := res
	if len(c.Breaches) == 0 {
		t.Fatal("the naive consumer broke nothing")
	}
	broken := map[string]bool{}
	for _, v := range c.Breaches {
		broken[v.By.Key] = true
	}
	perKey := map[string]int{}
	for _, r := range c.History {
		if !broken[r.Key] {
			t.Errorf("delivery #%d of key %s is kept, and no invariant broke on that key", r.Seq, r.Key)
		}
		if r.Span.Sent.IsZero() || r.Span.Answered.Before(r.Span.Sent) {
			t.Errorf("delivery #%d was kept without its times: %+v", r.Seq, r.Span)
		}
		perKey[r.Key]++
	}
	for key := range broken {
		if perKey[key] < 2 {
			t.Errorf("key %s broke duplicate-effect, and %d of its deliveries are kept, want both", key, perKey[key])
		}
	}
}
