package runner_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/redeliver/redeliver/pkg/builtin"
	"github.com/redeliver/redeliver/pkg/consumer"
	"github.com/redeliver/redeliver/pkg/handler"
	"github.com/redeliver/redeliver/pkg/postgres"
	"github.com/redeliver/redeliver/pkg/scenario"
	"github.com/redeliver/redeliver/pkg/sqlite"
)

// store is one kind of database the race tests run on.
type store struct {
	name string
	// open returns an opener of fresh stores, and whether a forced race at
	// after-check makes the safe strategies' lookups race (so that the
	// unique constraints, not a lock, stop the second insert).
	open        func(t testing.TB) builtin.Opener
	lookupsRace bool
}

func stores(t testing.TB) []store {
	out := []store{
		{name: "sqlite-memory", open: func(t testing.TB) builtin.Opener {
			return func(ctx context.Context, s *scenario.Scenario) (builtin.Store, error) {
				return sqlite.Create(ctx, sqlite.Memory, s.Handler.Config)
			}
		}},
		{name: "sqlite-file", open: func(t testing.TB) builtin.Opener {
			path := filepath.Join(t.TempDir(), "race.db")
			return func(ctx context.Context, s *scenario.Scenario) (builtin.Store, error) {
				return sqlite.Create(ctx, path, s.Handler.Config)
			}
		}},
	}
	dsn := os.Getenv("REDELIVER_TEST_POSTGRES")
	if dsn == "" {
		t.Log("PostgreSQL race tests skipped: set REDELIVER_TEST_POSTGRES=postgres://postgres@127.0.0.1:5432/test?sslmode=disable to run them")
		return out
	}
	return append(out, store{name: "postgres", lookupsRace: true, open: func(t testing.TB) builtin.Opener {
		srv, err := postgres.Connect(context.Background(), dsn, false)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(srv.Close)
		// As redeliver run does: one schema, emptied before each later
		// run (an explored check runs many).
		var db *postgres.DB
		return func(ctx context.Context, s *scenario.Scenario) (builtin.Store, error) {
			if db != nil {
				return reused{db}, db.Reset(ctx)
			}
			var err error
			db, err = srv.Create(ctx, s.Handler.Config)
			return reused{db}, err
		}
	}})
}

// reused is a schema lent to one run: closing it ends the run, not the schema.
type reused struct{ *postgres.DB }

func (reused) Close() error { return nil }

// refusals counts the inserts a unique constraint refused: the races the
// safety net settled.
type refusals struct{ n atomic.Int64 }

func (r *refusals) wrap(open builtin.Opener) builtin.Opener {
	return func(ctx context.Context, s *scenario.Scenario) (builtin.Store, error) {
		st, err := open(ctx, s)
		if err != nil {
			return nil, err
		}
		return &countingStore{Store: st, r: r}, nil
	}
}

type countingStore struct {
	builtin.Store
	r *refusals
}

type workerStore interface {
	Worker(ctx context.Context) (handler.Store, error)
}

func (c *countingStore) Worker(ctx context.Context) (handler.Store, error) {
	w, err := c.Store.(workerStore).Worker(ctx)
	if err != nil {
		return nil, err
	}
	return &countingWorker{Store: w, r: c.r}, nil
}

func (c *countingStore) WriteLockOnBegin() bool {
	return c.Store.(interface{ WriteLockOnBegin() bool }).WriteLockOnBegin()
}

type countingWorker struct {
	handler.Store
	r *refusals
}

func (c *countingWorker) Close() error { return c.Store.(interface{ Close() error }).Close() }

func (c *countingWorker) Begin(ctx context.Context) (handler.Tx, error) {
	tx, err := c.Store.Begin(ctx)
	if err != nil {
		return nil, err
	}
	return &countingTx{Tx: tx, r: c.r}, nil
}

type countingTx struct {
	handler.Tx
	r *refusals
}

func (t *countingTx) InsertMarker(ctx context.Context, m handler.Marker) error {
	err := t.Tx.InsertMarker(ctx, m)
	if errors.Is(err, handler.ErrUnique) {
		t.r.n.Add(1)
	}
	return err
}

func (t *countingTx) InsertEffect(ctx context.Context, e handler.Effect) (int64, error) {
	id, err := t.Tx.InsertEffect(ctx, e)
	if errors.Is(err, handler.ErrUnique) {
		t.r.n.Add(1)
	}
	return id, err
}

// TestRaceScenarios runs every shipped race scenario on every store: every
// check must pass (the safe strategies keep one effect, check-then-act is
// caught). The explored race opens its store again for each schedule, the
// way a repeated run does.
func TestRaceScenarios(t *testing.T) {
	files, err := filepath.Glob(filepath.Join("..", "..", "scenarios", "races", "*.yaml"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no race scenarios found: %v", err)
	}
	for _, st := range stores(t) {
		for _, f := range files {
			t.Run(st.name+"/"+filepath.Base(f), func(t *testing.T) {
				s, err := scenario.LoadFile(f)
				if err != nil {
					t.Fatal(err)
				}
				res, err := builtin.RunFile(context.Background(), s, st.open(t))
				if err != nil {
					t.Fatal(err)
				}
				for _, c := range res.Checks {
					if !c.Passed {
						t.Errorf("check %q failed: %+v", c.Name, c.Failures)
					}
				}
			})
		}
	}
}

const race = `version: 1
handler:
  strategy: STRATEGY
  effect: shipments
  key: "{data.orderId}"
checks:
  - name: race
    steps:
      - deliver: {id: evt-1, data: {orderId: order-1}}
        concurrent: 8
        interleave: after-check
`

// TestForcedRaceOutcomes checks what each worker of a forced race at
// after-check got. A safe strategy always ends with one processed delivery
// and seven duplicates that return its effect id; where the lookups race
// (PostgreSQL), the seven were refused by a unique constraint and answered
// by the safety net, where they cannot (SQLite's write lock), none was.
// check-then-act lets all eight act.
func TestForcedRaceOutcomes(t *testing.T) {
	tests := []struct {
		strategy   handler.Strategy
		processed  int
		duplicates int
		effects    int
	}{
		{handler.EventID, 1, 7, 1},
		{handler.ConsumerScoped, 1, 7, 1},
		{handler.BusinessKey, 1, 7, 1},
		{handler.CheckThenAct, 8, 0, 8},
	}
	for _, st := range stores(t) {
		for _, tt := range tests {
			t.Run(st.name+"/"+string(tt.strategy), func(t *testing.T) {
				src := []byte(strings.ReplaceAll(race, "STRATEGY", string(tt.strategy)))
				if !tt.strategy.UsesKey() {
					src = []byte(strings.ReplaceAll(string(src), "  key: \"{data.orderId}\"\n", ""))
				}
				s, err := scenario.Load("race.yaml", src)
				if err != nil {
					t.Fatal(err)
				}
				var r refusals
				res, err := builtin.RunFile(context.Background(), s, r.wrap(st.open(t)))
				if err != nil {
					t.Fatal(err)
				}
				c := res.Checks[0]
				var processed, duplicates int
				var effect int64
				for _, rec := range c.History {
					switch rec.Result.Outcome {
					case consumer.Processed:
						processed++
						effect = rec.Result.EffectID
					case consumer.Duplicate:
						duplicates++
					default:
						t.Errorf("a worker got %s (%v)", rec.Result.Outcome, rec.Result.Err)
					}
				}
				if processed != tt.processed || duplicates != tt.duplicates {
					t.Errorf("got %d processed and %d duplicates, want %d and %d", processed, duplicates, tt.processed, tt.duplicates)
				}
				if c.Counters.Effects != tt.effects {
					t.Errorf("got %d effects, want %d", c.Counters.Effects, tt.effects)
				}
				for _, rec := range c.History {
					if rec.Result.Outcome == consumer.Duplicate && rec.Result.EffectID != effect {
						t.Errorf("a duplicate returned effect %d, want the original's, %d", rec.Result.EffectID, effect)
					}
				}
				wantRefused := int64(0)
				if st.lookupsRace && tt.strategy.Safe() {
					wantRefused = int64(tt.duplicates)
				}
				if got := r.n.Load(); got != wantRefused {
					t.Errorf("the unique constraints refused %d inserts, want %d", got, wantRefused)
				}
			})
		}
	}
}

// TestInOrderRelease: with release: in-order the held workers go one at a
// time in worker order. Where all can be held (every strategy on
// PostgreSQL, check-then-act anywhere), the first worker is the one that
// processes and every later one is a duplicate of it, on PostgreSQL each
// refused by the unique constraint; on SQLite the write lock, not the
// order, decides which worker of a safe strategy goes first.
func TestInOrderRelease(t *testing.T) {
	for _, st := range stores(t) {
		for _, strategy := range []handler.Strategy{handler.EventID, handler.CheckThenAct} {
			t.Run(st.name+"/"+string(strategy), func(t *testing.T) {
				src := strings.ReplaceAll(race, "STRATEGY", string(strategy))
				src = strings.ReplaceAll(src, "  key: \"{data.orderId}\"\n", "")
				src = strings.ReplaceAll(src, "interleave: after-check", "interleave: {at: after-check, release: in-order}")
				s, err := scenario.Load("race.yaml", []byte(src))
				if err != nil {
					t.Fatal(err)
				}
				var r refusals
				res, err := builtin.RunFile(context.Background(), s, r.wrap(st.open(t)))
				if err != nil {
					t.Fatal(err)
				}
				h := res.Checks[0].History
				if len(h) != 8 {
					t.Fatalf("%d deliveries recorded, want 8", len(h))
				}
				ordered := st.lookupsRace || strategy == handler.CheckThenAct
				winner := -1
				for i, rec := range h {
					if rec.Result.Outcome == consumer.Processed && winner < 0 {
						winner = i
					}
				}
				if winner < 0 {
					t.Fatalf("no worker processed the event")
				}
				if ordered && winner != 0 {
					t.Errorf("worker %d processed first, want worker 1", winner+1)
				}
				for i, rec := range h {
					want := consumer.Duplicate
					if i == winner || strategy == handler.CheckThenAct {
						want = consumer.Processed
					}
					if rec.Result.Outcome != want {
						t.Errorf("worker %d: %s (%v), want %s", i+1, rec.Result.Outcome, rec.Result.Err, want)
					}
					if want == consumer.Duplicate && rec.Result.EffectID != h[winner].Result.EffectID {
						t.Errorf("worker %d returned effect %d, want the winner's, %d", i+1, rec.Result.EffectID, h[winner].Result.EffectID)
					}
				}
				wantRefused := int64(0)
				if st.lookupsRace && strategy.Safe() {
					wantRefused = 7
				}
				if got := r.n.Load(); got != wantRefused {
					t.Errorf("the unique constraints refused %d inserts, want %d", got, wantRefused)
				}
			})
		}
	}
}
