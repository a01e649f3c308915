package sqlite

import (
	"context"
	"database/sql"
	"fmt"

	"github.com/redeliver/redeliver/pkg/checker"
	"github.com/redeliver/redeliver/pkg/handler"
)

// A replay of millions of deliveries cannot keep its history in memory, so
// the invariants that read the stored rows are aggregate queries here.

// Broken is one invariant a replay broke: how many times, and the first few.
type Broken struct {
	Invariant checker.Invariant
	Count     int64
	Examples  []checker.Violation
	// Keys are the business keys of the examples, for duplicate-key.
	Keys []string
}

// CountEffects returns the number of rows in the effect table.
func (r *ReplayDB) CountEffects(ctx context.Context) (int64, error) {
	var n int64
	err := r.conn.QueryRowContext(ctx, `SELECT count(*) FROM "`+r.effect+`"`).Scan(&n)
	return n, err
}

// Invariants checks the stored rows: one effect per event and consumer (1),
// one effect per business key (2, for strategies that use one), and no
// marker without its effect nor effect without its marker (3). It returns
// the broken ones with up to limit examples each.
func (r *ReplayDB) Invariants(ctx context.Context, s handler.Strategy, limit int) ([]Broken, error) {
	t := `"` + r.effect + `"`
	type query struct {
		inv checker.Invariant
		sql string
		say func(a, b, c, d string) (event, consumer, detail string)
	}
	qs := []query{{checker.DuplicateEffect,
		`SELECT event_id, consumer, count(*), group_concat(id, ', ') FROM ` + t + ` GROUP BY event_id, consumer HAVING count(*) > 1 ORDER BY min(id)`,
		func(ev, consumer, n, ids string) (string, string, string) {
			return ev, consumer, fmt.Sprintf("event %s has %s rows in %s (ids %s) for consumer %s", ev, n, r.effect, ids, consumer)
		}}}
	if s.UsesKey() {
		qs = append(qs, query{checker.DuplicateKeyEffect,
			`SELECT business_key, count(*), group_concat(id, ', '), group_concat(event_id, ', ') FROM ` + t + ` WHERE business_key IS NOT NULL GROUP BY business_key HAVING count(*) > 1 ORDER BY min(id)`,
			func(key, n, ids, events string) (string, string, string) {
				return "", "", fmt.Sprintf("business key %s has %s rows in %s (ids %s, events %s)", key, n, r.effect, ids, events)
			}})
	}
	if s.KeepsMarkers() {
		byKey := ""
		if s.UsesKey() {
			byKey = ` AND (p.business_key IS NULL OR NOT EXISTS (SELECT 1 FROM ` + t + ` e WHERE e.business_key = p.business_key))`
		}
		qs = append(qs,
			query{checker.LostEffect,
				`SELECT p.event_id, p.consumer, '', '' FROM processed p WHERE NOT EXISTS (SELECT 1 FROM ` + t + ` e WHERE e.event_id = p.event_id AND e.consumer = p.consumer)` + byKey + ` ORDER BY p.event_id, p.consumer`,
				func(ev, consumer, _, _ string) (string, string, string) {
					return ev, consumer, fmt.Sprintf("event %s is marked processed but has no row in %s", ev, r.effect)
				}},
			query{checker.MissingMarker,
				`SELECT e.event_id, e.consumer, e.id, '' FROM ` + t + ` e WHERE NOT EXISTS (SELECT 1 FROM processed p WHERE p.event_id = e.event_id AND p.consumer = e.consumer) ORDER BY e.event_id, e.consumer`,
				func(ev, consumer, id, _ string) (string, string, string) {
					return ev, consumer, fmt.Sprintf("event %s has a row in %s (id %s) but no processed marker", ev, r.effect, id)
				}})
	}
	var out []Broken
	for _, q := range qs {
		b := Broken{Invariant: q.inv}
		err := r.each(ctx, q.sql, func(cols [4]string) {
			b.Count++
			if len(b.Examples) < limit {
				ev, consumer, detail := q.say(cols[0], cols[1], cols[2], cols[3])
				if q.inv == checker.DuplicateKeyEffect {
					b.Keys = append(b.Keys, cols[0])
				}
				b.Examples = append(b.Examples, checker.Violation{Invariant: q.inv, EventID: ev, Consumer: consumer, Detail: detail})
			}
		})
		if err != nil {
			return nil, fmt.Errorf("check %s: %w", q.inv, err)
		}
		if b.Count > 0 {
			out = append(out, b)
		}
	}
	return out, nil
}

// each runs a query whose rows have four columns, read as text.
func (r *ReplayDB) each(ctx context.Context, q string, f func([4]string)) error {
	rows, err := r.conn.QueryContext(ctx, q)
	if err != nil {
		return err
	}
	defer rows.Close()
	ncol, err := rows.Columns()
	if err != nil {
		return err
	}
	for rows.Next() {
		var c [4]sql.NullString
		dest := []any{&c[0], &c[1], &c[2], &c[3]}[:len(ncol)]
		if err := rows.Scan(dest...); err != nil {
			return err
		}
		f([4]string{c[0].String, c[1].String, c[2].String, c[3].String})
	}
	return rows.Err()
}
