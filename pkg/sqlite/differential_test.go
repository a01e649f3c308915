package sqlite_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/redeliver/redeliver/pkg/consumer"
	"github.com/redeliver/redeliver/pkg/handler"
	"github.com/redeliver/redeliver/pkg/invariant"
	"github.com/redeliver/redeliver/pkg/sqlite"
	"github.com/redeliver/redeliver/pkg/template"
)

// TestCheckersAgree is the differential test of the two checkers: random
// histories (deliveries of a few events sharing business keys, payloads
// that conflict, faults at every point, every strategy without a gateway)
// are run through the handler twice, once on a plain store the in-memory
// checker reads after the fact, once on the replay's group-commit store the
// SQL checker reads. The handler must answer the same on both, and the two
// checkers must find the same breaches:
//
//   - duplicate-effect and duplicate-key, read from the rows by both, with
//     the same count, the same events or keys and the same wording;
//   - markers and effects out of pairs: the SQL checker's lost-effect and
//     missing-marker name the same events as the in-memory checker's
//     lost-effect, missing-marker and half-written, which know from the
//     history whether the event was ever handled.
func TestCheckersAgree(t *testing.T) {
	strategies := []handler.Strategy{handler.EventID, handler.ConsumerScoped, handler.BusinessKey, handler.None, handler.CheckThenAct, handler.MarkerAfterEffect}
	faults := []consumer.FaultPoint{"", "", "", consumer.BeforeBegin, consumer.AfterCheck, consumer.AfterMarker, consumer.AfterEffect, consumer.AfterCommit}
	runs := 300
	if testing.Short() {
		runs = 60
	}
	broken := map[invariant.Name]int{}
	for seed := 1; seed <= runs; seed++ {
		rng := rand.New(rand.NewPCG(uint64(seed), 7))
		strategy := strategies[rng.IntN(len(strategies))]
		var deliveries []delivery
		for i, n := 0, 4+rng.IntN(20); i < n; i++ {
			ev := rng.IntN(6)
			deliveries = append(deliveries, delivery{
				event: fmt.Sprintf("e%d", ev), consumer: []string{"", "billing"}[rng.IntN(2)],
				order: fmt.Sprintf("o%d", (ev+rng.IntN(2))%4), amount: 10 + rng.IntN(2),
				fault: faults[rng.IntN(len(faults))],
			})
		}
		name := fmt.Sprintf("seed %d %s", seed, strategy)
		t.Run(name, func(t *testing.T) {
			for _, n := range compare(t, strategy, deliveries) {
				broken[n]++
			}
		})
	}
	// The generator must reach the breaches it compares, or the test could
	// not fail. (duplicate-key is checked only with the strategies that
	// guard business keys, which no generated history breaks.)
	for _, n := range []invariant.Name{invariant.DuplicateEffect.Name, invariant.MissingMarker.Name} {
		if broken[n] == 0 {
			t.Errorf("no generated history broke %s", n)
		}
	}
}

type delivery struct {
	event, consumer, order string
	amount                 int
	fault                  consumer.FaultPoint
}

func (d delivery) of(seq int) consumer.Delivery {
	return consumer.Delivery{EventID: d.event, Consumer: d.consumer, Attempt: seq,
		Envelope: []byte(fmt.Sprintf(`{"id":%q,"data":{"orderId":%q,"amount":%d}}`, d.event, d.order, d.amount)),
		At:       consumer.Location{File: "generated", Line: seq}}
}

// compare runs the deliveries on both stores, compares the two checkers
// and returns the invariants the SQL checker found broken.
func compare(t *testing.T, strategy handler.Strategy, ds []delivery) []invariant.Name {
	t.Helper()
	ctx := context.Background()
	cfg := handler.Config{Strategy: strategy, Consumer: "default", Effect: "effects", Key: template.MustParse("{data.orderId}")}
	clock := func() time.Time { return time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC) }

	plain, err := sqlite.Create(ctx, sqlite.Memory, cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer plain.Close()
	h := handler.New(cfg, plain, nil, clock)
	var history []invariant.Record
	var results []consumer.Result
	for i, d := range ds {
		res := h.Handle(ctx, d.of(i+1), handler.FailAt(d.fault))
		results = append(results, res)
		history = append(history, invariant.Record{Seq: i + 1, EventID: d.event, Consumer: h.Scope(d.of(i + 1)), Key: res.Key, Result: res, At: clock()})
	}
	markers, err := plain.Markers(ctx)
	if err != nil {
		t.Fatal(err)
	}
	effects, err := plain.Effects(ctx)
	if err != nil {
		t.Fatal(err)
	}
	inMemory := invariant.Check(strategy, cfg.Effect, history, invariant.State{Markers: markers, Effects: effects})

	rdb, err := sqlite.OpenReplay(ctx, sqlite.Memory, cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer rdb.Close()
	err = rdb.Run(ctx, 3, func(b *sqlite.Batch) error {
		rh := handler.New(cfg, b, nil, clock)
		for i, d := range ds {
			res := rh.Handle(ctx, d.of(i+1), handler.FailAt(d.fault))
			if res.Outcome != results[i].Outcome || res.EffectID != results[i].EffectID {
				t.Errorf("delivery %d (%+v): replay store %s effect %d, plain store %s effect %d", i+1, d, res.Outcome, res.EffectID, results[i].Outcome, results[i].EffectID)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	inSQL, err := rdb.Invariants(ctx, strategy, 1000)
	if err != nil {
		t.Fatal(err)
	}

	var found []invariant.Name
	sqlBy := map[invariant.Name]sqlite.Broken{}
	for _, b := range inSQL {
		sqlBy[b.Invariant] = b
		found = append(found, b.Invariant)
		if int(b.Count) != len(b.Examples) {
			t.Fatalf("%s: %d breaches, %d examples under a limit of 1000", b.Invariant, b.Count, len(b.Examples))
		}
	}
	memBy := map[invariant.Name][]invariant.Violation{}
	for _, v := range inMemory {
		memBy[v.Invariant] = append(memBy[v.Invariant], v)
	}
	for _, inv := range []*invariant.Invariant{invariant.DuplicateEffect, invariant.DuplicateKey} {
		if !inv.CheckedBy(invariant.Replay, strategy) {
			continue
		}
		if got, want := words(sqlBy[inv.Name].Examples), words(memBy[inv.Name]); got != want {
			t.Errorf("%s\n  SQL checker: %s\n  in memory:   %s", inv.Name, got, want)
		}
	}
	if invariant.LostEffect.CheckedBy(invariant.Replay, strategy) {
		got := events(sqlBy[invariant.LostEffect.Name].Examples, sqlBy[invariant.MissingMarker.Name].Examples)
		want := events(memBy[invariant.LostEffect.Name], memBy[invariant.MissingMarker.Name], memBy[invariant.HalfWritten.Name])
		if got != want {
			t.Errorf("markers and effects out of pairs\n  SQL checker (lost-effect, missing-marker): %s\n  in memory (lost-effect, missing-marker, half-written): %s\n  in memory: %v", got, want, inMemory)
		}
	}
	return found
}

// words lists the breaches as "event consumer: detail", sorted.
func words(vs []invariant.Violation) string {
	var s []string
	for _, v := range vs {
		s = append(s, v.EventID+" "+v.Consumer+": "+v.Detail)
	}
	sort.Strings(s)
	return strings.Join(s, " | ")
}

// events lists the distinct events and consumers named, sorted.
func events(lists ...[]invariant.Violation) string {
	seen := map[string]bool{}
	var s []string
	for _, vs := range lists {
		for _, v := range vs {
			k := v.EventID + "/" + v.Consumer
			if !seen[k] {
				seen[k] = true
				s = append(s, k)
			}
		}
	}
	sort.Strings(s)
	return strings.Join(s, " ")
}
