package handler_test

import (
	"context"
	"os"
	"testing"

	"github.com/redeliver/redeliver/pkg/consumer"
	"github.com/redeliver/redeliver/pkg/handler"
	"github.com/redeliver/redeliver/pkg/postgres"
	"github.com/redeliver/redeliver/pkg/sqlite"
	"github.com/redeliver/redeliver/pkg/template"
)

// staleStore makes the next lookups miss, as they do for a worker that
// looked before a racing worker committed: the insert that follows then
// meets the real unique constraint of the store.
type staleStore struct {
	handler.Store
	stale bool
}

func (s *staleStore) Begin(ctx context.Context) (handler.Tx, error) {
	tx, err := s.Store.Begin(ctx)
	if err != nil {
		return nil, err
	}
	stale := s.stale
	s.stale = false // only the first transaction's lookups are stale
	return &staleTx{Tx: tx, stale: stale}, nil
}

type staleTx struct {
	handler.Tx
	stale bool
}

func (t *staleTx) Marker(ctx context.Context, eventID, consumer string) (handler.Marker, bool, error) {
	if t.stale {
		return handler.Marker{}, false, nil
	}
	return t.Tx.Marker(ctx, eventID, consumer)
}

func (t *staleTx) EffectByKey(ctx context.Context, key string) (int64, string, bool, error) {
	if t.stale {
		return 0, "", false, nil
	}
	return t.Tx.EffectByKey(ctx, key)
}

type store interface {
	handler.Store
	Close() error
}

// TestSafetyNet: a delivery whose lookup missed what a racing worker had
// committed is refused by the unique constraint, and the handler answers
// with what the winner wrote: a duplicate with the original effect id, or a
// conflict if the identities differ. On SQLite and (with
// REDELIVER_TEST_POSTGRES) on PostgreSQL.
func TestSafetyNet(t *testing.T) {
	type opener func(t *testing.T, cfg handler.Config) store
	openers := map[string]opener{
		"sqlite": func(t *testing.T, cfg handler.Config) store {
			d, err := sqlite.Create(context.Background(), sqlite.Memory, cfg)
			if err != nil {
				t.Fatal(err)
			}
			return d
		},
	}
	if dsn := os.Getenv("REDELIVER_TEST_POSTGRES"); dsn != "" {
		srv, err := postgres.Connect(context.Background(), dsn, false)
		if err != nil {
			t.Fatal(err)
		}
		defer srv.Close()
		openers["postgres"] = func(t *testing.T, cfg handler.Config) store {
			d, err := srv.Create(context.Background(), cfg)
			if err != nil {
				t.Fatal(err)
			}
			return d
		}
	} else {
		t.Log("PostgreSQL case skipped: set REDELIVER_TEST_POSTGRES=postgres://postgres@127.0.0.1:5432/test?sslmode=disable to run it")
	}
	key, _ := template.Parse("{data.orderId}")
	tests := []struct {
		name          string
		strategy      handler.Strategy
		first, second string // event ids
		secondData    string
		want          consumer.Outcome
		wantOf        string // DuplicateOf
	}{
		{"event-id", handler.EventID, "evt-1", "evt-1", `{"orderId":"o-1"}`, consumer.Duplicate, ""},
		{"consumer-scoped", handler.ConsumerScoped, "evt-1", "evt-1", `{"orderId":"o-1"}`, consumer.Duplicate, ""},
		{"identity differs", handler.EventID, "evt-1", "evt-1", `{"orderId":"o-2"}`, consumer.Conflict, ""},
		{"business-key, same event", handler.BusinessKey, "evt-1", "evt-1", `{"orderId":"o-1"}`, consumer.Duplicate, ""},
		{"business-key, new event id", handler.BusinessKey, "evt-1", "evt-2", `{"orderId":"o-1"}`, consumer.Duplicate, "evt-1"},
	}
	for name, open := range openers {
		for _, tt := range tests {
			t.Run(name+"/"+tt.name, func(t *testing.T) {
				ctx := context.Background()
				cfg := handler.Config{Strategy: tt.strategy, Consumer: "c", Effect: "effects"}
				if tt.strategy.UsesKey() {
					cfg.Key = key
				}
				st := open(t, cfg)
				defer st.Close()
				winner := handler.New(cfg, st, nil, nil).Handle(ctx, safetyNetDelivery(tt.first, `{"orderId":"o-1"}`), nil)
				if winner.Outcome != consumer.Processed {
					t.Fatalf("first delivery: %s (%v), want processed", winner.Outcome, winner.Err)
				}
				late := &staleStore{Store: st, stale: true}
				got := handler.New(cfg, late, nil, nil).Handle(ctx, safetyNetDelivery(tt.second, tt.secondData), nil)
				if got.Outcome != tt.want {
					t.Fatalf("racing delivery: %s (%v), want %s", got.Outcome, got.Err, tt.want)
				}
				if tt.want == consumer.Duplicate && got.EffectID != winner.EffectID {
					t.Errorf("racing delivery returned effect %d, want the original's, %d", got.EffectID, winner.EffectID)
				}
				if got.DuplicateOf != tt.wantOf {
					t.Errorf("DuplicateOf = %q, want %q", got.DuplicateOf, tt.wantOf)
				}
				tx, err := st.Begin(ctx)
				if err != nil {
					t.Fatal(err)
				}
				defer tx.Rollback()
				if id, found, err := tx.EffectOf(ctx, tt.second, "c"); err != nil || (found && id != winner.EffectID) {
					t.Errorf("the racing delivery left effect %d (%v), want none of its own", id, err)
				}
				// A duplicate is marked, as an unraced one would be; a
				// conflict leaves the winner's marker alone.
				m, found, err := tx.Marker(ctx, tt.second, "c")
				if err != nil || !found {
					t.Fatalf("after the race %s has no marker (%v)", tt.second, err)
				}
				if tt.want == consumer.Duplicate && m.Identity != `{"orderId":"o-1"}` {
					t.Errorf("marker identity %s, want the winner's", m.Identity)
				}
			})
		}
	}
}

func safetyNetDelivery(id, data string) consumer.Delivery {
	return consumer.Delivery{EventID: id, Consumer: "c", Envelope: []byte(`{"id":"` + id + `","data":` + data + `}`)}
}
