package sqlite

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/redeliver/redeliver/pkg/consumer"
	"github.com/redeliver/redeliver/pkg/handler"
)

// TestBatchKeepsDeliveriesAtomic: inside one group-commit batch, a delivery
// that fails part-way is undone alone, and the next effect takes the id it
// would have had; the others of the batch commit.
func TestBatchKeepsDeliveriesAtomic(t *testing.T) {
	tests := []struct {
		name      string
		path      string
		batch     int
		failAt    consumer.FaultPoint
		wantRows  int64
		strategy  handler.Strategy
		retention time.Duration
	}{
		{"memory, fail after marker", Memory, 4, consumer.AfterMarker, 9, handler.EventID, 0},
		{"memory, fail after effect", Memory, 4, consumer.AfterEffect, 9, handler.EventID, 0},
		{"file, fail after effect", "file", 3, consumer.AfterEffect, 9, handler.EventID, 0},
		{"one delivery a batch", Memory, 1, consumer.AfterEffect, 9, handler.EventID, 0},
		{"memory, batch chosen by the store", Memory, 0, consumer.AfterMarker, 9, handler.EventID, 0},
		{"file, batch chosen by the store", "file", 0, consumer.AfterEffect, 9, handler.EventID, 0},
		{"markers without a key (check-then-act)", Memory, 0, consumer.AfterEffect, 9, handler.CheckThenAct, 0},
		{"file, markers without a key", "file", 0, consumer.AfterMarker, 9, handler.CheckThenAct, 0},
		{"business key", Memory, 0, consumer.AfterEffect, 9, handler.BusinessKey, 0},
		{"purging markers (a savepoint)", Memory, 0, consumer.AfterEffect, 9, handler.EventID, time.Hour},
		{"file, purging markers", "file", 0, consumer.AfterMarker, 9, handler.EventID, time.Hour},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx := context.Background()
			path := tt.path
			if path == "file" {
				path = filepath.Join(t.TempDir(), "replay.db")
			}
			strategy := tt.strategy
			cfg := handler.Config{Strategy: strategy, Consumer: "c", Effect: "effects", Retention: tt.retention}
			db := openReplayT(t, path, cfg)
			var outcomes []consumer.Outcome
			var ids []int64
			err := db.Run(ctx, tt.batch, func(b *Batch) error {
				h := handler.New(cfg, b, nil, fixedClock)
				for i := 1; i <= 10; i++ {
					d := consumer.Delivery{EventID: fmt.Sprintf("e%d", i), BusinessKey: fmt.Sprintf("k%d", i), Envelope: []byte(fmt.Sprintf(`{"data":{"n":%d}}`, i))}
					var inject handler.Injector
					if i == 5 {
						inject = handler.FailAt(tt.failAt)
					}
					r := h.Handle(ctx, d, inject)
					outcomes = append(outcomes, r.Outcome)
					if r.Outcome == consumer.Processed {
						ids = append(ids, r.EffectID)
					}
				}
				// A duplicate in the same batch finds what the batch wrote.
				outcomes = append(outcomes, h.Handle(ctx, consumer.Delivery{EventID: "e1", BusinessKey: "k1", Envelope: []byte(`{"data":{"n":1}}`)}, nil).Outcome)
				return nil
			})
			if err != nil {
				t.Fatal(err)
			}
			if outcomes[4] != consumer.Failed || outcomes[10] != consumer.Duplicate && strategy != handler.CheckThenAct {
				t.Errorf("outcomes %v: want delivery 5 failed and the last a duplicate", outcomes)
			}
			if fmt.Sprint(ids) != "[1 2 3 4 5 6 7 8 9]" {
				t.Errorf("effect ids %v, want 1 to 9: the failed delivery's id is the next one's", ids)
			}
			m, err := db.conn.QueryContext(ctx, `SELECT event_id FROM processed WHERE event_id = 'e5'`)
			if err != nil {
				t.Fatal(err)
			}
			if m.Next() {
				t.Error("the failed delivery left its marker")
			}
			m.Close()
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
	db := openReplayT(t, Memory, cfg)
	err := db.Run(ctx, 100, func(b *Batch) error {
		h := handler.New(cfg, b, nil, nil)
		for _, id := range []string{"a", "b", "a", "a"} {
			h.Handle(ctx, consumer.Delivery{EventID: id, Envelope: []byte(`{"data":{}}`)}, nil)
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
// marker are both named, wherever they fall in the index order, through
// the C API and through database/sql alike.
func TestUnmatchedRows(t *testing.T) {
	for _, raw := range []bool{true, false} {
		t.Run(map[bool]string{true: "C API", false: "database-sql"}[raw], func(t *testing.T) {
			runRaw(t, raw)
			testUnmatchedRows(t)
		})
	}
}

func testUnmatchedRows(t *testing.T) {
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
		{"repeated effects", handler.CheckThenAct, []string{"a", "a", "c"}, []string{"a", "a", "a", "b", "c", "c"}, nil, []string{"b"}},
		{"only markers", handler.EventID, []string{"a", "b"}, nil, []string{"a", "b"}, nil},
		{"only effects", handler.EventID, nil, []string{"a", "b"}, nil, []string{"a", "b"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx := context.Background()
			cfg := handler.Config{Strategy: tt.strategy, Consumer: "c", Effect: "effects"}
			db := openReplayT(t, Memory, cfg)
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

// TestCaptureLogBesideDeliveries: the capture log is written beside the
// deliveries; a delivery undone takes none of the log's rows with it, and
// the log refuses rows while a delivery's transaction is open.
func TestCaptureLogBesideDeliveries(t *testing.T) {
	ctx := context.Background()
	cfg := handler.Config{Strategy: handler.EventID, Consumer: "c", Effect: "effects"}
	db := openReplayT(t, filepath.Join(t.TempDir(), "replay.db"), cfg)
	log, err := db.CaptureLog(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer log.Close()
	rows := func(from, n int, identity int64) []CaptureRow {
		var out []CaptureRow
		for i := from; i < from+n; i++ {
			out = append(out, CaptureRow{EventID: fmt.Sprintf("e%d", i%50), Identity: identity, File: 1, Line: i + 1})
		}
		return out
	}
	err = db.Run(ctx, 7, func(b *Batch) error {
		if err := b.RecordFile(1, "capture.ndjson"); err != nil {
			return err
		}
		// 70 rows: one statement of 64 rows, then six of one.
		if err := b.RecordRows(rows(0, 70, 1)); err != nil {
			return err
		}
		h := handler.New(cfg, b, nil, nil)
		d := consumer.Delivery{EventID: "e1", Envelope: []byte(`{"data":{"n":1}}`)}
		if res := h.Handle(ctx, d, handler.FailAt(consumer.AfterEffect)); res.Outcome != consumer.Failed {
			t.Errorf("delivery: %s, want failed", res.Outcome)
		}
		tx, err := b.Begin(ctx)
		if err != nil {
			return err
		}
		if err := b.RecordRows(rows(70, 1, 1)); err == nil {
			t.Error("a capture row was written inside a delivery")
		}
		if err := tx.Rollback(); err != nil {
			return err
		}
		// The 71st row reuses e20 with another identity.
		return b.RecordRows(rows(70, 1, 2))
	})
	if err != nil {
		t.Fatal(err)
	}
	f, err := log.Findings(ctx, 5)
	if err != nil {
		t.Fatal(err)
	}
	if f.Deliveries != 71 || f.DistinctIDs != 50 || f.RepeatedIDs != 21 || f.IdentityReuse != 1 {
		t.Errorf("findings %+v: want 71 deliveries, 50 ids, 21 repeated, 1 reused", f)
	}
	if len(f.Reuse) != 1 || f.Reuse[0].EventID != "e20" || f.Reuse[0].First.String() != "capture.ndjson:21" || f.Reuse[0].Then.String() != "capture.ndjson:71" {
		t.Errorf("reuse examples %+v", f.Reuse)
	}
	if n, err := db.CountEffects(ctx); err != nil || n != 0 {
		t.Errorf("%d effects (%v), want none: the failed delivery rolled back", n, err)
	}
}

// TestBatchFull: when a batch commits, by count when one was asked for,
// never before the end on a private database, by the clock on a file.
func TestBatchFull(t *testing.T) {
	now := time.Now()
	tests := []struct {
		name     string
		b        Batch
		wantFull bool
	}{
		{"count not reached", Batch{size: 10, count: 9}, false},
		{"count reached", Batch{size: 10, count: 10}, true},
		{"private, any count", Batch{private: true, count: 1 << 20, opened: now.Add(-time.Hour)}, false},
		{"file, young batch", Batch{count: 64, opened: now}, false},
		{"file, old batch", Batch{count: 64, opened: now.Add(-2 * maxBatchAge)}, true},
		{"file, old batch between clock reads", Batch{count: 65, opened: now.Add(-2 * maxBatchAge)}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.b.full(); got != tt.wantFull {
				t.Errorf("full() = %v, want %v", got, tt.wantFull)
			}
		})
	}
}

// TestPrivateReplayLeavesNothing: the database of a replay that keeps
// nothing lives in SQLite's temporary files, which are unlinked as soon as
// they are opened, so that not even kill -9 leaves one behind.
func TestPrivateReplayLeavesNothing(t *testing.T) {
	open := func() map[string]string {
		fds, err := os.ReadDir("/proc/self/fd")
		if err != nil {
			t.Skip("needs /proc/self/fd to see which files are open")
		}
		m := map[string]string{}
		for _, fd := range fds {
			if l, err := os.Readlink(filepath.Join("/proc/self/fd", fd.Name())); err == nil && strings.HasPrefix(l, "/") {
				m[fd.Name()] = l
			}
		}
		return m
	}
	before := open()
	// A smaller cache is outgrown by fewer deliveries: the same
	// spilling, an eighth of the work.
	defer func(kiB int) { replayCacheKiB = kiB }(replayCacheKiB)
	replayCacheKiB = 2 * checkCacheKiB
	ctx := context.Background()
	cfg := handler.Config{Strategy: handler.EventID, Consumer: "c", Effect: "effects"}
	db := openReplayT(t, Memory, cfg)
	// Enough rows to outgrow the page cache, so that pages go to the file.
	payload := strings.Repeat("x", 4000)
	n := 2 * replayCacheKiB / 4
	err := db.Run(ctx, 0, func(b *Batch) error {
		h := handler.New(cfg, b, nil, nil)
		for i := 0; i < n; i++ {
			d := consumer.Delivery{EventID: fmt.Sprintf("e%d", i), Envelope: []byte(`{"data":{"p":"` + payload + `"}}`)}
			if r := h.Handle(ctx, d, nil); r.Outcome != consumer.Processed {
				return fmt.Errorf("delivery %d: %s %v", i, r.Outcome, r.Err)
			}
		}
		files := 0
		for fd, l := range open() {
			if before[fd] == l {
				continue
			}
			files++
			if !strings.HasSuffix(l, " (deleted)") {
				return fmt.Errorf("the replay's file %s is linked, want it unlinked", l)
			}
		}
		if files == 0 {
			return fmt.Errorf("the replay opened no file: the database did not outgrow its cache")
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if got, err := db.CountEffects(ctx); err != nil || got != int64(n) {
		t.Errorf("%d effects (%v), want %d", got, err, n)
	}
	// The deliveries done, the cache shrinks for the sorts that follow.
	var cache int
	if err := db.conn.QueryRowContext(ctx, `PRAGMA cache_size`).Scan(&cache); err != nil || cache != -checkCacheKiB {
		t.Errorf("cache_size %d (%v) after the deliveries, want %d", cache, err, -checkCacheKiB)
	}
}

// TestDuplicateStatements counts the statements of a duplicate delivery:
// the marker, then its event's effect or its business key's; and the
// duplicate answers with the first delivery's effect.
func TestDuplicateStatements(t *testing.T) {
	tests := []struct {
		strategy handler.Strategy
		want     int
	}{
		{handler.EventID, 2},
		{handler.CheckThenAct, 2},
		{handler.BusinessKey, 2},
	}
	for _, tt := range tests {
		t.Run(string(tt.strategy), func(t *testing.T) {
			ctx := context.Background()
			cfg := handler.Config{Strategy: tt.strategy, Consumer: "c", Effect: "effects"}
			db := openReplayT(t, Memory, cfg)
			err := db.Run(ctx, 0, func(b *Batch) error {
				h := handler.New(cfg, b, nil, fixedClock)
				d := func(id string) consumer.Delivery {
					return consumer.Delivery{EventID: id, BusinessKey: "k-" + id, Envelope: []byte(`{"data":{"n":1}}`)}
				}
				var first []consumer.Result
				for _, id := range []string{"a", "b", "c"} {
					first = append(first, h.Handle(ctx, d(id), nil))
				}
				for i, id := range []string{"b", "a", "c"} {
					before := b.statements
					r := h.Handle(ctx, d(id), nil)
					if n := b.statements - before; n != tt.want {
						t.Errorf("duplicate of %s: %d statements, want %d", id, n, tt.want)
					}
					want := first[[]int{1, 0, 2}[i]]
					if r.Outcome != consumer.Duplicate || r.EffectID != want.EffectID || r.Err != nil {
						t.Errorf("duplicate of %s: %+v, want a duplicate of effect %d", id, r, want.EffectID)
					}
				}
				return nil
			})
			if err != nil {
				t.Fatal(err)
			}
		})
	}
}
