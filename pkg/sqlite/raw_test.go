package sqlite

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"

	"github.com/redeliver/redeliver/pkg/consumer"
	"github.com/redeliver/redeliver/pkg/handler"
)

// TestRawStoresWhatTheDriverStores: the replay store through the C API
// (raw.go) and through the driver give each delivery the same result and
// leave the same rows, the same capture findings and the same broken
// invariants (the markers and effects walked side by side either way), whatever the
// strategy, with failures at every fault point undone, duplicates,
// identity conflicts, texts with a quote, a NUL byte or bytes that are not
// UTF-8, an empty key, and texts longer than the parameter buffer starts.
func TestRawStoresWhatTheDriverStores(t *testing.T) {
	for _, strategy := range []handler.Strategy{handler.EventID, handler.ConsumerScoped, handler.BusinessKey, handler.None, handler.CheckThenAct, handler.MarkerAfterEffect} {
		t.Run(string(strategy), func(t *testing.T) {
			raw := replayThrough(t, true, strategy)
			drv := replayThrough(t, false, strategy)
			if !reflect.DeepEqual(raw, drv) {
				t.Errorf("through the C API:\n%s\nthrough the driver:\n%s", raw, drv)
			}
			if !strings.Contains(raw.results, "failed") || strategy != handler.None && !strings.Contains(raw.results, "conflict") {
				t.Errorf("the deliveries met no failure or no conflict: %s", raw.results)
			}
			if strategy == handler.None && !strings.Contains(raw.invariants, "duplicate-effect") || strategy == handler.MarkerAfterEffect && !strings.Contains(raw.invariants, "missing-marker") {
				t.Errorf("no invariant broken that %s breaks: %s", strategy, raw.invariants)
			}
		})
	}
}

type replayed struct {
	results, markers, effects, findings, invariants string
}

func (r replayed) String() string {
	return "results " + r.results + "\nmarkers " + r.markers + "\neffects " + r.effects + "\nfindings " + r.findings + "\ninvariants " + r.invariants
}

func replayThrough(t *testing.T, viaRaw bool, strategy handler.Strategy) replayed {
	t.Helper()
	runRaw(t, viaRaw)
	ctx := context.Background()
	cfg := handler.Config{Strategy: strategy, Consumer: "c", Effect: "effects", Identity: []string{"data.n"}}
	db := openReplayT(t, Memory, cfg)
	log, err := db.CaptureLog(ctx)
	if err != nil {
		t.Fatal(err)
	}
	texts := []string{"plain", "o'brien", "a\x00b", "\xff\xfe", strings.Repeat("long ", 2000)}
	var out replayed
	err = db.Run(ctx, 0, func(b *Batch) error {
		if (b.raw != nil) != viaRaw {
			return fmt.Errorf("the batch runs through the C API: %v, want %v", b.raw != nil, viaRaw)
		}
		h := handler.New(cfg, b, nil, fixedClock)
		var rows []CaptureRow
		for i := 0; i < 200; i++ {
			n := i
			if i%4 == 3 {
				n = i - 2 // a redelivery
			}
			text := texts[n%len(texts)]
			data := n
			if i%17 == 16 {
				data = n + 1000 // the same id, another identity
			}
			key := ""
			if n%3 != 0 {
				key = fmt.Sprintf("k%d %s", n/2, text)
			}
			d := consumer.Delivery{EventID: fmt.Sprintf("e%d %s", n, text), Consumer: "c", BusinessKey: key,
				Envelope: []byte(fmt.Sprintf(`{"data":{"n":%d,"s":%q}}`, data, text))}
			var inject handler.Injector
			if i%11 == 10 {
				inject = handler.FailAt(consumer.FaultPoints[i%len(consumer.FaultPoints)])
			}
			r := h.Handle(ctx, d, inject)
			out.results += fmt.Sprintf("%s:%d ", r.Outcome, r.EffectID)
			rows = append(rows, CaptureRow{EventID: d.EventID, Identity: int64(data), Key: key, File: 1, Line: i + 1})
		}
		if err := b.RecordFile(1, "capture.ndjson"); err != nil {
			return err
		}
		return b.RecordRows(rows)
	})
	if err != nil {
		t.Fatal(err)
	}
	markers, err := db.markers(ctx)
	if err != nil {
		t.Fatal(err)
	}
	effects, err := db.effects(ctx)
	if err != nil {
		t.Fatal(err)
	}
	f, err := log.Findings(ctx, 5)
	if err != nil {
		t.Fatal(err)
	}
	broken, err := db.KeyedInvariants(ctx, strategy, 3)
	if err != nil {
		t.Fatal(err)
	}
	out.markers, out.effects, out.findings, out.invariants = markers, effects, fmt.Sprintf("%+v", f), fmt.Sprintf("%+v", broken)
	return out
}

// markers and effects are every row of the two tables, in the order they
// were written.
func (r *ReplayDB) markers(ctx context.Context) (string, error) {
	return r.dump(ctx, `SELECT quote(event_id), quote(consumer), quote(identity), quote(business_key), quote(processed_at) FROM processed ORDER BY rowid`)
}

func (r *ReplayDB) effects(ctx context.Context) (string, error) {
	return r.dump(ctx, `SELECT id, quote(event_id), quote(consumer), quote(business_key), quote(payload), quote(created_at) FROM "`+r.effect+`" ORDER BY id`)
}

func (r *ReplayDB) dump(ctx context.Context, q string) (string, error) {
	rows, err := r.conn.QueryContext(ctx, q)
	if err != nil {
		return "", err
	}
	defer rows.Close()
	cols, _ := rows.Columns()
	var b strings.Builder
	for rows.Next() {
		vals := make([]any, len(cols))
		ptrs := make([]any, len(cols))
		for i := range vals {
			ptrs[i] = &vals[i]
		}
		if err := rows.Scan(ptrs...); err != nil {
			return "", err
		}
		fmt.Fprintln(&b, vals...)
	}
	return b.String(), rows.Err()
}

// TestRawErrors: through the C API, a key the table holds already is
// handler.ErrUnique, as through the driver, and an error is worded as the
// driver words it, with SQLite's message.
func TestRawErrors(t *testing.T) {
	for _, viaRaw := range []bool{true, false} {
		t.Run(fmt.Sprintf("raw %v", viaRaw), func(t *testing.T) {
			runRaw(t, viaRaw)
			ctx := context.Background()
			cfg := handler.Config{Strategy: handler.EventID, Consumer: "c", Effect: "effects"}
			db := openReplayT(t, Memory, cfg)
			err := db.Run(ctx, 0, func(b *Batch) error {
				tx, err := b.Begin(ctx)
				if err != nil {
					return err
				}
				m := handler.Marker{EventID: "e1", Consumer: "c", Identity: "x"}
				if err := tx.InsertMarker(ctx, m); err != nil {
					return err
				}
				if err := tx.InsertMarker(ctx, m); !errors.Is(err, handler.ErrUnique) {
					t.Errorf("a second marker: %v; want handler.ErrUnique", err)
				}
				if err := tx.Rollback(); err != nil {
					return err
				}
				_, err = prepare(b.conn, b.raw, `SELECT x FROM nowhere`)
				if want := "SQL logic error: no such table: nowhere (1)"; err == nil || err.Error() != want {
					t.Errorf("preparing a query of no table: %v; want %q", err, want)
				}
				if viaRaw {
					if _, err := prepare(b.conn, b.raw, "SELECT 1; SELECT 2"); err == nil {
						t.Errorf("two statements in one text prepared as one")
					}
					p, err := prepare(b.conn, b.raw, "SELECT 1;  \n")
					if err != nil {
						t.Errorf("one statement and blanks: %v", err)
					} else {
						closeAll(p)
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
