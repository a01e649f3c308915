package handler_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/redeliver/redeliver/pkg/consumer"
	"github.com/redeliver/redeliver/pkg/handler"
	"github.com/redeliver/redeliver/pkg/sqlite"
	"github.com/redeliver/redeliver/pkg/template"
)

// step is one delivery of a table test and what it must return.
type step struct {
	id, consumer, data string
	fail               consumer.FaultPoint
	advance            time.Duration
	want               consumer.Outcome
	sameAs             int // 1-based index of an earlier step whose effect id must come back
	dupOf              string
}

type env struct {
	h   *handler.Handler
	db  *sqlite.DB
	gw  *handler.PaymentGateway
	now time.Time
}

func newEnv(t *testing.T, cfg handler.Config) *env {
	t.Helper()
	ctx := context.Background()
	if cfg.Consumer == "" {
		cfg.Consumer = "c"
	}
	if cfg.Effect == "" {
		cfg.Effect = "effects"
	}
	db, err := sqlite.Create(ctx, sqlite.Memory, cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	e := &env{db: db, now: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)}
	var g handler.Gateway
	if cfg.Strategy.CallsOut() {
		if e.gw, err = handler.NewPaymentGateway(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { e.gw.Close() })
		g = e.gw
	}
	e.h = handler.New(cfg, db, g, func() time.Time { return e.now })
	return e
}

func delivery(id, name, data string, attempt int) consumer.Delivery {
	if data == "" {
		data = `{"orderId":"o-` + id + `"}`
	}
	return consumer.Delivery{EventID: id, Consumer: name, Attempt: attempt,
		Envelope: []byte(fmt.Sprintf(`{"id":%q,"data":%s}`, id, data))}
}

func TestStrategies(t *testing.T) {
	key := template.MustParse("{data.orderId}")
	tests := []struct {
		name    string
		cfg     handler.Config
		steps   []step
		effects int64
		markers int64
		charges int
	}{
		{
			name:    "event-id: duplicate returns the original, conflict is rejected",
			cfg:     handler.Config{Strategy: handler.EventID, Identity: []string{"data.orderId"}},
			steps:   []step{{id: "e1", want: consumer.Processed}, {id: "e1", want: consumer.Duplicate, sameAs: 1}, {id: "e1", data: `{"orderId":"other"}`, want: consumer.Conflict}},
			effects: 1, markers: 1,
		},
		{
			name:    "event-id: whole-payload identity ignores key order and number spelling",
			cfg:     handler.Config{Strategy: handler.EventID},
			steps:   []step{{id: "e1", data: `{"a":1,"b":[2.50]}`, want: consumer.Processed}, {id: "e1", data: `{"b":[25e-1],"a":1.0}`, want: consumer.Duplicate, sameAs: 1}, {id: "e1", data: `{"a":2,"b":[2.5]}`, want: consumer.Conflict}},
			effects: 1, markers: 1,
		},
		{
			name: "event-id: every fault point before commit rolls back, the retry processes",
			cfg:  handler.Config{Strategy: handler.EventID},
			steps: []step{
				{id: "e1", fail: consumer.BeforeBegin, want: consumer.Failed}, {id: "e1", fail: consumer.AfterCheck, want: consumer.Failed},
				{id: "e1", fail: consumer.AfterMarker, want: consumer.Failed}, {id: "e1", fail: consumer.AfterEffect, want: consumer.Failed},
				{id: "e1", fail: consumer.AfterExternal, want: consumer.Processed}, // never reached: event-id does not call out
				{id: "e1", fail: consumer.AfterMarker, want: consumer.Duplicate, sameAs: 5},
			},
			effects: 1, markers: 1,
		},
		{
			name:    "event-id: a crash after commit is durable; the redelivery is a duplicate",
			cfg:     handler.Config{Strategy: handler.EventID},
			steps:   []step{{id: "e1", fail: consumer.AfterCommit, want: consumer.Crashed}, {id: "e1", want: consumer.Duplicate, sameAs: 1}},
			effects: 1, markers: 1,
		},
		{
			name:    "event-id: past the retention window the effect's unique key still catches the redelivery",
			cfg:     handler.Config{Strategy: handler.EventID, Retention: 24 * time.Hour},
			steps:   []step{{id: "e1", want: consumer.Processed}, {id: "e1", advance: 23 * time.Hour, want: consumer.Duplicate, sameAs: 1}, {id: "e1", advance: 25 * time.Hour, want: consumer.Duplicate, sameAs: 1}},
			effects: 1, markers: 1,
		},
		{
			name:    "marker-after-effect: past the retention window the marker was the only guard",
			cfg:     handler.Config{Strategy: handler.MarkerAfterEffect, Retention: 24 * time.Hour},
			steps:   []step{{id: "e1", want: consumer.Processed}, {id: "e1", advance: 23 * time.Hour, want: consumer.Duplicate, sameAs: 1}, {id: "e1", advance: 25 * time.Hour, want: consumer.Processed}},
			effects: 2, markers: 1,
		},
		{
			name:    "consumer-scoped: each consumer processes an event once",
			cfg:     handler.Config{Strategy: handler.ConsumerScoped},
			steps:   []step{{id: "e1", consumer: "shipping", want: consumer.Processed}, {id: "e1", consumer: "billing", want: consumer.Processed}, {id: "e1", consumer: "shipping", want: consumer.Duplicate, sameAs: 1}},
			effects: 2, markers: 2,
		},
		{
			name:    "business-key: a second event id for one order is a duplicate of the first",
			cfg:     handler.Config{Strategy: handler.BusinessKey, Key: key},
			steps:   []step{{id: "e1", data: `{"orderId":"o1"}`, want: consumer.Processed}, {id: "e2", data: `{"orderId":"o1"}`, want: consumer.Duplicate, sameAs: 1, dupOf: "e1"}, {id: "e2", data: `{"orderId":"o1"}`, want: consumer.Duplicate, sameAs: 1, dupOf: "e1"}},
			effects: 1, markers: 2,
		},
		{
			name: "external-key: a failure after the charge is retried with the same key, one charge",
			cfg:  handler.Config{Strategy: handler.ExternalKey, Key: key, ExternalKey: template.MustParse("pay-{data.orderId}"), ExternalAmount: template.MustParse("10")},
			steps: []step{
				{id: "e1", fail: consumer.AfterExternal, want: consumer.Failed}, {id: "e1", want: consumer.Processed}, {id: "e1", want: consumer.Duplicate, sameAs: 2},
			},
			effects: 1, markers: 1, charges: 1,
		},
		{
			name: "external-key with an unstable key charges twice",
			cfg:  handler.Config{Strategy: handler.ExternalKey, Key: key, ExternalKey: template.MustParse("pay-{data.orderId}-{attempt}"), ExternalAmount: template.MustParse("10")},
			steps: []step{
				{id: "e1", fail: consumer.AfterExternal, want: consumer.Failed}, {id: "e1", want: consumer.Processed},
			},
			effects: 1, markers: 1, charges: 2,
		},
		{
			name:    "none: every delivery makes an effect",
			cfg:     handler.Config{Strategy: handler.None},
			steps:   []step{{id: "e1", want: consumer.Processed}, {id: "e1", want: consumer.Processed}},
			effects: 2, markers: 0,
		},
		{
			name:    "marker-after-effect: a crash between the two commits duplicates",
			cfg:     handler.Config{Strategy: handler.MarkerAfterEffect},
			steps:   []step{{id: "e1", fail: consumer.AfterMarker, want: consumer.Failed}, {id: "e1", want: consumer.Processed}, {id: "e1", want: consumer.Duplicate}},
			effects: 2, markers: 1,
		},
		{
			name:    "check-then-act: safe while deliveries are sequential",
			cfg:     handler.Config{Strategy: handler.CheckThenAct},
			steps:   []step{{id: "e1", want: consumer.Processed}, {id: "e1", want: consumer.Duplicate, sameAs: 1}},
			effects: 1, markers: 1,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx := context.Background()
			e := newEnv(t, tt.cfg)
			var results []consumer.Result
			for i, s := range tt.steps {
				e.now = e.now.Add(s.advance)
				res := e.h.Handle(ctx, delivery(s.id, s.consumer, s.data, i+1), handler.FailAt(s.fail))
				results = append(results, res)
				if res.Outcome != s.want {
					t.Fatalf("step %d: outcome %s (err %v), want %s", i+1, res.Outcome, res.Err, s.want)
				}
				if s.sameAs > 0 && res.EffectID != results[s.sameAs-1].EffectID {
					t.Errorf("step %d: effect %d, want %d (step %d's)", i+1, res.EffectID, results[s.sameAs-1].EffectID, s.sameAs)
				}
				if res.DuplicateOf != s.dupOf {
					t.Errorf("step %d: duplicate of %q, want %q", i+1, res.DuplicateOf, s.dupOf)
				}
				var injected *handler.InjectedError
				if s.want == consumer.Failed && !errors.As(res.Err, &injected) {
					t.Errorf("step %d: error %v, want an injected failure", i+1, res.Err)
				}
			}
			if n, _ := e.db.Count(ctx, "effects"); n != tt.effects {
				t.Errorf("effects = %d, want %d", n, tt.effects)
			}
			if n, _ := e.db.Count(ctx, "processed"); n != tt.markers {
				t.Errorf("markers = %d, want %d", n, tt.markers)
			}
			if e.gw != nil {
				chs, _ := e.gw.Charges(ctx)
				if len(chs) != tt.charges {
					t.Errorf("charges = %d, want %d", len(chs), tt.charges)
				}
			}
		})
	}
}

func TestEmptyBusinessKeyFails(t *testing.T) {
	e := newEnv(t, handler.Config{Strategy: handler.BusinessKey, Key: template.MustParse("{data.missing}")})
	res := e.h.Handle(context.Background(), delivery("e1", "", "", 1), nil)
	var ke *handler.KeyError
	if res.Outcome != consumer.Failed || !errors.As(res.Err, &ke) {
		t.Fatalf("got %s (%v), want failed with a KeyError", res.Outcome, res.Err)
	}
}

// TestCheckThenActRace forces the race the strategy is unsafe against:
// both workers pass the check before either acts, and both write an effect.
func TestCheckThenActRace(t *testing.T) {
	ctx := context.Background()
	e := newEnv(t, handler.Config{Strategy: handler.CheckThenAct})
	var arrived sync.WaitGroup
	arrived.Add(2)
	barrier := func(_ context.Context, p consumer.FaultPoint) error {
		if p == consumer.AfterCheck {
			arrived.Done()
			arrived.Wait()
		}
		return nil
	}
	var wg sync.WaitGroup
	results := make([]consumer.Result, 2)
	for i := range results {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			results[i] = e.h.Handle(ctx, delivery("e1", "", "", i+1), barrier)
		}(i)
	}
	wg.Wait()
	for i, r := range results {
		if r.Outcome != consumer.Processed {
			t.Errorf("worker %d: %s (%v), want processed", i, r.Outcome, r.Err)
		}
	}
	if n, _ := e.db.Count(ctx, "effects"); n != 2 {
		t.Errorf("effects = %d, want 2: the forced race must double the effect", n)
	}
}

// TestReachesIsWhatTheHandlerDoes: for every strategy and fault point, a
// fresh delivery fails there exactly when Reaches says the strategy reaches
// the point (what validation refuses is what could never fire).
func TestReachesIsWhatTheHandlerDoes(t *testing.T) {
	for _, s := range handler.Strategies {
		for _, p := range consumer.FaultPoints {
			t.Run(string(s)+"/"+string(p), func(t *testing.T) {
				cfg := handler.Config{Strategy: s}
				if s.UsesKey() {
					cfg.Key = template.MustParse("{data.orderId}")
				}
				if s.CallsOut() {
					cfg.ExternalKey, cfg.ExternalAmount = template.MustParse("pay-{data.orderId}"), template.MustParse("10")
				}
				e := newEnv(t, cfg)
				res := e.h.Handle(context.Background(), delivery("e1", "c", "", 1), handler.FailAt(p))
				var injected *handler.InjectedError
				fired := errors.As(res.Err, &injected)
				if fired != s.Reaches(p) {
					t.Errorf("fault fired %v (outcome %s, err %v), but Reaches says %v", fired, res.Outcome, res.Err, s.Reaches(p))
				}
			})
		}
	}
}
