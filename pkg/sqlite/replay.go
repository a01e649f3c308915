package sqlite

import (
	"context"
	"database/sql"
	"fmt"

	"github.com/redeliver/redeliver/pkg/checker"
	"github.com/redeliver/redeliver/pkg/handler"
)

// A replay of millions of deliveries cannot keep its history in memory, so
// the invariants that read the stored rows are aggregate queries here, and
// what the capture itself holds is counted from the redeliver_capture table.

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
				`SELECT p.event_id, p.consumer, '', '' FROM processed p WHERE NOT EXISTS (SELECT 1 FROM ` + t + ` e WHERE e.event_id = p.event_id AND e.consumer = p.consumer)` + byKey + ` ORDER BY p.rowid`,
				func(ev, consumer, _, _ string) (string, string, string) {
					return ev, consumer, fmt.Sprintf("event %s is marked processed but has no row in %s", ev, r.effect)
				}},
			query{checker.MissingMarker,
				`SELECT e.event_id, e.consumer, e.id, '' FROM ` + t + ` e WHERE NOT EXISTS (SELECT 1 FROM processed p WHERE p.event_id = e.event_id AND p.consumer = e.consumer) ORDER BY e.id`,
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

// CaptureFindings are what the capture itself holds, before any handler ran.
type CaptureFindings struct {
	Deliveries         int64
	DistinctIDs        int64
	RepeatedIDs        int64 // ids delivered more than once
	IdentityReuse      int64 // ids delivered with more than one payload identity
	KeysWithSeveralIDs int64 // business keys seen under more than one id
	Reuse              []Reuse
	Keys               []KeyIDs
}

// Reuse is an id delivered with a different payload than the first time.
type Reuse struct {
	EventID     string
	First, Then handler.Location
}

// KeyIDs is a business key seen under several ids.
type KeyIDs struct {
	Key   string
	IDs   int64
	First handler.Location
	Some  string // the first few ids
}

// Findings counts the capture's repeated ids, reused ids and keys under
// several ids, with up to limit examples.
func (r *ReplayDB) Findings(ctx context.Context, limit int) (CaptureFindings, error) {
	var f CaptureFindings
	err := r.conn.QueryRowContext(ctx, `SELECT count(*), count(DISTINCT event_id) FROM redeliver_capture`).Scan(&f.Deliveries, &f.DistinctIDs)
	if err != nil {
		return f, fmt.Errorf("count capture: %w", err)
	}
	err = r.conn.QueryRowContext(ctx, `SELECT count(*), coalesce(sum(reused), 0) FROM (
		SELECT count(DISTINCT identity) > 1 AS reused FROM redeliver_capture GROUP BY event_id HAVING count(*) > 1)`).Scan(&f.RepeatedIDs, &f.IdentityReuse)
	if err != nil {
		return f, fmt.Errorf("count repeated ids: %w", err)
	}
	err = r.conn.QueryRowContext(ctx, `SELECT count(*) FROM (
		SELECT 1 FROM redeliver_capture WHERE business_key <> '' GROUP BY business_key HAVING count(DISTINCT event_id) > 1)`).Scan(&f.KeysWithSeveralIDs)
	if err != nil {
		return f, fmt.Errorf("count keys: %w", err)
	}
	files := map[int64]string{}
	rows, err := r.conn.QueryContext(ctx, `SELECT id, name FROM redeliver_files`)
	if err != nil {
		return f, err
	}
	for rows.Next() {
		var id int64
		var name string
		if err := rows.Scan(&id, &name); err != nil {
			rows.Close()
			return f, err
		}
		files[id] = name
	}
	rows.Close()
	loc := func(file, line int64) handler.Location { return handler.Location{File: files[file], Line: int(line)} }
	if f.IdentityReuse > 0 && limit > 0 {
		rows, err := r.conn.QueryContext(ctx, `
			SELECT c.event_id, c.file, c.line, (
			    SELECT d.file || ' ' || d.line FROM redeliver_capture d
			    WHERE d.event_id = c.event_id AND d.identity <> c.identity AND d.rowid > c.rowid ORDER BY d.rowid LIMIT 1)
			FROM redeliver_capture c
			JOIN (SELECT event_id, min(rowid) AS first FROM redeliver_capture GROUP BY event_id
			      HAVING count(DISTINCT identity) > 1 ORDER BY first LIMIT ?) g ON c.rowid = g.first
			ORDER BY c.rowid`, limit)
		if err != nil {
			return f, fmt.Errorf("find reused ids: %w", err)
		}
		for rows.Next() {
			var ev, then string
			var file, line int64
			if err := rows.Scan(&ev, &file, &line, &then); err != nil {
				rows.Close()
				return f, err
			}
			var tf, tl int64
			fmt.Sscanf(then, "%d %d", &tf, &tl)
			f.Reuse = append(f.Reuse, Reuse{EventID: ev, First: loc(file, line), Then: loc(tf, tl)})
		}
		rows.Close()
	}
	if f.KeysWithSeveralIDs > 0 && limit > 0 {
		rows, err := r.conn.QueryContext(ctx, `
			SELECT business_key, count(DISTINCT event_id), min(rowid) AS first, group_concat(DISTINCT event_id)
			FROM redeliver_capture WHERE business_key <> '' GROUP BY business_key
			HAVING count(DISTINCT event_id) > 1 ORDER BY first LIMIT ?`, limit)
		if err != nil {
			return f, fmt.Errorf("find keys: %w", err)
		}
		for rows.Next() {
			var k KeyIDs
			var first int64
			if err := rows.Scan(&k.Key, &k.IDs, &first, &k.Some); err != nil {
				rows.Close()
				return f, err
			}
			k.First = handler.Location{Line: int(first)}
			f.Keys = append(f.Keys, k)
		}
		rows.Close()
		for i := range f.Keys {
			var file, line int64
			if err := r.conn.QueryRowContext(ctx, `SELECT file, line FROM redeliver_capture WHERE rowid = ?`, f.Keys[i].First.Line).Scan(&file, &line); err == nil {
				f.Keys[i].First = loc(file, line)
			}
		}
	}
	return f, nil
}
