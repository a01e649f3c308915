package sqlite

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/redeliver/redeliver/pkg/consumer"
	"github.com/redeliver/redeliver/pkg/handler"
)

// TestLiteralsStoreWhatParametersStore: the rows a batch writes with the
// consumer, the time stamp and an empty key written into its statements
// are the rows bound parameters write, whatever the text (a quote, a NUL
// byte, bytes that are not UTF-8), keyed or not, and when the consumer or
// the clock changes from delivery to delivery, past the point where the
// batch stops writing them in.
func TestLiteralsStoreWhatParametersStore(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	same := func(i int) (string, time.Time) { return "c", t0 }
	tests := []struct {
		name string
		key  func(i int) string
		at   func(i int) (consumer string, now time.Time)
	}{
		{"one consumer, no key", func(int) string { return "" }, same},
		{"one consumer, keys", func(i int) string { return fmt.Sprintf("k'%d", i) }, same},
		{"some keys", func(i int) string { return map[bool]string{true: "k"}[i%3 == 0] }, same},
		{"a quote", func(int) string { return "" }, func(int) (string, time.Time) { return "o'brien", t0 }},
		{"a NUL byte", func(int) string { return "" }, func(int) (string, time.Time) { return "a\x00b", t0 }},
		{"not UTF-8", func(int) string { return "" }, func(int) (string, time.Time) { return "\xff\xfe", t0 }},
		{"a consumer a delivery", func(int) string { return "" }, func(i int) (string, time.Time) { return fmt.Sprintf("c%d", i), t0 }},
		{"a clock that moves", func(int) string { return "" }, func(i int) (string, time.Time) { return "c", t0.Add(time.Duration(i) * time.Second) }},
		{"two consumers in turn", func(int) string { return "" }, func(i int) (string, time.Time) { return fmt.Sprintf("c%d", i%2), t0 }},
	}
	for _, tt := range tests {
		for _, order := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s, ordered %v", tt.name, order), func(t *testing.T) {
				ctx := context.Background()
				cfg := handler.Config{Strategy: handler.ConsumerScoped, Consumer: "default", Effect: "effects"}
				db := openReplayT(t, Memory, cfg)
				const n = 3 * literalChanges
				err := db.Run(ctx, 0, func(b *Batch) error {
					for i := 1; i <= n; i++ {
						c, now := tt.at(i)
						h := handler.New(cfg, b, nil, func() time.Time { return now })
						if order {
							b.SetOrder(int64(i) << 5)
						}
						d := consumer.Delivery{EventID: fmt.Sprintf("e%d", i), Consumer: c, BusinessKey: tt.key(i), Envelope: []byte(fmt.Sprintf(`{"data":{"n":%d}}`, i))}
						for range 2 { // the second is a duplicate, found by the marker lookup
							if r := h.Handle(ctx, d, nil); r.Err != nil {
								return r.Err
							}
						}
					}
					return nil
				})
				if err != nil {
					t.Fatal(err)
				}
				rows, err := db.conn.QueryContext(ctx, `SELECT p.event_id, p.consumer, typeof(p.consumer), p.business_key, p.processed_at, e.consumer, e.business_key, e.created_at, e.payload
					FROM processed p JOIN effects e ON e.event_id = p.event_id ORDER BY p.rowid`)
				if err != nil {
					t.Fatal(err)
				}
				defer rows.Close()
				i := 0
				for rows.Next() {
					i++
					var ev, pc, typ, pat, ec, eat, payload string
					var pk, ek *string
					if err := rows.Scan(&ev, &pc, &typ, &pk, &pat, &ec, &ek, &eat, &payload); err != nil {
						t.Fatal(err)
					}
					c, now := tt.at(i)
					if ev != fmt.Sprintf("e%d", i) || pc != c || ec != c || typ != "text" {
						t.Errorf("row %d: event %q, consumer %q/%q (%s), want e%d, %q", i, ev, pc, ec, typ, i, c)
					}
					if key := tt.key(i); key == "" && (pk != nil || ek != nil) || key != "" && (pk == nil || *pk != key || ek == nil || *ek != key) {
						t.Errorf("row %d: business keys %v, %v, want %q", i, pk, ek, key)
					}
					if stamp := formatTime(now); pat != stamp || eat != stamp {
						t.Errorf("row %d: times %q, %q, want %q", i, pat, eat, stamp)
					}
					if want := fmt.Sprintf(`{"n":%d}`, i); payload != want {
						t.Errorf("row %d: payload %q, want %q", i, payload, want)
					}
				}
				if err := rows.Err(); err != nil {
					t.Fatal(err)
				}
				if i != n {
					t.Errorf("%d rows, want %d", i, n)
				}
			})
		}
	}
}
