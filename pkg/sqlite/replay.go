package sqlite

import (
	"bytes"
	"context"
	"database/sql"
	"database/sql/driver"
	"fmt"
	"strconv"
	"strings"

	"github.com/redeliver/redeliver/pkg/invariant"
)

// A replay of millions of deliveries cannot keep its history in memory, so
// the invariants that read the stored rows are aggregate queries here.

// CountEffects returns the number of rows in the effect table.
func (r *ReplayDB) CountEffects(ctx context.Context) (int64, error) {
	var n int64
	err := r.conn.QueryRowContext(ctx, `SELECT count(*) FROM "`+r.effect+`"`).Scan(&n)
	return n, err
}

// KeyStats counts the business keys the effects carry, the most effects one
// key has, and how many keys have more than one.
func (r *ReplayDB) KeyStats(ctx context.Context) (keys, most, several int64, err error) {
	err = r.conn.QueryRowContext(ctx, `SELECT count(*), COALESCE(max(n), 0), COALESCE(sum(n > 1), 0) FROM (SELECT count(*) AS n FROM "`+r.effect+`" WHERE business_key IS NOT NULL GROUP BY business_key)`).Scan(&keys, &most, &several)
	return keys, most, several, err
}

// Invariants checks the stored rows: one effect per event and consumer (1),
// one effect per business key (2, when keyed: the strategy dedups on the
// key, or the capture gave keys that every strategy records), and no
// marker without its effect nor effect without its marker (3). It returns
// the broken ones with up to limit examples each.
//
// The queries run beside the capture log's findings, which have a
// connection of their own.
func (r *ReplayDB) Invariants(ctx context.Context, s invariant.Guard, limit int) ([]Broken, error) {
	return r.invariants(ctx, s, false, limit)
}

// KeyedInvariants is Invariants for a replay whose capture gave business
// keys: one effect per key is checked whatever the strategy.
func (r *ReplayDB) KeyedInvariants(ctx context.Context, s invariant.Guard, limit int) ([]Broken, error) {
	return r.invariants(ctx, s, true, limit)
}

func (r *ReplayDB) invariants(ctx context.Context, s invariant.Guard, keyed bool, limit int) ([]Broken, error) {
	conn := r.conn
	if !r.private {
		var err error
		if conn, err = r.db.Conn(ctx); err != nil {
			return nil, err
		}
		defer conn.Close()
	}
	pairs := invariant.LostEffect.CheckedBy(invariant.Replay, s) && invariant.MissingMarker.CheckedBy(invariant.Replay, s)
	// Without a business key, a walk of both indexes side by side finds
	// the markers and effects without their other half (unmatched); its
	// findings come after the queries'.
	walk := pairs && !s.UsesKey()
	var lost, missing Broken
	if walk {
		var err error
		if lost, missing, err = r.unmatched(ctx, conn, limit); err != nil {
			return nil, err
		}
	}
	var out []Broken
	for _, q := range r.invariantQueries(s, keyed, pairs && !walk) {
		b := Broken{Invariant: q.inv.Name}
		err := r.each(ctx, conn, q.sql, func(cols [4]string) {
			b.Count++
			if len(b.Examples) < limit {
				f := q.facts(cols[0], cols[1], cols[2], cols[3])
				if f.Key != "" {
					b.Keys = append(b.Keys, f.Key)
				}
				b.Examples = append(b.Examples, invariant.Violation{Invariant: q.inv.Name, EventID: f.Event, Consumer: f.Consumer, Detail: q.inv.Say(f)})
			}
		})
		if err != nil {
			return nil, fmt.Errorf("check %s: %w", q.inv, err)
		}
		if b.Count > 0 {
			out = append(out, b)
		}
	}
	for _, b := range []Broken{lost, missing} {
		if b.Count > 0 {
			out = append(out, b)
		}
	}
	return out, nil
}

// An invariantQuery finds the breaches of one invariant: each row's four
// columns become the facts the catalogue words a breach from.
type invariantQuery struct {
	inv   *invariant.Invariant
	sql   string
	facts func(a, b, c, d string) invariant.Facts
}

// invariantQueries are the queries of the invariants guard checks on a
// replay: duplicate-effect always, duplicate-key when checked or keyed,
// and, with pairs, lost-effect and missing-marker by business key.
func (r *ReplayDB) invariantQueries(s invariant.Guard, keyed, pairs bool) []invariantQuery {
	t := `"` + r.effect + `"`
	qs := []invariantQuery{{invariant.DuplicateEffect,
		`SELECT event_id, consumer, count(*), group_concat(id, ', ') FROM ` + t + ` GROUP BY event_id, consumer HAVING count(*) > 1 ORDER BY min(id)`,
		func(ev, consumer, n, ids string) invariant.Facts {
			return invariant.Facts{Event: ev, Consumer: consumer, Table: r.effect, Rows: count(n), IDs: list(ids)}
		}}}
	if invariant.DuplicateKey.CheckedBy(invariant.Replay, s) || keyed {
		qs = append(qs, invariantQuery{invariant.DuplicateKey,
			`SELECT business_key, count(*), group_concat(id, ', '), group_concat(event_id, ', ') FROM ` + t + ` WHERE business_key IS NOT NULL GROUP BY business_key HAVING count(*) > 1 ORDER BY min(id)`,
			func(key, n, ids, events string) invariant.Facts {
				return invariant.Facts{Key: key, Table: r.effect, Rows: count(n), IDs: list(ids), Events: list(events)}
			}})
	}
	if !pairs {
		return qs
	}
	byKey := ` AND (p.business_key IS NULL OR NOT EXISTS (SELECT 1 FROM ` + t + ` e WHERE e.business_key = p.business_key))`
	return append(qs,
		invariantQuery{invariant.LostEffect,
			`SELECT p.event_id, p.consumer, '', '' FROM processed p WHERE NOT EXISTS (SELECT 1 FROM ` + t + ` e WHERE e.event_id = p.event_id AND e.consumer = p.consumer)` + byKey + ` ORDER BY p.event_id, p.consumer`,
			func(ev, consumer, _, _ string) invariant.Facts {
				return invariant.Facts{Event: ev, Consumer: consumer, Table: r.effect}
			}},
		invariantQuery{invariant.MissingMarker,
			`SELECT e.event_id, e.consumer, e.id, '' FROM ` + t + ` e WHERE NOT EXISTS (SELECT 1 FROM processed p WHERE p.event_id = e.event_id AND p.consumer = e.consumer) ORDER BY e.event_id, e.consumer`,
			func(ev, consumer, id, _ string) invariant.Facts {
				return invariant.Facts{Event: ev, Consumer: consumer, Table: r.effect, IDs: []string{id}}
			}})
}

// unmatched walks the markers and the effects side by side, both in the
// order of their (event_id, consumer) indexes: a marker without an effect
// breaks invariant 3 (lost-effect), an effect without a marker too
// (missing-marker). Two index scans instead of a lookup per row.
func (r *ReplayDB) unmatched(ctx context.Context, conn *sql.Conn, limit int) (lost, missing Broken, err error) {
	lost.Invariant, missing.Invariant = invariant.LostEffect.Name, invariant.MissingMarker.Name
	var lostRows, missingRows []unmatchedRow
	lost.Count, missing.Count, lostRows, missingRows, err = r.unmatchedRows(ctx, conn, limit)
	for _, m := range lostRows {
		lost.Examples = append(lost.Examples, invariant.Violation{Invariant: lost.Invariant, EventID: m.event, Consumer: m.consumer,
			Detail: invariant.LostEffect.Say(invariant.Facts{Event: m.event, Consumer: m.consumer, Table: r.effect})})
	}
	for _, m := range missingRows {
		missing.Examples = append(missing.Examples, invariant.Violation{Invariant: missing.Invariant, EventID: m.event, Consumer: m.consumer,
			Detail: invariant.MissingMarker.Say(invariant.Facts{Event: m.event, Consumer: m.consumer, Table: r.effect, IDs: []string{strconv.FormatInt(m.id, 10)}})})
	}
	return lost, missing, err
}

// unmatchedRow is a marker without an effect, or an effect (id) without a marker.
type unmatchedRow struct {
	event, consumer string
	id              int64
}

// unmatchedRows counts the markers without an effect and the effects
// without a marker, and returns the first limit of each: through the C
// API, where the two scans' rows are compared where SQLite holds them, or
// else through database/sql.
func (r *ReplayDB) unmatchedRows(ctx context.Context, conn *sql.Conn, limit int) (nLost, nMissing int64, lost, missing []unmatchedRow, err error) {
	done := false
	err = conn.Raw(func(dc any) error {
		c, ok := dc.(driver.Conn)
		if !ok {
			return nil
		}
		raw := rawOf(c)
		if raw == nil {
			return nil
		}
		defer raw.close()
		done = true
		nLost, nMissing, lost, missing, err = r.unmatchedRaw(ctx, raw, limit)
		return err
	})
	if err != nil || done {
		return nLost, nMissing, lost, missing, err
	}
	return r.unmatchedSQL(ctx, conn, limit)
}

// markerOrder and effectOrder are the two tables by (event_id, consumer),
// the order of their keyed indexes.
const markerOrder = `SELECT event_id, consumer FROM processed ORDER BY event_id, consumer`

func (r *ReplayDB) effectOrder() string {
	return `SELECT event_id, consumer, id FROM "` + r.effect + `" ORDER BY event_id, consumer`
}

// A joinSide is one of the two scans unmatchedRows walks in step, in
// (event_id, consumer) order: next steps it, key is the current row's
// (valid until the next step), row is that row kept.
type joinSide interface {
	next() (bool, error)
	key() (event, consumer []byte)
	row() unmatchedRow
}

// rawSide is a scan through the C API: the key is read where SQLite holds
// it, and a Go string is made only for a row kept.
type rawSide struct {
	s               *rawStmt
	withID          bool
	event, consumer []byte
}

func (s *rawSide) next() (bool, error) {
	ok, err := s.s.next()
	if ok {
		s.event, s.consumer = s.s.text(0), s.s.text(1)
	}
	return ok, err
}

func (s *rawSide) key() ([]byte, []byte) { return s.event, s.consumer }

func (s *rawSide) row() unmatchedRow {
	r := unmatchedRow{event: string(s.event), consumer: string(s.consumer)}
	if s.withID {
		r.id = s.s.int64(2)
	}
	return r
}

// sqlSide is a scan through database/sql.
type sqlSide struct {
	rows            *sql.Rows
	withID          bool
	event, consumer sql.RawBytes
	id              int64
}

func (s *sqlSide) next() (bool, error) {
	if !s.rows.Next() {
		return false, s.rows.Err()
	}
	if s.withID {
		return true, s.rows.Scan(&s.event, &s.consumer, &s.id)
	}
	return true, s.rows.Scan(&s.event, &s.consumer)
}

func (s *sqlSide) key() ([]byte, []byte) { return s.event, s.consumer }

func (s *sqlSide) row() unmatchedRow {
	return unmatchedRow{event: string(s.event), consumer: string(s.consumer), id: s.id}
}

func (r *ReplayDB) unmatchedRaw(ctx context.Context, raw *rawConn, limit int) (nLost, nMissing int64, lost, missing []unmatchedRow, err error) {
	ps, err := raw.prepare(markerOrder)
	if err != nil {
		return 0, 0, nil, nil, fmt.Errorf("check %s: %w", invariant.LostEffect, err)
	}
	defer ps.close()
	es, err := raw.prepare(r.effectOrder())
	if err != nil {
		return 0, 0, nil, nil, fmt.Errorf("check %s: %w", invariant.MissingMarker, err)
	}
	defer es.close()
	if err = ps.start(nil); err == nil {
		err = es.start(nil)
	}
	if err != nil {
		return 0, 0, nil, nil, err
	}
	return mergeUnmatched(ctx, &rawSide{s: ps}, &rawSide{s: es, withID: true}, limit)
}

// unmatchedSQL is unmatchedRows through database/sql.
func (r *ReplayDB) unmatchedSQL(ctx context.Context, conn *sql.Conn, limit int) (nLost, nMissing int64, lost, missing []unmatchedRow, err error) {
	ps, err := conn.QueryContext(ctx, markerOrder)
	if err != nil {
		return 0, 0, nil, nil, fmt.Errorf("check %s: %w", invariant.LostEffect, err)
	}
	defer ps.Close()
	es, err := conn.QueryContext(ctx, r.effectOrder())
	if err != nil {
		return 0, 0, nil, nil, fmt.Errorf("check %s: %w", invariant.MissingMarker, err)
	}
	defer es.Close()
	return mergeUnmatched(ctx, &sqlSide{rows: ps}, &sqlSide{rows: es, withID: true}, limit)
}

// mergeUnmatched walks the markers (p) and the effects (e) in step: a key
// only p has is a lost effect, one only e has a missing marker; each is
// counted, and the first limit of each kept.
func mergeUnmatched(ctx context.Context, p, e joinSide, limit int) (nLost, nMissing int64, lost, missing []unmatchedRow, err error) {
	pOK, err := p.next()
	if err != nil {
		return 0, 0, nil, nil, err
	}
	eOK, err := e.next()
	var event, consumer []byte // the key both sides are passing
	for n := 0; err == nil && (pOK || eOK); n++ {
		if n%4096 == 0 && ctx.Err() != nil {
			return 0, 0, nil, nil, ctx.Err()
		}
		switch c := compareSides(p, pOK, e, eOK); {
		case c < 0:
			nLost++
			if len(lost) < limit {
				lost = append(lost, p.row())
			}
			pOK, err = p.next()
		case c > 0:
			nMissing++
			if len(missing) < limit {
				missing = append(missing, e.row())
			}
			eOK, err = e.next()
		default:
			// Matched: pass every row of this key on both sides.
			pe, pc := p.key()
			event, consumer = append(event[:0], pe...), append(consumer[:0], pc...)
			for err == nil && pOK && hasKey(p, event, consumer) {
				pOK, err = p.next()
			}
			for err == nil && eOK && hasKey(e, event, consumer) {
				eOK, err = e.next()
			}
		}
	}
	if err != nil {
		return 0, 0, nil, nil, err
	}
	return nLost, nMissing, lost, missing, nil
}

// compareSides orders the two sides' current rows by key, a side at its
// end coming after any row.
func compareSides(p joinSide, pOK bool, e joinSide, eOK bool) int {
	switch {
	case !eOK:
		return -1
	case !pOK:
		return 1
	}
	pe, pc := p.key()
	ee, ec := e.key()
	if c := bytes.Compare(pe, ee); c != 0 {
		return c
	}
	return bytes.Compare(pc, ec)
}

// hasKey says whether a side's current row has the key given.
func hasKey(s joinSide, event, consumer []byte) bool {
	e, c := s.key()
	return bytes.Equal(e, event) && bytes.Equal(c, consumer)
}

// each runs a query whose rows have four columns, read as text.
func (r *ReplayDB) each(ctx context.Context, conn *sql.Conn, q string, f func([4]string)) error {
	rows, err := conn.QueryContext(ctx, q)
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

// count reads a count(*) column.
func count(s string) int64 {
	n, _ := strconv.ParseInt(s, 10, 64)
	return n
}

// list reads a group_concat(…, ', ') column.
func list(s string) []string {
	if s == "" {
		return nil
	}
	return strings.Split(s, ", ")
}
